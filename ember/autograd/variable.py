"""``Variable``: the pre-0.4 wrapper type, kept so that old code runs.

Tensors and Variables were merged long ago: ``Variable(t)`` returns a tensor sharing
``t``'s memory as a new leaf, and ``isinstance(t, Variable)`` holds for every tensor.
"""

from __future__ import annotations

import warnings

from .._core.tensor import Tensor
from ..ops.creation import empty

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: `data` as a leaf tensor (same memory)."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        out.requires_grad_(requires_grad)
        return out
