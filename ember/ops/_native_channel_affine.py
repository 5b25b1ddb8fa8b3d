"""numba kernels of a per-channel affine map on (N, C, *) data, group norm's last step:
``out[n, c] = y[n, c] * weight[c] + bias[c]`` forward, and backward the gradient reaching
y (``g * weight[c]``) with the per-channel sums that are the gradients of weight and
bias, each in one pass instead of NumPy's two or three broadcast passes.

Sums are taken in float64 whatever the dtype.  `supports` says when they run; callers
keep their NumPy code for the rest.
"""

from __future__ import annotations

import numpy as np

from . import _native as native

MIN_SIZE = 1 << 13  # (fewer elements: NumPy's passes cost less than a kernel call)
_REORDER = {"reassoc", "contract"}


def supports(y, *params) -> bool:
    """True when the kernels take `y` (N, C, ...) with the per-channel `params` (weight,
    bias; None when absent): numba on, C-contiguous NumPy float32/float64 arrays of one
    dtype."""
    return (native.enabled() and native.is_cpu_array(y) and y.ndim >= 2
            and y.dtype in (np.float32, np.float64) and y.size >= MIN_SIZE
            and y.flags.c_contiguous
            and all(p is None or (native.is_cpu_array(p) and p.dtype == y.dtype
                                  and p.size == y.shape[1] and p.flags.c_contiguous)
                    for p in params))


def _rows(a):
    return a.reshape(a.shape[0], a.shape[1], -1)


@native.kernel(parallel=True)
def _forward_kernel(y, weight, bias, out):
    n, channels, size = y.shape
    for k in native.prange(n * channels):
        i, c = k // channels, k % channels
        w, b = weight[c], bias[c]
        src, dst = y[i, c], out[i, c]
        for j in range(size):
            dst[j] = src[j] * w + b


def forward(y, weight, bias):
    """``y * weight[c] + bias[c]`` for a `supports` y (a missing weight is 1, a missing
    bias 0)."""
    channels = y.shape[1]
    weight = np.ones(channels, y.dtype) if weight is None else weight.reshape(-1)
    bias = np.zeros(channels, y.dtype) if bias is None else bias.reshape(-1)
    out = np.empty_like(y)
    # (the images cut over ember's threads; the backward's per-channel sums are not cut)
    native.run(_forward_kernel, y.size, _rows(y), weight, bias, _rows(out), cut=(0, 3))
    return out


@native.kernel(parallel=True, fastmath=_REORDER)
def _backward_kernel(g, y, weight, gy, sums_gy, sums_g, want_gy):
    n, channels, size = g.shape
    for c in native.prange(channels):
        total_g = 0.0
        total_gy = 0.0
        w = weight[c]
        for i in range(n):
            gi, yi = g[i, c], y[i, c]
            for j in range(size):
                total_g += gi[j]
                total_gy += gi[j] * yi[j]
            if want_gy:
                dst = gy[i, c]
                for j in range(size):
                    dst[j] = gi[j] * w
        sums_gy[c], sums_g[c] = total_gy, total_g


def backward(g, y, weight, want_gy: bool) -> tuple:
    """(``g * weight[c]`` or None, the per-channel sums of g * y, of g) for `supports`
    arrays g and y of one shape: the gradients reaching y, weight and bias."""
    channels = g.shape[1]
    w = np.ones(channels, g.dtype) if weight is None else weight.reshape(-1)
    gy = np.empty_like(g) if want_gy else np.empty((1, channels, 1), g.dtype)
    sums_gy, sums_g = np.empty(channels), np.empty(channels)
    native.run(_backward_kernel, g.size, _rows(g), _rows(y), w,
               _rows(gy) if want_gy else gy, sums_gy, sums_g, want_gy)
    return (gy if want_gy else None), sums_gy.astype(g.dtype), sums_g.astype(g.dtype)
