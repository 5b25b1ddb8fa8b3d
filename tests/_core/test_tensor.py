"""Tensor creation, attributes, conversions and repr."""

import copy
import pickle

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None


def test_tensor_dtype_inference():
    assert ember.tensor([1.0, 2.0]).dtype is ember.float32
    assert ember.tensor([1, 2]).dtype is ember.int64
    assert ember.tensor([True, False]).dtype is ember.bool
    assert ember.tensor([1, 2.5]).dtype is ember.float32
    assert ember.tensor(3).dtype is ember.int64
    assert ember.tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert ember.tensor(np.zeros(3, dtype=np.float64)).dtype is ember.float64
    assert ember.tensor([1j]).dtype is ember.complex64
    assert ember.tensor([]).dtype is ember.float32 and ember.tensor([]).shape == (0,)


def test_tensor_copies_and_from_numpy_shares():
    a = np.arange(3.0)
    t = ember.tensor(a)
    a[0] = 10
    assert t[0].item() == 0.0 if hasattr(t, "__getitem__") else t.tolist()[0] == 0.0
    s = ember.from_numpy(a)
    a[1] = 20
    assert s.tolist() == [10.0, 20.0, 2.0]
    s.numpy()[2] = 30
    assert a[2] == 30
    assert ember.as_tensor(a).numpy() is a


def test_from_numpy_rejects_non_arrays_and_strings():
    with pytest.raises(TypeError):
        ember.from_numpy([1, 2])
    with pytest.raises(TypeError):
        ember.from_numpy(np.array(["a"]))


