"""ember.compile's pattern rewrites (ember/_compile/patterns.py): attention's
``softmax(masked_fill(x * scale, mask, value))`` as one fused op, which gives the bits
of the three ops it replaces, forward and backward, and is found only where moving the
ops is safe."""

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._compile.patterns import ScaledMaskedSoftmax
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.ops import _native_rows


def _unfused(x, mask, scale, value):
    scores = x * scale if scale != 1.0 else x
    return F.softmax(scores.masked_fill(mask, value), dim=-1)


def _fused(x, mask, scale, value):
    full = np.broadcast_to(mask.numpy(), tuple(x.shape))
    return ScaledMaskedSoftmax.apply(x, scale, value, mask=full, dim=x.dim() - 1)


def _causal(t):
    return ember.tensor(np.triu(np.ones((t, t), bool), 1))


@pytest.fixture(params=["native", "numpy"])
def paths(request, monkeypatch):
    """Both the numba row kernels and the NumPy fallback."""
    if request.param == "native" and not native.available():
        pytest.skip("numba is not installed")
    if request.param == "numpy":
        monkeypatch.setattr(_native_rows, "supports", lambda *a, **k: False)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, mask_shape, scale, value", [
    ((3, 2, 8, 8), (1, 1, 8, 8), 0.35, float("-inf")),
    ((32, 4, 64, 64), (64, 64), 0.17677669529663687, float("-inf")),   # cut over threads
    ((5, 7, 9), (5, 7, 9), 1.0, -1e4),                                  # a finite value
])
def test_fused_equals_the_three_ops_bit_for_bit(paths, dtype, shape, mask_shape, scale, value):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape).astype(dtype)
    g = ember.tensor(rng.standard_normal(shape).astype(dtype))
    if mask_shape == shape:
        mask = ember.tensor(rng.random(mask_shape) < 0.3)
    else:
        mask = _causal(shape[-1]).reshape(mask_shape)
    a, b = ember.tensor(x0, requires_grad=True), ember.tensor(x0, requires_grad=True)
    expected, got = _unfused(a, mask, scale, value), _fused(b, mask, scale, value)
    expected.backward(g)
    got.backward(g)
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(b.grad.numpy(), a.grad.numpy())
    assert got.dtype == expected.dtype and got.grad_fn.name() == "CompiledMaskedSoftmaxBackward0"
    # and against float64 NumPy
    z = np.where(np.broadcast_to(mask.numpy(), shape), value, x0.astype(np.float64) * scale)
    e = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(got.detach().numpy(), e / e.sum(-1, keepdims=True),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-7)


def test_gradients_of_first_and_second_order(paths):
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((2, 3, 5)), requires_grad=True)
    mask = ember.tensor(rng.random((3, 5)) < 0.3)
    for value in (float("-inf"), -3.0):
        assert gradcheck(lambda t, v=value: _fused(t, mask, 0.7, v), (x,))
        assert gradgradcheck(lambda t, v=value: _fused(t, mask, 0.7, v), (x,))


class Attention(nn.Module):
    def __init__(self, variant="plain"):
        super().__init__()
        self.variant = variant
        self.register_buffer("mask", ember.tril(ember.ones(6, 6)).view(1, 1, 6, 6))

    def forward(self, q, k):
        att = (q @ k.transpose(-2, -1)) * 0.5
        extra = None
        if self.variant == "scores_reused":    # the scaled scores read twice: the product
            extra = att.sum()                  # by the scale stays an op of its own
        if self.variant == "inplace_between":  # an in-place op between: no rewrite
            extra = q.sum() * 0.0
            extra.add_(1.0)
        att = att.masked_fill(self.mask == 0, float("-inf"))
        att = F.log_softmax(att, dim=-1) if self.variant == "log" else F.softmax(att, dim=-1)
        return att if extra is None else att * extra


@pytest.mark.parametrize("variant, fused, product_left", [
    ("plain", True, False), ("scores_reused", True, True), ("inplace_between", False, True),
    ("log", False, True)])
def test_compile_rewrites_attention_scores_only_where_safe(variant, fused, product_left):
    rng = np.random.default_rng(2)
    model = Attention(variant)
    compiled = ember.compile(Attention(variant))
    q0, k0 = (rng.standard_normal((2, 3, 6, 4)).astype(np.float32) for _ in range(2))
    g = ember.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    for _ in range(2):   # capture, then replay
        results = []
        for m in (model, compiled):
            q, k = ember.tensor(q0, requires_grad=True), ember.tensor(k0, requires_grad=True)
            out = m(q, k)
            out.backward(g)
            results.append((out.detach().numpy(), k.grad.numpy()))
        np.testing.assert_array_equal(results[1][0], results[0][0])
        np.testing.assert_array_equal(results[1][1], results[0][1])
    source = list(compiled._compiled.graphs.values())[0].describe()
    assert ("ScaledMaskedSoftmax" in source) == fused
    assert ("# Mul " in source) == product_left
