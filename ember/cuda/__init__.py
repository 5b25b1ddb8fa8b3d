"""ember.cuda: GPU availability and memory figures, through CuPy (imported lazily).

Without CuPy or without a GPU, ``is_available()`` is False and every call that
needs a GPU raises a RuntimeError naming the ``cuda`` extra.
"""

from __future__ import annotations

from .._core.backend import cuda_available, cupy_module
from .._core.device import device as Device
from ..random import default_cuda_generator


def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU."""
    return cuda_available()


def device_count() -> int:
    """The number of visible GPUs (0 without CuPy or a GPU)."""
    if not cuda_available():
        return 0
    return cupy_module().cuda.runtime.getDeviceCount()


def current_device() -> int:
    """The index of the current GPU."""
    return cupy_module().cuda.runtime.getDevice()


def set_device(device) -> None:
    """Make `device` (an index, 'cuda:N' or a device) the current GPU."""
    index = device if isinstance(device, int) else (Device(device).index or 0)
    cupy_module().cuda.runtime.setDevice(index)


def synchronize(device=None) -> None:
    """Wait for all work queued on the GPU to finish."""
    cupy_module().cuda.runtime.deviceSynchronize()


def get_device_name(device=None) -> str:
    """The GPU's product name."""
    cp = cupy_module()
    index = 0 if device is None else (device if isinstance(device, int) else device.index or 0)
    return cp.cuda.runtime.getDeviceProperties(index)["name"].decode()


def memory_allocated(device=None) -> int:
    """Bytes currently held by tensors (CuPy's memory pool, used bytes)."""
    return cupy_module().get_default_memory_pool().used_bytes()


def memory_reserved(device=None) -> int:
    """Bytes held by the memory pool, used or cached."""
    return cupy_module().get_default_memory_pool().total_bytes()


def empty_cache() -> None:
    """Return cached, unused GPU memory to the driver."""
    cupy_module().get_default_memory_pool().free_all_blocks()


def max_memory_allocated(device=None) -> int:
    """Not tracked by CuPy's pool: raises NotImplementedError."""
    raise NotImplementedError("ember.cuda.max_memory_allocated is not supported yet")


def manual_seed(seed: int) -> None:
    """Seed the random generator of the current GPU (ember's CUDA generator)."""
    default_cuda_generator(current_device() if cuda_available() else 0).manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the random generators of all GPUs."""
    for index in range(max(device_count(), 1)):
        default_cuda_generator(index).manual_seed(seed)


from . import amp  # noqa: E402 - torch.cuda.amp (autocast, GradScaler)
from .legacy_types import (  # noqa: E402 - torch.cuda.FloatTensor & co.
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, ComplexDoubleTensor, ComplexFloatTensor,
    DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor,
)
