"""numba kernels that work row by row: softmax and log-softmax (over the last dim, or over
the middle dim of an (outer, C, inner) view for another dim), the softmax of scaled and
masked rows (attention's), layer norm over the trailing dims, cross-entropy (log-softmax
and the pick of the target, fused) and logsumexp over the last dim, each forward and
first-order backward.

The rows of a C-contiguous 2-D array are split between threads (`native.prange` over
rows, or over fixed blocks of rows where a backward sums over rows: those sums come out
the same for any thread count; below `_native.PARALLEL_MIN` elements, or on a
busy machine, one thread runs them all, see `run`).  Within a row every pass is a short
loop that LLVM vectorizes; the sums and maxima are allowed to be reordered for that
(``fastmath`` reassoc only: NaN and inf keep their IEEE meaning).  float32 rows take the float32 exp
of _native_activation.py, float64 rows libm's.  The ops (activation.py,
normalization.py, loss.py) call `supports` first and keep their NumPy code (the blocked
kernels of _kernels.py) as the fallback.
"""

from __future__ import annotations

import math

import numpy as np

from . import _native as native
from ._native_activation import _exp32, run

# Fewer elements than this stay on the NumPy path: none.  Small inputs run the kernels'
# serial builds, a few us a call, less than the NumPy path's several calls: a batch of
# 128 x 10 logits took 56 us in cross_entropy through the kernel, 94 on the NumPy path;
# a batch-1 classifier's log_softmax over 10 classes 9 us against 20.
MIN_SIZE = 1
_REORDER = {"reassoc", "contract"}
# Backward column sums are taken over this many blocks of rows, then added in NumPy.
_BLOCKS = 32
# float32 constants keep float32 rows in float32 (numba promotes float32 with a Python
# number or an integer to float64) and promote harmlessly for float64 rows
_ZERO, _ONE = np.float32(0.0), np.float32(1.0)


def supports(*arrays, ndim: int = 2) -> bool:
    """True when the row kernels should take these arrays now: numba on, `ndim`-D
    C-contiguous NumPy float32/float64 arrays of one dtype, the first with at least
    `MIN_SIZE` elements."""
    first = arrays[0]
    return (type(first) is np.ndarray and first.size >= MIN_SIZE and first.ndim == ndim
            and first.dtype.char in "fd" and native.is_cpu_array(*arrays) and native.enabled()
            and all(a.dtype == first.dtype and a.flags.c_contiguous for a in arrays))


@native.kernel(inline=True)
def _exp_as(v):
    """exp(v) in v's precision: the float32 `_exp32` for a float32 v, else libm's.

    NOTE: numba knows v's type when it compiles, so no branch is left in the loop.  (A
    flag read from the array at run time left both paths in, and a kernel grown a little
    larger was no longer vectorized: softmax over rows of 64 took 6.4 ms instead of 2.3.)
    """
    return _exp32(v) if isinstance(v, np.float32) else math.exp(v)


@native.kernel(inline=True)
def _row_max(row):
    """The largest element of `row`, as ``max`` would give it (a NaN after the first
    element is passed over: the exp that follows makes the row NaN anyway).

    Eight running maxima, not one: LLVM vectorizes a chain of compare-and-selects only
    when told there are no NaNs (which would also break exp's NaN handling), but packs
    eight independent chains into one vector.  The max of 2M float32 in rows of 256
    took 1.52 ms with one chain, 0.42 with eight.

    NOTE: numba's ``max(a, b)`` is the select ``b if b > a else a`` as one expression;
    written as that conditional expression, each was a branch to numba, and a kernel of
    this helper alone took 0.47 s instead of 0.29 s to compile (cold cache, min of
    five), for machine code of the same speed (2M float32 in rows of 10, 256, 1000).
    """
    n = row.size
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = row[0]
    j = 0
    while j + 8 <= n:
        a0 = max(a0, row[j])
        a1 = max(a1, row[j + 1])
        a2 = max(a2, row[j + 2])
        a3 = max(a3, row[j + 3])
        a4 = max(a4, row[j + 4])
        a5 = max(a5, row[j + 5])
        a6 = max(a6, row[j + 6])
        a7 = max(a7, row[j + 7])
        j += 8
    m = max(max(max(a0, a1), max(a2, a3)), max(max(a4, a5), max(a6, a7)))
    for k in range(j, n):
        m = max(m, row[k])
    return m


