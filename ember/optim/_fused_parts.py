"""The fused optimizer steps of ``_fused.py`` as native parts (ops/_native_parts.py):
the share of a parameter that a worker thread updates without taking the GIL.

A part's block, as ``_fused._split_update`` fills it: int64s 0-4 the addresses of the
step's arrays (parameter, gradient, state...) at the share's first element, 5 the
share's length, 6 how many of the arrays are real (the others are ``unused`` stand-ins
of one element); from `FIRST_NUMBER` on, as float64s, the step's numbers in the order
its kernel takes them (flags as 0 or 1).  Imported only where ``native.enabled()`` (it
imports numba).
"""

from __future__ import annotations

import functools

import numpy as np

from ..ops import _native as native
from ..ops._native_parts import array_at, block_at, compile_bound
from ._fused import _adadelta_range, _adam_range, _sgd_range

FIRST_NUMBER = 7  # the block's index of the step's first number


@native.kernel(inline=True)
def _arrays(ints, dtype):
    """The block's five arrays (those past the real ones of one element)."""
    n, real = ints[5], ints[6]
    return (array_at(ints[0], n if real > 0 else 1, dtype),
            array_at(ints[1], n if real > 1 else 1, dtype),
            array_at(ints[2], n if real > 2 else 1, dtype),
            array_at(ints[3], n if real > 3 else 1, dtype),
            array_at(ints[4], n if real > 4 else 1, dtype))


# Stand-in for the name each compiled entry point binds: the parameter's dtype (see
# `address`).
DTYPE = None


def sgd(address):
    ints, numbers = block_at(address)
    p, g, buf, _, _ = _arrays(ints, DTYPE)
    k = FIRST_NUMBER
    _sgd_range(p, g, buf, 0, ints[5], DTYPE(numbers[k]), DTYPE(numbers[k + 1]),
               DTYPE(numbers[k + 2]), DTYPE(numbers[k + 3]), DTYPE(numbers[k + 4]),
               numbers[k + 5] != 0, numbers[k + 6] != 0)


def adam(address):
    ints, numbers = block_at(address)
    p, g, m, v, vmax = _arrays(ints, DTYPE)
    k = FIRST_NUMBER
    _adam_range(p, g, m, v, vmax, 0, ints[5], DTYPE(numbers[k]), DTYPE(numbers[k + 1]),
                DTYPE(numbers[k + 2]), DTYPE(numbers[k + 3]), DTYPE(numbers[k + 4]),
                DTYPE(numbers[k + 5]), DTYPE(numbers[k + 6]), numbers[k + 7] != 0)


def adadelta(address):
    ints, numbers = block_at(address)
    p, g, v, u, _ = _arrays(ints, DTYPE)
    k = FIRST_NUMBER
    _adadelta_range(p, g, v, u, 0, ints[5], DTYPE(numbers[k]), DTYPE(numbers[k + 1]),
                    DTYPE(numbers[k + 2]), DTYPE(numbers[k + 3]), DTYPE(numbers[k + 4]),
                    DTYPE(numbers[k + 5]))


STEPS = {f.__name__: f for f in (sgd, adam, adadelta)}


@functools.cache
def address(step: str, itemsize: int) -> int:
    """The C function updating a share of a parameter by `step` ('sgd', 'adam' or
    'adadelta') in the float dtype of `itemsize` bytes (compiled on first use, then
    cached on disk)."""
    dtype = np.dtype(np.float32 if itemsize == 4 else np.float64)
    return compile_bound(STEPS[step], f"{step}_part_{dtype.name}", DTYPE=dtype.type)
