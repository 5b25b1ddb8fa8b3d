"""set_num_threads / get_num_threads: the threads ember's products, convolutions and
parallel numba kernels run on.

NumPy's own elementwise loops are single-threaded; its matrix products run in its BLAS.
When that BLAS is OpenBLAS (found among the libraries the process has loaded, through
ops/_blas.py), `take_over_blas` keeps it on one thread at import and ember splits large
products and convolutions over threads of its own (ops/_parallel.py says why), as many
as OpenBLAS had; `set_num_threads` then sets how many.  With EMBER_OWN_THREADS=0
OpenBLAS threads its own products and `set_num_threads` sets its count.  Other BLAS
builds (MKL, Accelerate) are left alone: the call then sets the numba kernels' threads
and records the request.
"""

from __future__ import annotations

import os

from .ops import _blas, _parallel
from .ops import _native as native

_requested = None


_taken_over = False


def take_over_blas() -> None:
    """Keep OpenBLAS on one thread and run ember's products on ember's own threads, as
    many as OpenBLAS had (see ops/_parallel.py for why); on AMD processors, switch it to
    its faster float32 kernels (`_blas.choose_core`)."""
    global _taken_over
    _blas.choose_core()
    blas = _blas.openblas()
    if blas is None or _taken_over or os.environ.get("EMBER_OWN_THREADS", "1").strip() == "0":
        return
    _parallel.set_threads(int(blas.get_num_threads()))
    blas.set_num_threads(1)
    _taken_over = True


def set_num_threads(num: int) -> None:
    """Use `num` threads for matrix products (and the ops built on them)."""
    global _requested
    if not isinstance(num, int) or isinstance(num, bool) or num < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {num!r}")
    _requested = num
    blas = _blas.openblas()
    if _taken_over:
        _parallel.set_threads(num)
    elif blas is not None:
        blas.set_num_threads(num)
    native.set_num_threads(num)


def get_num_threads() -> int:
    """The number of threads matrix products use."""
    if _taken_over:
        return _parallel.threads()
    blas = _blas.openblas()
    if blas is not None:
        return int(blas.get_num_threads())
    return _requested or os.cpu_count() or 1


def get_num_interop_threads() -> int:
    """ember runs ops one at a time: always 1."""
    return 1


def set_num_interop_threads(num: int) -> None:
    """Accepted for compatibility: ember has no inter-op thread pool."""
    if not isinstance(num, int) or num < 1:
        raise RuntimeError(f"set_num_interop_threads expects a positive integer, got {num!r}")
