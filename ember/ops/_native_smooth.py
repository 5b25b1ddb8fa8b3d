"""numba kernels of the exponential activations softplus, elu (selu and celu are elus) and
mish: the select that ends each forward, each first-order backward, and mish whole, one
pass each.

In float32 each forward is one pass too, with the kernels' own vectorized exp, expm1
(`_expm1_32`) and log1p (numba's scalar libm calls are not vectorized, and NumPy's
float32 expm1 and log1p are scalar libm calls on processors without AVX-512: 10 ms per
million on an AMD EPYC).  The float64 forwards keep NumPy's exp, expm1 and log1p, and
fold the comparisons, selects and scalings that follow into one pass.  The backwards
need only exp (through sigmoid for softplus), which the row kernels' `_exp_as` computes
vectorized.

NOTE: why.  On (4096, 256) float32, forward + backward, softplus took 6.3 ms and elu 5.7
(PyTorch: 1.5 and 1.4), in eleven and eight NumPy passes and the backward's tensor ops
(2-core Intel Xeon, 2026-12-06).
"""

from __future__ import annotations

import numpy as np

from . import _native as native
from ._native_activation import FUSED_MULTIPLY_ADD, _expm1_32, _sigmoid_as
from ._native_rows import _exp_as

_ZERO = np.float32(0.0)  # (keeps float32 arithmetic in float32; promotes in float64)
_ONE, _TWO, _FOUR = np.float32(1.0), np.float32(2.0), np.float32(4.0)
# From here on tanh(softplus(x)) is 1 in float32 and float64 (mish(x) = x): exp stays finite
_MISH_LINEAR = np.float32(20.0)


# (the selects write over `t`, an argument of their own: an `out` given as a second name of
# t would fail LLVM's check that the arrays do not overlap, and run its scalar loop)


@native.kernel(parallel=True)
def _softplus_select(x, t, beta, threshold):
    for i in native.prange(x.size):
        v, w = x[i], t[i]   # (read before the select: see _native_select's note)
        z = v * beta
        t[i] = v if z > threshold else ((z if z > 0 else _ZERO) + w) / beta


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _softplus_backward(g, x, out, beta, threshold):
    for i in native.prange(x.size):
        gv = g[i]      # (read before the select: see _native_select's note)
        z = x[i] * beta
        out[i] = gv if z > threshold else gv * _sigmoid_as(z)   # (nan: nan, as PyTorch)


@native.kernel(parallel=True)
def _elu_select(x, t, scale, scale_alpha):
    for i in native.prange(x.size):
        v, w = x[i], t[i]   # (read before the select: see _native_select's note)
        t[i] = v * scale if v > 0 else w * scale_alpha


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _elu32(x, out, scale, scale_alpha, input_scale):
    for i in native.prange(x.size):
        v = x[i]
        out[i] = v * scale if v > 0 else scale_alpha * _expm1_32(v * input_scale)


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _elu_backward(g, x, out, scale, input_scale, coefficient):
    for i in native.prange(x.size):
        v = x[i]
        # (a NaN takes the exp branch, and gives NaN, as PyTorch's vectorized loop)
        out[i] = g[i] * (scale if v > 0 else coefficient * _exp_as(v * input_scale))


# mish(x) = x tanh(softplus(x)), and tanh(log(1 + e)) = n / (n + 2) with n = e (e + 2),
# e = exp(x): one exp, no log or tanh (which numba would call per element, unvectorized).
# Its derivative: n / (n + 2) + x 4 e (e + 1) / (n + 2)^2.


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _mish(x, out):
    for i in native.prange(x.size):
        v = x[i]
        e = _exp_as(v if v < _MISH_LINEAR else _MISH_LINEAR)
        n = e * (e + _TWO)
        out[i] = v * n / (n + _TWO) if v < _MISH_LINEAR else v


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _mish_backward(g, x, out):
    for i in native.prange(x.size):
        v = x[i]
        e = _exp_as(v if v < _MISH_LINEAR else _MISH_LINEAR)
        d = e * (e + _TWO) + _TWO
        # (the factor of v first: v * 4 e alone would overflow for v near -1e38)
        slope = (d - _TWO) / d + v * (_FOUR * e * (e + _ONE) / (d * d))
        # (v * 0: at +inf the slope is nan, as PyTorch's formula gives it)
        out[i] = g[i] * (slope if v < _MISH_LINEAR else _ONE + v * _ZERO)


def mish(x):
    """``x tanh(softplus(x))`` of a float array (NaN stays NaN)."""
    flat = native.flat(x)
    out = np.empty_like(flat)
    native.run(_mish, flat.size, flat, out, cut=(0, 1), part="flat2")
    return out.reshape(x.shape)


def mish_backward(g, x):
    """The first-order gradient of `mish`: ``g`` times its derivative."""
    flat = native.flat(x)
    out = np.empty_like(flat)
    native.run(_mish_backward, flat.size, native.flat(g), flat, out, cut=(0, 1, 2),
               part="flat3")
    return out.reshape(x.shape)


