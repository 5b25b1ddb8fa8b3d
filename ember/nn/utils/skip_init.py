"""``skip_init``: build a module without paying for (or trusting) its initialization."""

from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs) -> Module:
    """``module_cls(*args, **kwargs)`` with every parameter and buffer replaced by
    uninitialized memory of the same shape and dtype, on ``kwargs["device"]`` (the CPU
    by default); for modules whose values are loaded or set right afterwards.

    Like PyTorch, the class must take a ``device`` argument.  PyTorch builds the module on
    its "meta" device and so skips the initialization's cost; ember has no meta device,
    so it runs the constructor normally and then discards the values.

    >>> from ember import nn
    >>> layer = skip_init(nn.Linear, 4, 2)
    >>> tuple(layer.weight.shape)
    (2, 4)
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    device = kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs).to_empty(device=device)