@native.kernel(inline=True)
def _exp_normalized(src, dst, m):
    """dst = exp(src - m) / sum(exp(src - m)) over one row (`src` may be `dst`)."""
    total = _ZERO
    for j in range(src.size):
        e = _exp_as(src[j] - m)
        dst[j] = e
        total += e
    scale = _ONE / total
    for j in range(src.size):
        dst[j] *= scale


# ---------------------------------------------------------------------------
# softmax and log-softmax over the last dim


@native.kernel(parallel=True, fastmath=_REORDER)
def _softmax_kernel(x, out, log):
    for i in native.prange(x.shape[0]):
        row, dst = x[i], out[i]
        m = _row_max(row)
        if log:
            # (x - m) - log(total), never x - (m + log(total)): that sum would round at
            # x's magnitude (5e-4 for logits near 1e4).  (`reassoc` without `nsz` lets
            # LLVM reorder the sum above, not rewrite this subtraction.)
            total = _ZERO
            for j in range(row.size):
                d = row[j] - m
                dst[j] = d
                total += _exp_as(d)
            lse = math.log(total)
            for j in range(row.size):
                dst[j] -= lse
        else:
            _exp_normalized(row, dst, m)


@native.kernel(parallel=True, fastmath=_REORDER)
def _softmax_backward_kernel(g, y, out, log):
    for i in native.prange(y.shape[0]):
        gr, yr, dst = g[i], y[i], out[i]
        total = _ZERO
        if log:  # g - exp(y) * sum(g)
            for j in range(gr.size):
                total += gr[j]
            for j in range(gr.size):
                dst[j] = gr[j] - _exp_as(yr[j]) * total
        else:  # y * (g - sum(g * y))
            for j in range(gr.size):
                total += gr[j] * yr[j]
            for j in range(gr.size):
                dst[j] = yr[j] * (gr[j] - total)


@native.kernel(parallel=True, fastmath=_REORDER)
def _softmax_inner_kernel(x, out, log, inner):
    # x, out: (outer, C * inner), each row an (C, inner) block; softmax over C; the loops
    # run along inner (contiguous)
    channels = x.shape[1] // inner
    for o in native.prange(x.shape[0]):
        xo, oo = x[o].reshape((channels, inner)), out[o].reshape((channels, inner))
        m = xo[0].copy()
        for c in range(1, channels):
            for k in range(inner):
                m[k] = max(m[k], xo[c, k])
        total = np.zeros_like(m)
        for c in range(channels):
            for k in range(inner):
                e = _exp_as(xo[c, k] - m[k])
                total[k] += e
                oo[c, k] = e
        if log:  # (x - m) - log(total), as in _softmax_kernel
            for k in range(inner):
                total[k] = math.log(total[k])
            for c in range(channels):
                for k in range(inner):
                    oo[c, k] = xo[c, k] - m[k]
            for c in range(channels):
                for k in range(inner):
                    oo[c, k] -= total[k]
        else:
            for k in range(inner):
                total[k] = _ONE / total[k]
            for c in range(channels):
                for k in range(inner):
                    oo[c, k] *= total[k]


@native.kernel(parallel=True, fastmath=_REORDER)
def _softmax_inner_backward_kernel(g, y, out, log, inner):
    channels = y.shape[1] // inner
    for o in native.prange(y.shape[0]):
        go, yo = g[o].reshape((channels, inner)), y[o].reshape((channels, inner))
        oo = out[o].reshape((channels, inner))
        total = np.zeros(inner, y.dtype)
        for c in range(channels):
            for k in range(inner):
                gv, yv = go[c, k], yo[c, k]   # (read before the select: _native_select's note)
                total[k] += gv if log else gv * yv
        for c in range(channels):
            for k in range(inner):
                if log:
                    oo[c, k] = go[c, k] - _exp_as(yo[c, k]) * total[k]
                else:
                    oo[c, k] = yo[c, k] * (go[c, k] - total[k])


