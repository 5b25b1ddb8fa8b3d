"""The numba kernels of GELU, SiLU, tanh, sigmoid, hardswish and abs' backward
(ops/_native_activation.py), and of softplus and the elus (ops/_native_smooth.py): both
paths (numba on and off) against float64 references, forward and first-order backward;
gradcheck and double backward with numba on; small tensors stay on the NumPy path."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_activation as nact

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")

TOL = {np.float32: dict(rtol=2e-6, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-13)}
_erf = np.vectorize(math.erf)
_K = math.sqrt(2 / math.pi)


def _cdf(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)))


def _pdf(x):
    return np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _gelu_tanh_parts(x):
    t = np.tanh(_K * (x + 0.044715 * x ** 3))
    return t, _K * (1 + 3 * 0.044715 * x * x)


_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)

# name -> (ember function, float64 forward, float64 derivative)
CASES = {
    "gelu": (F.gelu, lambda x: x * _cdf(x), lambda x: _cdf(x) + x * _pdf(x)),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + _gelu_tanh_parts(x)[0]),
                  lambda x: (0.5 * (1 + _gelu_tanh_parts(x)[0])
                             + 0.5 * x * (1 - _gelu_tanh_parts(x)[0] ** 2)
                             * _gelu_tanh_parts(x)[1])),
    "silu": (F.silu, lambda x: x / (1 + np.exp(-x)),
             lambda x: (1 / (1 + np.exp(-x))) * (1 + x * (1 - 1 / (1 + np.exp(-x))))),
    "tanh": (ember.tanh, np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "sigmoid": (ember.sigmoid, lambda x: 1 / (1 + np.exp(-x)),
                lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                  lambda x: np.where(x <= -3, 0.0, np.where(x < 3, x / 3 + 0.5, 1.0))),
    "abs": (ember.abs, np.abs, np.sign),  # (its backward kernel: l1_loss's)
    # ops/_native_smooth.py
    "softplus": (F.softplus, lambda x: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))),
                 lambda x: np.where(x > 20, 1.0, 1 / (1 + np.exp(-x)))),
    "softplus beta 2, threshold 5": (
        lambda t: F.softplus(t, 2.0, 5.0),
        lambda x: np.where(2 * x > 5, x, np.log1p(np.exp(np.minimum(2 * x, 5))) / 2),
        lambda x: np.where(2 * x > 5, 1.0, 1 / (1 + np.exp(-2 * x)))),
    "elu": (F.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
            lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0)))),
    "selu": (F.selu, lambda x: _SELU[1] * np.where(x > 0, x, _SELU[0] * np.expm1(
        np.minimum(x, 0))), lambda x: _SELU[1] * np.where(x > 0, 1.0, _SELU[0] * np.exp(
            np.minimum(x, 0)))),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus64(x)),
             lambda x: (np.tanh(_softplus64(x)) + x * (1 - np.tanh(_softplus64(x)) ** 2)
                        / (1 + np.exp(-x)))),
    "celu alpha 0.5": (lambda t: F.celu(t, 0.5),
                       lambda x: np.where(x > 0, x, 0.5 * np.expm1(np.minimum(x, 0) / 0.5)),
                       lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0) / 0.5))),
}


def _softplus64(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


_SIZE = (1 << 13) + 37  # past MIN_SIZE, and holds the special values below


def _inputs(dtype, n=_SIZE):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n) * 4
    x[:8] = [0.0, -0.0, 1e-30, -1e-30, 30.0, -30.0, 200.0, -200.0]
    x[8:208] = np.linspace(-0.6, 0.6, 200)  # tanh's two formulas meet at 0.4
    return x.astype(dtype)


def _run(name, x, g):
    fn = CASES[name][0]
    t = ember.tensor(x, requires_grad=True)
    y = fn(t)
    y.backward(ember.tensor(g))
    return y.detach().numpy(), t.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_both_paths_match_float64_reference(name, dtype):
    x = _inputs(dtype)
    g = np.random.default_rng(1).standard_normal(x.size).astype(dtype)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        ref_y = CASES[name][1](x64)
        ref_g = g * CASES[name][2](x64)
    for flag in (True, False):
        with native.use_numba(flag):
            y, gx = _run(name, x, g)
        assert y.dtype == dtype and gx.dtype == dtype
        np.testing.assert_allclose(y, ref_y, **TOL[dtype], err_msg=f"numba={flag}")
        np.testing.assert_allclose(gx, ref_g, **TOL[dtype], err_msg=f"numba={flag}")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the NumPy path's inf * 0)
@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "sigmoid", "hardswish",
                                  "softplus", "elu", "celu alpha 0.5", "mish"])
def test_special_values_follow_the_numpy_path(name):
    x = np.zeros(nact.MIN_SIZE, np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, 1e38, -1e38, 88.9]
    with native.use_numba(True):
        got = CASES[name][0](ember.tensor(x)).numpy()
    with native.use_numba(False):
        want = CASES[name][0](ember.tensor(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("size", [6, nact.MIN_SIZE])
def test_hardswish_gradient_at_its_edges_and_nan(dtype, numba, size):
    # PyTorch 2.13's rule: 0 up to and at -3, the incoming gradient at and from 3, and
    # grad * (x / 3 + 1/2) strictly between (a NaN input gives NaN)
    x = np.zeros(size, dtype)
    x[:6] = [-3.0, 3.0, np.nan, -4.0, 4.0, 1.5]
    g = np.full(size, 2.0, dtype)
    with native.use_numba(numba):
        t = ember.tensor(x, requires_grad=True)
        F.hardswish(t).backward(ember.tensor(g))
    np.testing.assert_array_equal(t.grad.numpy()[:6], np.array([0.0, 2.0, np.nan, 0.0, 2.0, 2.0],
                                                               dtype))
    assert t.grad.numpy()[6:].tolist() == [1.0] * (size - 6)   # grad * (0 / 3 + 1/2)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the NumPy path's inf * 0)
def test_mish_gradient_special_values_follow_the_numpy_path():
    # (mish's kernel: one exp, its slope 1 past x = 20 but nan at +inf, as PyTorch's)
    x = np.zeros(nact.MIN_SIZE, np.float32)
    x[:9] = [np.nan, np.inf, -np.inf, 1e38, -1e38, 88.9, 20.0, -87.5, -104.0]
    grads = []
    for flag in (True, False):
        with native.use_numba(flag):
            t = ember.tensor(x, requires_grad=True)
            F.mish(t).backward(ember.ones(nact.MIN_SIZE))
            grads.append(t.grad.numpy())
    got, want = grads
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6,
                               atol=1e-30)


def test_tanh_special_values_and_their_gradient():
    # tanh's forward is NumPy's; its backward kernel still sees the special outputs
    x = np.zeros(nact.MIN_SIZE, np.float32)
    x[:5] = [np.nan, np.inf, -np.inf, 1e-40, -0.0]
    t = ember.tensor(x, requires_grad=True)
    y = ember.tanh(t)
    got = y.detach().numpy()
    assert np.isnan(got[0]) and got[1] == 1 and got[2] == -1 and got[3] == x[3]
    assert np.signbit(got[4])
    y.backward(ember.ones(nact.MIN_SIZE))
    grad = t.grad.numpy()
    assert np.isnan(grad[0]) and grad[1] == 0 and grad[2] == 0 and grad[3] == 1 and grad[4] == 1


def test_kernels_run_and_small_tensors_take_numpy():
    assert nact.supports(np.zeros(nact.MIN_SIZE, np.float32))
    assert not nact.supports(np.zeros(nact.MIN_SIZE - 1, np.float32))
    assert not nact.supports(np.zeros(nact.MIN_SIZE, np.float16))
    assert not nact.supports(np.zeros(nact.MIN_SIZE, np.float32), np.zeros(nact.MIN_SIZE))
    with native.use_numba(False):
        assert not nact.supports(np.zeros(nact.MIN_SIZE, np.float32))
    F.silu(ember.randn(nact.MIN_SIZE))
    assert nact._silu_f32.has_run()


def test_non_contiguous_input_and_broadcast_gradient():
    x = ember.randn(2 * nact.MIN_SIZE // 64, 128)[:, ::2]  # strided view
    with native.use_numba(True):
        a = F.gelu(x)
    with native.use_numba(False):
        b = F.gelu(x)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-6, atol=2e-7)
    t = ember.randn(nact.MIN_SIZE, requires_grad=True)
    F.silu(t).sum().backward()  # the gradient of sum() arrives expanded
    with native.use_numba(False):
        s = ember.tensor(t.detach().numpy(), requires_grad=True)
        F.silu(s).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), s.grad.numpy(), rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_and_double_backward_with_numba_on(name, monkeypatch):
    monkeypatch.setattr(nact, "MIN_SIZE", 1)  # let the kernels take small inputs
    fn = CASES[name][0]
    x = ember.randn(3, 5, dtype=ember.float64, requires_grad=True)
    with native.use_numba(True):
        assert ember.autograd.gradcheck(fn, (x,))
        assert ember.autograd.gradgradcheck(fn, (x,))
        # create_graph records the tensor formulas: the same first derivative
        (g1,) = ember.autograd.grad(fn(x).sum(), x, create_graph=True)
        (g0,) = ember.autograd.grad(fn(x).sum(), x)
    np.testing.assert_allclose(g1.detach().numpy(), g0.numpy(), rtol=1e-12, atol=1e-14)


# the three ways `native.run` can run a kernel: (PARALLEL_MIN, SPLIT_MIN)
_WAYS = {"numba's threads": (1, 1 << 62), "cut over ember's threads": (1 << 62, 1),
         "serial": (1 << 62, 1 << 62)}


def test_parallel_split_and_single_thread_runs_agree(monkeypatch):
    """Every kernel run on numba's threads, cut into shares on ember's own threads
    (`native.run`'s `cut`), and on its serial build gives the same numbers (the tests
    above run small arrays on the serial build).

    On numba's threads, of the elementwise kernels only GELU's run: they share one loop,
    ``for i in prange(n): out[i] = f(x[i])``, and each threaded build costs ~0.6 s of
    compiling in CI's cold cache (each f is checked on the serial builds)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((512, 64)).astype(np.float32)
    t = rng.integers(0, 64, 512)
    ops = {"gelu": F.gelu, "gelu_tanh": lambda a: F.gelu(a, approximate="tanh"),
           "silu": F.silu, "tanh": ember.tanh, "relu": F.relu,
           "leaky_relu": lambda a: F.leaky_relu(a, 0.1), "mish": F.mish,
           "softplus": F.softplus,
           "softmax": lambda a: F.softmax(a, -1), "log_softmax": lambda a: F.log_softmax(a, -1),
           "softmax dim 1": lambda a: F.softmax(a.reshape(512, 8, 8), 1),
           "log_softmax dim 1": lambda a: F.log_softmax(a.reshape(512, 8, 8), 1),
           "layer_norm": lambda a: F.layer_norm(a, (64,), ember.ones(64), ember.zeros(64)),
           "layer_norm, no affine": lambda a: F.layer_norm(a, (64,)),
           "dropout": lambda a: (ember.manual_seed(7), F.dropout(a, 0.3))[1],
           "cross_entropy": lambda a: F.cross_entropy(a, ember.tensor(t), label_smoothing=0.1)}
    same_loop = {"gelu_tanh", "silu", "tanh", "relu", "leaky_relu", "softplus"}
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        runs = {}
        for way, (parallel_min, split_min) in _WAYS.items():
            monkeypatch.setattr(native, "PARALLEL_MIN", parallel_min)
            monkeypatch.setattr(native, "SPLIT_MIN", split_min)
            for name, fn in ops.items():
                if way == "numba's threads" and name in same_loop:
                    continue
                a = ember.tensor(x, requires_grad=True)
                y = fn(a)
                (y.sum() if y.dim() else y).backward()
                runs[way, name] = (y.detach().numpy(), a.grad.numpy())
    finally:
        ember.set_num_threads(threads)
    assert len(runs) == 3 * len(ops) - len(same_loop)
    for (way, name), (y, g) in runs.items():
        y_serial, g_serial = runs["serial", name]
        np.testing.assert_allclose(y, y_serial, rtol=1e-6, atol=1e-7, err_msg=f"{way} {name}")
        np.testing.assert_allclose(g, g_serial, rtol=1e-6, atol=1e-7, err_msg=f"{way} {name}")


