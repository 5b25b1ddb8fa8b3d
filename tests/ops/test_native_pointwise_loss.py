"""The numba kernels of the reduced mse_loss, huber_loss and smooth_l1_loss
(ops/_native_pointwise_loss.py): forward and first-order backward on both paths (numba
on and off) against float64 NumPy, for sizes with and without a partial last block,
other layouts, and a target that needs a gradient."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_pointwise_loss as _native_loss

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (_native_loss.BLOCK * 3,), (37, 1000)])
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


def _huber64(d, kind, edge):
    """(loss, slope) per element in float64, from the definitions."""
    a = np.abs(d)
    if kind == "huber":
        return (np.where(a < edge, 0.5 * d * d, edge * (a - 0.5 * edge)),
                np.where(a < edge, d, np.sign(d) * edge))
    return (np.where(a < edge, 0.5 * d * d / edge, a - 0.5 * edge),
            np.where(a < edge, d / edge, np.sign(d)))


_HUBERS = [("huber", 1.0), ("huber", 0.3), ("smooth_l1", 1.0), ("smooth_l1", 2.5)]


def _huber_fn(kind, edge):
    if kind == "huber":
        return lambda x, t, **kw: F.huber_loss(x, t, delta=edge, **kw)
    return lambda x, t, **kw: F.smooth_l1_loss(x, t, beta=edge, **kw)


@pytest.mark.parametrize("kind, edge", _HUBERS)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (_native_loss.BLOCK * 2 + 11,)])
def test_reduced_huber_and_smooth_l1_both_paths_match_float64(shape, dtype, reduction, kind,
                                                              edge):
    rng = np.random.default_rng(4)
    x0 = (2 * rng.standard_normal(shape)).astype(dtype)
    t0 = rng.standard_normal(shape).astype(dtype)
    x0.reshape(-1)[:2] = t0.reshape(-1)[:2] + np.asarray([edge, -edge], dtype)  # the edges
    d = x0.astype(np.float64) - t0.astype(np.float64)
    n = 1 if reduction == "sum" else d.size
    loss64, slope64 = _huber64(d, kind, edge)
    want_loss, want_grad = loss64.sum() / n, slope64 / n * 0.75
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    grads = []
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            t = ember.tensor(t0, requires_grad=True)
            loss = _huber_fn(kind, edge)(x, t, reduction=reduction)
            (loss * 0.75).backward()
        name = "HuberLossBackward0" if kind == "huber" else "SmoothL1LossBackward0"
        assert loss.grad_fn.name() == name and loss.dtype == x.dtype
        np.testing.assert_allclose(loss.item(), want_loss, **tol)
        np.testing.assert_allclose(x.grad.numpy(), want_grad, **tol)
        np.testing.assert_allclose(t.grad.numpy(), -want_grad, **tol)
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])   # the NumPy path's bits


@pytest.mark.parametrize("kind, edge", _HUBERS[::2])
def test_huber_kernels_pass_nan_on_and_give_the_unreduced_losses_sum(kind, edge):
    x0 = np.random.default_rng(5).standard_normal(_native_loss.BLOCK + 3).astype(np.float32)
    t0 = np.zeros_like(x0)
    fn = _huber_fn(kind, edge)
    with native.use_numba(True):
        np.testing.assert_allclose(fn(ember.tensor(x0), ember.tensor(t0), reduction="sum").item(),
                                   fn(ember.tensor(x0), ember.tensor(t0), reduction="none")
                                   .numpy().astype(np.float64).sum(), rtol=1e-6)
        x0[7] = np.nan
        x = ember.tensor(x0, requires_grad=True)
        loss = fn(x, ember.tensor(t0))
        loss.backward()
    assert np.isnan(loss.item()) and np.isnan(x.grad.numpy()[7])
    assert np.isfinite(np.delete(x.grad.numpy(), 7)).all()


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("kind, edge", _HUBERS[::2])
def test_huber_gradient_of_a_nan_difference_is_nan_on_both_paths(kind, edge, numba):
    # (as PyTorch's: the NumPy path's sign of NaN, 0, once gave a zero gradient there)
    x = ember.tensor([np.nan, 3.0, -3.0, 0.1], requires_grad=True)
    with native.use_numba(numba):
        _huber_fn(kind, edge)(x, ember.zeros(4), reduction="sum").backward()
    slope = 1.0 if kind == "smooth_l1" else edge   # the slope past the edge
    np.testing.assert_allclose(x.grad.numpy(), [np.nan, slope, -slope,
                                                0.1 / edge if kind == "smooth_l1" else 0.1],
                               rtol=1e-6)


@pytest.mark.parametrize("kind, edge", _HUBERS[1:3])
def test_huber_gradients_of_every_order_with_numba_on(kind, edge):
    x = ember.randn(6, 7, dtype=ember.float64, requires_grad=True)
    t = ember.randn(6, 7, dtype=ember.float64, requires_grad=True)
    fn = _huber_fn(kind, edge)
    with native.use_numba(True):
        assert ember.autograd.gradcheck(lambda a, b: fn(a, b), (x, t))
        assert ember.autograd.gradgradcheck(lambda a, b: fn(a, b), (x, t))
