"""Sums over an array's trailing dims (numba): ``x.sum(dims)`` and ``x.mean(dims)`` when
`dims` are the last k dims of a C-contiguous float32/float64 NumPy array (all of them
included), as one sum per row of a 2-D view, the rows cut over ember's threads.

NOTE: why.  NumPy adds each row pairwise in the array's dtype, on one thread, at ~1 ns
an element for short rows: over the last dim of (4096, 256) float32, 285 us against
PyTorch's 57; over (H, W) of (8, 64, 32, 32) (global average pooling) 117 against 22;
all of 1M elements 207 against 37 (AMD EPYC, 2026-12-07).  Here each row is summed in
chunks of `CHUNK` elements in the array's dtype, by a loop LLVM vectorizes with several
partial sums (fastmath reassoc only: NaN and inf keep their meaning), and the chunks'
sums are added in float64; the result is rounded to the input's dtype once.  A whole
array is cut into rows of `BLOCK` elements and a tail.  Against float64 sums, rows of
float32: (4096, 256) 6.0e-6 (NumPy 7.1e-6), (64, 16384) 3.8e-5 (NumPy 4.6e-5; one
float32 sum per row, unchunked: 1.6e-4); one thread, (4096, 256) 61.7 us, all in
float64 88.4 us.  `Tensor.mean`, NumPy's way against this one (medians of seven
alternated, 2 threads, us): (4096, 256) over the last dim 411 -> 143, (8, 64, 32, 32)
over (H, W) 148 -> 75, (32, 128, 512) over the last dim 586 -> 154, 1M elements in all
235 -> 94, (64, 100) 25 -> 16.  The rows' halves on two threads gain less than on
compute-bound kernels: the sums wait on memory (one thread 59-81 us, two 67-85).
"""

from __future__ import annotations

import math

import numpy as np

from . import _native as native
from ._native_activation import run

# Fewer elements than this stay on NumPy's sum (the kernel's call costs ~1-2 us).
MIN_SIZE = 1 << 12
# A sum over all elements takes rows of this many (the rows cut over the threads).
BLOCK = 1 << 12
# A row is summed in chunks of this many elements, each in the array's dtype.
CHUNK = 512
_ZERO = np.float32(0.0)   # (a float32 zero stays float32 in a float32 sum, widens in float64)


def supports(x) -> bool:
    """Whether `trailing_sums` takes `x`: a C-contiguous float32/float64 NumPy array of
    `MIN_SIZE` elements or more, numba on."""
    return (type(x) is np.ndarray and x.size >= MIN_SIZE and x.dtype.char in "fd"
            and x.flags.c_contiguous and native.enabled())


@native.kernel(inline=True, fastmath={"reassoc"})
def _chunk_sum(part):
    """The sum of the 1-D `part` in its dtype (vectorized: several partial sums)."""
    total = _ZERO
    for k in range(part.shape[0]):
        total += part[k]
    return total


@native.kernel(fastmath={"reassoc"})
def _row_sums(x, out):
    """out[r] = the sum of row r of the 2-D `x`: its chunks' sums added in float64."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        row = x[r]
        total = 0.0
        for j in range(0, n, CHUNK):
            total += _chunk_sum(row[j:j + CHUNK])
        out[r] = total


def _sums_of_rows(rows: np.ndarray) -> np.ndarray:
    """float64 sums of the rows of a C-contiguous 2-D array, cut over the threads."""
    out = np.empty(rows.shape[0], np.float64)
    run(_row_sums, rows.size, rows, out, cut=(0, 1), part="rows_sums")
    return out


def trailing_sums(x: np.ndarray, dims, keepdim: bool, mean: bool = False):
    """``x.sum(dims, keepdims=keepdim)`` (``mean`` divides by the count) for a `supports`
    array, when `dims` (a tuple, or None for all) are its last dims; None otherwise."""
    ndim = x.ndim
    if dims is None:
        dims = tuple(range(ndim))
    elif tuple(sorted(d % ndim for d in dims)) != tuple(range(ndim - len(dims), ndim)):
        return None
    count = math.prod(x.shape[ndim - len(dims):])
    lead = x.shape[:ndim - len(dims)]
    if math.prod(lead) > 1:
        sums = _sums_of_rows(x.reshape(-1, count))
    else:   # one sum: rows of BLOCK elements and the tail
        flat = x.reshape(-1)
        body = flat.size - flat.size % BLOCK
        sums = np.array([_sums_of_rows(flat[:body].reshape(-1, BLOCK)).sum()
                         + flat[body:].sum(dtype=np.float64)])
    if mean:
        sums /= count
    shape = lead + ((1,) * len(dims) if keepdim else ())
    return sums.reshape(shape).astype(x.dtype)
