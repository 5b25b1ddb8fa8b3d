"""Fused float32 NumPy kernels behind the forward and backward of a few hot ops.

NumPy evaluates an expression one operation at a time, and each operation writes a new
array: on large float32 tensors those passes through memory, not the arithmetic, are the
cost.  These kernels run the same formulas in place, over blocks small enough to stay in
the CPU cache, with a handful of scratch buffers reused from block to block.  Each is a
plain function of NumPy arrays; the ops call them from their forward and first-order
backward (activation.py, loss.py, normalization.py, reduction.py) and keep their own
tensor formulas for every other dtype and device.  The row kernels (softmax,
log-softmax, layer norm) work on blocks of whole rows.  With numba on, large float32 and
float64 arrays take the native kernels of _native_activation.py and _native_rows.py
instead; these stay the fallback (numba missing or off, 16-bit floats, small arrays).
"""

from __future__ import annotations

import math

import numpy as np

from . import _parallel

BLOCK = 1 << 16  # elements per block (the fastest of 8K..128K on a 1 MiB-L2 CPU)
# Row kernels do fewer operations per element, so the ~2 us each NumPy call costs weighs
# more: their blocks are larger (measured: 256K elements beat 64K by ~15%).
ROW_BLOCK = 1 << 18

# Phi(x) = (1 + tanh(x P(x*x))) / 2, the normal CDF written through
# erf(z) = tanh(atanh(erf(z))): atanh(erf(z)) / z is smooth and even, so a polynomial
# in x*x fits it (its first two terms are GELU's well-known tanh approximation).  A
# minimax fit made for ember (iteratively re-weighted least squares against a float64
# reference on 40,001 points, z = x / sqrt 2 in [0, 3.95]): the largest error of erf is
# 6e-8 in float64, 1.4e-7 evaluated in float32.  Beyond the fitted range, tanh is +-1 to
# float32 precision (erfc(3.95) = 2e-8), and GELU(-inf) is nan as in PyTorch.  One tanh
# and 12 multiply-adds per element instead of the 24 operations of a rational erf.
_PHI_P = (7.9788494148e-01, 3.6333084465e-02, -3.2594837837e-05, -5.5306258999e-05,
          3.9647577513e-06, -1.3226450914e-07, 1.7562063063e-09)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _polyval(coeffs, s, out):
    """out = sum_k coeffs[k] * s**k (Horner, in place)."""
    np.multiply(s, coeffs[-1], out=out)
    out += coeffs[-2]
    for c in coeffs[-3::-1]:
        out *= s
        out += c
    return out


def _twice_normal_cdf_block(x, out, scratch):
    """out = 2 Phi(x) = 1 + erf(x / sqrt 2) for one block (one scratch buffer).

    NOTE: x is not clipped to the fitted range: P(s) >= 0.79 for every s >= 0 (P >= 1.68
    beyond the fit, and +inf where s*s overflows), so tanh's argument keeps growing with
    |x| and tanh reaches +-1 exactly.  (Clipped, tanh may round to 1 - 6e-8, which would
    make GELU(-1000) -3e-5 instead of -0.)
    """
    s = scratch[0][:x.size]
    np.multiply(x, x, out=s)
    _polyval(_PHI_P, s, out)
    out *= x
    np.tanh(out, out=out)
    out += 1.0


def _scratch(n: int, count: int) -> list:
    return [np.empty(min(n, BLOCK), np.float32) for _ in range(count)]


def _over_blocks(kernel, n: int, count: int) -> None:
    """Run ``kernel(block, scratch)`` over the BLOCK-sized slices of [0, n), with `count`
    scratch buffers reused from block to block."""
    scratch = _scratch(n, count)
    for start in range(0, n, BLOCK):
        kernel(slice(start, min(start + BLOCK, n)), scratch)