def softmax_inner(x: np.ndarray, log: bool) -> np.ndarray:
    """softmax (or log-softmax) over the middle dim of a `supports` 3-D array
    (outer, C, inner): the softmax of another dim than the last, the array viewed so."""
    out = np.empty_like(x)
    # (as rows of (C, inner) blocks: the 2-D families cut them over the threads)
    outer, inner = x.shape[0], x.shape[2]
    run(_softmax_inner_kernel, x.size, x.reshape(outer, -1), out.reshape(outer, -1), log,
        inner, cut=(0, 1), part="rows2_flag_int")
    return out


def softmax_inner_backward(g: np.ndarray, y: np.ndarray, log: bool) -> np.ndarray:
    """The first-order gradient of `softmax_inner` (as `softmax_backward`)."""
    out = np.empty_like(y)
    outer, inner = y.shape[0], y.shape[2]
    run(_softmax_inner_backward_kernel, y.size, g.reshape(outer, -1), y.reshape(outer, -1),
        out.reshape(outer, -1), log, inner, cut=(0, 1, 2), part="rows3_flag_int")
    return out


def softmax(x: np.ndarray, log: bool) -> np.ndarray:
    """softmax (or log-softmax) over the last dim of a `supports` 2-D array.

    NOTE: the row max is subtracted before exp (no overflow for large entries); a row
    holding nan or +inf comes out nan, as with NumPy.
    """
    out = np.empty_like(x)
    run(_softmax_kernel, x.size, x, out, log, cut=(0, 1), part="rows2_flag")
    return out


def softmax_backward(g: np.ndarray, y: np.ndarray, log: bool) -> np.ndarray:
    """The first-order gradient of `softmax` from its output `y` (log-probabilities when
    `log`) and the incoming gradient `g` (both `supports` arrays of one shape)."""
    out = np.empty_like(y)
    run(_softmax_backward_kernel, y.size, g, y, out, log, cut=(0, 1, 2), part="rows3_flag")
    return out


# ---------------------------------------------------------------------------
# softmax of scaled, masked rows (attention's scores; ember.compile fuses the three ops)


@native.kernel(parallel=True, fastmath=_REORDER)
def _masked_softmax_kernel(x, mask, scale, value, out):
    # z = value where mask, else x * scale; then softmax(z) as in _softmax_kernel.  (z is
    # written out first: the max over it then vectorizes as `_row_max`'s chains.)
    for i in native.prange(x.shape[0]):
        row, hidden, dst = x[i], mask[i], out[i]
        for j in range(row.size):
            v = row[j]   # (read before the select: see _native_select's note)
            dst[j] = value if hidden[j] else v * scale
        _exp_normalized(dst, dst, _row_max(dst))


@native.kernel(parallel=True, fastmath=_REORDER)
def _masked_softmax_backward_kernel(g, y, mask, scale, out):
    # y * (g - sum(g * y)), 0 where mask (masked_fill passes no gradient there), then
    # times scale: the unfused ops' arithmetic in their order, for the same bits
    for i in native.prange(y.shape[0]):
        gr, yr, hidden, dst = g[i], y[i], mask[i], out[i]
        total = _ZERO
        for j in range(gr.size):
            total += gr[j] * yr[j]
        for j in range(gr.size):
            v = yr[j] * (gr[j] - total)
            dst[j] = _ZERO if hidden[j] else v
        for j in range(gr.size):
            dst[j] *= scale


def masked_softmax(x: np.ndarray, mask: np.ndarray, scale, value) -> np.ndarray:
    """``softmax(where(mask, value, x * scale))`` over the last dim of a `supports` 2-D
    array; `mask` a C-contiguous bool array of x's shape, `scale` and `value` numbers."""
    out = np.empty_like(x)
    real = x.dtype.type
    run(_masked_softmax_kernel, x.size, x, mask, real(scale), real(value), out,
        cut=(0, 1, 4), part="masked_softmax")
    return out


