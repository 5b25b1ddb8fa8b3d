"""Cumulative sums through the numba kernels (ember/ops/_native_scan.py): NumPy's bits,
forward and from the end, along every axis, and cumsum's gradients of every order."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.ops import _native_scan

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_scans_give_numpys_bits(axis, dtype):
    x = np.random.default_rng(0).standard_normal((5, 7, 300)).astype(dtype)
    x[0, 0, :3] = [np.inf, np.nan, -np.inf]
    np.testing.assert_array_equal(_native_scan.cumsum(x, axis), np.cumsum(x, axis=axis))
    backwards = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    np.testing.assert_array_equal(_native_scan.cumsum(x, axis, reverse=True), backwards)
    strided = x[:, ::2]  # (a copy is made first)
    np.testing.assert_array_equal(_native_scan.cumsum(strided, axis),
                                  np.cumsum(strided, axis=axis))


@pytest.mark.parametrize("numba_on", [pytest.param(True, marks=needs_numba), False])
def test_cumsum_and_its_gradients_on_both_paths(numba_on):
    x0 = np.random.default_rng(1).standard_normal((4, 6, 5))
    with native.use_numba(numba_on):
        x = ember.tensor(x0, requires_grad=True)
        y = x.cumsum(1)
        y.backward(ember.tensor(np.arange(120.0).reshape(4, 6, 5)))
        np.testing.assert_allclose(y.detach().numpy(), np.cumsum(x0, 1))
        g = np.arange(120.0).reshape(4, 6, 5)
        np.testing.assert_allclose(x.grad.numpy(), np.flip(np.cumsum(np.flip(g, 1), 1), 1))
        a = ember.tensor(x0[0], requires_grad=True)
        assert gradcheck(lambda t: t.cumsum(-1), (a,))
        assert gradgradcheck(lambda t: t.cumsum(0), (a,))
    assert ember.tensor([1, 2, 3]).cumsum(0).tolist() == [1, 3, 6]  # integers: NumPy's