def gelu_f32(x: np.ndarray, keep_cdf: bool = False):
    """Exact GELU, ``x * Phi(x)``, of a float32 array (absolute error below 1e-7 |x|).

    With `keep_cdf`, returns ``(gelu, 2 Phi(x))``: the backward then needs no second
    evaluation of the CDF (see `gelu_backward_f32`).
    """
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    cdf2 = np.empty_like(flat) if keep_cdf else None

    def kernel(b, scratch):
        ob = out[b]
        if cdf2 is None:
            _twice_normal_cdf_block(flat[b], ob, scratch)
            ob *= 0.5  # before x: 2 x overflows for the largest floats
        else:
            _twice_normal_cdf_block(flat[b], cdf2[b], scratch)
            np.multiply(cdf2[b], 0.5, out=ob)
        ob *= flat[b]

    # -inf * 0 = nan, quietly (as in PyTorch); x * x overflows to inf harmlessly
    with np.errstate(invalid="ignore", over="ignore"):
        _over_blocks(kernel, flat.size, 1)
    out = out.reshape(x.shape)
    return out if cdf2 is None else (out, cdf2.reshape(x.shape))


def gelu_backward_f32(grad: np.ndarray, x: np.ndarray, cdf2=None) -> np.ndarray:
    """``grad * (Phi(x) + x phi(x))``, the gradient of exact GELU, for float32 arrays.

    With `cdf2`, the ``2 Phi(x)`` kept by `gelu_f32`, only phi is computed (5 passes per
    block instead of ~20)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    kept = None if cdf2 is None else cdf2.reshape(-1)
    g = np.ascontiguousarray(np.broadcast_to(grad, x.shape)).reshape(-1)
    out = np.empty_like(flat)

    def kernel(b, scratch):
        xb, ob = flat[b], out[b]
        pdf = scratch[0][:xb.size]
        if kept is None:
            _twice_normal_cdf_block(xb, ob, scratch)  # leaves x*x in pdf
            ob *= 0.5
        else:
            np.multiply(xb, xb, out=pdf)
            np.multiply(kept[b], 0.5, out=ob)
        pdf *= -0.5  # phi(x) x = exp(-x*x/2) x / sqrt(2 pi)
        np.exp(pdf, out=pdf)
        pdf *= xb
        pdf *= _INV_SQRT_2PI
        ob += pdf
        ob *= g[b]

    # inf * 0 = nan, quietly (as in PyTorch); x * x overflows to inf harmlessly
    with np.errstate(invalid="ignore", over="ignore"):
        _over_blocks(kernel, flat.size, 1)
    return out.reshape(x.shape)


def _rows_per_block(c: int) -> int:
    """Rows per block of a row kernel: about ROW_BLOCK elements."""
    return max(1, ROW_BLOCK // max(c, 1))


def _row_blocks(x, kernel) -> None:
    """Run ``kernel(start, stop)`` over blocks of whole rows of the 2-D array `x`."""
    rows, c = x.shape
    per = _rows_per_block(c)
    for start in range(0, rows, per):
        kernel(start, min(start + per, rows))


def rowwise_fast(x) -> bool:
    """True for the arrays the row kernels below take: 2-D, non-empty, C-contiguous float32
    or float64 NumPy arrays."""
    return (type(x) is np.ndarray and x.ndim == 2 and x.size > 0 and x.flags.c_contiguous
            and x.dtype in (np.float32, np.float64))


def _softmax_rows(x: np.ndarray, log: bool) -> np.ndarray:
    """``softmax(x, -1)`` (or with `log`, ``log_softmax``) of a `rowwise_fast` array, over
    blocks of rows that stay in the cache.

    NOTE: NumPy takes ~60 ns per row for a row max (rows of 64: 1 ns per element, more
    than the exp).  Shifting by the row max only guards exp() against overflow (and
    a row against underflowing to all zeros), so a block whose largest entry is small
    enough that no row sum can overflow skips it, and any of its rows whose sum comes
    out below 1 (its max below 0) is redone with the shift.  The unshifted exp loses no
    accuracy: exp is accurate to an ulp for any argument, and the division (or the
    subtraction of the log of the sum) normalizes.
    """
    out = np.empty_like(x)
    c = x.shape[1]
    limit = math.log(np.finfo(x.dtype).max) - math.log(c) - 1.0  # sum of exps stays finite

    def shifted(xb, ob):
        np.subtract(xb, xb.max(axis=1, keepdims=True), out=ob)
        if log:
            ob -= np.log(sum_last(np.exp(ob), -1))
        else:
            np.exp(ob, out=ob)
            ob /= sum_last(ob, -1)

    if x.shape[0] <= 16:  # a few rows (a batch-1 classifier): the row max costs ~nothing
        shifted(x, out)
        return out

    def kernel(start, stop):
        xb, ob = x[start:stop], out[start:stop]
        if not xb.max() <= limit:  # large entries or nan
            shifted(xb, ob)
            return
        e = np.exp(xb, out=None if log else ob)
        sums = sum_last(e, -1)
        if log:
            np.subtract(xb, np.log(sums), out=ob)
        else:
            ob /= sums
        low = sums[:, 0] < 1.0
        if low.any():
            rows = np.flatnonzero(low)
            redo = np.empty((rows.size, c), x.dtype)
            shifted(xb[rows], redo)
            ob[rows] = redo

    _row_blocks(x, kernel)
    return out


def softmax_rows(x: np.ndarray) -> np.ndarray:
    """``softmax(x, -1)`` of a `rowwise_fast` array (see `_softmax_rows`)."""
    return _softmax_rows(x, False)


def log_softmax_rows(x: np.ndarray) -> np.ndarray:
    """``log_softmax(x, -1)`` of a `rowwise_fast` array (see `_softmax_rows`)."""
    return _softmax_rows(x, True)


def exp_scaled_rows(logp: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``exp(logp) * scale`` for a `rowwise_fast` array and a per-row (rows, 1) `scale`
    (softmax times a factor per row, from log-probabilities), block by block."""
    out = np.empty_like(logp)

    def kernel(start, stop):
        ob = out[start:stop]
        np.exp(logp[start:stop], out=ob)
        ob *= scale[start:stop]

    _row_blocks(logp, kernel)
    return out


