"""numba kernels of resample.py's sparse maps along one axis (interpolation, padding by
reflection or replication, adaptive pooling): ``out[a, o, b] = sum_t weight[t, o] *
x[a, idx[t, o], b]`` and its adjoint, which adds each output back into its taps; and of
maps of the last two axes by index at once (the usual 2-D padding: one pass, not two).

The data is seen as (A, N, B) around the mapped axis, so no axis is moved and nothing is
copied; one task per leading index (dealt to ember's threads), the inner loop along
contiguous memory.  Unlike a
product with the dense (out, in) matrix, a non-finite value reaches only the outputs
that read it.

NOTE: why.  NumPy's adjoint sorted the taps and summed each run with ``reduceat`` over
moved axes: nearest 2x upsampling of (8, 64, 32, 32) float32, forward and backward, took
39.7 ms against PyTorch's 3.7, reflection padding of (4, 16, 64, 64) by 4 12.9 ms
against 0.35 (2-core Intel Xeon, 2026-12-06).
"""

from __future__ import annotations

import numpy as np

from . import _native as native


def supports(x, idx, weight) -> bool:
    """Whether the kernels take a map of `x` with taps `idx` (T, O) and `weight` (T, O or
    None): float32/float64 NumPy data, int64 NumPy taps, numba on."""
    return (native.enabled() and type(x) is np.ndarray and x.dtype in (np.float32, np.float64)
            and type(idx) is np.ndarray and idx.ndim == 2 and x.size > 0 and idx.size > 0
            and (weight is None or type(weight) is np.ndarray))


@native.kernel(parallel=True)
def _gather(x, idx, weight, out):
    lead, n_out, inner = out.shape
    taps = idx.shape[0]
    for a in native.prange(lead):
        src, dst = x[a], out[a]
        dst[:, :] = 0
        for t in range(taps):
            for o in range(n_out):
                w = weight[t, o]
                row, line = src[idx[t, o]], dst[o]
                for b in range(inner):
                    line[b] += w * row[b]


@native.kernel(parallel=True)
def _scatter(g, idx, weight, out):
    lead, n_out, inner = g.shape
    taps = idx.shape[0]
    for a in native.prange(lead):
        src, dst = g[a], out[a]
        dst[:, :] = 0
        for t in range(taps):
            for o in range(n_out):
                w = weight[t, o]
                line, row = src[o], dst[idx[t, o]]
                for b in range(inner):
                    row[b] += w * line[b]


@native.kernel(parallel=True)
def _gather_last(x, idx, weight, out):
    """`_gather` along the last axis (no inner dim: no row views in the loop)."""
    lead, n_out = out.shape
    taps = idx.shape[0]
    for a in native.prange(lead):
        for o in range(n_out):
            total = 0.0
            for t in range(taps):
                total += weight[t, o] * x[a, idx[t, o]]
            out[a, o] = total


@native.kernel(parallel=True)
def _scatter_last(g, idx, weight, out):
    """`_scatter` along the last axis."""
    lead, n_out = g.shape
    taps = idx.shape[0]
    for a in native.prange(lead):
        out[a, :] = 0
        for t in range(taps):
            for o in range(n_out):
                out[a, idx[t, o]] += weight[t, o] * g[a, o]


def _three(x, axis: int, n: int):
    """`x` as (A, n, B) around `axis` (a C-contiguous array's view)."""
    return x.reshape(int(np.prod(x.shape[:axis])), n, -1)


def _weights(idx, weight, dtype):
    w = np.ones(idx.shape, dtype) if weight is None else weight
    return np.ascontiguousarray(w, dtype=dtype)


def apply(x, axis: int, idx, weight):
    """``y[..., o, ...] = sum_t weight[t, o] * x[..., idx[t, o], ...]`` along `axis`."""
    x = np.ascontiguousarray(x)
    shape = x.shape[:axis] + (idx.shape[1],) + x.shape[axis + 1:]
    out = np.empty(shape, x.dtype)
    taps, w = np.ascontiguousarray(idx), _weights(idx, weight, x.dtype)
    if axis == x.ndim - 1:
        native.run(_gather_last, out.size * idx.shape[0], x.reshape(-1, x.shape[-1]), taps, w,
                   out.reshape(-1, out.shape[-1]), cut=(0, 3))
    else:
        native.run(_gather, out.size * idx.shape[0], _three(x, axis, x.shape[axis]), taps, w,
                   _three(out, axis, idx.shape[1]), cut=(0, 3))
    return out


