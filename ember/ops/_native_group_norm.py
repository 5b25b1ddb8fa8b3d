"""numba kernels of group norm on (N, C, *) data seen as rows, one per (image, group): the
forward standardizes each row and applies its channels' weight and bias in the same pass;
the backward gives the input's gradient and each row's per-channel sums of ``g * xhat`` and
of g, which summed over the images are the weight's and the bias's gradients.

A row's weight and bias come as rows of their own (`_per_row`: its group's channels,
repeated for every image), so that a kernel needs no group index and the rows cut over
the threads like layer norm's (ops/_native_cuts.py, families ``group_norm`` and
``group_norm_grad``).  The backward recomputes xhat from the input, the mean and the rstd:
as in PyTorch, the node keeps the input, not its output.

NOTE: why.  Before, layer norm's row kernels ran per group and then a per-channel affine
map took two more passes, its backward's sums on one thread: (8, 64, 32, 32) float32 with
32 groups, weight and bias, 2 threads: forward 0.30 ms and forward + backward 0.85,
against PyTorch's 0.09 and 0.28; these kernels: 0.16-0.18 and 0.37-0.48 (AMD EPYC,
2026-12-06).
"""

from __future__ import annotations

import numpy as np

from . import _native as native
from ._native_activation import run
from ._native_rows import _REORDER, _ZERO, _row_stats

MIN_SIZE = 1 << 13  # (fewer elements: the NumPy path's calls cost less than a kernel's)


def supports(x, *params) -> bool:
    """True when the kernels take `x` (N, C, ...) and its per-channel `params` (weight,
    bias; None when absent): numba on, NumPy float32/float64 arrays of one dtype (a
    strided x is copied first)."""
    return (native.enabled() and native.is_cpu_array(x) and x.ndim >= 2
            and x.dtype in (np.float32, np.float64) and x.size >= MIN_SIZE
            and all(p is None or (native.is_cpu_array(p) and p.dtype == x.dtype)
                    for p in params))


@native.kernel(parallel=True, fastmath=_REORDER)
def _forward_kernel(x, weight, bias, k, inv_n, eps, out, mean, rstd):
    # row i: `k` channels of n / k elements each; weight[i] and bias[i] are theirs
    rows, n = x.shape
    s = n // k
    for i in native.prange(rows):
        row, dst = x[i], out[i]
        mu, r = _row_stats(row, inv_n, eps)
        mean[i] = mu
        rstd[i] = r
        w, b = weight[i], bias[i]
        for c in range(k):
            # (slices, each loop from 0: an index LLVM cannot prove non-negative keeps
            # numba's wraparound test in the loop, which then does not vectorize: 6x slower)
            src, into = row[c * s:(c + 1) * s], dst[c * s:(c + 1) * s]
            scale, shift = r * w[c], b[c]
            for j in range(s):
                into[j] = (src[j] - mu) * scale + shift


@native.kernel(parallel=True, fastmath=_REORDER)
def _backward_kernel(g, x, weight, k, mean, rstd, inv_n, need_x, gx, sums_gx, sums_g):
    # gx = rstd (g w - mean(g w) - xhat mean(g w xhat)) over the row; the per-channel sums of
    # g xhat and g go to sums_gx[i] and sums_g[i]
    rows, n = x.shape
    s = n // k
    for i in native.prange(rows):
        gr, row = g[i], x[i]
        mu, r = mean[i], rstd[i]
        w = weight[i]
        m1 = _ZERO
        m2 = _ZERO
        for c in range(k):
            gc, xc = gr[c * s:(c + 1) * s], row[c * s:(c + 1) * s]
            total_g = _ZERO
            total_gx = _ZERO
            for j in range(s):
                gv = gc[j]
                total_g += gv
                total_gx += gv * ((xc[j] - mu) * r)
            sums_g[i, c] = total_g
            sums_gx[i, c] = total_gx
            m1 += total_g * w[c]
            m2 += total_gx * w[c]
        if need_x:
            m1 *= inv_n
            m2 *= inv_n
            for c in range(k):
                gc, xc = gr[c * s:(c + 1) * s], row[c * s:(c + 1) * s]
                into, wc = gx[i, c * s:(c + 1) * s], w[c]
                for j in range(s):
                    into[j] = r * (gc[j] * wc - m1 - ((xc[j] - mu) * r) * m2)


def _per_row(param, images: int, groups: int, channels: int, dtype, default: float):
    """The per-channel `param` (or `default` everywhere when None) as one row of its
    group's channels per (image, group): (images * groups, channels // groups)."""
    values = np.full(channels, default, dtype) if param is None else param.reshape(-1)
    return np.ascontiguousarray(np.broadcast_to(
        values.reshape(groups, -1), (images, groups, channels // groups))).reshape(
            images * groups, -1)


def forward(x, weight, bias, groups: int, eps: float) -> tuple:
    """Group norm of a `supports` x with its weight and bias (None: 1 and 0): (output,
    mean, rstd), the last two one per (image, group)."""
    images, channels = x.shape[:2]
    rows = np.ascontiguousarray(x).reshape(images * groups, -1)
    dtype = x.dtype.type
    out = np.empty_like(rows)
    mean, rstd = np.empty(rows.shape[0], x.dtype), np.empty(rows.shape[0], x.dtype)
    run(_forward_kernel, rows.size, rows, _per_row(weight, images, groups, channels, x.dtype, 1),
        _per_row(bias, images, groups, channels, x.dtype, 0), channels // groups,
        dtype(1.0 / rows.shape[1]), dtype(eps), out, mean, rstd, cut=(0, 1, 2, 6, 7, 8),
        part="group_norm")
    return out.reshape(x.shape), mean, rstd


def backward(g, x, weight, mean, rstd, groups: int, need_x: bool) -> tuple:
    """First-order gradients of `forward` for the gradient g of its output: (the input's,
    or None without `need_x`; the weight's; the bias's), the last two per channel."""
    images, channels = x.shape[:2]
    rows = np.ascontiguousarray(x).reshape(images * groups, -1)
    grad = np.ascontiguousarray(g).reshape(images * groups, -1)
    k = channels // groups
    gx = np.empty_like(rows)   # (not written without need_x: its pages are never touched)
    sums_gx, sums_g = np.empty((rows.shape[0], k), x.dtype), np.empty((rows.shape[0], k),
                                                                      x.dtype)
    run(_backward_kernel, rows.size, grad, rows,
        _per_row(weight, images, groups, channels, x.dtype, 1), k, mean, rstd,
        x.dtype.type(1.0 / rows.shape[1]), need_x, gx, sums_gx, sums_g,
        cut=(0, 1, 2, 4, 5, 8, 9, 10), part="group_norm_grad")
    gw = sums_gx.reshape(images, channels).sum(0)
    gb = sums_g.reshape(images, channels).sum(0)
    return (gx.reshape(x.shape) if need_x else None), gw, gb
