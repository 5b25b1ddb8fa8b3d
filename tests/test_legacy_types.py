"""The legacy typed-tensor classes (FloatTensor, ...), Tensor.new and set_default_tensor_type."""

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the parity test skips without PyTorch
    torch = None


def test_constructors_and_isinstance():
    assert ember.FloatTensor(2, 3).shape == (2, 3) and ember.FloatTensor().shape == (0,)
    assert ember.LongTensor([1, 2]).dtype == ember.int64
    assert ember.FloatTensor(ember.Size([4, 1])).shape == (4, 1)
    assert ember.DoubleTensor(np.ones(2)).tolist() == [1.0, 1.0]
    t = ember.ones(2)
    assert ember.FloatTensor(t) is t
    with pytest.raises(TypeError, match="expected a cpu tensor of dtype ember.float32"):
        ember.FloatTensor(ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu"):
        ember.FloatTensor(2, device="cuda")
    assert isinstance(t, ember.FloatTensor) and isinstance(t, ember.Tensor)
    assert not isinstance(t, ember.DoubleTensor) and not isinstance(t, ember.cuda.FloatTensor)
    assert not isinstance(np.ones(2), ember.FloatTensor)
    assert repr(ember.cuda.ByteTensor) == "<class 'ember.cuda.ByteTensor'>"


def test_type_new_and_default_tensor_type():
    t = ember.ones(2)
    assert t.type(ember.DoubleTensor).dtype == ember.float64
    assert t.type(ember.LongTensor).type() == "ember.LongTensor"
    assert t.new(2, 3).shape == (2, 3) and t.new(2, 3).dtype == ember.float32
    assert ember.ones(1, dtype=ember.int64).new([1.5, 2]).tolist() == [1, 2]
    assert t.new().shape == (0,) and t.new(t) is t
    try:
        ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.ones(1).dtype == ember.float64
        ember.set_default_tensor_type("torch.FloatTensor")
        assert ember.ones(1).dtype == ember.float32
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        ember.set_default_tensor_type(ember.LongTensor)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_pytorch():
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "ByteTensor", "BoolTensor"):
        ours, theirs = getattr(ember, name), getattr(torch, name)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        assert ours([1, 0, 2]).tolist() == theirs([1, 0, 2]).tolist()
        assert ours(2, 3).shape == tuple(theirs(2, 3).shape)
        for value in ([1.0], [1]):
            assert isinstance(ember.tensor(value), ours) == isinstance(torch.tensor(value),
                                                                      theirs)
