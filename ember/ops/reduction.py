"""Reductions over dimensions: sum (more to come in this file)."""

from __future__ import annotations

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor
from ._broadcast import sum_to_shape
from ._util import normalize_dims


def _restore_reduced(grad: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """Reshape a reduced gradient so that it broadcasts against the input again."""
    if not keepdim and dims:
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        grad = grad.reshape(kept)
    return grad.expand(shape)


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, np_dtype=None):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return x.sum(axis=dims, keepdims=keepdim, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        return _restore_reduced(grad, ctx.shape, ctx.dims, ctx.keepdim)

    def name(self) -> str:
        return "SumBackward0" if self.dims is None else "SumBackward1"


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum of all elements, or over `dim` (an int or a tuple of ints)."""
    np_dtype = None
    if dtype is not None:
        np_dtype = dtypes.to_dtype(dtype).np_dtype
    elif input._data.dtype.kind in "biu":
        np_dtype = dtypes.int64.np_dtype  # PyTorch sums integers and bools in int64
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return Sum.apply(input, None, False, np_dtype)
    dims = normalize_dims(dim, input._data.ndim, "sum")
    return Sum.apply(input, dims, keepdim, np_dtype)


def sum_to_size(input: Tensor, *size) -> Tensor:
    """Sum `input` down to `size`, undoing a broadcast to its shape."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = tuple(input.shape)
    if len(size) > len(shape) or any(s != 1 and s != d for s, d in zip(
            reversed(size), reversed(shape))):
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(shape)}")
    return sum_to_shape(input, size)
