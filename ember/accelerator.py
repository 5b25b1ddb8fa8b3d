"""ember.accelerator: the current accelerator, as in recent PyTorch (only CUDA here)."""

from __future__ import annotations

from ._core.backend import cuda_available
from ._core.device import device
from .cuda import device_count as cuda_count


def is_available() -> bool:
    """True when an accelerator (a CUDA GPU through CuPy) can be used."""
    return cuda_available()


def current_accelerator(check_available: bool = False):
    """``device('cuda')`` when a GPU is usable, else None."""
    return device("cuda") if cuda_available() else None


def device_count() -> int:
    """The number of accelerator devices."""
    return cuda_count()
