"""The OpenBLAS that NumPy loaded, reached through its C API: its thread count, its
CBLAS matrix products for ember's worker threads (ops/_workers.py; `products` picks
them, or MKL's: ops/_mkl.py), and which of its kernel families runs (`choose_core`: on
AMD processors, its Haswell kernels).

The library is found among the files the process has mapped (Linux's /proc/self/maps).
Other BLAS builds (MKL, Accelerate) and other systems give None: ember then leaves
NumPy's BLAS as it is.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import warnings
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
# their matrix-vector products, by the same prefixes
_GEMV_SYMBOLS = tuple((s.replace("gemm", "gemv"), d.replace("gemm", "gemv"), integer)
                      for s, d, integer in _GEMM_SYMBOLS)


class OpenBLAS(NamedTuple):
    """ctypes functions of the loaded OpenBLAS (`sgemm`/`dgemm` None when it has no
    CBLAS interface we know)."""

    set_num_threads: object
    get_num_threads: object
    sgemm: object
    dgemm: object
    sgemv: object
    dgemv: object


class Products(NamedTuple):
    """The CBLAS functions ember's own threads call (`products`), and their library."""

    library: str
    sgemm: object
    dgemm: object
    sgemv: object
    dgemv: object


@functools.cache
def openblas() -> OpenBLAS | None:
    """The OpenBLAS NumPy uses, or None (looked for once per process)."""
    lib = _library()
    if lib is None:
        return None
    for set_name, get_name in _THREAD_SYMBOLS:
        setter = getattr(lib, set_name, None)
        getter = getattr(lib, get_name, None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return OpenBLAS(setter, getter, *_gemms(lib), *_gemvs(lib))
    return None


@functools.cache
def products() -> Products | None:
    """The CBLAS products ember's own threads call: MKL's
    matrix products where ops/_mkl.py's `wanted` says so (with OpenBLAS's matrix-vector
    products when it has them), else OpenBLAS's; None where NumPy's BLAS is not OpenBLAS
    or its CBLAS interface is not one we know."""
    from . import _mkl

    blas = openblas()
    if blas is None:
        # NumPy's BLAS is not OpenBLAS (an MKL build, say): ember leaves it alone and does
        # not load MKL itself, whose threading layer it would set for the whole process
        return None
    installed = _mkl.library_path() is not None
    if _mkl.wanted(os.environ.get("EMBER_BLAS"), _cpu_vendor(), installed):
        chosen = _mkl.load()
        if chosen is not None and blas.sgemv is not None:
            # NOTE: OpenBLAS's matrix-vector products, memory-bound, were the faster:
            # half of batch-1 CNN inference's 1x9216 @ 9216x128 on a worker, 52 us
            # against MKL's 61 (2-core Intel Xeon, 2026-12-05)
            return chosen._replace(sgemv=blas.sgemv, dgemv=blas.dgemv)
        if chosen is not None:
            return chosen
    if blas.sgemm is None or blas.sgemv is None:
        return None
    return Products("openblas", blas.sgemm, blas.dgemm, blas.sgemv, blas.dgemv)


@functools.cache
def _library():
    """The loaded OpenBLAS as a ctypes library (the first mapped file with its thread
    functions), or None."""
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
        if any(getattr(lib, name, None) is not None for name, _ in _THREAD_SYMBOLS):
            return lib
    return None


# ---------------------------------------------------------------------------
# which of OpenBLAS's kernel families runs


def core_name() -> str | None:
    """The kernel family ("core type") the loaded OpenBLAS runs, e.g. 'SkylakeX', or None
    when that cannot be asked."""
    lib = _library()
    for name in _CORENAME_SYMBOLS:
        fn = getattr(lib, name, None) if lib is not None else None
        if fn is not None:
            fn.argtypes, fn.restype = [], ctypes.c_char_p
            return fn().decode()
    return None


# The corename functions of the OpenBLAS builds NumPy ships or links.
_CORENAME_SYMBOLS = ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                     "openblas_get_corename")

# OpenBLAS's AVX-512 families, which it picks for AMD's Zen 4 and later as for Intel.
_AVX512_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")


