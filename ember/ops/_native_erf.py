"""numba kernels of erf and erfc for large float arrays: each element by the C library's
erf or erfc in float64 (numba's ``math.erf``), the elements cut over ember's threads.

NOTE: why.  The NumPy path (elementwise_special.py `_erf_pair`) computes erf in float64
through ~100 array passes and temporaries: `torch.erf` of 1M float32 took 65 ms forward
and backward (PyTorch: 3.6; AMD EPYC, 2026-12-06).  The C library's erf takes ~14 ns an
element there, so ~8 ms on two threads, and rounds to within an ulp of float64.
"""

from __future__ import annotations

import math

import numpy as np

from . import _native as native
from ._native_activation import elementwise, supports

# Whether the kernels take an array: a float32/float64 NumPy array past the activation
# kernels' minimum size, numba on (the NumPy path's ~100 passes cost more at any size).
takes = supports


@native.kernel(parallel=True)
def _erf(x, out):
    for i in native.prange(x.size):
        out[i] = math.erf(np.float64(x[i]))


@native.kernel(parallel=True)
def _erfc(x, out):
    for i in native.prange(x.size):
        out[i] = math.erfc(np.float64(x[i]))


def erf(x):
    """erf of a `takes` array, in its dtype."""
    return elementwise(_erf, x)


def erfc(x):
    """erfc of a `takes` array, in its dtype."""
    return elementwise(_erfc, x)