def test_cut_work_is_dealt_in_contiguous_shares_the_callers_largest(monkeypatch):
    shares = native.shares(1000, 1 << 20, 2)
    assert shares[0].start == 0 and shares[-1].stop == 1000
    assert all(a.stop == b.start for a, b in zip(shares, shares[1:]))
    lead = 1000 * native.LEAD // (1 << 20)   # the caller's extra items
    assert [s.stop - s.start for s in shares] == [(1000 - lead) // 2 + lead,
                                                  1000 - lead - (1000 - lead) // 2]
    assert native.shares(3, 1 << 20, 3) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    # every element computed once: a kernel cut over the two threads fills all of `out`
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        monkeypatch.setattr(native, "SPLIT_MIN", 1)
        cuts = []
        real = native.shares
        monkeypatch.setattr(native, "shares", lambda *a: cuts.append(real(*a)) or cuts[-1])
        flat = np.random.default_rng(0).standard_normal(1001).astype(np.float32)
        out = np.full_like(flat, np.nan)
        native.run(nact._FORWARD["relu", 4], flat.size, flat, out, cut=(0, 1))
    finally:
        ember.set_num_threads(threads)
    assert len(cuts) == 1 and len(cuts[0]) == 2
    np.testing.assert_array_equal(out, np.maximum(flat, 0))


# (the threaded builds of two of the kernels: each build costs ~1 s of compiling in CI)
@pytest.mark.parametrize("name, parallel", [(name, False) for name in (
    "gelu", "gelu_tanh", "silu", "tanh", "relu", "sigmoid", "hardswish")] + [
        ("gelu", True), ("relu", True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backward_over_the_gradient_equals_backward_into_a_new_array(name, dtype, parallel,
                                                                     monkeypatch):
    # the `_into` kernels (a gradient the engine owns) give the same bits as the others
    monkeypatch.setattr(native, "PARALLEL_MIN", 0 if parallel else 1 << 40)
    x = _inputs(dtype)
    g = np.random.default_rng(3).standard_normal(x.size).astype(dtype)
    fresh = nact.backward(name, g, x)
    mine = g.copy()
    out = nact.backward(name, mine, x, overwrite=True)
    assert out is mine
    np.testing.assert_array_equal(mine, fresh)
    assert not np.shares_memory(fresh, g)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("slope", [0.01, 0.2, -0.5, 1.5])
def test_leaky_relu_kernels_give_the_numpy_paths_bits(dtype, slope):
    x = _inputs(dtype)
    x[208:212] = [np.nan, np.inf, -np.inf, -0.0]
    g = np.random.default_rng(5).standard_normal(x.size).astype(dtype)
    results = []
    for flag in (True, False):
        with native.use_numba(flag):
            t = ember.tensor(x, requires_grad=True)
            y = F.leaky_relu(t, slope)
            y.backward(ember.tensor(g))
        results.append((y.detach().numpy(), t.grad.numpy()))
    (y1, g1), (y2, g2) = results
    np.testing.assert_array_equal(y1.view(f"i{x.itemsize}"), y2.view(f"i{x.itemsize}"))
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(g1, np.where(x > 0, g, g * dtype(slope)))


def test_leaky_relu_gradients_of_every_order_with_numba_on(monkeypatch):
    monkeypatch.setattr(nact, "MIN_SIZE", 1)  # let the kernels take small inputs
    x = ember.randn(3, 5, dtype=ember.float64, requires_grad=True)
    with native.use_numba(True):
        assert ember.autograd.gradcheck(lambda a: F.leaky_relu(a, 0.3), (x,))
        assert ember.autograd.gradgradcheck(lambda a: F.leaky_relu(a, 0.3), (x,))


def test_abs_gradient_at_zero_and_nan_is_that_of_sgn():
    """abs' backward kernel multiplies by sgn(x), which is 0 at 0, -0 and NaN (as in
    PyTorch): a NaN or inf gradient there gives NaN, as on the NumPy path."""
    x = np.zeros(nact.MIN_SIZE, np.float32)
    x[:5] = [0.0, -0.0, np.nan, -3.0, 2.0]
    g = np.ones(nact.MIN_SIZE, np.float32)
    g[1] = np.inf
    grads = []
    for numba in (True, False):
        with native.use_numba(numba), np.errstate(invalid="ignore"):
            t = ember.tensor(x, requires_grad=True)
            ember.abs(t).backward(ember.tensor(g))
            grads.append(t.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert grads[0][0] == 0 and np.isnan(grads[0][1]) and grads[0][2] == 0
    assert grads[0][3] == -1 and grads[0][4] == 1


@pytest.mark.parametrize("beta, threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 30.0)])
def test_float32_softplus_kernel_accuracy(beta, threshold):
    # _native_smooth._softplus32: its own exp, and log1p(u) = 2 atanh(u / (u + 2)) by a
    # series; within 3e-7 relative of float64 wherever the result is a normal float32
    x = np.concatenate([np.linspace(-120, 120, 24001), np.geomspace(1e-30, 1, 500),
                        -np.geomspace(1e-30, 1, 500)]).astype(np.float32)
    got = F.softplus(ember.tensor(x), beta, threshold).numpy()
    z = x.astype(np.float64) * beta
    want = np.where(z > threshold, x.astype(np.float64),
                    (np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / beta)
    normal = want > np.finfo(np.float32).tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=3e-7)
    assert np.all(np.abs(got[~normal]) <= np.finfo(np.float32).tiny)   # (flushed to 0)


@pytest.mark.parametrize("fn, scale, alpha, input_scale", [
    (lambda t: F.elu(t), 1.0, 1.0, 1.0), (lambda t: F.elu(t, 0.3), 1.0, 0.3, 1.0),
    (F.selu, _SELU[1], _SELU[0], 1.0), (lambda t: F.celu(t, 2.5), 1.0, 2.5, 1 / 2.5)])
def test_float32_elu_kernel_accuracy(fn, scale, alpha, input_scale):
    # _native_smooth._elu32: the kernels' own expm1 (_expm1_32), exact near 0; within
    # 2 ulps of float64's expm1 (3e-7 relative, as NumPy's is) plus scale's rounding
    x = np.concatenate([np.linspace(-40, 10, 50001), -np.geomspace(1e-30, 1, 500),
                        np.geomspace(1e-30, 1, 50)]).astype(np.float32)
    got = fn(ember.tensor(x)).numpy()
    x64 = x.astype(np.float64)
    want = scale * np.where(x64 > 0, x64, alpha * np.expm1(np.minimum(x64, 0) * input_scale))
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=0)
    special = np.float32([np.nan, -np.inf, np.inf, -0.0, 0.0, -17.6, -200.0])
    special = np.concatenate([special, np.zeros(nact.MIN_SIZE, np.float32)])
    got = F.elu(ember.tensor(special)).numpy()[:7]
    assert np.isnan(got[0]) and got[1] == -1 and got[2] == np.inf
    assert got[3] == 0 and np.signbit(got[3]) and got[4] == 0 and not np.signbit(got[4])
    assert got[5] == -1 and got[6] == -1    # exp(x) below half an ulp of 1


def test_float32_tanh_kernel_within_three_ulps_and_special_values():
    # the forward kernel (_tanh_f32): NumPy's float32 tanh runs on one thread
    x = np.concatenate([np.linspace(-12, 12, 200001), np.geomspace(1e-30, 1, 5000),
                        -np.geomspace(1e-30, 1, 5000)]).astype(np.float32)
    got = ember.tensor(x).tanh().numpy()
    want = np.tanh(x.astype(np.float64))
    normal = np.abs(want) >= np.finfo(np.float32).tiny
    ulps = np.abs(got[normal] - want[normal]) / np.spacing(
        np.abs(want[normal]).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 3
    special = np.zeros(nact.MIN_SIZE, np.float32)
    special[:5] = [np.nan, np.inf, -np.inf, -0.0, 1e-40]
    got = ember.tensor(special).tanh().numpy()[:5]
    assert np.isnan(got[0]) and got[1] == 1 and got[2] == -1
    assert got[3] == 0 and np.signbit(got[3]) and got[4] == np.float32(1e-40)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (0.0, 6.0)])
def test_hardtanh_kernels_give_the_numpy_paths_bits(dtype, bounds):
    x0 = (3 * np.random.default_rng(6).standard_normal(nact.MIN_SIZE + 3)).astype(dtype)
    x0[:4] = [np.nan, bounds[0], bounds[1], -np.inf]
    g0 = np.random.default_rng(7).standard_normal(x0.size).astype(dtype)
    g0[5] = np.inf
    results = []
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            y = F.hardtanh(x, *bounds)
            y.backward(ember.tensor(g0))
            results.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    y, g = results[0]
    inside = (x0 > bounds[0]) & (x0 < bounds[1])
    np.testing.assert_array_equal(y[4:], np.clip(x0[4:], *bounds))
    assert np.isnan(y[0]) and g[0] == 0    # nan gets 0, as in PyTorch's vectorized loop
    np.testing.assert_array_equal(g[1:], np.where(inside[1:], g0[1:], 0))


# ---------------------------------------------------------------------------
# in-place activations: the kernel writes straight into the tensor's array


@pytest.mark.parametrize("name, call, reference, slope", [
    ("relu_", lambda t: ember.relu_(t), lambda a: np.maximum(a, 0), (0.0, 1.0)),
    ("leaky_relu_", lambda t: ember.nn.functional.leaky_relu_(t, 0.2),
     lambda a: np.where(a > 0, a, a * np.float32(0.2)), (0.2, 1.0)),
    ("hardtanh_", lambda t: ember.nn.functional.hardtanh_(t, -0.5, 0.5),
     lambda a: np.clip(a, -0.5, 0.5), (0.0, 1.0)),
])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_inplace_activations_write_into_the_array(name, call, reference, slope, layout,
                                                   monkeypatch):
    """A large C-contiguous tensor is written by the kernel itself (`writes_into`: no new
    array copied back); a transposed view as ember's in-place ops on views do.  Both give
    the values and the gradient of the out-of-place op, and bump the version counter."""
    x0 = np.random.default_rng(3).standard_normal((96, 512)).astype(np.float32)
    w = ember.tensor(x0, requires_grad=True)
    asked = []
    real = nact.writes_into
    monkeypatch.setattr(nact, "writes_into", lambda *a, **k: asked.append(real(*a, **k))
                        or asked[-1])
    y = w * 1.0 if layout == "contiguous" else (w.t() * 1.0).t()
    before, version = y._data, y._version.value
    out = call(y)
    assert out is y and y._data is before and y._version.value == version + 1
    if layout == "contiguous":
        assert asked == [True]
    expected = reference(x0)
    np.testing.assert_array_equal(y.detach().numpy(), expected)
    y.backward(ember.ones(y.shape))
    inside = (x0 > -0.5) & (x0 < 0.5) if name == "hardtanh_" else x0 > 0
    expected_grad = np.where(inside, np.float32(slope[1]), np.float32(slope[0]))
    np.testing.assert_array_equal(w.grad.numpy(), expected_grad)