def masked_softmax_backward(g: np.ndarray, y: np.ndarray, mask: np.ndarray,
                            scale) -> np.ndarray:
    """The first-order gradient of `masked_softmax` with respect to x, from its output
    `y` and the incoming gradient `g`."""
    out = np.empty_like(y)
    run(_masked_softmax_backward_kernel, y.size, g, y, mask, y.dtype.type(scale), out,
        cut=(0, 1, 2, 4), part="masked_softmax_grad")
    return out


# ---------------------------------------------------------------------------
# layer norm


@native.kernel(inline=True)
def _row_stats(row, inv_n, eps):
    """(mean, 1 / sqrt(variance + eps)) of a row, `inv_n` its length's inverse."""
    total = _ZERO
    for j in range(row.size):
        total += row[j]
    mu = total * inv_n
    sq = _ZERO
    for j in range(row.size):  # two passes: no cancellation in E[x^2] - E[x]^2
        d = row[j] - mu
        sq += d * d
    return mu, _ONE / math.sqrt(sq * inv_n + eps)


@native.kernel(parallel=True, fastmath=_REORDER)
def _layer_norm_kernel(x, inv_n, eps, weight, bias, affine, y, out, mean, rstd):
    n = x.shape[1]
    for i in native.prange(x.shape[0]):
        row, yr = x[i], y[i]
        mu, r = _row_stats(row, inv_n, eps)
        mean[i] = mu
        rstd[i] = r
        for j in range(n):
            yr[j] = (row[j] - mu) * r
        if affine:
            outr = out[i]
            for j in range(n):
                outr[j] = yr[j] * weight[j] + bias[j]


@native.kernel(parallel=True, fastmath=_REORDER)
def _layer_norm_backward_kernel(g, y, inv_n, rstd, weight, need_x, gx, gw_parts, gb_parts,
                                blocks, per):
    # block blocks[t] (rows blocks[t] * per on, `per` of them) sums into gw_parts[t] and
    # gb_parts[t]: a cut over threads hands each its share of the blocks whole, so the
    # sums come out the same for any thread count
    rows, n = y.shape
    for t in native.prange(blocks.size):
        gw, gb = gw_parts[t], gb_parts[t]
        b = blocks[t]
        for i in range(b * per, min(rows, (b + 1) * per)):
            gr, yr = g[i], y[i]
            m1 = _ZERO
            m2 = _ZERO
            for j in range(n):
                gw[j] += gr[j] * yr[j]
                gb[j] += gr[j]
                gy = gr[j] * weight[j]
                m1 += gy
                m2 += gy * yr[j]
            if need_x:
                m1 *= inv_n
                m2 *= inv_n
                r = rstd[i]
                dst = gx[i]
                for j in range(n):
                    dst[j] = r * (gr[j] * weight[j] - m1 - yr[j] * m2)


def layer_norm(x: np.ndarray, eps: float, weight, bias) -> tuple:
    """Layer norm over the rows of a `supports` 2-D array: (normalized y, y * weight +
    bias or None without either, mean, rstd), mean and rstd of shape (rows, 1): the
    outputs of `_kernels.layer_norm`."""
    rows, n = x.shape
    affine = weight is not None or bias is not None
    w = np.ones(n, x.dtype) if weight is None else np.ascontiguousarray(weight, x.dtype)
    b = np.zeros(n, x.dtype) if bias is None else np.ascontiguousarray(bias, x.dtype)
    y = np.empty_like(x)
    out = np.empty_like(x) if affine else y
    mean = np.empty((rows, 1), x.dtype)
    rstd = np.empty((rows, 1), x.dtype)
    run(_layer_norm_kernel, x.size, x, x.dtype.type(1.0 / n), x.dtype.type(eps), w, b, affine,
        y, out, mean.reshape(-1), rstd.reshape(-1), cut=(0, 6, 7, 8, 9), part="layer_norm")
    return y, (out if affine else None), mean, rstd


