"""Training-mode batch norm through the numba kernels (ember/ops/_native_batchnorm.py)
against a float64 NumPy reference, the NumPy path (``use_numba(False)``), and gradcheck
and gradgradcheck on both paths."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.ops import _native_batchnorm

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")

SHAPES = [(16, 8, 9, 10), (700, 12), (5, 6, 5, 7, 9)]


def _reference(x, w, b, g, eps=1e-5):
    """float64 forward and gradients of batch norm, written out per channel."""
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(axis=dims, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=dims, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    out = y * w.reshape(shape) + b.reshape(shape)
    gy = g * w.reshape(shape)
    gx = (gy - gy.mean(axis=dims, keepdims=True)
          - y * (gy * y).mean(axis=dims, keepdims=True)) / np.sqrt(var + eps)
    return out, gx, (g * y).sum(axis=dims), g.sum(axis=dims), mean, var


def _run(x, w, b, g, flag, affine=True):
    with native.use_numba(flag):
        xt = ember.tensor(x, requires_grad=True)
        wt = ember.tensor(w, requires_grad=True) if affine else None
        bt = ember.tensor(b, requires_grad=True) if affine else None
        rm, rv = ember.zeros(x.shape[1], dtype=xt.dtype), ember.ones(x.shape[1], dtype=xt.dtype)
        out = F.batch_norm(xt, rm, rv, wt, bt, training=True, momentum=0.2)
        out.backward(ember.tensor(g))
    grads = [xt.grad.numpy()] + ([wt.grad.numpy(), bt.grad.numpy()] if affine else [])
    return [out.detach().numpy()] + grads + [rm.numpy(), rv.numpy()]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    return (x, rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype),
            rng.standard_normal(shape).astype(dtype))


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_native_matches_reference_and_numpy_path(shape, dtype):
    x, w, b, g = _data(shape, dtype)
    assert x.size >= _native_batchnorm.MIN_SIZE
    ours = _run(x, w, b, g, True)
    plain = _run(x, w, b, g, False)
    out, gx, gw, gb, mean, var = _reference(*(a.astype(np.float64) for a in (x, w, b, g)))
    n = x.size // x.shape[1]
    running_mean = 0.2 * mean.reshape(-1)
    running_var = 0.8 + 0.2 * var.reshape(-1) * n / (n - 1)
    tol = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}
    for result in (ours, plain):
        for got, want in zip(result, (out, gx, gw, gb, running_mean, running_var)):
            assert got.dtype == dtype
            np.testing.assert_allclose(got, want, **tol[dtype])
    for a, b_ in zip(ours, plain):
        np.testing.assert_allclose(a, b_, **tol[dtype])


@needs_numba
def test_without_affine():
    x, w, b, g = _data((32, 5, 8, 8), np.float64)
    ours = _run(x, w, b, g, True, affine=False)
    out, gx, *_ = _reference(x, np.ones_like(w), np.zeros_like(b), g)
    np.testing.assert_allclose(ours[0], out, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ours[1], gx, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("flag", [True, False], ids=["numba", "numpy"])
def test_gradcheck_both_paths(flag, monkeypatch):
    monkeypatch.setattr(_native_batchnorm, "MIN_SIZE", 0)  # the kernels on a small input
    rng = np.random.default_rng(2)
    inputs = (ember.tensor(rng.standard_normal((3, 4, 5, 2)), requires_grad=True),
              ember.tensor(rng.standard_normal(4), requires_grad=True),
              ember.tensor(rng.standard_normal(4), requires_grad=True))

    def fn(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)

    with native.use_numba(flag):
        assert gradcheck(fn, inputs)
        assert gradgradcheck(fn, inputs)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    x, w, b, g = _data((16, 8, 9, 10), np.float32)
    ours = _run(x, w, b, g, True)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    rm, rv = torch.zeros(8), torch.ones(8)
    out = torch.nn.functional.batch_norm(xt, rm, rv, wt, bt, training=True, momentum=0.2)
    out.backward(torch.tensor(g))
    theirs = [out.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy(),
              rm.numpy(), rv.numpy()]
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-4)


@needs_numba
def test_channels_cut_over_two_threads_give_one_threads_bits(on_two_threads, monkeypatch):
    """From SPLIT_MIN elements the channels are cut in two ranges over the threads (each
    a serial build): every channel is computed as on one thread, bit for bit, and the
    float64 reference holds."""
    x, w, b, g = _data((24, 7, 40, 41), np.float32, seed=3)
    assert native.cuts(x.size)
    ranges = []
    real = _native_batchnorm._parallel.run_parts
    monkeypatch.setattr(_native_batchnorm._parallel, "run_parts",
                        lambda fn, parts: ranges.append(parts) or real(fn, parts))
    two = _run(x, w, b, g, True)
    assert ranges == [[slice(0, 3), slice(3, 7)]] * 2   # forward, backward
    ember.set_num_threads(1)
    one = _run(x, w, b, g, True)
    for a, b_ in zip(two, one):
        np.testing.assert_array_equal(a, b_)
    out, gx, gw, gb, _, _ = _reference(*(a.astype(np.float64) for a in (x, w, b, g)))
    for got, want in zip(two, (out, gx, gw, gb)):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
