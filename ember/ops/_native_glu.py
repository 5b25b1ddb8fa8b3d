"""numba kernels of the gated linear unit, ``a * sigmoid(b)`` for the halves a, b of the
input along one dim, forward and first-order backward, each one pass.

The input is seen as (outer, 2 * n) around the dim (n: half the dim's size times the
sizes after it), so each half of an outer item is one contiguous run whatever the dim;
the two threads take halves of the outer rows, the worker's as a native part
(ops/_native_cuts.py, families ``halves2``/``halves3``).

NOTE: why.  On (4096, 256) float32, halves along the last dim, NumPy's ufuncs over the
strided halves took 0.8 ms forward and 1.8 ms backward (a sigmoid of a copied half, then
three strided products; PyTorch: 0.2 and 0.8 ms), one pass 0.2 ms or so (2-core Intel
Xeon, 2026-12-06).
"""

from __future__ import annotations

import math

import numpy as np

from . import _native as native
from ._native_activation import FUSED_MULTIPLY_ADD, _sigmoid_as

_ONE = np.float32(1.0)  # (keeps float32 arithmetic in float32; promotes in float64)


def supports(x) -> bool:
    """Whether the kernels take `x`: a non-empty float32/float64 NumPy array, numba on."""
    return (type(x) is np.ndarray and x.dtype in (np.float32, np.float64) and x.size > 0
            and native.enabled())


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _glu_kernel(x, out):
    n = out.shape[1]
    for o in native.prange(x.shape[0]):
        a, b, dst = x[o, :n], x[o, n:], out[o]
        for j in range(n):
            dst[j] = a[j] * _sigmoid_as(b[j])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _glu_backward_kernel(x, g, out):
    # NOTE: three short loops, s kept in ga between them: one loop over all five arrays
    # was not vectorized (3.7x slower: 2.58 against 0.69 ms on (4096, 256) float32)
    n = g.shape[1]
    for o in native.prange(x.shape[0]):
        a, b, grad, ga, gb = x[o, :n], x[o, n:], g[o], out[o, :n], out[o, n:]
        for j in range(n):
            ga[j] = _sigmoid_as(b[j])
        for j in range(n):
            gb[j] = grad[j] * ga[j] * a[j] * (_ONE - ga[j])
        for j in range(n):
            ga[j] *= grad[j]


def _as_rows(x, dim: int):
    """`x` C-contiguous and writable as (outer, 2 * n) around `dim`: each row the two
    halves a and b, n elements each, one after the other."""
    outer = math.prod(x.shape[:dim])
    return native.writable(np.ascontiguousarray(x)).reshape(outer, x.size // outer)


def glu(x, dim: int):
    """``a * sigmoid(b)`` for the halves of a `supports` array along `dim` (non-negative,
    of even size)."""
    rows = _as_rows(x, dim)
    out = np.empty((rows.shape[0], rows.shape[1] // 2), x.dtype)
    native.run(_glu_kernel, x.size, rows, out, cut=(0, 1), part="halves2")
    return out.reshape(x.shape[:dim] + (x.shape[dim] // 2,) + x.shape[dim + 1:])


def glu_backward(g, x, dim: int):
    """The gradient of `glu` in `x` for the output's gradient `g` (any layout)."""
    rows = _as_rows(x, dim)
    grad = native.writable(np.ascontiguousarray(g, dtype=x.dtype)).reshape(rows.shape[0], -1)
    out = np.empty(rows.shape, x.dtype)
    native.run(_glu_backward_kernel, x.size, rows, grad, out, cut=(0, 1, 2),
               part="halves3")
    return out.reshape(x.shape)

