"""Backend switches (``torch.backends``) and the global numeric modes of ``torch``:
deterministic algorithms and float32 matmul precision.

Training scripts set these as a matter of course (``torch.backends.cudnn.benchmark =
True``, ``torch.backends.mps.is_available()`` when picking a device).  ember computes
with NumPy on the CPU and CuPy on GPUs, without cuDNN, MPS or oneDNN, so:

* ``cudnn``, ``mps`` and ``mkldnn`` report ``is_available() == False``; their switches
  keep the value a script sets, and nothing reads them.
* Matmul precision: NumPy and CuPy compute float32 products in full float32, which every
  setting of ``set_float32_matmul_precision`` (and ``cuda.matmul.allow_tf32``) permits.
* Deterministic algorithms: ember's CPU kernels are deterministic.  On a GPU, the
  scatter-adds behind ``index_add``, ``scatter_add``, ``put(accumulate=True)`` and the
  embedding gradient use atomic additions, whose order varies: with
  ``use_deterministic_algorithms(True)`` they raise RuntimeError (or warn, with
  ``warn_only=True``), as PyTorch's nondeterministic CUDA kernels do.
"""

from __future__ import annotations

import contextlib
import warnings

from .._core.backend import DETERMINISM, check_deterministic  # (the latter re-exported)
from .._core.backend import cuda_available

__all__ = ["cudnn", "mps", "cuda", "mkldnn", "openmp", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")


class _State:
    """The float32 matmul precision (the deterministic mode lives in the core, which reads
    it: `DETERMINISM`)."""

    matmul_precision = "highest"


_STATE = _State()


# --- deterministic algorithms --------------------------------------------------------------

def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms: ops without one raise RuntimeError (or warn, with
    `warn_only`) instead of running."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    DETERMINISM.enabled, DETERMINISM.warn_only = mode, bool(warn_only) and mode


def are_deterministic_algorithms_enabled() -> bool:
    """True after ``use_deterministic_algorithms(True)``."""
    return DETERMINISM.enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """True when deterministic mode only warns about nondeterministic ops."""
    return DETERMINISM.warn_only


# --- float32 matmul precision --------------------------------------------------------------

def set_float32_matmul_precision(precision: str) -> None:
    """'highest', 'high' or 'medium': how much precision float32 products may trade for
    speed.  ember's products are always full float32, which all three allow."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _STATE.matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The setting of ``set_float32_matmul_precision`` ('highest' by default)."""
    return _STATE.matmul_precision


# --- the backend namespaces ----------------------------------------------------------------

class _Cudnn:
    """``torch.backends.cudnn``: ember has no cuDNN (CuPy runs its GPU ops)."""

    def __init__(self):
        self.enabled = True
        self.benchmark = False
        self.benchmark_limit = 10
        self.deterministic = False
        self.allow_tf32 = True

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def version():
        return None

    @contextlib.contextmanager
    def flags(self, enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
              allow_tf32=True):
        """Set the switches inside a ``with`` block, restoring them after it."""
        names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
        saved = {n: getattr(self, n) for n in names}
        values = (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
        for name, value in zip(names, values):
            setattr(self, name, value)
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


class _Unavailable:
    """A backend ember does not have (``mps``, ``mkldnn``)."""

    def __init__(self, name: str):
        self.name = name
        self.enabled = False

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def is_built() -> bool:
        return False


class _Matmul:
    """``torch.backends.cuda.matmul``: `allow_tf32` mirrors the float32 matmul precision."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return _STATE.matmul_precision != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _STATE.matmul_precision = "high" if value else "highest"


class _Cuda:
    """``torch.backends.cuda``: CUDA goes through CuPy (see ``ember.cuda``)."""

    def __init__(self):
        self.matmul = _Matmul()

    @staticmethod
    def is_built() -> bool:
        return cuda_available()


class _OpenMP:
    """``torch.backends.openmp``: NumPy's BLAS runs its own threads; ember uses no OpenMP."""

    @staticmethod
    def is_available() -> bool:
        return False


cudnn = _Cudnn()
mps = _Unavailable("mps")
mkldnn = _Unavailable("mkldnn")
cuda = _Cuda()
openmp = _OpenMP()
