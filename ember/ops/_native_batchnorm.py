"""numba kernels of training-mode batch norm: per-channel statistics, normalization and
the affine map forward, and the first-order gradient backward, each channel one task of
a `native.prange` loop; and inference's per-channel ``x * scale + shift`` in one pass
(`channel_affine`).

The input is seen as (N, C, S) with S the spatial size; a channel is N contiguous runs
of S values.  Sums are taken in float64 whatever the dtype (reordered for vectorizing:
``fastmath`` reassoc only), so a float32 batch gets statistics at least as exact as the
NumPy path's.  normalization.py calls `supports` first and keeps its NumPy code (and the
differentiable backward, for double backward) as the fallback.
"""

from __future__ import annotations

import numpy as np

from . import _native as native
from . import _parallel

# Fewer elements than this stay on the NumPy path (a parallel call costs ~5-10 us).
MIN_SIZE = 1 << 13
_REORDER = {"reassoc", "contract"}


def supports(x, dims: tuple, *params) -> bool:
    """True when the kernels can normalize `x` over `dims` (batch norm's: all but dim 1)
    with the per-channel `params` (weight, bias; None when absent)."""
    if not (native.enabled() and native.is_cpu_array(x) and x.ndim >= 2
            and x.dtype in (np.float32, np.float64) and x.size >= MIN_SIZE
            and x.flags.c_contiguous and dims == (0,) + tuple(range(2, x.ndim))):
        return False
    return all(p is None or (native.is_cpu_array(p) and p.dtype == x.dtype
                             and p.size == x.shape[1] and p.flags.c_contiguous)
               for p in params)


def _as_nc_s(x):
    return x.reshape(x.shape[0], x.shape[1], -1)


def _over_channels(kernel, size: int, channels: int, *args) -> None:
    """``kernel(*args, first, stop)`` over all the channels: as two ranges of channels
    over ember's threads where `native.cuts` work of `size` elements (each a serial
    build, the second on the worker), else as one call (its prange on numba's threads
    for large work).  NOTE: below PARALLEL_MIN (2M elements on two threads) the kernels
    ran on one thread alone: (32, 96, 16, 16) float32 forward 0.29 ms, backward 0.30."""
    if channels > 1 and native.cuts(size):
        _parallel.run_parts(lambda part: kernel.serial(*args, part.start, part.stop),
                            _parallel.split(channels, 2))
    else:
        native.run(kernel, size, *args, 0, channels)


@native.kernel(parallel=True, fastmath=_REORDER)
def _forward_kernel(x, weight, bias, eps, y, out, mean, var, rstd, affine, first, stop):
    # channels first to stop.  mean and rstd have the data's dtype: read back from them,
    # the normalization runs in that dtype (float32 arithmetic for float32 data)
    n, size = x.shape[0], x.shape[2]
    count = n * size
    for c in native.prange(first, stop):
        total = 0.0
        for i in range(n):
            for j in range(size):
                total += x[i, c, j]
        m = total / count
        squares = 0.0
        for i in range(n):
            for j in range(size):
                d = x[i, c, j] - m
                squares += d * d
        v = squares / count
        r = 1.0 / np.sqrt(v + eps)
        mean[c], var[c], rstd[c] = m, v, r
        mc, rc = mean[c], rstd[c]
        w = weight[c] if affine else rc
        b = bias[c] if affine else rc
        for i in range(n):
            src, dst, res = x[i, c], y[i, c], out[i, c]
            for j in range(size):
                value = (src[j] - mc) * rc
                dst[j] = value
                if affine:
                    res[j] = value * w + b


def forward(x, weight, bias, eps: float):
    """(out, mean, var, rstd, y) of batch norm in training mode.

    mean, var and rstd have the keepdims shape (1, C, 1, ...); var is float64 (for the
    running statistics), the others take x's dtype.  Without weight and bias, out is y.
    """
    channels = x.shape[1]
    dtype = x.dtype
    affine = weight is not None or bias is not None
    one = np.ones(channels, dtype)
    weight = one if weight is None else weight.reshape(-1)
    bias = np.zeros(channels, dtype) if bias is None else bias.reshape(-1)
    y = np.empty_like(x)
    out = np.empty_like(x) if affine else y
    mean, var, rstd = np.empty(channels, dtype), np.empty(channels), np.empty(channels, dtype)
    _over_channels(_forward_kernel, x.size, channels, _as_nc_s(x), weight, bias, float(eps),
                   _as_nc_s(y), _as_nc_s(out), mean, var, rstd, affine)
    shape = (1, channels) + (1,) * (x.ndim - 2)
    return out, mean.reshape(shape), var.reshape(shape), rstd.reshape(shape), y


