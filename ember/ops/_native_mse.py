"""numba kernels of the mean squared error: the sum of ``(x - t) ** 2`` (a reduced
forward) and ``(x - t) * f`` (its first-order gradient), each one pass over both
operands, cut over ember's threads.

The sum is taken over fixed blocks of `BLOCK` elements, each block's in float64, so the
result does not depend on how many threads ran: the squares are float32 products for
float32 operands (as NumPy's ``d * d``), added more exactly than NumPy's float32 sum.

NOTE: why.  On (4096, 256) float32, forward + backward took 2.36 ms (PyTorch 0.91): the
forward's three NumPy passes (x - t, its square, the sum; 1.13 ms on one thread) and the
backward's difference again, then its scaling (2-core Intel Xeon, 2026-12-06).
"""

from __future__ import annotations

import numpy as np

from . import _native as native

BLOCK = 4096


def takes(x, t) -> bool:
    """Whether the kernels take ``x - t``: non-empty NumPy float32/float64 arrays of one
    shape and dtype, numba on."""
    return (type(x) is np.ndarray and type(t) is np.ndarray and x.shape == t.shape
            and x.dtype == t.dtype and x.dtype.char in "fd" and x.size > 0
            and native.enabled())


@native.kernel(parallel=True, fastmath={"reassoc"})
def _block_sums(x, t, sums):
    for b in native.prange(x.shape[0]):
        a, c = x[b], t[b]
        total = 0.0
        for j in range(a.size):
            d = a[j] - c[j]
            total += d * d
        sums[b] = total


@native.kernel(parallel=True)
def _scaled_difference(x, t, factor, out):
    for i in native.prange(x.size):
        out[i] = (x[i] - t[i]) * factor


def squared_distance_sum(x, t) -> float:
    """``sum((x - t) ** 2)`` of `takes` arrays, as a Python float."""
    xf, tf = native.flat(x), native.flat(t)
    whole = xf.size - xf.size % BLOCK
    sums = np.zeros(whole // BLOCK + 1, np.float64)
    if whole:
        native.run(_block_sums, whole, xf[:whole].reshape(-1, BLOCK),
                   tf[:whole].reshape(-1, BLOCK), sums[:-1], cut=(0, 1, 2))
    if whole < xf.size:  # (the last, partial block)
        _block_sums.serial(xf[whole:].reshape(1, -1), tf[whole:].reshape(1, -1), sums[-1:])
    return float(sums.sum())


def scaled_difference(x, t, factor):
    """``(x - t) * factor`` of `takes` arrays and a number of their dtype."""
    xf, tf = native.flat(x), native.flat(t)
    out = np.empty_like(xf)
    native.run(_scaled_difference, xf.size, xf, tf, x.dtype.type(factor), out, cut=(0, 1, 3))
    return out.reshape(x.shape)
