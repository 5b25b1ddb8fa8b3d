"""Shape ops that change a tensor itself: ``unsqueeze_``, ``squeeze_``, ``t_``,
``transpose_`` (``swapdims_``, ``swapaxes_``), ``resize_`` and ``resize_as_``.

The first four only change how the tensor's memory is viewed.  The tensor takes the
layout (and, when it is in a graph, the node) of the out-of-place view: its values and
memory stay, and views taken before still share them.  ``resize_`` may give it new
memory: the old values come first, in row-major order, and the rest is zero.
"""

from __future__ import annotations

from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor
from . import shape

__all__ = ["unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_",
           "resize_", "resize_as_"]


# PyTorch names the nodes of the in-place forms apart from the out-of-place ones
_INPLACE_NAMES = {"UnsqueezeBackward0": "UnsqueezeBackward1", "TBackward0": "TBackward1",
                  "TransposeBackward0": "TransposeBackward1",
                  "SqueezeBackward0": "SqueezeBackward3", "SqueezeBackward1": "SqueezeBackward4",
                  "SqueezeBackward2": "SqueezeBackward5"}


def _become(input: Tensor, view: Tensor) -> Tensor:
    """`input` takes the layout (and the graph node) of `view`, an out-of-place view of it."""
    if input._requires_grad and is_grad_enabled():
        if input._grad_fn is None and input._view_info is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if input._view_info is not None:
            raise NotImplementedError("in-place shape ops on a view that requires grad are not "
                                      "supported by ember; use the out-of-place op")
        node = view._grad_fn
        node._name = _INPLACE_NAMES.get(node.name(), node.name())
        input._grad_fn, input._output_nr = node, view._output_nr
    input._data = view._data
    return input


def unsqueeze_(input: Tensor, dim: int) -> Tensor:
    """``unsqueeze`` in place."""
    return _become(input, shape.unsqueeze(input, dim))


def squeeze_(input: Tensor, dim=None) -> Tensor:
    """``squeeze`` in place."""
    return _become(input, shape.squeeze(input, dim))


def t_(input: Tensor) -> Tensor:
    """``t`` in place."""
    return _become(input, shape.t(input))


def transpose_(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """``transpose`` in place."""
    return _become(input, shape.transpose(input, dim0, dim1))


swapdims_ = swapaxes_ = transpose_


def resize_(input: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give `input` the shape `sizes`, keeping its first values (row-major) and filling new
    room with zeros.  Tensors that require grad cannot be resized."""
    if input._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    new_shape = tuple(int(s) for s in (sizes[0] if len(sizes) == 1 and isinstance(
        sizes[0], (tuple, list)) else sizes))
    if any(s < 0 for s in new_shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(new_shape)}")
    data = input._data
    count = 1
    for s in new_shape:
        count *= s
    if count <= data.size and data.flags.c_contiguous:
        input._data = data.reshape(-1)[:count].reshape(new_shape)  # the same memory
    else:
        xp = shape.xp_of(data)
        grown = xp.zeros(count, dtype=data.dtype)
        kept = min(count, data.size)
        grown[:kept] = data.reshape(-1)[:kept]
        input._data = grown.reshape(new_shape)
    input._version.value += 1
    return input


def resize_as_(input: Tensor, other: Tensor, memory_format=None) -> Tensor:
    """``resize_`` to the shape of `other`."""
    return resize_(input, tuple(other.shape))
