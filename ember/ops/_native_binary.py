"""Large additions, subtractions and products of two arrays cut over ember's two threads:
``x + y``, ``x - y`` and ``x * y`` (the forwards of Add, Sub and Mul, and Mul's
first-order backward; under no_grad, ops/_direct.py's) and ``acc += g`` (the engine
summing two gradients of one tensor), ``acc *= g`` (a power's first-order gradient); and
of an array and a Python float (``x * 0.5``, ``x / 3.0``), from `NUMBER_MIN` elements.

NumPy adds on the calling thread alone.  A transformer's residual stream is added to
and its gradients summed at every block: GPT's (32, 64, 128) float32 arrays, 1 MB each,
where one thread is held up by memory, not arithmetic.  The kernels here are plain
elementwise loops (an IEEE addition: the same bits as NumPy's), each thread taking
half of the elements as a native part (ops/_native_cuts.py, family ``flat3``/``flat2``).

NOTE: 2-core Intel Xeon (2026-12-05), float32, 262,144 elements, medians timed alone:
``x + y`` 95-98 us in NumPy against 33-42 cut; ``acc += g`` 32-34 against 22-24.  On the
AMD EPYC VM (2026-12-07), float32: ``x * y`` of 1M elements 0.17-0.18 ms against
0.10-0.11 cut; ``x * 0.5`` of 256K 0.032 against 0.044 (hence `NUMBER_MIN`), of 512K
0.056 against 0.045, of 1M 0.10 against 0.072-0.077, of 4M 0.81-1.04 against 0.37-0.43.
Each thread also writes the half the other cut kernels give it, which at times on
that VM was worth more than the work itself (ops/_native_fill.py).
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
def _multiply_into(acc, g):
    for i in native.prange(acc.size):
        acc[i] *= g[i]


@native.kernel(parallel=True)
def _subtract(x, y, out):
    for i in native.prange(x.size):
        out[i] = x[i] - y[i]


@native.kernel(parallel=True)
def _multiply(x, y, out):
    for i in native.prange(x.size):
        out[i] = x[i] * y[i]


# An array and a Python float take the kernels below from this many elements.
NUMBER_MIN = 1 << 19


@native.kernel(parallel=True)
def _add_number(x, out, value):
    for i in native.prange(x.size):
        out[i] = x[i] + value


@native.kernel(parallel=True)
def _subtract_number(x, out, value):
    for i in native.prange(x.size):
        out[i] = x[i] - value


@native.kernel(parallel=True)
def _multiply_number(x, out, value):
    for i in native.prange(x.size):
        out[i] = x[i] * value


@native.kernel(parallel=True)
def _divide_number(x, out, value):
    for i in native.prange(x.size):
        out[i] = x[i] / value   # (an IEEE division: x / 0.0 is +-inf or nan, as NumPy's)


def _takes_number(x, value) -> bool:
    """Whether the cut kernels take ``x op value``: a C-contiguous NumPy float32/float64
    array of `NUMBER_MIN` elements or more and a Python float, two threads, numba on.
    (The float is rounded to x's dtype first, as NumPy treats a Python number.)"""
    return (type(value) is float and x.size >= NUMBER_MIN and x.dtype.char in "fd"
            and native.cuts(x.size) and x.flags.c_contiguous and native.enabled())


def _cut_number(kernel, x, value):
    """`kernel`'s ``x op value`` of a `_takes_number` array, cut over the threads."""
    out = np.empty_like(x)
    run(kernel, x.size, x.reshape(-1), out.reshape(-1), x.dtype.type(value), cut=(0, 1),
        part="flat2_1")
    return out


def _cut(kernel, x, y):
    """`kernel`'s ``x op y`` of `_takes` arrays, cut over the threads."""
    out = np.empty_like(x)
    run(kernel, x.size, x.reshape(-1), y.reshape(-1), out.reshape(-1), cut=(0, 1, 2),
        part="flat3")
    return out


def add(x, y):
    """``x + y`` for arrays (or NumPy scalars, or `y` a Python float): large ones by
    `_large`, else NumPy's."""
    return _large(_add, _add_number, np.add, x, y) if _big(x) else x + y


def subtract(x, y):
    """``x - y``, as `add`."""
    return _large(_subtract, _subtract_number, np.subtract, x, y) if _big(x) else x - y


def multiply(x, y):
    """``x * y``, as `add`."""
    return _large(_multiply, _multiply_number, np.multiply, x, y) if _big(x) else x * y


def divide(x, y):
    """``x / y``: a large array by a Python float on the threads (`_takes_number`), else
    NumPy's."""
    if _big(x) and _takes_number(x, y):
        return _cut_number(_divide_number, x, y)
    return x / y


def _big(x) -> bool:
    """Whether `x` is a NumPy array large enough for `_large` to ask about (the one test
    every small operand of the hot path pays)."""
    return type(x) is np.ndarray and x.size >= native.SPLIT_MIN


def _large(kernel, number_kernel, ufunc, x, y):
    """``ufunc(x, y)`` of a large NumPy `x`: cut over the threads where `_takes` them (or
    `_takes_number`, by `number_kernel`), large views of one shape by NumPy's loops on
    the threads (`_parallel.binary`), else NumPy's."""
    if _takes(x, y):
        return _cut(kernel, x, y)
    if _takes_number(x, y):
        return _cut_number(number_kernel, x, y)
    return _parallel.binary(ufunc, x, y) if _parallel.splits_binary(x, y) else ufunc(x, y)


def add_into(acc: np.ndarray, g: np.ndarray) -> None:
    """``acc += g`` (acc writable, of g's shape and dtype), cut over the threads where
    `_takes` them, else NumPy's."""
    if not _takes(acc, g):
        acc += g
        return
    run(_add_into, acc.size, acc.reshape(-1), g.reshape(-1), cut=(0, 1), part="flat2")


def multiply_into(acc: np.ndarray, g: np.ndarray) -> None:
    """``acc *= g``, as `add_into`."""
    if not _takes(acc, g):
        acc *= g
        return
    run(_multiply_into, acc.size, acc.reshape(-1), g.reshape(-1), cut=(0, 1), part="flat2")


engine.set_gradient_sum(add, add_into)
# (a leaf's first gradient, when someone else holds it: a slice of cat's or split's
# gradient, the caller's `backward(g)`.  cat of two (4096, 256) float32 leaves, its
# backward: 0.80-0.93 -> 0.60-0.68 ms, medians alternated in one process; a contiguous
# gradient of that size the same either way; AMD EPYC, 2026-12-07)
accumulate.set_gradient_copy(_parallel.copy)
