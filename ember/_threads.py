"""set_num_threads / get_num_threads: the thread count of the BLAS library NumPy uses
(and of ember's parallel numba kernels, ops/_native.py).

NumPy's own elementwise loops are single-threaded; the matrix products (and so
linear layers and convolutions) run in OpenBLAS, whose thread count we set through
its C API, found among the libraries the process has loaded.  Other BLAS builds
(MKL, Accelerate) are left alone, and the calls then only record the request.
"""

from __future__ import annotations

import os

from .ops import _blas, _parallel
from .ops import _native as native

_requested = None


def _openblas():
    """The loaded OpenBLAS's (setter, getter) of its thread count, or None."""
    blas = _blas.openblas()
    return None if blas is None else (blas.set_num_threads, blas.get_num_threads)


_taken_over = False


def take_over_blas() -> None:
    """Keep OpenBLAS on one thread and run ember's products on ember's own threads, as
    many as OpenBLAS had (see ops/_parallel.py for why)."""
    global _taken_over
    blas = _openblas()
    if blas is None or _taken_over or os.environ.get("EMBER_OWN_THREADS", "1").strip() == "0":
        return
    _parallel.set_threads(int(blas[1]()))
    blas[0](1)
    _taken_over = True


def set_num_threads(num: int) -> None:
    """Use `num` threads for matrix products (and the ops built on them)."""
    global _requested
    if not isinstance(num, int) or isinstance(num, bool) or num < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {num!r}")
    _requested = num
    blas = _openblas()
    if _taken_over:
        _parallel.set_threads(num)
    elif blas is not None:
        blas[0](num)
    native.set_num_threads(num)


def get_num_threads() -> int:
    """The number of threads matrix products use."""
    if _taken_over:
        return _parallel.threads()
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
