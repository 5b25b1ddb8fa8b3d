"""Shape ops: views (reshape, view, transpose, permute, expand) and copies.

View ops set ``_is_view``: their output shares memory and the version counter
with the input, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.tensor import Tensor
from ._util import wrap_dim, xp_of


def _infer_shape(shape, numel: int, op: str) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class View(Function):
    """A reshape that must not copy (``view``)."""

    _is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        try:
            return x.reshape(shape, copy=False)
        except ValueError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


class Reshape(Function):
    """A reshape that copies only when a view is impossible."""

    _name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


def view(input: Tensor, *shape) -> Tensor:
    """The same memory seen with another shape (one dim may be -1)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list)):
        return input.to(shape[0])  # view(dtype) is not a reinterpretation here
    return View.apply(input, _infer_shape(shape, input._data.size, "view"))


def reshape(input: Tensor, *shape) -> Tensor:
    """Another shape with the same elements: a view when possible, else a copy."""
    shape = _infer_shape(shape, input._data.size, "reshape")
    data = input._data
    if _can_view(data, shape):
        return View.apply(input, shape)
    return Reshape.apply(input, shape)


def _can_view(data, shape) -> bool:
    if data.flags.c_contiguous:
        return True
    try:
        data.reshape(shape, copy=False)
        return True
    except ValueError:
        return False


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``view(other.shape)``."""
    return view(input, tuple(other.shape))


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``reshape(other.shape)``."""
    return reshape(input, tuple(other.shape))


class Permute(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(inverse)


class Transpose(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, dim0, dim1):
        ctx.dims = (dim0, dim1)
        return x.swapaxes(dim0, dim1)

    @staticmethod
    def backward(ctx, grad):
        return grad.transpose(*ctx.dims)


def permute(input: Tensor, *dims) -> Tensor:
    """Reorder the dimensions (a view)."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    ndim = input._data.ndim
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {ndim} is not "
            f"equal to len(dims) = {len(dims)}"
        )
    dims = tuple(wrap_dim(int(d), ndim, "permute") for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    ndim = input._data.ndim
    return Transpose.apply(input, wrap_dim(dim0, ndim, "transpose"),
                           wrap_dim(dim1, ndim, "transpose"))


class Expand(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return xp_of(x).broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.sum_to_size(*ctx.in_shape)


def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast singleton dims to `sizes` without copying (-1 keeps a dim)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    shape = tuple(input._data.shape)
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({len(shape)})"
        )
    lead = len(sizes) - len(shape)
    out = []
    for i, s in enumerate(sizes):
        s = int(s)
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"expand: the expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i}")
            out.append(s)
            continue
        d = shape[i - lead]
        if s == -1:
            s = d
        if d != s and d != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({d}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(shape)}"
            )
        out.append(s)
    out = tuple(out)
    return Expand.apply(input, out)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``expand(other.shape)``."""
    return expand(input, tuple(other.shape))
