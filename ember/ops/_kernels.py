"""Fused float32 NumPy kernels behind the forward and backward of a few hot ops.

NumPy evaluates an expression one operation at a time, and each operation writes a new
array: on large float32 tensors those passes through memory, not the arithmetic, are the
cost.  These kernels run the same formulas in place, over blocks small enough to stay in
the CPU cache, with a handful of scratch buffers reused from block to block.  Each is a
plain function of NumPy arrays; the ops call them from their forward (see activation.py)
and keep their own tensor formulas for every other dtype and device.
"""

from __future__ import annotations

import math

import numpy as np

BLOCK = 1 << 16  # elements per block (the fastest of 8K..128K on a 1 MiB-L2 CPU)

# erf(z) ~ z P(z*z) / Q(z*z) for |z| <= _ERF_CLIP; beyond, erf is +-1 to float32
# precision (erfc(3.95) = 2e-8).  The fit is just above 1 at the clip, so clipping its
# result to [-1, 1] makes erf exactly +-1 there (and GELU(-inf) nan, as in PyTorch).
# A rational least-squares fit made for ember (linearized and re-weighted until it
# settled, against a float64 reference on 40,001 points): maximum absolute error 6e-8
# evaluated in float64, 3.4e-7 in float32.
_ERF_CLIP = 3.95
_ERF_P = (1.1283790665, 0.19035131156, 0.052762942886, 0.0037708803622, 0.00028632226387,
          2.0666856867e-06)
_ERF_Q = (1.0, 0.50202658978, 0.11410675163, 0.014976243345, 0.0011664236615,
          3.8341623546e-05)
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _polyval(coeffs, s, out):
    """out = sum_k coeffs[k] * s**k (Horner, in place)."""
    np.multiply(s, coeffs[-1], out=out)
    out += coeffs[-2]
    for c in coeffs[-3::-1]:
        out *= s
        out += c
    return out


def _normal_cdf_block(x, out, scratch, pdf=None):
    """out = Phi(x), the standard normal CDF; also pdf = phi(x) when given (one block)."""
    z, s, num, den = (buf[:x.size] for buf in scratch[:4])
    np.multiply(x, _SQRT1_2, out=z)
    np.clip(z, -_ERF_CLIP, _ERF_CLIP, out=z)
    np.multiply(z, z, out=s)
    _polyval(_ERF_P, s, num)
    num *= z
    if pdf is not None:  # phi(x) = exp(-x*x/2) / sqrt(2 pi); computed before s is reused
        np.multiply(x, x, out=pdf)
        pdf *= -0.5
        np.exp(pdf, out=pdf)
        pdf *= _INV_SQRT_2PI
    np.divide(num, _polyval(_ERF_Q, s, den), out=out)  # erf(x / sqrt 2)
    np.clip(out, -1.0, 1.0, out=out)
    out += 1.0
    out *= 0.5


def _blocks(n: int):
    for start in range(0, n, BLOCK):
        yield slice(start, min(start + BLOCK, n))


def _scratch(n: int, count: int) -> list:
    return [np.empty(min(n, BLOCK), np.float32) for _ in range(count)]


def gelu_f32(x: np.ndarray) -> np.ndarray:
    """Exact GELU, ``x * Phi(x)``, of a float32 array (absolute error below 2e-7 |x|)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    scratch = _scratch(flat.size, 4)
    with np.errstate(invalid="ignore"):  # -inf * 0 = nan, quietly (as in PyTorch)
        for b in _blocks(flat.size):
            _normal_cdf_block(flat[b], out[b], scratch)
            out[b] *= flat[b]
    return out.reshape(x.shape)


def gelu_backward_f32(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``grad * (Phi(x) + x phi(x))``, the gradient of exact GELU, for float32 arrays."""
    flat = np.ascontiguousarray(x).reshape(-1)
    g = np.ascontiguousarray(np.broadcast_to(grad, x.shape)).reshape(-1)
    out = np.empty_like(flat)
    scratch = _scratch(flat.size, 5)
    with np.errstate(invalid="ignore"):  # inf * 0 = nan, quietly (as in PyTorch)
        for b in _blocks(flat.size):
            xb, ob = flat[b], out[b]
            pdf = scratch[4][:xb.size]
            _normal_cdf_block(xb, ob, scratch, pdf)
            pdf *= xb
            ob += pdf
            ob *= g[b]
    return out.reshape(x.shape)


def relu_backward(grad, y):
    """``grad`` where ``y > 0`` (or y is nan), else 0: the gradient of relu at output `y`.

    NOTE: a branch-free select.  ``np.where`` runs at ~3 ns per element on a mask as
    unpredictable as relu's; and-ing the bits of `grad` with 0 / -1 integers gives the same
    result (+0.0 where dropped, `grad` bit for bit where kept) about nine times faster.
    """
    if type(grad) is not np.ndarray or grad.shape != y.shape or grad.dtype != y.dtype:
        xp = np if type(grad) is np.ndarray else _array_module(grad)
        return xp.where(y <= 0, xp.zeros((), grad.dtype), grad)
    bits = np.dtype(f"i{grad.dtype.itemsize}")
    mask = np.less_equal(y, 0).view(np.uint8).astype(bits)  # 1 where dropped
    mask -= 1  # 0 where dropped, all ones where kept
    mask &= grad.view(bits)
    return mask.view(grad.dtype)


def _array_module(array):
    import cupy

    return cupy.get_array_module(array)



def sum_last(x, axis):
    """``x.sum(axis, keepdims=True)``; over the last axis of a float32/64 NumPy array as one
    matrix-vector product.

    NOTE: NumPy reduces short rows one at a time (~0.4 ns per element for rows of 64);
    BLAS's gemv over all rows at once is ~5-10x faster.
    """
    if not (type(x) is np.ndarray and x.size and axis in (-1, x.ndim - 1)
            and x.dtype in (np.float32, np.float64) and x.flags.c_contiguous):
        return x.sum(axis=axis, keepdims=True)
    n = x.shape[-1]
    rows = np.matmul(x.reshape(-1, n), np.ones(n, x.dtype))
    return rows.reshape(x.shape[:-1] + (1,))
