"""The numba kernels of a reduced mse_loss (ops/_native_mse.py): forward and first-order
backward on both paths (numba on and off) against float64 NumPy, for sizes with and
without a partial last block, other layouts, and a target that needs a gradient."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_mse

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (_native_mse.BLOCK * 3,), (37, 1000)])
def test_reduced_mse_both_paths_match_float64(shape, dtype, reduction):
    rng = np.random.default_rng(2)
    x0, t0 = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    d = x0.astype(np.float64) - t0.astype(np.float64)
    n = 1 if reduction == "sum" else d.size
    want_loss, want_grad = (d * d).sum() / n, 2 * d / n * 0.75
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            t = ember.tensor(t0, requires_grad=True)
            loss = F.mse_loss(x, t, reduction=reduction)
            (loss * 0.75).backward()
        assert loss.grad_fn.name() == "MseLossBackward0" and loss.dtype == x.dtype
        np.testing.assert_allclose(loss.item(), want_loss, **tol)
        np.testing.assert_allclose(x.grad.numpy(), want_grad, **tol)
        np.testing.assert_allclose(t.grad.numpy(), -want_grad, **tol)


def test_the_kernels_take_other_layouts_and_give_numpys_gradient_bits():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((300, 40)).astype(np.float32).T   # (40, 300), F-ordered
    t0 = np.broadcast_to(rng.standard_normal(300).astype(np.float32), (40, 300))  # read-only
    results = []
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            loss = F.mse_loss(x, ember.tensor(t0))
            loss.backward()
            results.append((loss.item(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_gradients_of_every_order_with_numba_on():
    x = ember.randn(6, 7, dtype=ember.float64, requires_grad=True)
    t = ember.randn(6, 7, dtype=ember.float64, requires_grad=True)
    with native.use_numba(True):
        assert ember.autograd.gradcheck(lambda a, b: F.mse_loss(a, b), (x, t))
        assert ember.autograd.gradgradcheck(lambda a, b: F.mse_loss(a, b), (x, t))