def test_factories():
    assert ember.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert ember.ones((2,)).dtype is ember.float32
    assert ember.full([1], 2).dtype is ember.int64
    assert ember.full([1], 2.0).dtype is ember.float32
    assert ember.full((2,), True).dtype is ember.bool
    assert ember.empty(4).shape == (4,)
    x = ember.ones(2, 3, dtype=ember.float64)
    assert ember.zeros_like(x).dtype is ember.float64
    assert ember.full_like(x, 7).tolist() == [[7.0] * 3] * 2
    assert x.new_zeros(4).dtype is ember.float64 and x.new_ones((1, 2)).shape == (1, 2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(-1)


def test_attributes():
    x = ember.zeros(2, 3, 4)
    assert x.shape == ember.Size([2, 3, 4]) and x.size() == (2, 3, 4)
    assert x.size(1) == 3 and x.size(-1) == 4
    assert x.dim() == 3 and x.ndim == 3 and x.numel() == 24
    assert x.element_size() == 4 and x.nbytes == 96
    assert x.is_contiguous() and x.stride() == (12, 4, 1)
    assert x.is_leaf and not x.requires_grad and x.grad is None and x.grad_fn is None
    assert x.is_floating_point() and not ember.zeros(1, dtype=ember.int64).is_floating_point()
    assert ember.is_tensor(x) and not ember.is_tensor(np.zeros(1))
    assert repr(x.shape) == "ember.Size([2, 3, 4])" and x.shape.numel() == 24
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.size(3)


def test_item_tolist_numpy():
    assert ember.tensor([[2.5]]).item() == 2.5
    assert ember.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        ember.ones(2).item()
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        w.numpy()
    assert np.asarray(w.detach()).tolist() == [1.0, 1.0]
    assert float(ember.tensor(1.5)) == 1.5 and int(ember.tensor(3)) == 3
    assert [10, 20, 30][ember.tensor(1)] == 20
    with pytest.raises(TypeError):
        [1, 2][ember.tensor(1.0)]


def test_bool_and_len():
    assert bool(ember.tensor([1.0])) and not bool(ember.tensor(0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.ones(2))
    assert len(ember.zeros(5, 2)) == 5
    with pytest.raises(TypeError):
        len(ember.tensor(1.0))


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        ember.tensor([1, 2]).requires_grad_()
    w = ember.ones(2, requires_grad=True)
    y = w * 2
    assert y.requires_grad and not y.is_leaf
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    d = y.detach()
    assert d.is_leaf and not d.requires_grad


def test_data_and_detach_share_memory():
    w = ember.ones(3, requires_grad=True)
    d = w.detach()
    d.numpy()[0] = 5
    assert w.tolist()[0] == 5
    data = w.data
    assert not data.requires_grad
    data.numpy()[1] = 7
    assert w.tolist()[1] == 7


def test_type_names_and_casts():
    assert ember.ones(1).type() == "ember.FloatTensor"
    assert ember.ones(1, dtype=ember.int64).type() == "ember.LongTensor"
    assert ember.ones(1).type(ember.float64).dtype is ember.float64
    assert ember.ones(1).type("ember.DoubleTensor").dtype is ember.float64
    x = ember.ones(2)
    assert x.double().dtype is ember.float64 and x.long().dtype is ember.int64
    assert x.half().dtype is ember.float16 and x.bfloat16().dtype is ember.bfloat16
    assert x.bool().dtype is ember.bool and x.int().dtype is ember.int32
    assert x.float() is x
    assert x.to(ember.float64).dtype is ember.float64
    assert x.to(ember.ones(1, dtype=ember.int64)).dtype is ember.int64


def test_to_is_differentiable():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (w.double() * 3).sum()
    y.backward()
    assert w.grad.dtype is ember.float32 and w.grad.tolist() == [3.0, 3.0]


REPRS = [
    (lambda m: m.tensor([1.0, 2.0]), "tensor([1., 2.])"),
    (lambda m: m.tensor([1.5, 2.25]), "tensor([1.5000, 2.2500])"),
    (lambda m: m.tensor(3.0), "tensor(3.)"),
    (lambda m: m.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda m: m.tensor([True, False]), "tensor([ True, False])"),
    (lambda m: m.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda m: m.tensor([1.0, 2.0], dtype=m.float64), "tensor([1., 2.], dtype=#.float64)"),
    (lambda m: m.tensor([1, 2], dtype=m.int32), "tensor([1, 2], dtype=#.int32)"),
    (lambda m: m.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda m: m.tensor([]), "tensor([])"),
    (lambda m: m.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda m: m.tensor([[1.0, -2.0], [3.0, 4.5]]),
     "tensor([[ 1.0000, -2.0000],\n        [ 3.0000,  4.5000]])"),
    (lambda m: m.tensor([float("nan"), 1.0, float("inf")]), "tensor([nan, 1., inf])"),
    (lambda m: m.zeros(2, 2, 2), "tensor([[[0., 0.],\n         [0., 0.]],\n\n        "
                                 "[[0., 0.],\n         [0., 0.]]])"),
    (lambda m: m.tensor([0.0001, 0.5]), "tensor([1.0000e-04, 5.0000e-01])"),
]


@pytest.mark.parametrize("make,expected", REPRS)
def test_repr_matches_pytorch_format(make, expected):
    assert repr(make(ember)) == expected.replace("#", "ember")
    if torch is not None:
        assert repr(make(torch)) == expected.replace("#", "torch")


def test_repr_grad_fn_and_summarization():
    w = ember.tensor(2.0, requires_grad=True)
    assert repr(w + 1) == "tensor(3., grad_fn=<AddBackward0>)"
    assert repr(w * w) == "tensor(4., grad_fn=<MulBackward0>)"
    big = repr(ember.zeros(2000))
    assert "..." in big and big.startswith("tensor([0., 0., 0.,  ..., 0., 0., 0.])"[:12])
    ember.set_printoptions(precision=2)
    try:
        assert repr(ember.tensor([1.5, 2.25])) == "tensor([1.50, 2.25])"
    finally:
        ember.set_printoptions(profile="default")


def test_long_row_wraps_like_pytorch():
    values = [float(i) + 0.5 for i in range(20)]
    text = repr(ember.tensor(values))
    if torch is not None:
        assert text == repr(torch.tensor(values))
    assert "\n" in text


def test_deepcopy_and_pickle_keep_values_and_flags():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    c = copy.deepcopy(w)
    assert c is not w and c.requires_grad and c.tolist() == [1.0, 2.0]
    c.detach().numpy()[0] = 9
    assert w.tolist()[0] == 1.0
    p = pickle.loads(pickle.dumps(w))
    assert p.requires_grad and p.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(w * 2)


def test_legacy_constructor():
    assert ember.Tensor(2, 3).shape == (2, 3)
    assert ember.Tensor([1, 2]).dtype is ember.float32
