"""The fused float32 kernels (ops/_kernels.py) against plain NumPy / float64 references,
and the first-order fast paths against the recorded (double-backward) formulas."""

import math

import numpy as np
import pytest

import ember
from ember._core import backend
from ember.ops import _kernels
from ember.ops import _native as native


def _normal_cdf64(x):
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def test_gelu_f32_matches_float64_reference():
    x = np.concatenate([np.linspace(-9, 9, 20001), [0.0, -0.0]]).astype(np.float32)
    x64 = x.astype(np.float64)
    ref = x64 * _normal_cdf64(x64)
    got = _kernels.gelu_f32(x)
    assert got.dtype == np.float32
    assert np.max(np.abs(got - ref) / np.maximum(np.abs(x64), 1)) < 5e-7
    pdf = np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
    g = np.linspace(-1, 1, x.size).astype(np.float32)
    ref_b = g * (_normal_cdf64(x64) + x64 * pdf)
    assert np.max(np.abs(_kernels.gelu_backward_f32(g, x) - ref_b)) < 2e-6


def test_gelu_f32_special_values_and_blocks():
    out = _kernels.gelu_f32(np.float32([np.nan, np.inf, -np.inf, 0.0]))
    assert np.isnan(out[0]) and out[1] == np.inf and np.isnan(out[2]) and out[3] == 0
    x = np.random.default_rng(0).standard_normal((3, _kernels.BLOCK + 7)).astype(np.float32)
    np.testing.assert_allclose(_kernels.gelu_f32(x), _kernels.gelu_f32(x.copy(order="F")),
                               rtol=0, atol=0)


def test_gelu_backward_from_kept_cdf_is_the_same():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(_kernels.BLOCK + 99) * 4).astype(np.float32)
    x[:5] = [np.inf, -np.inf, np.nan, 0.0, -0.0]
    g = rng.standard_normal(x.size).astype(np.float32)
    out, cdf2 = _kernels.gelu_f32(x, keep_cdf=True)
    np.testing.assert_array_equal(out, _kernels.gelu_f32(x))
    np.testing.assert_allclose(cdf2[5:], 2 * _normal_cdf64(x[5:].astype(np.float64)),
                               rtol=0, atol=5e-7)
    np.testing.assert_array_equal(_kernels.gelu_backward_f32(g, x, cdf2),
                                  _kernels.gelu_backward_f32(g, x))


def test_gelu_keeps_cdf_only_for_a_recorded_graph():
    with native.use_numba(False):  # (the NumPy path's kernels are the ones under test)
        _check_gelu_keeps_cdf()


def _check_gelu_keeps_cdf():
    x = ember.randn(4, 50, requires_grad=True)
    y = ember.nn.functional.gelu(x)
    assert y.grad_fn.cdf2 is not None
    w = ember.randn(4, 50)
    (gx,) = ember.autograd.grad(y, x, w, retain_graph=True)
    (again,) = ember.autograd.grad(y, x, w)  # kept array still valid with retain_graph
    ref = _kernels.gelu_backward_f32(w.numpy(), x.detach().numpy())
    np.testing.assert_array_equal(gx.numpy(), ref)
    np.testing.assert_array_equal(again.numpy(), ref)
    assert y.grad_fn.cdf2 is None  # freed with the graph
    with ember.no_grad():
        assert ember.nn.functional.gelu(x).grad_fn is None
    y2 = ember.nn.functional.gelu(x.detach())
    assert y2.grad_fn is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_relu_backward_is_where(dtype):
    y = np.array([-1.0, 0.0, -0.0, 2.0, np.nan, np.inf, 3.0], dtype)
    g = np.array([1.0, 2.0, 3.0, np.nan, 4.0, 5.0, np.inf], dtype)
    got = _kernels.relu_backward(g, y)
    ref = np.where(y <= 0, dtype(0), g)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref)
    assert not np.signbit(got[:3]).any()  # +0.0 where dropped


