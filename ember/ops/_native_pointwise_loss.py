"""numba kernels of the reduced pointwise regression losses (mean squared error, Huber,
smooth L1): the loss summed over ``d = x - t`` (a reduced forward) and its first-order
gradient times a factor, each one pass over both operands, cut over ember's threads.

The sum is taken over fixed blocks of `BLOCK` elements, each block's in float64, so the
result does not depend on how many threads ran: each element's loss is computed in the
operands' dtype, as the NumPy path computes it, and added more exactly than NumPy's
float32 sum.  The gradients give the NumPy path's bits.

Huber and smooth L1 share their kernels: with ``a = |d|``, the loss is ``(c d) d`` where
``a < k``, else ``m (a - h)``, and the slope ``d / s`` where ``a < k``, else
``sign(d) m`` (`huber_constants` gives k, c, m, h and s for each).

NOTE: why.  On (4096, 256) float32, forward + backward took 2.36 ms for the mean squared
error (PyTorch 0.91): the forward's three NumPy passes (x - t, its square, the sum; 1.13
ms on one thread) and the backward's difference again, then its scaling (2-core Intel
Xeon, 2026-12-06).  Smooth L1 and Huber took 12.7 and 13.6 ms (PyTorch 0.69 and 0.60) in
a dozen passes, two of them NumPy's ``where`` (AMD EPYC, 2026-12-06).
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


def huber_constants(kind: str, edge: float) -> tuple:
    """(k, c, m, h, s) of `kind` 'huber' (edge = delta) or 'smooth_l1' (edge = beta > 0),
    in the NumPy path's arithmetic: Huber is ``0.5 d d`` inside, ``delta (a - delta / 2)``
    outside, slope d or ``sign(d) delta``; smooth L1 ``(0.5 / beta) d d`` inside, ``a - beta
    / 2`` outside, slope ``d / beta`` or ``sign(d)``."""
    if kind == "huber":
        return edge, 0.5, edge, 0.5 * edge, 1.0
    return edge, 0.5 / edge, 1.0, 0.5 * edge, edge


# ---------------------------------------------------------------------------
# mean squared error


@native.kernel(parallel=True, fastmath={"reassoc"})
def _squares_block_sums(x, t, sums):
    for b in native.prange(x.shape[0]):
        a, c = x[b], t[b]
        total = 0.0
        for j in range(a.size):
            d = a[j] - c[j]
            total += d * d
        sums[b] = total


@native.kernel(parallel=True)
def _scaled_difference(x, t, out, factor):
    for i in native.prange(x.size):
        out[i] = (x[i] - t[i]) * factor


def squared_distance_sum(x, t) -> float:
    """``sum((x - t) ** 2)`` of `takes` arrays, as a Python float."""
    return _block_sum(_squares_block_sums, x, t)


def scaled_difference(x, t, factor):
    """``(x - t) * factor`` of `takes` arrays and a number of their dtype."""
    xf, tf = native.flat(x), native.flat(t)
    out = np.empty_like(xf)
    native.run(_scaled_difference, xf.size, xf, tf, out, x.dtype.type(factor), cut=(0, 1, 2),
               part="flat3_1")
    return out.reshape(x.shape)


# ---------------------------------------------------------------------------
# Huber and smooth L1


@native.kernel(parallel=True, fastmath={"reassoc"})
def _huber_block_sums(x, t, sums, k, c, m, h):
    for b in native.prange(x.shape[0]):
        xs, ts = x[b], t[b]
        total = 0.0
        for j in range(xs.size):
            d = xs[j] - ts[j]
            a = abs(d)
            inside = c * d * d       # (both sides first: see _native_select's note)
            outside = m * (a - h)
            total += inside if a < k else outside
        sums[b] = total


@native.kernel(parallel=True)
def _huber_slope(x, t, out, k, m, s, factor):
    for i in native.prange(x.size):
        d = x[i] - t[i]
        sign = m if d > 0 else (-m if d < 0 else d * m)   # (nan stays nan, 0 stays 0)
        out[i] = (d / s if abs(d) < k else sign) * factor


def huber_sum(x, t, kind: str, edge: float) -> float:
    """The Huber (`kind` 'huber', edge delta) or smooth L1 ('smooth_l1', edge beta) loss
    of ``x - t`` summed, of `takes` arrays, as a Python float."""
    k, c, m, h, _ = (x.dtype.type(v) for v in huber_constants(kind, edge))
    return _block_sum(_huber_block_sums, x, t, k, c, m, h)


def huber_slope(x, t, kind: str, edge: float, factor):
    """The derivative of `huber_sum`'s loss in ``d = x - t``, each times `factor` (a
    number of the arrays' dtype)."""
    k, _, m, _, s = (x.dtype.type(v) for v in huber_constants(kind, edge))
    xf, tf = native.flat(x), native.flat(t)
    out = np.empty_like(xf)
    native.run(_huber_slope, xf.size, xf, tf, out, k, m, s, x.dtype.type(factor),
               cut=(0, 1, 2), part="flat3_4")
    return out.reshape(x.shape)


def _block_sum(kernel, x, t, *params) -> float:
    """The sum of `kernel`'s per-block sums over `takes` arrays cut in `BLOCK`s (the
    last, partial block on this thread), as a Python float."""
    xf, tf = native.flat(x), native.flat(t)
    whole = xf.size - xf.size % BLOCK
    sums = np.zeros(whole // BLOCK + 1, np.float64)
    if whole:
        native.run(kernel, whole, xf[:whole].reshape(-1, BLOCK),
                   tf[:whole].reshape(-1, BLOCK), sums[:-1], *params, cut=(0, 1, 2))
    if whole < xf.size:
        kernel.serial(xf[whole:].reshape(1, -1), tf[whole:].reshape(1, -1), sums[-1:],
                      *params)
    return float(sums.sum())