def _by_row_vector(ufunc, a, vec, tiled, out) -> None:
    """``ufunc(a, vec, out=out)`` for rows `a` (2-D, C-contiguous, like `out`) and a vector
    `vec` of the row length.

    NOTE: NumPy broadcasts a short row vector one row at a time (~25 ns per row: a
    (2048, 128) multiply takes 80 us instead of 25 us).  `tiled` is `vec` repeated k
    times; rows taken k at a time as one long row line up with it.
    """
    k = tiled.size // vec.size
    if a.shape[0] % k == 0:
        ufunc(a.reshape(-1, tiled.size), tiled, out=out.reshape(-1, tiled.size))
    else:
        ufunc(a, vec, out=out)


def _tile_rows(vec, c: int):
    """`vec` repeated so that a row of rows is ~4K elements long (see `_by_row_vector`)."""
    return None if vec is None else np.tile(vec, max(1, 4096 // c))


def layer_norm(x: np.ndarray, eps: float, weight, bias) -> tuple:
    """Layer norm over the rows of a `rowwise_fast` array, block by block: returns
    (normalized y, y * weight + bias or None without either, mean, rstd), with mean and
    rstd of shape (rows, 1).  The formula of ``Normalize`` (normalization.py)."""
    rows, c = x.shape
    y = np.empty_like(x)
    out = None if weight is None and bias is None else np.empty_like(x)
    mean = np.empty((rows, 1), x.dtype)
    rstd = np.empty((rows, 1), x.dtype)
    wide_w, wide_b = _tile_rows(weight, c), _tile_rows(bias, c)

    def kernel(start, stop):
        xb, yb, m, r = x[start:stop], y[start:stop], mean[start:stop], rstd[start:stop]
        np.divide(sum_last(xb, -1), c, out=m)
        np.subtract(xb, m, out=yb)
        var = sum_last(np.square(yb), -1)
        var /= c
        var += eps
        np.sqrt(var, out=var)
        np.divide(1.0, var, out=r)
        yb *= r
        if out is not None:
            ob = out[start:stop]
            if weight is not None:
                _by_row_vector(np.multiply, yb, weight, wide_w, ob)
            else:
                ob[...] = yb
            if bias is not None:
                _by_row_vector(np.add, ob, bias, wide_b, ob)

    _row_blocks(x, kernel)
    return y, out, mean, rstd


def layer_norm_backward(g, y, rstd, weight, need_x: bool, need_w: bool,
                        need_b: bool) -> tuple:
    """First-order gradients (gx, gw, gb) of `layer_norm` for `rowwise_fast` g and y,
    block by block (None where not needed):
    ``gx = rstd * (gy - mean(gy) - y * mean(gy * y))`` with ``gy = g * weight``;
    gw and gb are the column sums of ``g * y`` and g."""
    rows, c = g.shape
    gx = np.empty_like(g) if need_x else None
    wide_w = _tile_rows(weight, c)
    per = _rows_per_block(c)
    count = -(-rows // per)
    # per-block column sums of g * y and g, added up at the end
    gw_parts = np.zeros((count, c), g.dtype) if need_w else None
    gb_parts = np.zeros((count, c), g.dtype) if need_b else None
    ones = np.ones(min(per, rows), g.dtype)

    def kernel(i):
        start, stop = i * per, min((i + 1) * per, rows)
        gblk, yb = g[start:stop], y[start:stop]
        t = np.multiply(gblk, yb)
        if need_w:  # column sums as a matrix-vector product (see sum_last)
            np.matmul(ones[:stop - start], t, out=gw_parts[i])
        if need_b:
            np.matmul(ones[:stop - start], gblk, out=gb_parts[i])
        if not need_x:
            return
        gxb = gx[start:stop]
        if weight is not None:
            _by_row_vector(np.multiply, t, weight, wide_w, t)  # g * weight * y
            _by_row_vector(np.multiply, gblk, weight, wide_w, gxb)
        else:
            gxb[...] = gblk
        m2 = sum_last(t, -1)
        m2 /= c
        m1 = sum_last(gxb, -1)
        m1 /= c
        np.multiply(yb, m2, out=t)
        gxb -= m1
        gxb -= t
        gxb *= rstd[start:stop]

    for i in range(count):
        kernel(i)
    gw = None if gw_parts is None else (gw_parts[0] if count == 1 else gw_parts.sum(axis=0))
    gb = None if gb_parts is None else (gb_parts[0] if count == 1 else gb_parts.sum(axis=0))
    return gx, gw, gb


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


def sum_leading(x, dims, keepdim: bool):
    """``x.sum(dims, keepdims=keepdim)`` over the leading dims of a large C-contiguous
    float32/64 NumPy array as one vector-matrix product; None when that does not apply.

    NOTE: NumPy sums over the first axis at ~0.3 ns per element (a linear layer's bias
    gradient over (700, 10000): 2.3 ms); BLAS's gemv over all columns at once takes
    ~0.15 ns (1.0 ms).  Both add the rows in order, in the input's precision.  The
    product is split over ember's threads by columns (`_parallel.matmul`): a convolution's
    (64, 64*24*24) bias-gradient rows took 205 us so, 474 us as NumPy's sum over
    (0, 2, 3) (2-core Intel Xeon, 2026-12-05).
    """
    if not (type(x) is np.ndarray and x.size >= BLOCK and x.dtype in (np.float32, np.float64)
            and x.flags.c_contiguous and dims and len(dims) < x.ndim
            and tuple(dims) == tuple(range(len(dims)))):
        return None
    lead = math.prod(x.shape[:len(dims)])
    if lead < 2:
        return None
    rest = x.shape[len(dims):]
    out = _parallel.matmul(np.ones((1, lead), x.dtype), x.reshape(lead, -1))
    return out.reshape(((1,) * len(dims) if keepdim else ()) + rest)


def sums_of_products(a: np.ndarray, b: np.ndarray, dims: tuple,
                     keepdim: bool = True) -> np.ndarray:
    """``(a * b).sum(dims, keepdims=keepdim)`` for two NumPy arrays of one shape, by
    einsum: one pass, without an array of the products.  (Its sums rounded as NumPy's
    did in the cases measured, 256 to 1M float32 elements, rows and whole arrays.)"""
    letters = "abcdefghijklmnopqrstuvwxyz"[:a.ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in dims)
    total = np.einsum(f"{letters},{letters}->{kept}", a, b)
    if keepdim:
        total = total.reshape([1 if i in dims else n for i, n in enumerate(a.shape)])
    return total
