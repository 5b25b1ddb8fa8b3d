"""The numba row kernels (ops/_native_rows.py) through the ops that use them: softmax and
log_softmax, layer norm, cross-entropy.  Both paths (numba on and off) against float64
NumPy references, forward and first-order backward; gradcheck and double backward with
numba on; other layouts fall back."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_rows as nrows

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")

TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-11, atol=1e-12)}
ROWS = 131  # rows of 64 (8,384 elements), an odd count


def _both_paths(fn, *arrays, grads=None):
    """fn(*tensors) and the gradients of its inputs, with numba on and off."""
    results = []
    for flag in (True, False):
        with native.use_numba(flag):
            ts = [ember.tensor(a, requires_grad=True) for a in arrays]
            y = fn(*ts)
            y.backward(ember.tensor(grads) if grads is not None else None)
            results.append((y.detach().numpy(), [t.grad.numpy() for t in ts]))
    return results


def _softmax64(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_both_paths_match_float64_reference(log, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((ROWS, 64)) * 5).astype(dtype)
    x[0, :3] = [1e4, -1e4, 0.0]  # shifted by the row max: no overflow
    g = rng.standard_normal(x.shape).astype(dtype)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    p = _softmax64(x64)
    if log:
        ref_y = np.log(np.maximum(p, 1e-300))
        ref_y[0] = x64[0] - x64[0].max() - np.log(np.exp(x64[0] - x64[0].max()).sum())
        ref_g = g64 - p * g64.sum(-1, keepdims=True)
        fn = lambda t: F.log_softmax(t, -1)  # noqa: E731
    else:
        ref_y, ref_g = p, p * (g64 - (g64 * p).sum(-1, keepdims=True))
        fn = lambda t: F.softmax(t, -1)  # noqa: E731
    for y, (gx,) in _both_paths(fn, x, grads=g):
        assert y.dtype == dtype
        np.testing.assert_allclose(y, ref_y, **TOL[dtype])
        np.testing.assert_allclose(gx, ref_g, **TOL[dtype])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the NumPy path's inf - inf)
def test_softmax_rows_with_nan_or_inf_come_out_nan_as_on_the_numpy_path():
    x = np.zeros((ROWS, 64), np.float32)
    x[1, 5], x[2, 7], x[3, 9] = np.nan, np.inf, -np.inf
    for fn in (F.softmax, F.log_softmax):
        with native.use_numba(True):
            got = fn(ember.tensor(x), -1).numpy()
        with native.use_numba(False):
            want = fn(ember.tensor(x), -1).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_over_another_dim_both_paths_match_float64_reference(log, dim, dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 40, ROWS)) * 3).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    e = np.exp(x64 - x64.max(dim, keepdims=True))
    p = e / e.sum(dim, keepdims=True)
    if log:
        ref_y, ref_g = np.log(p), g64 - p * g64.sum(dim, keepdims=True)
    else:
        ref_y, ref_g = p, p * (g64 - (g64 * p).sum(dim, keepdims=True))
    fn = (lambda t: F.log_softmax(t, dim)) if log else (lambda t: F.softmax(t, dim))
    for y, (gx,) in _both_paths(fn, x, grads=g):
        np.testing.assert_allclose(y, ref_y, **TOL[dtype])
        np.testing.assert_allclose(gx, ref_g, **TOL[dtype])
    assert nrows._softmax_inner_backward_kernel.has_run()


def test_softmax_over_another_dim_of_a_strided_view_falls_back():
    x = ember.randn(64, 2 * ROWS)[:, ::2]
    with native.use_numba(True):
        a = F.softmax(x, 0)
    with native.use_numba(False):
        b = F.softmax(x, 0)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dim", [-1, 1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_gradcheck_and_double_backward_with_numba_on(log, dim, monkeypatch):
    monkeypatch.setattr(nrows, "MIN_SIZE", 1)
    fn = (lambda t: F.log_softmax(t, dim)) if log else (lambda t: F.softmax(t, dim))
    x = ember.randn(2, 4, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 4, 3, dtype=ember.float64)
    with native.use_numba(True):
        assert ember.autograd.gradcheck(lambda t: fn(t) * w, (x,))
        assert ember.autograd.gradgradcheck(lambda t: fn(t) * w, (x,))
        (g1,) = ember.autograd.grad((fn(x) * w).sum(), x, create_graph=True)
        (g0,) = ember.autograd.grad((fn(x) * w).sum(), x)
    np.testing.assert_allclose(g1.detach().numpy(), g0.numpy(), rtol=1e-12, atol=1e-14)


def test_supports_takes_only_large_contiguous_float_rows():
    big = np.zeros((ROWS, 64), np.float32)
    assert nrows.supports(big)
    assert not nrows.supports(big[:, ::2])
    assert not nrows.supports(np.zeros((1, nrows.MIN_SIZE // 2), np.float32))  # tiny
    assert not nrows.supports(big.astype(np.float16))
    assert not nrows.supports(big, big.astype(np.float64))
    with native.use_numba(False):
        assert not nrows.supports(big)


def _layer_norm64(x, w, b, g, eps=1e-5):
    """Forward and gradients (x, w, b) of layer norm over the last dim, in float64."""
    mu = x.mean(-1, keepdims=True)
    r = 1 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    y = (x - mu) * r
    gy = g * w
    gx = r * (gy - gy.mean(-1, keepdims=True) - y * (gy * y).mean(-1, keepdims=True))
    return y * w + b, gx, (g * y).sum(0), g.sum(0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_both_paths_match_float64_reference(dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((ROWS, 64)) * 3 + 5).astype(dtype)
    w = rng.standard_normal(64).astype(dtype)
    b = rng.standard_normal(64).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    refs = _layer_norm64(*(a.astype(np.float64) for a in (x, w, b, g)))
    fn = lambda t, wt, bt: F.layer_norm(t, (64,), wt, bt)  # noqa: E731
    for y, grads in _both_paths(fn, x, w, b, grads=g):
        assert y.dtype == dtype
        np.testing.assert_allclose(y, refs[0], **TOL[dtype])
        for got, ref in zip(grads, refs[1:]):
            np.testing.assert_allclose(got, ref, **TOL[dtype])


def test_layer_norm_without_affine_and_over_two_dims():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((ROWS, 8, 8)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    x64, g64 = x.reshape(ROWS, 64).astype(np.float64), g.reshape(ROWS, 64).astype(np.float64)
    ones, zeros = np.ones(64), np.zeros(64)
    ref_y, ref_gx = _layer_norm64(x64, ones, zeros, g64)[:2]
    fn = lambda t: F.layer_norm(t, (8, 8))  # noqa: E731
    for y, (gx,) in _both_paths(fn, x, grads=g):
        np.testing.assert_allclose(y.reshape(ROWS, 64), ref_y, **TOL[np.float32])
        np.testing.assert_allclose(gx.reshape(ROWS, 64), ref_gx, **TOL[np.float32])


def test_layer_norm_gradcheck_and_double_backward_with_numba_on(monkeypatch):
    monkeypatch.setattr(nrows, "MIN_SIZE", 1)
    f64 = ember.float64
    x = ember.randn(3, 5, dtype=f64, requires_grad=True)
    w = ember.randn(5, dtype=f64, requires_grad=True)
    b = ember.randn(5, dtype=f64, requires_grad=True)
    fn = lambda t, wt, bt: F.layer_norm(t, (5,), wt, bt)  # noqa: E731
    with native.use_numba(True):
        assert ember.autograd.gradcheck(fn, (x, w, b))
        assert ember.autograd.gradgradcheck(fn, (x, w, b))
        first = ember.autograd.grad((fn(x, w, b) ** 2).sum(), (x, w, b), create_graph=True)
        plain = ember.autograd.grad((fn(x, w, b) ** 2).sum(), (x, w, b))
    for a, c in zip(first, plain):
        np.testing.assert_allclose(a.detach().numpy(), c.numpy(), rtol=1e-12, atol=1e-13)


def _cross_entropy64(x, t, w, ignore, s, reduction):
    """Cross-entropy with class indices in float64: loss, and its gradient for a unit
    upstream gradient (reduction 'none': a gradient of ones)."""
    n, c = x.shape
    logp = np.log(_softmax64(x))
    valid = t != ignore
    safe = np.where(valid, t, 0)
    wt = w[safe] * valid
    per = -(1 - s) * wt * logp[np.arange(n), safe] - (s / c) * (logp * w).sum(1) * valid
    q = np.zeros_like(x)
    q[np.arange(n), safe] = (1 - s) * wt
    q += (s / c) * w * valid[:, None]
    grad = _softmax64(x) * q.sum(1, keepdims=True) - q
    if reduction == "none":
        return per, grad
    total = wt.sum() if reduction == "mean" else 1.0
    return per.sum() / total, grad / total


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted,smoothing", [(False, 0.0), (True, 0.0), (True, 0.2),
                                                (False, 0.1)])
def test_cross_entropy_both_paths_match_float64_reference(dtype, reduction, weighted,
                                                          smoothing):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((ROWS, 64)) * 4).astype(dtype)
    t = rng.integers(0, 64, ROWS)
    t[::7] = -100  # ignored
    w = rng.uniform(0.5, 2, 64).astype(dtype) if weighted else np.ones(64, dtype)
    ref_loss, ref_grad = _cross_entropy64(x.astype(np.float64), t, w.astype(np.float64), -100,
                                          smoothing, reduction)
    weight = ember.tensor(w) if weighted else None

    def fn(logits):
        loss = F.cross_entropy(logits, ember.tensor(t), weight=weight, reduction=reduction,
                               label_smoothing=smoothing)
        return loss if reduction != "none" else loss.sum()

    for loss, (gx,) in _both_paths(fn, x):
        ref = ref_loss if reduction != "none" else ref_loss.sum()
        assert loss.dtype == dtype
        np.testing.assert_allclose(loss, ref, **TOL[dtype])
        np.testing.assert_allclose(gx, ref_grad, **TOL[dtype])


def test_cross_entropy_with_every_target_ignored_matches_numpy_path():
    x = np.zeros((ROWS, 64), np.float32)
    t = np.full(ROWS, 3)
    for flag in (True, False):
        with native.use_numba(flag):
            xt = ember.tensor(x, requires_grad=True)
            loss = F.cross_entropy(xt, ember.tensor(t), ignore_index=3)
            loss.backward()
        assert np.isnan(loss.item())
        assert not xt.grad.numpy().any()


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_gradcheck_and_double_backward_with_numba_on(smoothing, monkeypatch):
    monkeypatch.setattr(nrows, "MIN_SIZE", 1)
    x = ember.randn(5, 4, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0, 3, -100, 1, 2])
    w = ember.tensor([0.5, 1.0, 2.0, 1.5], dtype=ember.float64)

    def fn(logits):
        return F.cross_entropy(logits, t, weight=w, label_smoothing=smoothing)

    with native.use_numba(True):
        assert ember.autograd.gradcheck(fn, (x,))
        assert ember.autograd.gradgradcheck(fn, (x,))
        (g1,) = ember.autograd.grad(fn(x), x, create_graph=True)
        (g0,) = ember.autograd.grad(fn(x), x)
    np.testing.assert_allclose(g1.detach().numpy(), g0.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("threaded", [False, True])
def test_large_logits_keep_full_precision(threaded, monkeypatch):
    monkeypatch.setattr(native, "PARALLEL_MIN", 1 << 16)
    rows = 2 * native.PARALLEL_MIN // 64 if threaded else ROWS
    # log-probabilities of logits near 1e4: forming max + log(sum) first would round at
    # 1e4's spacing (~5e-4 in float32); the NumPy path and PyTorch keep them exact
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((rows, 64)) + 1e4).astype(np.float32)
    t = rng.integers(0, 64, rows)
    ref = x.astype(np.float64) - x.max(1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(1, keepdims=True))
    got = F.log_softmax(ember.tensor(x), -1).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=2e-6)
    got_dim0 = F.log_softmax(ember.tensor(np.ascontiguousarray(x.T)), 0).numpy()
    np.testing.assert_allclose(got_dim0, ref.T, rtol=1e-5, atol=2e-6)
    xt = ember.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xt, ember.tensor(t), reduction="sum")
    np.testing.assert_allclose(loss.item(), -ref[np.arange(rows), t].sum(), rtol=1e-5)
    loss.backward()
    p = np.exp(ref)
    p[np.arange(rows), t] -= 1
    np.testing.assert_allclose(xt.grad.numpy(), p, atol=2e-6)


def test_exp_below_the_normal_range_is_zero_in_float32_rows():
    # the float32 exp flushes subnormal results (slow on x86) to 0: masked (-inf) and
    # very small entries get probability 0 exactly, and each row still sums to 1
    x = np.zeros((ROWS, 64), np.float32)
    x[:, 1] = -np.inf
    x[:, 2] = -100.0  # exp(-100) = 3.7e-44, a float32 subnormal
    with native.use_numba(True):
        p = F.softmax(ember.tensor(x), -1).numpy()
    assert (p[:, 1] == 0).all() and (p[:, 2] == 0).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(p[:, 0], 1 / 62, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (5, 9), (3, 4, 33)])
def test_logsumexp_over_the_last_dim_both_paths_match_float64(shape, dtype):
    """The row kernels' logsumexp and its first-order gradient, and the NumPy path's,
    against float64 NumPy, with rows holding +inf, -inf only, and NaN; keepdim both ways."""
    rng = np.random.default_rng(11)
    x0 = (rng.standard_normal(shape) * 30).astype(dtype)
    rows = x0.reshape(-1, shape[-1])
    if rows.shape[0] > 3:
        rows[1, 2], rows[2, :], rows[3, 4] = np.inf, -np.inf, np.nan
    x64 = rows.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        top = x64.max(1, keepdims=True)
        shift = np.where(np.isfinite(top), top, 0)
        lse = np.log(np.exp(x64 - shift).sum(1, keepdims=True)) + shift
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-13)
    for keepdim in (False, True):
        out_shape = shape[:-1] + ((1,) if keepdim else ())
        g = rng.standard_normal(out_shape).astype(dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            expected_grad = g.reshape(-1, 1).astype(np.float64) * np.exp(x64 - lse)
        for numba in (True, False):
            with native.use_numba(numba), np.errstate(invalid="ignore", divide="ignore"):
                x = ember.tensor(x0, requires_grad=True)
                y = ember.logsumexp(x, -1, keepdim=keepdim)
                y.backward(ember.tensor(g))
            assert tuple(y.shape) == out_shape
            np.testing.assert_allclose(y.detach().numpy().reshape(-1), lse.reshape(-1), **tol)
            np.testing.assert_allclose(x.grad.numpy().reshape(rows.shape), expected_grad,
                                       **tol)
