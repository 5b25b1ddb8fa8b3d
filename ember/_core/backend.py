"""The array module behind each device: NumPy for the CPU, CuPy for CUDA.

CuPy is imported only when a CUDA device is first used, so a CPU-only install never
needs it.  Everything device-specific in ember goes through `array_module`.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

from .device import CPU, device

_cupy = None

# glibc's mallopt parameters
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_KEEP_BYTES = 1 << 30
# Blocks from this size on are still mapped and unmapped one by one, as glibc's own
# adaptive threshold never goes past 32 MiB either.  NOTE: with every block kept in the
# heap, its holes grew with the order of allocations: the CNN's training at batch 256 (37
# MiB activations) grew the process by 239.5 or 262 MiB from one build to the next,
# against 240.4 with this limit (2-core Intel Xeon, 2026-12-05); no array of the timed
# benchmarks reaches it (the LSTM's largest, its decoder's output, is 26.7 MiB).
_MAP_FROM_BYTES = 32 << 20


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed blocks (below 32 MiB, up to 1 GiB in all) in the process
    for the next arrays.

    NumPy allocates every result afresh.  By default glibc hands large freed blocks back
    to the OS at once (munmap above its mmap threshold, heap trimming above its trim
    threshold), so the next array of that size page-faults on every 4 KiB page it writes:
    on large tensors that costs more than the arithmetic (BatchNorm2d forward+backward on
    (64, 32, 16, 16): 17 ms -> 3.3 ms with the blocks kept).  Peak memory is unchanged;
    memory freed after the peak stays with the process for reuse, as in PyTorch's own
    caching allocators.  Linux with glibc only; it affects the whole process.  Called once
    at import; set ``EMBER_NO_MALLOPT=1`` (or glibc's own MALLOC_*_ environment variables)
    to leave the allocator as it is.  Returns True when the setting was applied.
    """
    if not sys.platform.startswith("linux") or os.environ.get("EMBER_NO_MALLOPT") == "1":
        return False
    if any(name in os.environ for name in (
            "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")) or \
            "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False  # the user tuned it already
    try:
        import ctypes

        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl, ...)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MAP_FROM_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, _KEEP_BYTES))


keep_freed_memory()


def cupy_module():
    """Import CuPy on first use, with an error that names the extra to install."""
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ImportError:
            raise RuntimeError(
                "CUDA tensors need CuPy: install ember with the 'cuda' extra "
                "(pip install 'ember[cuda]') on a machine with an NVIDIA GPU"
            ) from None
        try:
            if cupy.cuda.runtime.getDeviceCount() < 1:
                raise RuntimeError("no CUDA device")
        except Exception as exc:  # CuPy raises its own runtime errors
            raise RuntimeError(f"CUDA is not available on this machine: {exc}") from None
        _cupy = cupy
    return _cupy


def cuda_available() -> bool:
    """True when CuPy imports and sees at least one GPU (never raises)."""
    try:
        cupy_module()
    except RuntimeError:
        return False
    return True


def array_module(dev: device):
    """numpy for the CPU, cupy for a CUDA device."""
    if dev.type == "cpu":
        return np
    if dev.type == "cuda":
        return cupy_module()
    raise RuntimeError(f"no array backend for device {dev}")


def module_of(array):
    """The array module that owns `array` (numpy unless it is a CuPy array)."""
    if isinstance(array, np.ndarray) or _cupy is None:
        return np
    return _cupy.get_array_module(array)


def device_of(array) -> device:
    """The ember device an array lives on."""
    if isinstance(array, np.ndarray) or _cupy is None or not isinstance(array, _cupy.ndarray):
        return CPU
    return device("cuda", array.device.id)


def to_backend(array, dev: device):
    """Copy `array` to `dev` (a no-op when it is already there)."""
    if dev.type == "cpu":
        if isinstance(array, np.ndarray):
            return array
        return array.get()
    cp = cupy_module()
    with cp.cuda.Device(dev.index or 0):
        return cp.asarray(array)


class _Determinism:
    """``use_deterministic_algorithms`` (set through ``ember.backends``), read by the kernels
    that have no deterministic form on some device."""

    __slots__ = ("enabled", "warn_only")

    def __init__(self):
        self.enabled = False
        self.warn_only = False


DETERMINISM = _Determinism()


def check_deterministic(op: str) -> None:
    """Called by an op with no deterministic implementation on the device it runs on:
    raises RuntimeError (or warns, with `warn_only`) in deterministic mode."""
    if not DETERMINISM.enabled:
        return
    message = (f"{op} does not have a deterministic implementation, but you set "
               "'ember.use_deterministic_algorithms(True)'. You can turn off determinism just "
               "for this operation, or you can use the 'warn_only=True' option, if that's "
               "acceptable for your application.")
    if DETERMINISM.warn_only:
        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(message)


def scatter_add(xp, target, index, values) -> None:
    """target[index] += values with repeated indices summed (np.add.at / cupyx)."""
    if xp is np:
        np.add.at(target, index, values)
    else:
        check_deterministic("scatter_add on a GPU (atomic additions)")
        import cupyx

        cupyx.scatter_add(target, index, values)
