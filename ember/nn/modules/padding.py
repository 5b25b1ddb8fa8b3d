"""Padding layers: constant (ZeroPad, ConstantPad), reflection, replication and circular
padding of the last 1, 2 or 3 dims.

`padding` is an int (the same on every side) or a tuple ``(left, right[, top, bottom
[, front, back]])``, last dim first, as ``F.pad`` takes it.
"""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
]


def _amounts(padding, dims: int) -> tuple:
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * (2 * dims)


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _dims = 0

    def __init__(self, padding, value: float) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._dims)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with `value`.

    >>> ConstantPad1d(2, 3.5)(ember.zeros(1, 2)).shape
    ember.Size([1, 6])
    """

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with `value`."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with `value`."""

    _dims = 3


class _ZeroPad:
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pad the last dim with zeros."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pad the last 2 dims with zeros (left, right, top, bottom)."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pad the last 3 dims with zeros."""


class _ModePadNd(Module):
    __constants__ = ["padding"]
    _dims = 0
    _mode = ""

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._dims)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pad the last dim with its mirror image (the edge not repeated): [1 2 3] -> [2 1 2 3 2]."""

    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Reflection padding of the last 2 dims."""

    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Reflection padding of the last 3 dims."""

    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pad the last dim by repeating its edge values: [1 2 3] -> [1 1 2 3 3]."""

    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Replication padding of the last 2 dims."""

    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Replication padding of the last 3 dims."""

    _dims, _mode = 3, "replicate"


class _CircularPadNd(_ModePadNd):
    _mode = "circular"

    def forward(self, input):
        if input.dim() not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got "
                             f"{input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around: [1 2 3] -> [3 1 2 3 1]."""

    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last 2 dims."""

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last 3 dims."""

    _dims = 3
