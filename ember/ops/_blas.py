"""The OpenBLAS that NumPy loaded, reached through its C API: its thread count, and its
CBLAS matrix products for ember's worker threads (ops/_workers.py).

The library is found among the files the process has mapped (Linux's /proc/self/maps).
Other BLAS builds (MKL, Accelerate) and other systems give None: ember then leaves
NumPy's BLAS as it is.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import NamedTuple

# (setter, getter) symbol names of the OpenBLAS builds NumPy ships or links.
_THREAD_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)

# (float32 product, float64 product, integer type) of the CBLAS interfaces: NumPy's
# wheels ship a 64-bit-integer build with prefixed names.
_GEMM_SYMBOLS = (
    ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", ctypes.c_int64),
    ("cblas_sgemm64_", "cblas_dgemm64_", ctypes.c_int64),
    ("cblas_sgemm", "cblas_dgemm", ctypes.c_int),
)


class OpenBLAS(NamedTuple):
    """ctypes functions of the loaded OpenBLAS (`sgemm`/`dgemm` None when it has no
    CBLAS interface we know)."""

    set_num_threads: object
    get_num_threads: object
    sgemm: object
    dgemm: object


@functools.cache
def openblas() -> OpenBLAS | None:
    """The OpenBLAS NumPy uses, or None (looked for once per process)."""
    import numpy  # noqa: F401 - make sure NumPy's BLAS is loaded

    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line.lower()}
    except OSError:  # not Linux
        return None
    for path in sorted(paths):
        if not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _THREAD_SYMBOLS:
            setter = getattr(lib, set_name, None)
            getter = getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return OpenBLAS(setter, getter, *_gemms(lib))
    return None


def _gemms(lib) -> tuple:
    """(sgemm, dgemm) of `lib`'s CBLAS interface, typed for calls from numba: every
    pointer passed as a 64-bit integer (the address), or (None, None)."""
    for s_name, d_name, integer in _GEMM_SYMBOLS:
        sgemm, dgemm = getattr(lib, s_name, None), getattr(lib, d_name, None)
        if sgemm is None or dgemm is None:
            continue
        for fn, real in ((sgemm, ctypes.c_float), (dgemm, ctypes.c_double)):
            # order, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer,
                           integer, real, ctypes.c_int64, integer, ctypes.c_int64, integer,
                           real, ctypes.c_int64, integer]
            fn.restype = None
        return sgemm, dgemm
    return None, None
