"""numba kernels of gather along one dim and of its gradient, a scatter-add
(`scatter_add` too): ``out[a, m, b] = x[a, index[a, m, b], b]`` and ``out[a, index[a, m,
b], b] += src[a, m, b]`` over (outer, dim, inner) views.  The scatter-add adds in the
order ``np.add.at`` does (C order of the index), so the sums are the same.

NOTE: why.  ``np.add.at`` is a generic indexed loop, ~26 ns an update here, and the
gather an advanced-indexing key: gather of (4096, 16) picks from (4096, 256) float32,
forward and backward, took 4.5 ms, 1.7 of them in ``np.add.at`` (PyTorch: 0.29 ms; AMD
EPYC, 2026-12-06).

Along the last dim, the rows are cut over ember's two threads (a native part, family
``pick_rows``), and gather's gradient zeroes each row just before adding into it (one
pass over the memory, where a zeroed array was written first, then revisited): a (4096,
16) gather from (4096, 256) float32, forward and backward, medians of 300 steps in
alternated processes, 0.65-0.85 -> 0.46-0.71 ms (AMD EPYC, 2026-12-07, a slow hour).
"""

from __future__ import annotations

import math

import numpy as np

from . import _native as native
from ._native_activation import run

MIN_SIZE = 1 << 12  # (fewer updates: np.add.at's call costs less than the kernel's)
# A pick reads or adds at an index: the work of this many elementwise elements, for
# `native.run`'s choice of cutting rows over the threads.
PICK_WORK = 8


# What `_along_last` does at each index: read it, add to it, or add to its row zeroed first.
PICK, ADD, ZERO_AND_ADD = 0, 1, 2


@native.kernel
def _along_last(table, index, values, picks, mode, outside):
    # `_along_dim` along the last dim, on C-contiguous rows (outer, n), (outer, picks):
    # numba then knows each row is contiguous (a (4096, 16) gather from (4096, 256)
    # float32: 0.24 -> 0.12 ms; its scatter-add 0.29 -> 0.13); outside[a] = the count
    # of row a's indices outside the dim (rows are independent: cut over the threads)
    size = table.shape[1]
    for a in range(index.shape[0]):
        row, chosen, vals = table[a], index[a], values[a]
        if mode == ZERO_AND_ADD:
            for j in range(size):
                row[j] = 0
        count = 0
        for m in range(picks):
            i = chosen[m]
            if i < 0 or i >= size:
                count += 1
            elif mode == PICK:
                vals[m] = row[i]
            else:
                row[i] += vals[m]
        outside[a] = count


@native.kernel
def _along_dim(table, index, values, scatter):
    # gather: values[a, m, b] = table[a, index[a, m, b], b]; scatter: table[...] += values
    # (`scatter` is the same for the whole loop: LLVM takes the branch out of it)
    size = table.shape[1]
    outside = 0
    for a in range(index.shape[0]):
        for m in range(index.shape[1]):
            for b in range(index.shape[2]):
                i = index[a, m, b]
                if i < 0 or i >= size:
                    outside += 1
                elif scatter:
                    table[a, i, b] += values[a, m, b]
                else:
                    values[a, m, b] = table[a, i, b]
    return outside


def _run(table, index, values, mode: int) -> int:
    """`_along_dim` on (outer, dim, inner) views, or `_along_last` on their rows where the
    dim is the last (inner 1) and all three are C-contiguous; the count of indices
    outside the dim.  (`mode` ZERO_AND_ADD only where `_along_last` runs.)"""
    if table.shape[2] == 1 and all(v.flags.c_contiguous for v in (table, index, values)):
        outside = np.empty(index.shape[0], np.int64)
        run(_along_last, index.size * PICK_WORK, table[:, :, 0], index[:, :, 0],
            values[:, :, 0], index.shape[1], mode, outside, cut=(0, 1, 2, 5),
            part="pick_rows")
        return int(outside.sum())
    if mode == ZERO_AND_ADD:   # (`_along_dim` would add into rows it never zeroed)
        raise ValueError("scatter_add_into_zeros: the rows must be C-contiguous, along the "
                         "last dim")
    return _along_dim(table, index, values, mode == ADD)


def _three_dims(a, dim: int):
    """`a` viewed as (outer, a.shape[dim], inner) around `dim`, or None where that view
    would need a copy."""
    shape = (math.prod(a.shape[:dim]), a.shape[dim], math.prod(a.shape[dim + 1:]))
    try:
        return a.reshape(shape, copy=False)
    except ValueError:
        return None


def _takes(x, index) -> bool:
    return (native.enabled() and type(x) is np.ndarray and type(index) is np.ndarray
            and index.size >= MIN_SIZE and x.dtype in (np.float32, np.float64)
            and index.dtype == np.int64 and x.ndim == index.ndim > 0)


def _block(x, index, dim: int):
    """The part of `x` a gather or scatter with `index` along `dim` reaches: the first
    ``index.shape[d]`` positions in every other dim d."""
    return x[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))]


def _outside(count: int, op: str, dim: int, size: int) -> None:
    if count:
        raise IndexError(f"{op}: {count} indices outside dimension {dim} of size {size}")


def gather(x, index, dim: int):
    """``x[..., index, ...]`` along `dim` (index no larger than `x` in the other dims), a
    new C-contiguous array of index's shape, by the kernel; None where it does not take
    the arrays.  Raises IndexError for an index outside `x`'s dim."""
    if not _takes(x, index):
        return None
    views = _three_dims(_block(x, index, dim), dim), _three_dims(index, dim)
    if views[0] is None or views[1] is None:
        return None
    out = np.empty(index.shape, x.dtype)
    _outside(_run(*views, _three_dims(out, dim), PICK), "gather", dim, x.shape[dim])
    return out


def scatter_add(out, index, src, dim: int) -> bool:
    """``out[..., index, ...] += src`` along `dim` (index and src of one shape, no larger
    than `out` in the other dims) by the kernel; False, nothing done, where it does not
    take the arrays (then np.add.at does).  Raises IndexError for an index outside
    `out`'s dim."""
    if not (_takes(out, index) and type(src) is np.ndarray and src.dtype == out.dtype
            and src.shape == index.shape):
        return False
    views = (_three_dims(_block(out, index, dim), dim), _three_dims(index, dim),
             _three_dims(src, dim))
    if any(v is None for v in views) or not views[0].flags.writeable:
        return False
    _outside(_run(*views, ADD), "scatter_add", dim, out.shape[dim])
    return True


def scatter_add_into_zeros(shape: tuple, index, src, dim: int):
    """A new array of `shape`: zeros with `src` added at `index` along `dim` (gather's
    gradient), each row zeroed just before its adds, in one pass over the memory (not a
    zeroed array, then the adds); None where the kernel does not take the arrays: `dim`
    the last and `index` of `shape` in the others, `index` and `src` C-contiguous.
    Raises IndexError for an index outside the dim."""
    ndim = len(shape)
    if not (type(index) is np.ndarray and type(src) is np.ndarray and dim == ndim - 1
            and index.ndim == ndim and index.shape[:-1] == tuple(shape[:-1])
            and src.shape == index.shape and index.flags.c_contiguous
            and src.flags.c_contiguous and native.enabled() and index.size >= MIN_SIZE
            and src.dtype in (np.float32, np.float64) and index.dtype == np.int64):
        return None
    out = np.empty(shape, src.dtype)
    _outside(_run(*(_three_dims(a, dim) for a in (out, index, src)), ZERO_AND_ADD),
             "scatter_add", dim, shape[dim])
    return out