def preferred_core(vendor: str, core: str | None, setting: str | None,
                   avx512: bool = True) -> str | None:
    """The family ember switches OpenBLAS to, or None to leave it: `setting` is the
    EMBER_BLAS_CORETYPE variable ('keep', a family name, or unset), `core` the family
    OpenBLAS chose, `vendor` the processor's vendor id, `avx512` whether the processor
    runs AVX-512 (an AVX-512 family asked for without it is refused with a warning:
    OpenBLAS would run instructions the processor lacks and the process would die).

    NOTE: on AMD processors OpenBLAS's Haswell (AVX2) float32 kernels beat its AVX-512
    ones, which are tuned for Intel's two 512-bit FMA units (Zen 4 runs 512-bit
    instructions as two 256-bit halves).  One thread, Zen 4 (2026-12-04), SkylakeX against
    Haswell kernels: 128x784 @ 784x256 583 -> 499 us, 128x512 @ 512x128 195 -> 165,
    20x256 @ 256x512 115 -> 69-77, 2048^3 164 -> 156-159 ms.  float64's large products
    lose ~5% (2048^3: 317-320 -> 335-336 ms), its small ones gain (8x512 @ 512x512: 241
    -> 140 us); ember trains in float32.  Some small float32 products lose too, which
    OpenBLAS's AVX-512 build runs without packing: Winograd's 36 x (72x32 @ 32x64) 101 ->
    131 us, batch-1 CNN inference 0.43-0.46 -> 0.47-0.50 ms.  The MLP training step
    (benchmarks/run.py, alternated in one process) went from 2.74-2.80 to 2.57 ms.
    """
    if setting is not None and setting.strip():
        setting = setting.strip()
        if setting in _AVX512_CORES and not avx512:
            warnings.warn(f"EMBER_BLAS_CORETYPE={setting} asks for OpenBLAS's AVX-512 "
                          "kernels, which this processor cannot run; OpenBLAS's own "
                          f"choice ({core}) is kept", RuntimeWarning, stacklevel=2)
            return None
        return None if setting.lower() == "keep" or setting == core else setting
    if vendor == "AuthenticAMD" and core in _AVX512_CORES:
        return "Haswell"
    return None


def _cpu_vendor() -> str:
    return _cpuinfo_field("vendor_id")


def _has_avx512() -> bool:
    """Whether the processor runs AVX-512 (its foundation instructions); True where
    /proc/cpuinfo cannot be read, leaving the choice to the user."""
    flags = _cpuinfo_field("flags")
    return not flags or "avx512f" in flags.split()


def _cpuinfo_field(name: str) -> str:
    """The first processor's `name` line of /proc/cpuinfo, or '' where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.split(":", 1)[0].strip() == name:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def choose_core() -> str | None:
    """Switch the loaded OpenBLAS to `preferred_core`'s family, if any, before ember runs
    a product (OpenBLAS reads OPENBLAS_CORETYPE when it starts; this starts its kernel
    selection again with it set, then puts the environment back).  Returns the family
    now running, or None where nothing was changed (a user's own OPENBLAS_CORETYPE is
    left alone).

    NOTE: OpenBLAS has no kernels at all for a moment while it selects them again: a
    product running on another thread then would crash.  So the automatic switch is made
    only while the process has one Python thread (at `import ember` in a script; not in
    a notebook, whose kernel runs threads of its own); an EMBER_BLAS_CORETYPE set by the
    user is applied regardless.
    """
    lib = _library()
    if lib is None or os.environ.get("OPENBLAS_CORETYPE") \
            or getattr(lib, "gotoblas_dynamic_init", None) is None:
        return None
    core = core_name()
    setting = os.environ.get("EMBER_BLAS_CORETYPE")
    wanted = preferred_core(_cpu_vendor(), core, setting, _has_avx512())
    if wanted is None or (not (setting or "").strip() and threading.active_count() > 1):
        return None
    os.environ["OPENBLAS_CORETYPE"] = wanted
    try:
        lib.gotoblas_dynamic_quit()
        lib.gotoblas_dynamic_init()
    finally:
        del os.environ["OPENBLAS_CORETYPE"]
    return core_name()


def type_gemm(fn, real, integer) -> None:
    """Give the CBLAS product `fn` its C argument types, for calls from numba: every
    pointer passed as a 64-bit integer (the address); `real` the element type, `integer`
    the library's integer type."""
    # order, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer, integer,
                   real, ctypes.c_int64, integer, ctypes.c_int64, integer, real,
                   ctypes.c_int64, integer]
    fn.restype = None


def type_gemv(fn, real, integer) -> None:
    """Give the CBLAS matrix-vector product `fn` its C argument types, as `type_gemm`."""
    # order, trans, M, N, alpha, A, lda, X, incX, beta, Y, incY
    fn.argtypes = [ctypes.c_int, ctypes.c_int, integer, integer, real, ctypes.c_int64,
                   integer, ctypes.c_int64, integer, real, ctypes.c_int64, integer]
    fn.restype = None


def _gemms(lib) -> tuple:
    """(sgemm, dgemm) of `lib`'s CBLAS interface, typed by `type_gemm`, or (None, None)."""
    for s_name, d_name, integer in _GEMM_SYMBOLS:
        sgemm, dgemm = getattr(lib, s_name, None), getattr(lib, d_name, None)
        if sgemm is None or dgemm is None:
            continue
        type_gemm(sgemm, ctypes.c_float, integer)
        type_gemm(dgemm, ctypes.c_double, integer)
        return sgemm, dgemm
    return None, None


def _gemvs(lib) -> tuple:
    """(sgemv, dgemv) of `lib`'s CBLAS interface, typed by `type_gemv`, or (None, None)."""
    for s_name, d_name, integer in _GEMV_SYMBOLS:
        sgemv, dgemv = getattr(lib, s_name, None), getattr(lib, d_name, None)
        if sgemv is None or dgemv is None:
            continue
        type_gemv(sgemv, ctypes.c_float, integer)
        type_gemv(dgemv, ctypes.c_double, integer)
        return sgemv, dgemv
    return None, None