def layer_norm_backward(g, y, rstd, weight, need_x: bool, need_w: bool,
                        need_b: bool) -> tuple:
    """First-order gradients (gx, gw, gb) of `layer_norm` (None where not needed):
    ``gx = rstd * (gy - mean(gy) - y * mean(gy * y))`` with ``gy = g * weight``, gw and
    gb the column sums of ``g * y`` and g."""
    rows, n = y.shape
    w = np.ones(n, y.dtype) if weight is None else np.ascontiguousarray(weight, y.dtype)
    blocks = min(_BLOCKS, rows)
    gw_parts = np.zeros((blocks, n), y.dtype)
    gb_parts = np.zeros((blocks, n), y.dtype)
    gx = np.empty_like(y) if need_x else y[:1]  # (unused when not needed)
    # NOTE: cut over ember's threads by blocks of rows (the GPT's (2048, 128) gradient ran
    # on one thread: below numba's threading threshold)
    run(_layer_norm_backward_kernel, y.size, g, y, y.dtype.type(1.0 / n), rstd.reshape(-1), w,
        need_x, gx, gw_parts, gb_parts, np.arange(blocks, dtype=np.int64),
        (rows + blocks - 1) // blocks, cut=(7, 8, 9), part="layer_norm_grad")
    return (gx if need_x else None, gw_parts.sum(axis=0) if need_w else None,
            gb_parts.sum(axis=0) if need_b else None)


# ---------------------------------------------------------------------------
# cross-entropy with class indices: logits (N, C), per-row target and coefficients


@native.kernel(parallel=True, fastmath=_REORDER)
def _cross_entropy_kernel(x, target, coef_t, coef_u, weight, loss, shift, lse):
    # logp = (x - m) - log(sum(exp(x - m))), never x - (m + log(...)): that sum would round
    # at the logits' magnitude (5e-4 for logits near 1e4).  (`reassoc` without `nsz` lets
    # LLVM reorder the sums below, not rewrite these subtractions.)
    for i in native.prange(x.shape[0]):
        row = x[i]
        m = _row_max(row)
        total = _ZERO
        for j in range(row.size):
            total += _exp_as(row[j] - m)
        z = math.log(total)
        shift[i], lse[i] = m, z
        value = -coef_t[i] * ((row[target[i]] - m) - z)
        if coef_u[i] != 0:  # label smoothing: the weighted mean of all log-probabilities
            smooth = _ZERO
            for j in range(row.size):
                smooth += weight[j] * ((row[j] - m) - z)
            value -= coef_u[i] * smooth
        loss[i] = value


@native.kernel(parallel=True, fastmath=_REORDER)
def _cross_entropy_backward_kernel(g, x, shift, lse, target, coef_t, coef_u, weight, wsum,
                                   out):
    for i in native.prange(x.shape[0]):
        row, dst = x[i], out[i]
        a = g[i] * (coef_t[i] + coef_u[i] * wsum)
        u = g[i] * coef_u[i]
        m, z = shift[i], lse[i]
        for j in range(row.size):
            dst[j] = a * _exp_as((row[j] - m) - z) - u * weight[j]
        dst[target[i]] -= g[i] * coef_t[i]


def cross_entropy(x, target, coef_t, coef_u, weight) -> tuple:
    """Per-sample ``-coef_t logp[t] - coef_u sum_c w_c logp_c`` for logits `x` (a
    `supports` (N, C) array), ``logp = log_softmax(x)``; returns (loss, norm) with norm
    the per-row (max, log of the shifted normalizer): what the backward needs instead of
    logp.

    `coef_t` (N,) is ``(1 - smoothing) * weight[target]`` (0 for ignored targets),
    `coef_u` (N,) ``smoothing / C`` (0 for ignored targets), `weight` (C,) the class
    weights; all of x's dtype."""
    loss = np.empty(x.shape[0], x.dtype)
    shift = np.empty(x.shape[0], x.dtype)
    lse = np.empty(x.shape[0], x.dtype)
    # NOTE: cut over ember's threads, not numba's workqueue: timed alone (700x10000
    # logits) the two were even, but in a training step the logits come from a split
    # product, after which ember's worker keeps polling, and numba's thread shared its
    # core with it: the LSTM step's loss took 5.1 ms so, 3.3 cut (PyTorch's 3.3), and the
    # step went from 1.03-1.06 of PyTorch's time to 0.99-1.02 (2-core Intel Xeon,
    # 2026-12-05)
    run(_cross_entropy_kernel, x.size, x, target, coef_t, coef_u, weight, loss, shift, lse,
        cut=(0, 1, 2, 3, 5, 6, 7), part="cross_entropy")
    return loss, (shift, lse)


def cross_entropy_backward(g, x, norm, target, coef_t, coef_u, weight) -> np.ndarray:
    """``g * (a * softmax(x) - q)`` per row: the gradient of `cross_entropy` for the
    per-sample gradient `g` (N,), with q the weighted target distribution and a its sum;
    `norm` is what `cross_entropy` returned with the loss."""
    out = np.empty_like(x)
    run(_cross_entropy_backward_kernel, x.size, g, x, *norm, target, coef_t, coef_u, weight,
        x.dtype.type(weight.sum()), out, cut=(1, 0, 2, 3, 4, 5, 6, 9),
        part="cross_entropy_grad")
    return out


# ---------------------------------------------------------------------------
# the usual small batch's cross-entropy: one serial call, no per-sample coefficients


@native.kernel(fastmath=_REORDER)
def _class_loss_sum(x, target, grad):
    # (the sum of -logp[t] over the rows, in float64, and -1, or the first row whose
    # target is not a class index, with nothing summed past it; each row's gradient
    # softmax - onehot(t) into grad, from the exps the sum takes anyway)
    total = 0.0
    for i in range(x.shape[0]):
        k = target[i]
        if k < 0 or k >= x.shape[1]:
            return total, i
        row, dst = x[i], grad[i]
        m = _row_max(row)
        norm = _ZERO
        for j in range(row.size):
            e = _exp_as(row[j] - m)
            dst[j] = e
            norm += e
        total += math.log(norm) - (row[k] - m)
        scale = _ONE / norm
        for j in range(row.size):
            dst[j] *= scale
        dst[k] -= _ONE
    return total, -1


def class_loss_sum(x: np.ndarray, target: np.ndarray) -> tuple:
    """(the summed ``-log_softmax(x)[i, target[i]]`` over the rows of `x`, a `supports`
    (N, C) array, as a float; its gradient ``softmax(x) - onehot(target)``; -1, or the
    first row whose int64 target is not a class index), on the calling thread: the
    usual small batch's loss (ops/loss.py), whose backward then only scales."""
    grad = np.empty_like(x)
    total, bad = _class_loss_sum(x, target, grad)
    return total, grad, bad


# ---------------------------------------------------------------------------
# logsumexp over the last dim


@native.kernel(parallel=True, fastmath=_REORDER)
def _logsumexp_kernel(x, out):
    for i in native.prange(x.shape[0]):
        row = x[i]
        m = _row_max(row)
        shift = m if math.isfinite(m) else _ZERO  # (rows of inf or NaN: no shift)
        total = _ZERO
        for j in range(row.size):
            total += _exp_as(row[j] - shift)
        out[i] = math.log(total) + shift


@native.kernel(parallel=True, fastmath=_REORDER)
def _logsumexp_backward_kernel(g, x, lse, out):
    for i in native.prange(x.shape[0]):
        row, dst, gi, z = x[i], out[i], g[i], lse[i]
        for j in range(row.size):
            dst[j] = gi * _exp_as(row[j] - z)


def logsumexp(x: np.ndarray) -> np.ndarray:
    """``log(sum(exp(x), -1))`` of a `supports` 2-D array, one value per row (rows of
    infinities or NaN give what the NumPy path gives: the shift is 0 there)."""
    out = np.empty(x.shape[0], x.dtype)
    run(_logsumexp_kernel, x.size, x, out, cut=(0, 1))
    return out


def logsumexp_backward(g: np.ndarray, x: np.ndarray, lse: np.ndarray) -> np.ndarray:
    """``g[:, None] * exp(x - lse[:, None])``: the gradient of `logsumexp` for the rows'
    gradient `g` (C-contiguous, x's dtype) and its result `lse`."""
    out = np.empty_like(x)
    run(_logsumexp_backward_kernel, x.size, g, x, lse, out, cut=(0, 1, 2, 3))
    return out
