"""Large float arrays filled with one value by two threads, each writing the half of the
array that a cut kernel (ops/_native_cuts.py) gives it: ``zeros``, ``ones``, ``full``,
their ``*_like`` forms, ``fill_`` and ``zero_``.

NOTE: why not NumPy's fill on the calling thread.  On the 2-core AMD EPYC test VM, at
times (in about two of five processes of a whole `benchmarks/layer_survey.py` run, for
as long as they ran), writing on one core the cache lines that the other core had last
read cost 10-20x more than otherwise: a 4 MB float32 fill took 1.7 ms after the other
thread had read the array, 0.07 ms after the same thread had (2026-12-07).  A cut
kernel's worker reads the second half of its inputs, and malloc hands the same blocks
back step after step, so a serial fill into a block that such an input held paid that:
``y.backward(ones_like(y))`` for hardtanh over (4096, 256) float32 took 1.2 ms, the fill
of the ones 0.87-0.92 ms of it, against 0.31 and 0.07 ms in the other processes.  Filled
in the kernels' halves, each core writes lines it already holds: 0.14-0.17 ms in that
state.  (PyTorch fills on its threads, each its fixed share, and never paid it.)
"""

from __future__ import annotations

import math

import numpy as np

from . import _native as native


# Fills of fewer bytes stay NumPy's: at 2 MB a cut fill took 0.044 ms against 0.036 on
# one thread (the worker's hand-over costs more than it saves); at 3 MB 0.051 against
# 0.095, at 4 MB 0.054 against 0.12 (float32 arrays filled in place, medians of 300).
FILL_MIN_BYTES = 3 << 20


@native.kernel(parallel=True)
def _fill(out, value):
    for i in native.prange(out.size):
        out[i] = value


def _takes(size: int, dtype: np.dtype, value) -> bool:
    """Whether a fill of `size` elements of `dtype` with `value` is cut: float32/float64,
    a real number, `FILL_MIN_BYTES` or more, two threads (`native.cuts`), numba on."""
    # (the size first: most fills are small)
    return (size * dtype.itemsize >= FILL_MIN_BYTES and dtype.char in "fd"
            and type(value) in (int, float, bool) and native.cuts(size) and native.enabled())


def filled(shape: tuple, dtype: np.dtype, value) -> np.ndarray | None:
    """A new C-contiguous array of `shape` and `dtype` holding `value`, written by two
    threads in halves; None where that does not apply (`_takes`)."""
    # (math.prod, not np.prod: every CPU zeros/ones/full asks, small ones included, and
    # np.prod took ~3 us of a 6 us ones(2, 3))
    if not _takes(math.prod(shape), dtype, value):
        return None
    out = np.empty(shape, dtype)
    _run(out.reshape(-1), value)
    return out


def fill_into(out: np.ndarray, value) -> bool:
    """Write `value` into every element of `out` in place, by two threads in halves;
    False, and nothing written, where that does not apply (`_takes`, or `out` not a
    writable C-contiguous NumPy array)."""
    if not (type(out) is np.ndarray and out.flags.c_contiguous and out.flags.writeable
            and _takes(out.size, out.dtype, value)):
        return False
    _run(out.reshape(-1), value)
    return True


def contiguous(grad: np.ndarray) -> np.ndarray:
    """`grad` as a C-contiguous array; a broadcast single value (the gradient a mean or a
    sum hands on: every stride 0) is filled by the threads when large (`filled`) rather
    than copied on the calling thread."""
    if (grad.ndim and grad.dtype.char in "fd" and not grad.flags.c_contiguous
            and not any(grad.strides) and grad.size):
        out = filled(grad.shape, grad.dtype, float(grad.reshape(-1)[0]))
        if out is not None:
            return out
    return np.ascontiguousarray(grad)


def _run(flat: np.ndarray, value) -> None:
    native.run(_fill, flat.size, flat, flat.dtype.type(value), cut=(0,), part="flat1_1")
