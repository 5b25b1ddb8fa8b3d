"""DataParallel: PyTorch's single-process wrapper, on the one device ember computes on.

PyTorch's ``nn.DataParallel`` splits each batch over several GPUs of one process. Without
CUDA it runs the module as it is, and with one GPU it moves the inputs to that GPU first;
ember does the same.  With several GPUs ember still runs on ``device_ids[0]`` alone, with a
warning: the results are those of the whole batch on one device (batch-norm statistics
come from the whole batch rather than per GPU).  ``DistributedDataParallel`` is the way to
use several devices.
"""

from __future__ import annotations

import warnings

from ... import cuda
from ..._core.device import device as Device
from ..._core.tensor import Tensor
from ..._core.nested import map_nested
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _index(d) -> int:
    if isinstance(d, int):
        return d
    return Device(d).index or 0


def _to(obj, device):
    """`obj` with every tensor in it (nested tuples, lists, dicts) moved to `device`."""
    return map_nested(obj, Tensor, lambda t: t.to(device))


class DataParallel(Module):
    """Wraps `module` for data-parallel use in one process (see the module docstring); its
    ``state_dict`` keys start with ``module.``, as in PyTorch."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.dim = dim
        if not cuda.is_available():
            self.device_ids, self.output_device = [], None
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        self.device_ids = [_index(d) for d in device_ids]
        self.output_device = _index(output_device if output_device is not None
                                    else self.device_ids[0])
        if len(self.device_ids) > 1:
            warnings.warn(f"nn.DataParallel: ember runs the whole batch on cuda:"
                          f"{self.device_ids[0]}; use DistributedDataParallel to use "
                          f"{len(self.device_ids)} devices", stacklevel=2)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        device = Device(f"cuda:{self.device_ids[0]}")
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != device:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{device} (device_ids[0]) but found one of them on "
                                   f"device: {t.device}")
        out = self.module(*_to(inputs, device), **_to(kwargs, device))
        return _to(out, Device(f"cuda:{self.output_device}"))


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """The functional form: ``DataParallel(module, device_ids, output_device, dim)`` applied
    once to `inputs` (a tensor or a tuple of them)."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    wrapper = DataParallel(module, device_ids, output_device, dim)
    return wrapper(*inputs, **(module_kwargs or {}))
