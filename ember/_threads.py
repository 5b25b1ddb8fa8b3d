"""set_num_threads / get_num_threads: the thread count of the BLAS library NumPy uses
(and of ember's parallel numba kernels, ops/_native.py).

NumPy's own elementwise loops are single-threaded; the matrix products (and so
linear layers and convolutions) run in OpenBLAS, whose thread count we set through
its C API, found among the libraries the process has loaded.  Other BLAS builds
(MKL, Accelerate) are left alone, and the calls then only record the request.
"""

from __future__ import annotations

import ctypes
import os

from .ops import _native as native

# (setter, getter) symbol names of the OpenBLAS builds NumPy ships or links.
_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)

_library = None
_requested = None


def _openblas():
    """The loaded OpenBLAS as (setter, getter) ctypes functions, or None."""
    global _library
    if _library is not None:
        return _library or None
    _library = False
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
        for set_name, get_name in _SYMBOLS:
            setter = getattr(lib, set_name, None)
            getter = getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                _library = (setter, getter)
                return _library
    return None


def set_num_threads(num: int) -> None:
    """Use `num` threads for matrix products (and the ops built on them)."""
    global _requested
    if not isinstance(num, int) or isinstance(num, bool) or num < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {num!r}")
    _requested = num
    blas = _openblas()
    if blas is not None:
        blas[0](num)
    native.set_num_threads(num)


def get_num_threads() -> int:
    """The number of threads matrix products use."""
    blas = _openblas()
    if blas is not None:
        return int(blas[1]())
    return _requested or os.cpu_count() or 1


def get_num_interop_threads() -> int:
    """ember runs ops one at a time: always 1."""
    return 1


def set_num_interop_threads(num: int) -> None:
    """Accepted for compatibility: ember has no inter-op thread pool."""
    if not isinstance(num, int) or num < 1:
        raise RuntimeError(f"set_num_interop_threads expects a positive integer, got {num!r}")
