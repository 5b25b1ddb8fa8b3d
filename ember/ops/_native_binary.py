"""Large additions, subtractions and products of two arrays cut over ember's two threads:
``x + y``, ``x - y`` and ``x * y`` (the forwards of Add, Sub and Mul, and Mul's
first-order backward) and ``acc += g`` (the engine summing two gradients of one tensor).

NumPy adds on the calling thread alone.  A transformer's residual stream is added to
and its gradients summed at every block: GPT's (32, 64, 128) float32 arrays, 1 MB each,
where one thread is held up by memory, not arithmetic.  The kernels here are plain
elementwise loops (an IEEE addition: the same bits as NumPy's), each thread taking
half of the elements as a native part (ops/_native_cuts.py, family ``flat3``/``flat2``).

NOTE: 2-core Intel Xeon (2026-12-05), float32, 262,144 elements, medians timed alone:
``x + y`` 95-98 us in NumPy against 33-42 cut; ``acc += g`` 32-34 against 22-24.
"""

from __future__ import annotations

import numpy as np

from .._core import accumulate, engine
from . import _native as native
from . import _parallel
from ._native_activation import run


def _takes(x, y) -> bool:
    """Whether the cut kernels take ``x + y``: C-contiguous NumPy float32/float64 arrays
    of one shape and dtype, large enough to be cut over two threads, numba on."""
    # (the size first: every Add's forward asks, and most arrays are small)
    return (type(x) is np.ndarray and x.size >= native.SPLIT_MIN and type(y) is np.ndarray
            and x.shape == y.shape and x.dtype == y.dtype and x.dtype.char in "fd"
            and native.cuts(x.size) and x.flags.c_contiguous and y.flags.c_contiguous
            and native.enabled())


@native.kernel(parallel=True)
def _add(x, y, out):
    for i in native.prange(x.size):
        out[i] = x[i] + y[i]


@native.kernel(parallel=True)
def _add_into(acc, g):
    for i in native.prange(acc.size):
        acc[i] += g[i]


@native.kernel(parallel=True)
def _subtract(x, y, out):
    for i in native.prange(x.size):
        out[i] = x[i] - y[i]


@native.kernel(parallel=True)
def _multiply(x, y, out):
    for i in native.prange(x.size):
        out[i] = x[i] * y[i]


def _cut(kernel, x, y):
    """`kernel`'s ``x op y`` of `_takes` arrays, cut over the threads."""
    out = np.empty_like(x)
    run(kernel, x.size, x.reshape(-1), y.reshape(-1), out.reshape(-1), cut=(0, 1, 2),
        part="flat3")
    return out


def add(x, y):
    """``x + y`` for arrays (or NumPy scalars): large ones by `_large`, else NumPy's."""
    return _large(_add, np.add, x, y) if _big(x) else x + y


def subtract(x, y):
    """``x - y``, as `add`."""
    return _large(_subtract, np.subtract, x, y) if _big(x) else x - y


def multiply(x, y):
    """``x * y``, as `add`."""
    return _large(_multiply, np.multiply, x, y) if _big(x) else x * y


def _big(x) -> bool:
    """Whether `x` is a NumPy array large enough for `_large` to ask about (the one test
    every small operand of the hot path pays)."""
    return type(x) is np.ndarray and x.size >= native.SPLIT_MIN


def _large(kernel, ufunc, x, y):
    """``ufunc(x, y)`` of a large NumPy `x`: cut over the threads where `_takes` them,
    large views of one shape by NumPy's loops on the threads (`_parallel.binary`), else
    NumPy's."""
    if _takes(x, y):
        return _cut(kernel, x, y)
    return _parallel.binary(ufunc, x, y) if _parallel.splits_binary(x, y) else ufunc(x, y)


def add_into(acc: np.ndarray, g: np.ndarray) -> None:
    """``acc += g`` (acc writable, of g's shape and dtype), cut over the threads where
    `_takes` them, else NumPy's."""
    if not _takes(acc, g):
        acc += g
        return
    run(_add_into, acc.size, acc.reshape(-1), g.reshape(-1), cut=(0, 1), part="flat2")


engine.set_gradient_sum(add, add_into)
# (a leaf's first gradient, when someone else holds it: a slice of cat's or split's
# gradient, the caller's `backward(g)`.  cat of two (4096, 256) float32 leaves, its
# backward: 0.80-0.93 -> 0.60-0.68 ms, medians alternated in one process; a contiguous
# gradient of that size the same either way; AMD EPYC, 2026-12-07)
accumulate.set_gradient_copy(_parallel.copy)
