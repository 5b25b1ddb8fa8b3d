"""The ``index_*`` family: index_select, index_add, index_copy, index_fill, index_reduce.

Each works on whole slices along one dim, picked by a vector of indices:
``index_select(x, 0, i)[k] = x[i[k]]``.  The gradients are written with each other
(index_select's is an index_add, and so on), so double backward works.
"""

from __future__ import annotations

import numpy as np

from .._core.backend import scatter_add as _scatter_add
from .._core.function import Function
from .._core.tensor import Tensor, _make
from ._inplace import inplace_form
from ._util import check_same_device, is_scalar, wrap_dim, xp_of
from .indexing import dtype_short, output_array
from .scatter import _check_bounds, _int_index, _same_dtype, scatter_reduce, scatter_reduce_


class IndexSelect(Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.in_shape, ctx.dim, ctx.index = x.shape, dim, index
        xp = xp_of(x)
        return xp.ascontiguousarray(xp.take(x, index, axis=dim))

    @staticmethod
    def backward(ctx, grad):
        return IndexAdd.apply(grad.new_zeros(ctx.in_shape), grad, dim=ctx.dim, index=ctx.index)


class IndexAdd(Function):
    @staticmethod
    def forward(ctx, x, source, dim, index, alpha=1):
        ctx.dim, ctx.index, ctx.alpha = dim, index, alpha
        out = output_array(ctx, x)
        key = (slice(None),) * dim + (index,)
        _scatter_add(xp_of(out), out, key, source if alpha == 1 else source * alpha)
        return out

    @staticmethod
    def backward(ctx, grad):
        gs = None
        if ctx._edges[1][0] is not None:
            gs = IndexSelect.apply(grad, dim=ctx.dim, index=ctx.index)
            if ctx.alpha != 1:
                gs = gs * ctx.alpha
        return grad, gs


IndexAddInplace = inplace_form(IndexAdd)


class IndexCopy(Function):
    @staticmethod
    def forward(ctx, x, source, dim, index):
        ctx.dim, ctx.index = dim, index
        out = output_array(ctx, x)
        out[(slice(None),) * dim + (index,)] = source
        return out

    @staticmethod
    def backward(ctx, grad):
        gx = gs = None
        if ctx._edges[0][0] is not None:
            gx = IndexFill.apply(grad, 0.0, dim=ctx.dim, index=ctx.index)
        if ctx._edges[1][0] is not None:
            gs = IndexSelect.apply(grad, dim=ctx.dim, index=ctx.index)
        return gx, gs


IndexCopyInplace = inplace_form(IndexCopy)


class IndexFill(IndexCopy):
    """index_copy of one value (a number or a 0-dim tensor) to every indexed slice."""

    @staticmethod
    def forward(ctx, x, value, dim, index):
        ctx.is_scalar = is_scalar(value)
        return IndexCopy.forward(ctx, x, value, dim, index)

    @staticmethod
    def backward(ctx, grad):
        gx, gv = IndexCopy.backward(ctx, grad)
        return gx, (None if gv is None else gv.sum())

    def name(self) -> str:
        return "IndexFillBackward0" if self.is_scalar else "IndexFillBackward1"


class IndexFillInplace(IndexFill):
    _inplace = True


# ----------------------------------------------------------------------
# public functions: index_*


def _index_vector(op: str, input: Tensor, dim: int, index, dtypes=("int64", "int32"),
                  message=None, error=RuntimeError):
    data = _int_index(index, input, op, dtypes, error=error, message=message)
    if data.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    d = wrap_dim(dim, input.ndim, op)
    return d, data.reshape(-1).astype(np.int64, copy=False)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of `input` at the positions `index` (a vector) along `dim`."""
    d, data = _index_vector("index_select", input, dim, index,
                            message="index_select(): Expected dtype int32 or int64 for index")
    size = input.shape[d] if input.ndim else 1
    if data.size and (int(data.min()) < 0 or int(data.max()) >= size):
        raise IndexError("index out of range in self")
    if input.ndim == 0:
        return IndexSelect.apply(input.reshape(1), dim=0, index=data).reshape(())
    return IndexSelect.apply(input, dim=d, index=data)


def _source_args(op: str, input: Tensor, dim: int, index, source: Tensor, bounds_prefix=""):
    d, data = _index_vector(op, input, dim, index)
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor")
    check_same_device(op, input, source)
    shape, sshape = list(input.shape) or [1], list(source.shape) or [1]
    if len(shape) != len(sshape) or any(a != b for k, (a, b) in enumerate(zip(shape, sshape))
                                        if k != d):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    if data.size != sshape[d]:
        raise RuntimeError(f"{op}(): Number of indices ({data.size}) should be equal to "
                           f"source.size(dim): ({sshape[d]}), for dim: {d}")
    return d, data, shape[d]


def _index_add_call(cls, op, input, dim, index, source, alpha):
    d, data, size = _source_args(op, input, dim, index, source)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({dtype_short(input.dtype)}) and source "
                           f"({dtype_short(source.dtype)}) must have the same scalar type")
    _check_bounds(data, size, d)
    if input.ndim == 0:
        out = cls.apply(input.reshape(1), source.reshape(1), dim=0, index=data, alpha=alpha)
        return input if cls._inplace else out.reshape(())
    return cls.apply(input, source, dim=d, index=data, alpha=alpha)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """A copy of `input` with ``alpha * source`` added to the slices at `index` along `dim`
    (repeated indices add up)."""
    return _index_add_call(IndexAdd, "index_add_", input, dim, index, source, alpha)


def index_add_(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """In-place ``index_add``."""
    return _index_add_call(IndexAddInplace, "index_add_", input, dim, index, source, alpha)


def _index_copy_call(cls, input, dim, index, source):
    d, data, size = _source_args("index_copy_", input, dim, index, source)
    if source.dtype is not input.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {dtype_short(input.dtype)} and (source) "
                           f"{dtype_short(source.dtype)}")
    _check_bounds(data, size, d, "index_copy_(): ", IndexError)
    if input.ndim == 0:
        out = cls.apply(input.reshape(1), source.reshape(1), dim=0, index=data)
        return input if cls._inplace else out.reshape(())
    return cls.apply(input, source, dim=d, index=data)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` whose slices at `index` along `dim` are replaced by `source`'s."""
    return _index_copy_call(IndexCopy, input, dim, index, source)


def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place ``index_copy``."""
    return _index_copy_call(IndexCopyInplace, input, dim, index, source)


def _index_fill_call(cls, input, dim, index, value):
    d, data = _index_vector("index_fill_", input, dim, index, dtypes=("int64",),
                            error=IndexError,
                            message="index_fill_(): Expected dtype int64 for index.")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        if not (value.requires_grad and input.is_floating_point()):
            value = value.item()
        elif value.dtype is not input.dtype:
            value = value.to(input.dtype)
    elif not is_scalar(value):
        raise TypeError(f"index_fill(): value must be a number or a 0-dim tensor, got "
                        f"{type(value).__name__}")
    size = input.shape[d] if input.ndim else 1
    _check_bounds(data, size, d, error=IndexError)
    if input.ndim == 0:
        out = cls.apply(input.reshape(1), value, dim=0, index=data)
        return input if cls._inplace else out.reshape(())
    return cls.apply(input, value, dim=d, index=data)


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of `input` with the slices at `index` along `dim` set to `value`."""
    return _index_fill_call(IndexFill, input, dim, index, value)


def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place ``index_fill``."""
    return _index_fill_call(IndexFillInplace, input, dim, index, value)


def _index_reduce_args(input, dim, index, source, reduce):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d, data, size = _source_args("index_reduce_", input, dim, index, source)
    _same_dtype("index_reduce_", input, source)
    _check_bounds(data, size, d, error=IndexError)
    shape = [1] * max(source.ndim, 1)
    shape[d] = data.size
    spread = _make(data.reshape(shape)).expand(tuple(source.shape) or (1,))
    return d, spread


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """Reduce the slices of `source` into a copy of `input` at `index` along `dim`, with
    'prod', 'mean', 'amax' or 'amin'."""
    d, spread = _index_reduce_args(input, dim, index, source, reduce)
    return scatter_reduce(input, d, spread, source, reduce, include_self=include_self)


def index_reduce_(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place ``index_reduce``."""
    d, spread = _index_reduce_args(input, dim, index, source, reduce)
    return scatter_reduce_(input, d, spread, source, reduce, include_self=include_self)
