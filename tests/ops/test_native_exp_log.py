"""The float32 kernels of expm1 and log1p (ops/_native_exp_log.py), and of log-sigmoid's
and the logits' binary cross entropy's softplus (ops/_native_smooth.py): values against
float64 NumPy in ulps, special values, gradients, and both paths."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_activation as nact

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


def _ulps(got, want64):
    """|got - want| in units of float32's spacing at want, where want is a normal float32."""
    want32 = want64.astype(np.float32)
    keep = np.isfinite(want32) & (np.abs(want32) >= np.finfo(np.float32).tiny)
    return np.abs(got[keep].astype(np.float64) - want64[keep]) / np.spacing(
        np.abs(want32[keep])).astype(np.float64)


_EXPM1_X = np.concatenate([np.linspace(-20, 88.7, 40001), np.geomspace(1e-30, 1, 2000),
                           -np.geomspace(1e-30, 1, 2000)]).astype(np.float32)
_LOG1P_X = np.concatenate([np.linspace(-1, 100, 40001), np.geomspace(1e-30, 3e38, 2000),
                           -np.geomspace(1e-30, 0.9999, 2000)]).astype(np.float32)


def test_expm1_kernel_within_two_ulps_and_special_values():
    got = ember.tensor(_EXPM1_X).expm1().numpy()
    assert _ulps(got, np.expm1(_EXPM1_X.astype(np.float64))).max() <= 2
    special = np.zeros(nact.MIN_SIZE, np.float32)
    special[:7] = [np.nan, -np.inf, np.inf, -0.0, 89.0, -17.6, 1e-40]
    got = ember.tensor(special).expm1().numpy()[:7]
    assert np.isnan(got[0]) and got[1] == -1 and got[2] == np.inf and got[4] == np.inf
    assert got[3] == 0 and np.signbit(got[3]) and got[5] == -1 and got[6] == np.float32(1e-40)


def test_log1p_kernel_within_two_ulps_and_special_values():
    got = ember.tensor(_LOG1P_X).log1p().numpy()
    assert _ulps(got, np.log1p(_LOG1P_X.astype(np.float64))).max() <= 2
    special = np.zeros(nact.MIN_SIZE, np.float32)
    special[:8] = [np.nan, -np.inf, np.inf, -0.0, -1.0, -1.5, 1e-40, 3.4e38]
    with np.errstate(invalid="ignore"):
        got = ember.tensor(special).log1p().numpy()[:8]
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == np.inf
    assert got[3] == 0 and np.signbit(got[3]) and got[4] == -np.inf and np.isnan(got[5])
    assert got[6] == np.float32(1e-40) and got[7] == pytest.approx(np.log1p(3.4e38), rel=1e-6)


@pytest.mark.parametrize("op", ["expm1", "log1p"])
def test_kernel_and_numpy_paths_agree_with_gradients(op):
    x0 = np.random.default_rng(0).uniform(-0.9, 3, nact.MIN_SIZE + 5).astype(np.float32)
    results = []
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            y = getattr(x, op)()
            y.backward(ember.ones_like(y))
            results.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=5e-7, atol=0)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=5e-7, atol=0)


@pytest.mark.parametrize("op", ["expm1", "log1p"])
def test_fused_gradients_equal_the_two_ops(op):
    """expm1's and log1p's first-order gradients in one kernel pass give the bits of
    ``g * (y + 1)`` and ``g * (1 / (x + 1))``; with create_graph the ops are recorded."""
    from ember.ops import _native_exp_log as kernels

    rng = np.random.default_rng(1)
    x0 = rng.uniform(-0.9, 3, (37, 41)).astype(np.float32)
    g0 = rng.standard_normal((37, 41)).astype(np.float32)
    x = ember.tensor(x0, requires_grad=True)
    y = getattr(x, op)()
    y.backward(ember.tensor(g0))
    y0 = y.detach().numpy()
    one = np.float32(1)
    want = g0 * (y0 + one) if op == "expm1" else g0 * (one / (x0 + one))
    np.testing.assert_array_equal(x.grad.numpy(), want)
    assert getattr(kernels, f"_{op}_backward").has_run()
    x.grad = None
    (gx,) = ember.autograd.grad(getattr(x, op)().sum(), x, create_graph=True)
    assert gx.requires_grad
    np.testing.assert_allclose(gx.detach().numpy(),
                               y0 + 1 if op == "expm1" else 1 / (x0 + 1), rtol=1e-6)


def _logsigmoid64(x):
    return -np.logaddexp(0, -x)


def test_logsigmoid_float32_kernel_values_and_gradients():
    x0 = np.concatenate([np.linspace(-120, 120, 24001), np.float32([np.nan])]).astype(np.float32)
    x = ember.tensor(x0, requires_grad=True)
    y = F.logsigmoid(x)
    y.backward(ember.ones_like(y))
    y = y.detach()
    x64 = x0[:-1].astype(np.float64)
    want = _logsigmoid64(x64)
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    np.testing.assert_allclose(y.numpy()[:-1][normal], want[normal], rtol=3e-7)
    assert np.all(y.numpy()[:-1][~normal] == 0) and not np.signbit(y.numpy()[-2])  # +0.0
    np.testing.assert_allclose(x.grad.numpy()[:-1], 1 / (1 + np.exp(x64)), rtol=2e-6,
                               atol=1e-37)
    assert np.isnan(y.numpy()[-1]) and np.isnan(x.grad.numpy()[-1])


def test_softplus_gradient_at_nan_is_nan_on_both_paths():
    # PyTorch: beta x > threshold ? grad : grad sigmoid(beta x), so nan gives nan
    x0 = np.zeros(nact.MIN_SIZE, np.float32)
    x0[:3] = [np.nan, 1.0, 30.0]
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            F.softplus(x).backward(ember.ones(x0.shape))
        g = x.grad.numpy()[:3]
        assert np.isnan(g[0]) and g[1] == pytest.approx(1 / (1 + np.exp(-1.0))) and g[2] == 1


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_binary_cross_entropy_with_logits_float32_against_float64(reduction):
    rng = np.random.default_rng(1)
    x0 = (8 * rng.standard_normal(nact.MIN_SIZE + 9)).astype(np.float32)
    t0 = rng.uniform(size=x0.size).astype(np.float32)
    x = ember.tensor(x0, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, ember.tensor(t0), reduction=reduction)
    loss.sum().backward()
    loss = loss.detach()
    x64, t64 = x0.astype(np.float64), t0.astype(np.float64)
    want = (1 - t64) * x64 - _logsigmoid64(x64)
    n = 1 if reduction == "none" else x0.size
    np.testing.assert_allclose(loss.numpy(), want if n == 1 else want.mean(), rtol=2e-5,
                               atol=2e-6)
    np.testing.assert_allclose(x.grad.numpy(), (1 / (1 + np.exp(-x64)) - t64) / n, rtol=1e-5,
                               atol=1e-7)
