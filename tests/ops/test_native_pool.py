"""2-d max pooling through the numba kernels (ember/ops/_native_pool.py) against the NumPy
path (``use_numba(False)``), a float64 loop written here, and gradcheck on both paths."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.ops import _native as native
from ember.ops import _native_pool

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")

# (kernel, stride, padding, dilation, ceil_mode)
GEOMETRIES = [
    (2, 2, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 1, 1, 1, False),
    ((2, 3), (1, 2), (1, 0), (2, 1), True),
    (3, 2, 0, 1, True),
]


def _input(shape=(3, 5, 17, 18), dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).round(1).astype(dtype)  # rounding makes ties
    x[0, 0, :4, :4] = -np.inf
    x[1, 2, 3, 5] = np.nan
    x[1, 2, 3, 6] = np.nan
    x[2, 1, 7, :] = np.inf
    return x


def _loop_reference(x, kernel, stride, pad, dilation, out_size):
    """Max and flat argmax per window, by a plain loop (first inside starts the window)."""
    n, c, height, width = x.shape
    out = np.empty((n, c) + out_size)
    idx = np.empty((n, c) + out_size, dtype=np.int64)
    for a in range(n):
        for b in range(c):
            for oy in range(out_size[0]):
                for ox in range(out_size[1]):
                    best, at = None, None
                    for i in range(kernel[0]):
                        for j in range(kernel[1]):
                            iy = oy * stride[0] - pad[0] + i * dilation[0]
                            ix = ox * stride[1] - pad[1] + j * dilation[1]
                            if not (0 <= iy < height and 0 <= ix < width):
                                continue
                            v = x[a, b, iy, ix]
                            if at is None or v > best or np.isnan(v):
                                best, at = v, iy * width + ix
                    out[a, b, oy, ox], idx[a, b, oy, ox] = best, at
    return out, idx


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


def _pool(x, geometry, flag):
    kernel, stride, pad, dilation, ceil_mode = geometry
    with native.use_numba(flag):
        xt = ember.tensor(x, requires_grad=True)
        out, idx = F.max_pool2d(xt, kernel, stride, pad, dilation, ceil_mode,
                                return_indices=True)
        g = np.arange(out.numel(), dtype=x.dtype).reshape(out.shape) % 7 - 3
        out.backward(ember.tensor(g))
        values = F.max_pool2d(ember.tensor(x), kernel, stride, pad, dilation, ceil_mode)
    return out.detach().numpy(), idx.numpy(), xt.grad.numpy(), values.numpy()


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_native_equals_numpy_path_and_loop(geometry, dtype):
    x = _input(dtype=dtype)
    native_result = _pool(x, geometry, True)
    numpy_result = _pool(x, geometry, False)
    for a, b in zip(native_result, numpy_result):
        np.testing.assert_array_equal(a, b)
    out, idx = native_result[:2]
    kernel, stride, pad, dilation, _ = geometry
    ref_out, ref_idx = _loop_reference(x, _pair(kernel), _pair(stride), _pair(pad),
                                       _pair(dilation), out.shape[2:])
    np.testing.assert_array_equal(out, ref_out)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(native_result[3], ref_out)
    if (kernel, stride, dilation) == (3, 2, 1):   # ResNet's windows: their own kernel
        assert _native_pool._max_pool2d_k3s2.has_run()


@pytest.mark.parametrize("flag", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("geometry", GEOMETRIES[:3], ids=str)
def test_gradcheck_both_paths(geometry, flag):
    kernel, stride, pad, dilation, ceil_mode = geometry
    # distinct values (no ties) so that the maximum is differentiable
    x = np.random.default_rng(1).permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 100.0
    with native.use_numba(flag):
        assert gradcheck(lambda t: F.max_pool2d(t, kernel, stride, pad, dilation, ceil_mode),
                         (ember.tensor(x, requires_grad=True),))


@needs_numba
def test_scatter_with_outside_index_takes_numpy_path():
    g = np.ones((1, 2, 64, 64))
    idx = np.zeros((1, 2, 64, 64), dtype=np.int64)
    assert _native_pool.scatter(g, idx, (8, 8))[0, 0, 0, 0] == 64 * 64
    idx[0, 1, 3, 3] = 64
    assert _native_pool.scatter(g, idx, (8, 8)) is None


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = _input(dtype=np.float32)
    x[np.isnan(x)] = 0  # PyTorch's NaN pick differs only in which NaN
    for geometry in GEOMETRIES:
        kernel, stride, pad, dilation, ceil_mode = geometry
        out, idx, grad, _ = _pool(x, geometry, True)
        xt = torch.tensor(x, requires_grad=True)
        t_out, t_idx = torch.nn.functional.max_pool2d(xt, kernel, stride, pad, dilation,
                                                      ceil_mode, return_indices=True)
        g = np.arange(out.size, dtype=np.float32).reshape(out.shape) % 7 - 3
        t_out.backward(torch.tensor(g))
        np.testing.assert_array_equal(out, t_out.detach().numpy())
        np.testing.assert_array_equal(idx, t_idx.numpy())
        np.testing.assert_array_equal(grad, xt.grad.numpy())


@needs_numba
@pytest.mark.parametrize("geometry", GEOMETRIES[:2], ids=str)
def test_indices_kept_for_the_gradient_alone_are_int32(geometry):
    # the numba path's graph keeps int32 indices (half the memory, one build), also when
    # the user asks for the indices, who gets them as int64; both give the NumPy path's
    # gradient
    kernel, stride, pad, dilation, ceil_mode = geometry
    x = _input(dtype=np.float32)
    g = np.arange(x.size, dtype=np.float32).reshape(x.shape) % 5 - 2
    grads = {}
    for flag, wanted in ((True, False), (True, True), (False, False)):
        t = ember.tensor(x, requires_grad=True)
        with native.use_numba(flag):
            result = F.max_pool2d(t, kernel, stride, pad, dilation, ceil_mode,
                                  return_indices=wanted)
            out = result[0] if wanted else result
            kept = out.grad_fn.idx
            assert kept.dtype == (np.int32 if flag else np.int64)
            if wanted:
                assert result[1].dtype == ember.int64
                with native.use_numba(False):
                    reference = F.max_pool2d(ember.tensor(x), kernel, stride, pad, dilation,
                                             ceil_mode, True)[1]
                np.testing.assert_array_equal(result[1].numpy(), reference.numpy())
            out.backward(ember.tensor(g[..., :out.shape[2], :out.shape[3]]))
        grads[flag, wanted] = t.grad.numpy()
    np.testing.assert_array_equal(grads[True, False], grads[False, False])
    np.testing.assert_array_equal(grads[True, True], grads[False, False])


@pytest.mark.parametrize("op", ["max_pool2d", "max_dim", "sort", "topk", "cummax"])
def test_no_zeros_made_for_the_indices_gradient(op, monkeypatch):
    # the integer indices get no gradient: the engine must not fill one with zeros
    from ember._core import engine

    made = []
    real = engine._zeros_for
    monkeypatch.setattr(engine, "_zeros_for", lambda meta, like: made.append(meta) or
                        real(meta, like))
    x = ember.tensor(np.random.default_rng(2).permutation(2 * 3 * 8 * 8)
                     .reshape(2, 3, 8, 8) / 10.0, requires_grad=True)
    pick = {"max_pool2d": lambda t: F.max_pool2d(t, 2),
            "max_dim": lambda t: t.max(dim=3)[0],
            "sort": lambda t: t.sort(dim=3)[0][..., :2],
            "topk": lambda t: t.topk(3, dim=3)[0],
            "cummax": lambda t: t.cummax(dim=3)[0]}[op]
    (pick(x) * 2).sum().backward()
    assert made == []
    assert x.grad.sum().item() == pytest.approx(2 * pick(x).numel())


@needs_numba
def test_scatter_cut_over_two_threads(on_two_threads):
    """A scatter large enough to be cut over the threads by planes: the sums of NumPy's
    unbuffered adds, and an index off a plane in the second thread's share still sends
    the caller to the NumPy path."""
    rng = np.random.default_rng(8)
    g = rng.standard_normal((4, 24, 40, 40)).astype(np.float32)
    idx = rng.integers(0, 64 * 64, g.shape)
    assert native.cuts(4 * 24 * 64 * 64)
    expected = np.zeros((4 * 24, 64 * 64), np.float32)
    for p, (gp, ip) in enumerate(zip(g.reshape(96, -1), idx.reshape(96, -1))):
        np.add.at(expected[p], ip, gp)
    got = _native_pool.scatter(g, idx, (64, 64))
    np.testing.assert_allclose(got.reshape(96, -1), expected, rtol=1e-5, atol=1e-5)
    idx[3, 23, 0, 0] = 64 * 64   # the last plane's
    assert _native_pool.scatter(g, idx, (64, 64)) is None
