"""numba kernels of cumulative sums along one axis, forward and from the end (cumsum's
gradient), in NumPy's order of additions (one after the other), so that both paths give
the same bits.

The data is seen as (A, N, B) around the axis: along the last axis (B = 1) each task
scans its rows; otherwise each step adds a whole contiguous (B,) row to the previous sum.

NOTE: why.  NumPy's cumsum of (4096, 256) float32 took 2.5 ms along the last axis and
13.0 ms along the first (a strided inner loop); the kernel 0.3 ms (2-core Intel Xeon,
2026-12-06; PyTorch's cumsum forward and backward together: 1.2 ms).
"""

from __future__ import annotations

import numpy as np

from . import _native as native


def supports(x) -> bool:
    """Whether the kernels take `x`: a non-empty float32/float64 NumPy array, numba on."""
    return (type(x) is np.ndarray and x.dtype in (np.float32, np.float64) and x.size > 0
            and x.ndim > 0 and native.enabled())


@native.kernel(parallel=True)
def _scan_rows(x, out, reverse):
    rows, n = x.shape
    for r in native.prange(rows):
        if reverse:
            total = x[r, n - 1]
            out[r, n - 1] = total
            for j in range(n - 2, -1, -1):
                total += x[r, j]
                out[r, j] = total
        else:
            total = x[r, 0]
            out[r, 0] = total
            for j in range(1, n):
                total += x[r, j]
                out[r, j] = total


@native.kernel(parallel=True)
def _scan_blocks(x, out, reverse):
    lead, n, inner = x.shape
    for a in native.prange(lead):
        src, dst = x[a], out[a]
        first = n - 1 if reverse else 0
        start, origin = dst[first], src[first]
        # (an element loop, not ``dst[first, :] = src[first, :]``: numba's array
        # assignment adds ~2 s to the kernel's first compile, for its shape checks)
        for b in range(inner):
            start[b] = origin[b]
        for step in range(1, n):
            j = n - 1 - step if reverse else step
            before = j + 1 if reverse else j - 1
            total, previous, row = dst[j], dst[before], src[j]
            for b in range(inner):
                total[b] = previous[b] + row[b]


def cumsum(x, axis: int, reverse: bool = False):
    """``cumsum(x, axis)`` (with `reverse`, the sums from each position to the end) of a
    `supports` array."""
    x = np.ascontiguousarray(x)
    axis = axis % x.ndim
    out = np.empty_like(x)
    n = x.shape[axis]
    if axis == x.ndim - 1:
        native.run(_scan_rows, x.size, x.reshape(-1, n), out.reshape(-1, n), reverse,
                   cut=(0, 1))
    else:
        lead = int(np.prod(x.shape[:axis]))
        native.run(_scan_blocks, x.size, x.reshape(lead, n, -1), out.reshape(lead, n, -1),
                   reverse, cut=(0, 1))
    return out