# log1p(u) for 0 <= u <= 1 in float32: 2 atanh(s) with s = u / (u + 2) <= 1/3, its series
# to s^13 (the next term is below 1.3e-8 of the result), computed from u itself so that a
# small u keeps its digits.  Coefficients 2 / (2k + 1).
_L1, _L3, _L5, _L7 = (np.float32(2.0), np.float32(2.0 / 3), np.float32(2.0 / 5),
                      np.float32(2.0 / 7))
_L9, _L11, _L13 = np.float32(2.0 / 9), np.float32(2.0 / 11), np.float32(2.0 / 13)


@native.kernel(inline=True, fastmath=FUSED_MULTIPLY_ADD)
def _softplus_of32(z):
    """``max(z, 0) + log1p(exp(-|z|))`` of a float32 number."""
    u = _exp_as(-abs(z))            # exp(-|z|), in (0, 1]
    s = u / (u + _TWO)
    s2 = s * s
    p = s * (_L1 + s2 * (_L3 + s2 * (_L5 + s2 * (_L7 + s2 * (_L9 + s2 * (
        _L11 + s2 * _L13))))))       # log1p(u)
    return (z if z > 0 else _ZERO) + p


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _softplus32(x, out, beta, threshold):
    for i in native.prange(x.size):
        v = x[i]
        z = v * beta
        out[i] = v if z > threshold else _softplus_of32(z) / beta


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _logsigmoid32(x, out):
    # 0 - softplus(-x): the 0 - gives +0.0 where softplus(-x) is 0 (a large x), as PyTorch
    for i in native.prange(x.size):
        out[i] = _ZERO - _softplus_of32(-x[i])


def softplus(x, beta: float, threshold: float):
    """``log(1 + exp(beta x)) / beta``, and x where ``beta x > threshold``, of a float
    array: ``max(z, 0) + log1p(exp(-|z|))`` with z = beta x, the NumPy path's formula.
    float32 in one pass (`_softplus32`: its own exp and log1p, vectorized); float64 with
    NumPy's exp and log1p, then one select."""
    flat = native.flat(x)
    real = flat.dtype.type
    if flat.dtype == np.float32:
        out = np.empty_like(flat)
        native.run(_softplus32, flat.size, flat, out, real(beta), real(threshold), cut=(0, 1),
                   part="flat2_2")
        return out.reshape(x.shape)
    t = np.abs(flat * real(beta) if beta != 1 else flat)
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    native.run(_softplus_select, flat.size, flat, t, real(beta), real(threshold), cut=(0, 1),
               part="flat2_2")
    return t.reshape(x.shape)


def logsigmoid32(x):
    """``log(sigmoid(x))`` of a float32 array as ``0 - softplus(-x)``, in one pass (the
    bits of `softplus` of ``-x`` subtracted from 0)."""
    flat = native.flat(x)
    out = np.empty_like(flat)
    native.run(_logsigmoid32, flat.size, flat, out, cut=(0, 1), part="flat2")
    return out.reshape(x.shape)


def softplus_backward(g, x, beta: float, threshold: float):
    """``g * sigmoid(beta x)``, and g where ``beta x > threshold``."""
    flat, real = native.flat(x), x.dtype.type
    out = np.empty_like(flat)
    native.run(_softplus_backward, flat.size, native.flat(g), flat, out, real(beta),
               real(threshold), cut=(0, 1, 2), part="flat3_2")
    return out.reshape(x.shape)


def elu(x, alpha: float, scale: float, input_scale: float):
    """``scale x`` where x > 0, else ``scale alpha expm1(input_scale x)``: float32 in one
    pass (`_elu32`, with the kernels' own expm1, vectorized); float64 with NumPy's expm1,
    then one select."""
    flat = native.flat(x)
    real = flat.dtype.type
    if flat.dtype == np.float32:
        out = np.empty_like(flat)
        native.run(_elu32, flat.size, flat, out, real(scale), real(scale * alpha),
                   real(input_scale), cut=(0, 1), part="flat2_3")
        return out.reshape(x.shape)
    t = np.minimum(flat, 0)
    if input_scale != 1:
        t *= real(input_scale)
    np.expm1(t, out=t)
    native.run(_elu_select, flat.size, flat, t, real(scale), real(scale * alpha), cut=(0, 1),
               part="flat2_2")
    return t.reshape(x.shape)


def elu_backward(g, x, alpha: float, scale: float, input_scale: float):
    """``g scale alpha input_scale exp(input_scale x)`` where x <= 0, else ``g scale``."""
    flat, real = native.flat(x), x.dtype.type
    out = np.empty_like(flat)
    native.run(_elu_backward, flat.size, native.flat(g), flat, out, real(scale),
               real(input_scale), real(scale * alpha * input_scale), cut=(0, 1, 2),
               part="flat3_3")
    return out.reshape(x.shape)