def test_sum_last_matches_sum():
    rng = np.random.default_rng(1)
    for shape in [(4, 64), (2, 3, 65), (7,), (0, 5), (5, 0)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(_kernels.sum_last(x, -1), x.sum(-1, keepdims=True),
                                   rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((3, 4))
    np.testing.assert_allclose(_kernels.sum_last(x, 0), x.sum(0, keepdims=True))


def _first_and_recorded(fn, *shapes):
    """Gradients of sum(fn(x) * w) from a plain backward (first-order fast paths) and
    from autograd.grad(create_graph=True) (the recorded tensor formulas)."""
    out = []
    for create_graph in (False, True):
        rng = np.random.default_rng(2)
        xs = [ember.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
        y = fn(*xs)
        w = ember.tensor(rng.standard_normal(tuple(y.shape)))
        grads = ember.autograd.grad((y * w).sum(), xs, create_graph=create_graph)
        out.append([g.detach().numpy() for g in grads])
    return out


@pytest.mark.parametrize("fn, shapes", [
    (lambda x: ember.softmax(x, -1), [(3, 4, 6)]),
    (lambda x: ember.softmax(x, 1), [(3, 4, 6)]),
    (lambda x: ember.log_softmax(x, -1), [(5, 9)]),
    (lambda x, w, b: ember.nn.functional.layer_norm(x, (6,), w, b), [(3, 4, 6), (6,), (6,)]),
    (lambda x: ember.nn.functional.layer_norm(x, (4, 6)), [(3, 4, 6)]),
    (lambda x: ember.nn.functional.cross_entropy(x, ember.tensor([1, 0, 3]), reduction="none"),
     [(3, 5)]),
    (lambda x: ember.nn.functional.cross_entropy(
        x, ember.tensor([[1, 0], [2, -100]]), ignore_index=-100, reduction="none"), [(2, 4, 2)]),
    (lambda x: ember.nn.functional.nll_loss(x, ember.tensor([1, 0, 3])), [(3, 5)]),
    (lambda x: ember.nn.functional.nll_loss(
        x, ember.tensor([[1, 0], [2, -100]]), reduction="none"), [(2, 4, 2)]),
    (lambda x: ember.nn.functional.cross_entropy(x, ember.tensor([1, 0, 3])), [(3, 5)]),
    (lambda x, y: x * y, [(3, 4), (3, 4)]),
    (lambda x, y: x * y, [(3, 1), (1, 4)]),            # broadcast: summed back by the engine
    (lambda x, y: x * y, [(), ()]),                    # 0-d: NumPy returns a scalar there
    (lambda x: x * 2.5, [(3,)]),
    (lambda x: x * x * x, [(2, 3)]),
    (lambda a, b: a @ b, [(3, 4), (4, 5)]),
    (lambda a, b: a @ b.t(), [(3, 4), (5, 4)]),                       # F-ordered operand
    (lambda a, b: a.t() @ b, [(4, 3), (4, 5)]),
    (lambda x, w, b: ember.nn.functional.linear(x, w, b), [(3, 4), (5, 4), (5,)]),
    (lambda c, a, b: ember.addmm(c, a, b, beta=0.5, alpha=2.0), [(3, 5), (3, 4), (4, 5)]),
    (lambda c, a, b: ember.addmm(c, a, b), [(1, 5), (3, 4), (4, 5)]),  # broadcast input
])
def test_first_order_fast_paths_match_recorded_formulas(fn, shapes):
    first, recorded = _first_and_recorded(fn, *shapes)
    for a, b in zip(first, recorded):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_first_order_mul_backward_gives_array_tensors():
    x = ember.tensor(3.0, requires_grad=True)
    (x * x * 2).backward()
    assert x.grad.item() == 12.0 and isinstance(x.grad._data, np.ndarray)
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0], dtype=ember.float64, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == ember.float32 and a.grad.tolist() == [3.0, 4.0]
    assert b.grad.dtype == ember.float64 and b.grad.tolist() == [1.0, 2.0]


def test_first_order_linear_backward_gives_a_contiguous_weight_grad():
    x = ember.randn(8, 4)
    layer = ember.nn.Linear(4, 3)
    layer(x).sum().backward()
    assert layer.weight.grad._data.flags.c_contiguous
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.tile(x.numpy().sum(0), (3, 1)),
                               rtol=1e-5)
    half = ember.randn(5, 4, dtype=ember.float16, requires_grad=True)
    (half @ ember.randn(4, 2, dtype=ember.float16)).sum().backward()
    assert half.grad.dtype == ember.float16


def test_keep_freed_memory_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("EMBER_NO_MALLOPT", "1")
    assert backend.keep_freed_memory() is False
    monkeypatch.delenv("EMBER_NO_MALLOPT")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")  # the user's own setting wins
    assert backend.keep_freed_memory() is False


def test_keep_freed_memory_settings(monkeypatch):
    # blocks below 32 MiB stay in the heap (mmap threshold), freed memory up to 1 GiB is
    # kept (trim threshold)
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt: Linux only")
    calls = []

    class FakeLibc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    for name in ("EMBER_NO_MALLOPT", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                 "MALLOC_TOP_PAD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeLibc())
    assert backend.keep_freed_memory() is True
    assert calls == [(-3, 32 << 20), (-1, 1 << 30)]   # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD


def _shifted_softmax(x, log):
    y = x - x.max(-1, keepdims=True)
    if log:
        return y - np.log(np.exp(y).sum(-1, keepdims=True))
    e = np.exp(y)
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_match_the_shifted_formula(log, dtype):
    rng = np.random.default_rng(3)
    special = np.array([[-np.inf, 0, 1], [-np.inf, -np.inf, -np.inf], [np.nan, 1, 2],
                        [1e4, 1, 2], [-200, -300, -250], [80, 80, 80], [-1, -2, -3]])
    cases = [rng.standard_normal((300, 64)) * 3, rng.standard_normal((20, 7)) * 50 - 300,
             special, rng.standard_normal((3, 5)) - 10]
    fn = _kernels.log_softmax_rows if log else _kernels.softmax_rows
    with np.errstate(all="ignore"):
        for x in cases:
            x = x.astype(dtype)
            got, ref = fn(x), _shifted_softmax(x, log)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, ref, rtol=2e-6 if dtype == np.float32 else 1e-12,
                                       atol=1e-6 if dtype == np.float32 else 1e-14)


def test_layer_norm_fast_path_matches_numpy():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 5, 6)).astype(np.float32)
    w, b = rng.standard_normal((5, 6)).astype(np.float32), rng.standard_normal((5, 6))
    out = ember.nn.functional.layer_norm(ember.tensor(x), (5, 6), ember.tensor(w),
                                         ember.tensor(b.astype(np.float32)))
    flat = x.reshape(4, 3, 30).astype(np.float64)
    y = (flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + 1e-5)
    ref = y.reshape(x.shape) * w + b
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_sum_leading_matches_sum():
    rng = np.random.default_rng(6)
    for shape, dims in [((300, 400), (0,)), ((20, 30, 200), (0, 1)), ((20, 30, 200), (0,))]:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape).astype(dtype)
            for keepdim in (False, True):
                got = _kernels.sum_leading(x, dims, keepdim)
                want = x.sum(axis=dims, keepdims=keepdim)
                assert got.shape == want.shape and got.dtype == dtype
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
                np.testing.assert_allclose(ember.tensor(x).sum(dims, keepdim).numpy(), want,
                                           rtol=1e-5, atol=1e-4)
    x = rng.standard_normal((300, 400)).astype(np.float32)
    assert _kernels.sum_leading(x, (1,), False) is None  # not a leading dim
    assert _kernels.sum_leading(x[:, ::2], (0,), False) is None  # not contiguous
    assert _kernels.sum_leading(x[:10, :10], (0,), False) is None  # small: NumPy's sum
