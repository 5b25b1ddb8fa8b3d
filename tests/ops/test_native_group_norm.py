"""Group norm as one node (normalization.GroupNorm): the group-norm kernels
(ember/ops/_native_group_norm.py), or layer norm's NumPy rows and an affine map, against a
float64 NumPy reference and the composite form, on the numba and the NumPy paths, with
gradients of first and second order."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.ops.normalization import _group_norm_composite

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")

# (shape, groups): large enough for the native kernels (>= 8192 elements), and small ones
CASES = [((4, 8, 16, 20), 4), ((3, 12, 300), 3), ((2, 6, 5, 4), 6), ((5, 4), 2)]


def _reference(x, groups, w, b, g, eps=1e-5):
    """float64 forward and input/weight/bias gradients of group norm, written out."""
    n, c = x.shape[:2]
    rows = x.reshape(n * groups, -1)
    mean = rows.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(((rows - mean) ** 2).mean(1, keepdims=True) + eps)
    y = ((rows - mean) * rstd).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    out = y * w.reshape(shape) + b.reshape(shape)
    axes = (0,) + tuple(range(2, x.ndim))
    gy = (g * w.reshape(shape)).reshape(n * groups, -1)
    yr = y.reshape(n * groups, -1)
    gx = rstd * (gy - gy.mean(1, keepdims=True) - yr * (gy * yr).mean(1, keepdims=True))
    return out, gx.reshape(x.shape), (g * y).sum(axes), g.sum(axes)


@pytest.mark.parametrize("numba_on", [pytest.param(True, marks=needs_numba), False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, groups", CASES)
def test_group_norm_node_matches_the_reference(shape, groups, dtype, numba_on):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape) * 3 + 1
    w0, b0 = rng.uniform(0.5, 2, shape[1]), rng.standard_normal(shape[1])
    g0 = rng.standard_normal(shape)
    out0, gx0, gw0, gb0 = _reference(x0, groups, w0, b0, g0)
    with native.use_numba(numba_on):
        x = ember.tensor(x0.astype(dtype), requires_grad=True)
        w = ember.tensor(w0.astype(dtype), requires_grad=True)
        b = ember.tensor(b0.astype(dtype), requires_grad=True)
        out = F.group_norm(x, groups, w, b)
        assert out.grad_fn.name() == "NativeGroupNormBackward0"
        out.backward(ember.tensor(g0.astype(dtype)))
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-10)
    for got, expected in ((out.detach(), out0), (x.grad, gx0), (w.grad, gw0), (b.grad, gb0)):
        np.testing.assert_allclose(got.numpy(), expected, **tol)


@pytest.mark.parametrize("numba_on", [pytest.param(True, marks=needs_numba), False])
def test_group_norm_node_takes_a_strided_input(numba_on):
    # a transposed input (copied for the kernels): the reference's values and gradients
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal((4, 20, 16, 8)).transpose(0, 3, 2, 1)   # (4, 8, 16, 20)
    w0, b0 = rng.uniform(0.5, 2, 8), rng.standard_normal(8)
    g0 = rng.standard_normal(x0.shape)
    out0, gx0, gw0, gb0 = _reference(np.ascontiguousarray(x0), 4, w0, b0, g0)
    with native.use_numba(numba_on):
        x = ember.tensor(x0, requires_grad=True)
        w, b = ember.tensor(w0, requires_grad=True), ember.tensor(b0, requires_grad=True)
        assert not x._data.flags.c_contiguous
        out = F.group_norm(x, 4, w, b)
        out.backward(ember.tensor(g0))
    for got, expected in ((out.detach(), out0), (x.grad, gx0), (w.grad, gw0), (b.grad, gb0)):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("numba_on", [pytest.param(True, marks=needs_numba), False])
@pytest.mark.parametrize("affine", ["none", "weight without grad"])
def test_group_norm_node_without_affine_gradients(affine, numba_on):
    # no weight or bias gradient wanted: the node skips the affine map's sums, and the
    # input's gradient goes through the weight alone (or straight through)
    shape, groups = (4, 8, 16, 20), 4
    rng = np.random.default_rng(5)
    x0, g0 = rng.standard_normal(shape), rng.standard_normal(shape)
    w0 = rng.uniform(0.5, 2, shape[1]) if affine != "none" else np.ones(shape[1])
    _, gx0, _, _ = _reference(x0, groups, w0, np.zeros(shape[1]), g0)
    with native.use_numba(numba_on):
        x = ember.tensor(x0, requires_grad=True)
        w = None if affine == "none" else ember.tensor(w0)
        out = F.group_norm(x, groups, w)
        assert out.grad_fn.name() == "NativeGroupNormBackward0"
        out.backward(ember.tensor(g0))
    np.testing.assert_allclose(x.grad.numpy(), gx0, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("numba_on", [pytest.param(True, marks=needs_numba), False])
def test_group_norm_node_gradients_of_every_order(numba_on):
    """First order from the kernels, second order through the composite form: gradcheck
    and gradgradcheck in float64, with and without the affine parameters."""
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((2, 4, 3, 2)), requires_grad=True)
    w = ember.tensor(rng.uniform(0.5, 2, 4), requires_grad=True)
    b = ember.tensor(rng.standard_normal(4), requires_grad=True)
    with native.use_numba(numba_on):
        for fn, args in ((lambda a, c, d: F.group_norm(a, 2, c, d), (x, w, b)),
                         (lambda a: F.group_norm(a, 4), (x,))):
            assert gradcheck(fn, args)
            assert gradgradcheck(fn, args)


@needs_numba
def test_large_group_norm_second_order_equals_the_composite_forms():
    rng = np.random.default_rng(2)
    x0, w0 = rng.standard_normal((4, 8, 16, 20)), rng.uniform(0.5, 2, 8)
    grads = []
    for fn in (lambda a, c: F.group_norm(a, 4, c), lambda a, c: _group_norm_composite(
            a, c, None, 4, 1e-5)):
        x = ember.tensor(x0, requires_grad=True)
        w = ember.tensor(w0, requires_grad=True)
        out = fn(x, w)
        (gx,) = ember.autograd.grad((out * out.detach()).sum(), x, create_graph=True)
        gx.pow(2).sum().backward()
        grads.append((gx.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for ours, composite in zip(*grads):
        np.testing.assert_allclose(ours, composite, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("numba_on", [pytest.param(True, marks=needs_numba), False])
def test_group_norm_node_keeps_its_input_for_the_version_check(numba_on):
    # as PyTorch's node: it keeps the input, not the output: writing into the output
    # leaves the backward as it was; writing into the input is caught
    rng = np.random.default_rng(6)
    x0, c0 = rng.standard_normal((4, 8, 16, 20)), rng.standard_normal((4, 8, 16, 20))
    grads = []
    with native.use_numba(numba_on):
        for modify in (False, True):
            x = ember.tensor(x0, requires_grad=True)
            out = F.group_norm(x * 1, 4)
            if modify:
                out.mul_(2)
            (out * ember.tensor(c0)).sum().backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[1], 2 * grads[0], rtol=1e-12, atol=1e-12)
        x = ember.tensor(x0, requires_grad=True)
        y = x * 1
        out = F.group_norm(y, 4)
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()


def test_group_norm_node_leaves_half_precision_to_the_composite():
    half = F.group_norm(ember.randn(2, 4, 3).half(), 2)
    assert half.dtype == ember.float16


def test_group_norm_node_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x0, w0, b0 = rng.standard_normal((4, 8, 16, 20)), rng.uniform(0.5, 2, 8), \
        rng.standard_normal(8)
    g0 = rng.standard_normal((4, 8, 16, 20))
    results = []
    for lib in (ember, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        out = lib.nn.functional.group_norm(x, 4, w, b)
        out.backward(lib.tensor(g0))
        results.append((out.grad_fn.name(), len(out.grad_fn.next_functions),
                        out.detach().numpy(), x.grad.numpy(), w.grad.numpy(),
                        b.grad.numpy()))
    assert results[0][:2] == results[1][:2]
    for ours, theirs in zip(results[0][2:], results[1][2:]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)