def adjoint(g, axis: int, idx, weight, size: int):
    """The transpose of `apply`: each g[..., o, ...] added into its taps' positions, an
    axis of `size`."""
    g = np.ascontiguousarray(g)
    shape = g.shape[:axis] + (size,) + g.shape[axis + 1:]
    out = np.empty(shape, g.dtype)
    taps, w = np.ascontiguousarray(idx), _weights(idx, weight, g.dtype)
    if axis == g.ndim - 1:
        native.run(_scatter_last, g.size * idx.shape[0], g.reshape(-1, g.shape[-1]), taps, w,
                   out.reshape(-1, size), cut=(0, 3))
    else:
        native.run(_scatter, g.size * idx.shape[0], _three(g, axis, g.shape[axis]), taps, w,
                   _three(out, axis, size), cut=(0, 3))
    return out


# ----------------------------------------------------------------------
# maps of the last two axes by index (padding by reflection, replication or wrapping):
# ``out[..., i, j] = x[..., rows[i], cols[j]]`` in one pass instead of one per axis


# A map's `geometry` (an int64 array): where its longest run of consecutive source
# positions along the last axis starts in the output, where in the input, how long it is
# (`_run_of`), then the unpadded planes' height and width (which a native part's entry
# point needs to rebuild the arrays, ops/_native_cuts.py).
@native.kernel(parallel=True)
def _plane_gather(x, rows, cols, geometry, out):
    start, source, length = geometry[0], geometry[1], geometry[2]
    for p in native.prange(x.shape[0]):
        src, dst = x[p], out[p]
        for i in range(rows.size):
            line, into = src[rows[i]], dst[i]
            for j in range(start):
                into[j] = line[cols[j]]
            # the run as a plain copy between two views (vectorized; a slice assignment,
            # or indexing with offsets, was not)
            run_out, run_in = into[start:start + length], line[source:source + length]
            for k in range(length):
                run_out[k] = run_in[k]
            for j in range(start + length, cols.size):
                into[j] = line[cols[j]]


@native.kernel(parallel=True)
def _plane_scatter(g, rows, cols, geometry, out):
    # (each line's elements are added in the order of j, as on the NumPy path: the run's
    # targets are distinct, so adding it in one vectorized loop changes no sum's order)
    start, source, length = geometry[0], geometry[1], geometry[2]
    for p in native.prange(g.shape[0]):
        src, dst = g[p], out[p]
        dst[:, :] = 0
        for i in range(rows.size):
            line, into = src[i], dst[rows[i]]
            for j in range(start):
                into[cols[j]] += line[j]
            run_out, run_in = into[source:source + length], line[start:start + length]
            for k in range(length):
                run_out[k] += run_in[k]
            for j in range(start + length, cols.size):
                into[cols[j]] += line[j]


def _geometry(cols: np.ndarray, size: tuple) -> np.ndarray:
    """A map's `geometry` for planes of `size`: the longest stretch of `cols` that reads
    consecutive positions, ``cols[start + k] == source + k`` (a padding map's interior,
    which the kernels copy as one run rather than element by element), and the size.
    NOTE: reflection padding of (512, 32, 32) float32 planes by 1, one thread: 0.25 ms
    element by element, 0.13 ms with the run (128 x 128 planes: 0.44 against 0.12)."""
    best = (0, 0, 0)
    start = 0
    for j in range(1, cols.size + 1):
        if j == cols.size or cols[j] != cols[j - 1] + 1:
            if j - start > best[2]:
                best = (start, int(cols[start]), j - start)
            start = j
    return np.array(best + tuple(size), np.int64)


def plane_supports(x) -> bool:
    """Whether `gather_planes` and `scatter_planes` take `x`: float32/float64 NumPy data of
    2 dims or more."""
    return type(x) is np.ndarray and x.dtype in (np.float32, np.float64) and x.ndim >= 2


def gather_planes(x, rows, cols):
    """``x[..., rows[i], cols[j]]`` for every (i, j) (int64 index vectors)."""
    x = native.writable(np.ascontiguousarray(x))
    out = np.empty(x.shape[:-2] + (rows.size, cols.size), x.dtype)
    if not (native.enabled() and out.size):
        out[...] = x[..., rows[:, None], cols[None, :]]
        return out
    native.run(_plane_gather, out.size, x.reshape((-1,) + x.shape[-2:]), rows, cols,
               _geometry(cols, x.shape[-2:]), out.reshape((-1,) + out.shape[-2:]),
               cut=(0, 4), part="plane_gather")
    return out


def scatter_planes(g, rows, cols, size: tuple):
    """The transpose of `gather_planes`: each g[..., i, j] added into position
    (rows[i], cols[j]) of planes of `size`."""
    g = native.writable(np.ascontiguousarray(g))
    out = np.empty(g.shape[:-2] + tuple(size), g.dtype)
    if not (native.enabled() and g.size):
        out[...] = 0
        np.add.at(out, (Ellipsis, rows[:, None], cols[None, :]), g)
        return out
    native.run(_plane_scatter, g.size, g.reshape((-1,) + g.shape[-2:]), rows, cols,
               _geometry(cols, size), out.reshape((-1,) + tuple(size)), cut=(0, 4),
               part="plane_scatter")
    return out
