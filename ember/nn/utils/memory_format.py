"""Put the weights of convolutions in a given memory format (e.g. channels-last)."""

from __future__ import annotations

from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Module, kinds: tuple, memory_format) -> Module:
    if isinstance(module, kinds):
        # assigning .data keeps the Parameter object (optimizers may already hold it)
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format) -> Module:
    """Lay out the weight of every ``Conv2d`` and ``ConvTranspose2d`` in `module` (itself
    included, recursively) in `memory_format`, e.g. ``ember.channels_last``.  Values and
    outputs do not change; only ``weight.stride()`` does.  Returns `module`.

    >>> import ember
    >>> from ember import nn
    >>> conv = convert_conv2d_weight_memory_format(nn.Conv2d(3, 4, 2), ember.channels_last)
    >>> conv.weight.stride()
    (12, 1, 6, 3)
    """
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module: Module, memory_format) -> Module:
    """As ``convert_conv2d_weight_memory_format``, for ``Conv3d`` and ``ConvTranspose3d``
    (e.g. with ``ember.channels_last_3d``).  Returns `module`."""
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
