"""Intel's MKL as the BLAS of ember's own threads (the optional extra ``ember[mkl]``).

ember splits large products over its threads and runs each part as a single-threaded
CBLAS call (ops/_parallel.py, ops/_workers.py).  Those calls can go to MKL's sequential
products instead of OpenBLAS's: MKL has no thread pool of its own then, so nothing
competes with ember's threads for the cores.  NumPy's own products stay on OpenBLAS.

NOTE: why.  On a 2-core Intel Xeon with AVX-512 (2026-12-05), one thread, float32, MKL
2026.2 against the OpenBLAS 0.3.31 NumPy ships: 128x784 @ 784x512 560 against 684 us,
128x512 @ 512x256 170 against 215, 20x256 @ 256x1024 64 against 101 (PyTorch's own
products run at MKL's speed).  Inside the training steps of benchmarks/run.py that took
the MLP from 1.28-1.29 of PyTorch's time to 1.17-1.20 and the LSTM from 1.25 to
1.03-1.05 (docs/performance.md, twelfth session).

Which BLAS runs (`wanted`; ops/_blas.py's `products` applies it): EMBER_BLAS=mkl or
=openblas decides; unset, MKL runs where its package is installed and the processor is
Intel's (on AMD processors MKL was not measured against OpenBLAS's Haswell kernels,
which ember picks there).
"""

from __future__ import annotations

import ctypes
import functools
import os
from ._blas import Products, type_gemm, type_gemv

# MKL's CBLAS functions with 64-bit integers (its "_64" interface), the ones OpenBLAS's
# NumPy build exports too, so the workers' compiled loops take either library's.
_PRODUCT_SYMBOLS = ("cblas_sgemm_64", "cblas_dgemm_64", "cblas_sgemv_64", "cblas_dgemv_64")
_SEQUENTIAL = 1  # MKL_THREADING_SEQUENTIAL, for MKL_Set_Threading_Layer


def library_path() -> str | None:
    """Where the installed ``mkl`` package put its runtime library, or None."""
    from importlib import metadata

    try:
        distribution = metadata.distribution("mkl")
    except metadata.PackageNotFoundError:
        return None
    for file in distribution.files or []:
        if os.path.basename(str(file)).startswith("libmkl_rt.so"):
            path = distribution.locate_file(file)
            return str(path) if os.path.exists(path) else None
    return None


def wanted(setting: str | None, vendor: str, installed: bool) -> bool:
    """Whether ember's threads should run MKL's products: `setting` is EMBER_BLAS
    ('mkl', 'openblas' or unset), `vendor` the processor's vendor id, `installed` whether
    the mkl package is there.  Raises ImportError when MKL is asked for and missing."""
    setting = (setting or "").strip().lower()
    if setting not in ("", "mkl", "openblas"):
        raise ValueError(f"EMBER_BLAS must be 'mkl' or 'openblas', got {setting!r}")
    if setting == "mkl" and not installed:
        raise ImportError("EMBER_BLAS=mkl needs MKL: pip install 'ember[mkl]'")
    if setting:
        return setting == "mkl"
    return installed and vendor == "GenuineIntel"


@functools.cache
def load() -> Products | None:
    """MKL's sequential products, typed as ops/_blas.py types OpenBLAS's, or None where
    they cannot be loaded."""
    path = library_path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        set_layer = lib.MKL_Set_Threading_Layer
        functions = [getattr(lib, name) for name in _PRODUCT_SYMBOLS]
    except (OSError, AttributeError):
        return None
    set_layer.argtypes, set_layer.restype = [ctypes.c_int], ctypes.c_int
    set_layer(_SEQUENTIAL)  # before any MKL call: no thread pool, one thread per call
    sgemm, dgemm, sgemv, dgemv = functions
    for typed, fn, real in ((type_gemm, sgemm, ctypes.c_float),
                            (type_gemm, dgemm, ctypes.c_double),
                            (type_gemv, sgemv, ctypes.c_float),
                            (type_gemv, dgemv, ctypes.c_double)):
        typed(fn, real, ctypes.c_int64)
    return Products("mkl", sgemm, dgemm, sgemv, dgemv)
