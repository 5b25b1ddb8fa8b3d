"""asarray, scalar_tensor, the default device, and the number constants."""

import math

import numpy as np
import pytest

import ember


def test_asarray_shares_memory_unless_a_copy_is_needed_or_asked():
    array = np.arange(3.0)
    shared = ember.asarray(array)
    array[0] = 7.0
    assert shared.tolist() == [7.0, 1.0, 2.0]
    t = ember.ones(2)
    assert ember.asarray(t) is t
    copied = ember.asarray(t, copy=True)
    assert copied is not t and copied.tolist() == [1.0, 1.0]
    assert ember.asarray(t, dtype=ember.float64).dtype is ember.float64
    assert ember.asarray([1, 2]).dtype is ember.int64
    assert ember.asarray([1.5], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="copy=False"):
        ember.asarray([1, 2], copy=False)


def test_scalar_tensor_and_constants():
    assert ember.scalar_tensor(3).dtype is ember.float32 and ember.scalar_tensor(3).dim() == 0
    assert (ember.pi, ember.e, ember.inf) == (math.pi, math.e, math.inf)
    assert math.isnan(ember.nan) and ember.newaxis is None
    assert ember.ones(2)[:, ember.newaxis].shape == (2, 1)


def test_default_device():
    assert ember.get_default_device() == ember.device("cpu")
    ember.set_default_device("cpu")
    try:
        assert ember.zeros(1).device == ember.device("cpu")
        assert ember.tensor([1.0]).device == ember.device("cpu")
    finally:
        ember.set_default_device(None)
    if not ember.cuda.is_available():
        ember.set_default_device("cuda")
        try:
            with pytest.raises(RuntimeError):
                ember.zeros(1)  # factories now aim at the GPU, which is not there
            assert ember.Generator().device == ember.device("cpu")  # generators stay
        finally:
            ember.set_default_device(None)
    assert ember.zeros(1).device == ember.device("cpu")