@native.kernel(parallel=True, fastmath=_REORDER)
def _backward_kernel(g, y, scale, gx, sums, sums_gy, means, want_gx, first, stop):
    # channels first to stop; `means` (C, 2) has the data's dtype, so that the last pass
    # runs in that dtype
    n, size = g.shape[0], g.shape[2]
    count = n * size
    for c in native.prange(first, stop):
        total = 0.0
        total_gy = 0.0
        for i in range(n):
            gi, yi = g[i, c], y[i, c]
            for j in range(size):
                total += gi[j]
                total_gy += gi[j] * yi[j]
        sums[c], sums_gy[c] = total, total_gy
        if want_gx:
            means[c, 0], means[c, 1] = total / count, total_gy / count
            mean_g, mean_gy, s = means[c, 0], means[c, 1], scale[c]
            for i in range(n):
                gi, yi, dst = g[i, c], y[i, c], gx[i, c]
                for j in range(size):
                    dst[j] = (gi[j] - mean_g - yi[j] * mean_gy) * s


def backward(g, y, rstd, weight, want_gx: bool):
    """(gx or None, sum of g * y, sum of g) per channel: batch norm's first-order gradient.

    ``gx = (g - mean(g) - y * mean(g * y)) * rstd * weight`` over each channel; the two
    sums are the gradients of weight and bias.
    """
    g = np.ascontiguousarray(g)
    channels = g.shape[1]
    scale = rstd.reshape(-1)
    if weight is not None:
        scale = scale * weight.reshape(-1)
    scale = np.ascontiguousarray(scale, dtype=g.dtype)
    gx = np.empty_like(g) if want_gx else np.empty((1, 1, 1), g.dtype)
    sums, sums_gy = np.empty(channels), np.empty(channels)
    _over_channels(_backward_kernel, g.size, channels, _as_nc_s(g),
                   _as_nc_s(np.ascontiguousarray(y)), scale, _as_nc_s(gx) if want_gx else gx,
                   sums, sums_gy, np.empty((channels, 2), g.dtype), want_gx)
    return (gx if want_gx else None), sums_gy.astype(g.dtype), sums.astype(g.dtype)


# ---------------------------------------------------------------------------
# inference: x * scale + shift per channel


@native.kernel
def _scale_and_shift(mean, var, weight, bias, eps, has_weight, has_bias, scale, shift):
    """``scale = 1 / sqrt(var + eps) * weight`` and ``shift = -mean * scale + bias`` per
    channel (weight and bias where `has_weight` / `has_bias`), each operation rounded in
    the arrays' dtype, as NumPy's rounds it."""
    one = scale.dtype.type(1)
    for c in range(scale.shape[0]):
        s = one / np.sqrt(var[c] + eps)
        if has_weight:
            s = s * weight[c]
        scale[c] = s
        h = -mean[c] * s
        if has_bias:
            h = h + bias[c]
        shift[c] = h


def scale_and_shift(mean, var, weight, bias, eps: float):
    """(scale, shift) of a batch norm at inference from its running statistics, `weight`
    and `bias` (None when absent): 1-D NumPy arrays of one float dtype, in one pass; None
    where the kernel cannot take them (numba off, other arrays).

    NOTE: the same seven NumPy operations took ~5 us of a batch-1 layer's ~20 (2-core
    Intel Xeon, 2026-12-08)."""
    dtype, shape = var.dtype, var.shape
    if len(shape) != 1 or (dtype != np.float32 and dtype != np.float64):
        return None
    for a in (mean, var, weight, bias):   # (a loop: this runs per layer call)
        if a is not None and (type(a) is not np.ndarray or a.dtype != dtype
                              or a.shape != shape):
            return None
    if not native.enabled():
        return None
    scale, shift = np.empty(shape, dtype), np.empty(shape, dtype)
    _scale_and_shift(mean, var, var if weight is None else weight,
                     var if bias is None else bias, dtype.type(eps), weight is not None,
                     bias is not None, scale, shift)
    return scale, shift


@native.kernel
def _affine_rows(x, scale, shift, out):
    """``out[r] = x[r] * scale[r] + shift[r]`` for the rows of `x`: a product and a sum,
    each rounded (no fused multiply-add), as NumPy's two operations round them."""
    for r in range(x.shape[0]):
        a, b = scale[r], shift[r]
        src, dst = x[r], out[r]
        for i in range(src.shape[0]):
            dst[i] = src[i] * a + b


def affine_supports(x) -> bool:
    """Whether `channel_affine` takes `x`, a float32/float64 NumPy array (N, C, ...)
    whose per-channel arrays share its dtype (the caller's checks): C-contiguous, numba
    on."""
    return native.enabled() and x.flags.c_contiguous


def channel_affine(x, scale, shift):
    """``x * scale + shift`` with `scale` and `shift` (C,) along dim 1 of `x`, in one pass
    (the rows of every image and channel cut over ember's threads from `native.SPLIT_MIN`
    elements): the bits of the two NumPy operations.

    NOTE: a (1, 64, 112, 112) float32 batch norm at inference (ResNet-18's stem) took 460
    us as NumPy's broadcast multiply and add, 225 in this loop on one thread (PyTorch
    127; 2-core Intel Xeon, 2026-12-07)."""
    n, c = x.shape[0], x.shape[1]
    rows = x.reshape(n * c, -1)
    out = np.empty_like(x)
    scales = np.tile(scale, n) if n > 1 else scale
    shifts = np.tile(shift, n) if n > 1 else shift
    native.run(_affine_rows, x.size, rows, scales, shifts, out.reshape(n * c, -1),
               cut=(0, 1, 2, 3), part="rows_affine")
    return out
