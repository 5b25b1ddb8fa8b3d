"""numba kernels of dropout: the keep mask and the scaling fused in one pass, forward and
backward.

The random numbers are not drawn here.  dropout.py draws the same raw 32-bit words from
ember's generator as its NumPy path does, and the kernel only compares each word with the
threshold ``(1 - p) * 2**32`` and scales: the same seed gives the same mask, bit for bit,
with numba on or off (so `ember.manual_seed` reproduces a run either way).  The forward
keeps the mask as one byte per element (the NumPy path keeps a scale array of the input's
dtype) for the backward.
"""

from __future__ import annotations

import numpy as np

from . import _native as native
from ._native_activation import run

# Below this many elements the NumPy path is as fast: drawing the words dominates both.
MIN_SIZE = 1 << 14


def supports(x) -> bool:
    """True when the kernels should take `x` now: numba on, a C-contiguous NumPy float32
    or float64 array of at least `MIN_SIZE` elements."""
    return (type(x) is np.ndarray and x.size >= MIN_SIZE and x.dtype.char in "fd"
            and x.flags.c_contiguous and native.enabled())


@native.kernel(parallel=True)
def _dropout_kernel(x, words, threshold, scale, out, keep):
    zero = scale - scale
    for i in native.prange(x.size):
        kept = words[i] < threshold
        keep[i] = kept
        # x * 0 where dropped (nan for an infinite x, as in the NumPy path)
        out[i] = x[i] * (scale if kept else zero)


@native.kernel(parallel=True)
def _dropout_backward_kernel(grad, keep, scale, out):
    zero = scale - scale
    for i in native.prange(grad.size):
        out[i] = grad[i] * (scale if keep[i] else zero)


@native.kernel(parallel=True)
def _dropout_backward_into(grad, keep, scale):
    # (its own kernel, not out=grad: see _native_activation's backward kernels)
    zero = scale - scale
    for i in native.prange(grad.size):
        grad[i] *= scale if keep[i] else zero


def dropout(x: np.ndarray, words: np.ndarray, keep_probability: float) -> tuple:
    """``(out, keep)``: `x` (a `supports` array) with each element kept where its word of
    `words` (uint32, one per element) is below ``keep_probability * 2**32`` and scaled by
    ``1 / keep_probability``, else zeroed; `keep` is the boolean mask."""
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    keep = np.empty(flat.size, np.bool_)
    scale = x.dtype.type(1.0) / x.dtype.type(keep_probability)
    run(_dropout_kernel, flat.size, flat, words, np.int64(keep_probability * 2.0 ** 32), scale,
        out, keep)
    return out.reshape(x.shape), keep.reshape(x.shape)


def dropout_backward(grad: np.ndarray, keep: np.ndarray, scale,
                     overwrite: bool = False) -> np.ndarray:
    """``grad * scale`` where `keep`, else 0 (C-contiguous arrays of one shape); with
    `overwrite`, written into `grad` itself when it is C-contiguous (the caller's own)."""
    if overwrite and grad.flags.c_contiguous:
        run(_dropout_backward_into, grad.size, grad.reshape(-1), keep.reshape(-1),
            grad.dtype.type(scale))
        return grad
    flat = np.ascontiguousarray(grad).reshape(-1)
    out = np.empty_like(flat)
    run(_dropout_backward_kernel, flat.size, flat, keep.reshape(-1), flat.dtype.type(scale), out)
    return out.reshape(grad.shape)
