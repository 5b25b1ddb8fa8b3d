"""Gather and scatter along a dim (the ``index_*`` family is in ``index_dim.py``).

``gather(x, dim, index)[i][j] = x[index[i][j]][j]`` (for dim 0) and the scatters write
the other way round.  Both are done with one NumPy advanced-indexing key (index
along `dim`, ``arange`` in the other dims), so the same code serves CuPy.  Gather's
gradient is a scatter-add, scatter's is a gather: each op's backward is written with
the other, so double backward works.
"""

from __future__ import annotations

import numpy as np

from .._core.backend import scatter_add as _scatter_add
from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import Tensor, _make
from . import _native_scatter
from ._inplace import inplace_form
from ._util import check_same_device, is_scalar, wrap_dim, xp_of
from .indexing import output_array, pad_to

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _full_key(index, dim: int) -> tuple:
    """The advanced key addressing ``x[..., index[i, j, k], ...]`` at each index position."""
    xp = xp_of(index)
    key = []
    for d, n in enumerate(index.shape):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


def _head(src, shape):
    """The leading ``shape`` block of `src` (scatter reads only that much of it)."""
    if tuple(src.shape) == tuple(shape):
        return src
    return src[tuple(slice(0, n) for n in shape)]


def _ufunc_at(xp, name: str, out, key, values) -> None:
    """``out[key] (op)= values`` with repeated positions combined (np.<ufunc>.at)."""
    if name == "add":
        _scatter_add(xp, out, key, values)
        return
    if xp is np:
        getattr(np, name).at(out, key, values)
        return
    # NOTE: not CuPy's own ``maximum.at``: on an H200 (CuPy 14.2) the float64 maxima it
    # wrote did not compare equal to the inputs they came from, so the gradient, which
    # goes to the inputs equal to the result, came out zero; CuPy has no ``multiply.at``.
    _at_in_rounds(xp, getattr(xp, name), out, key, values)


def _at_in_rounds(xp, ufunc, out, key, values) -> None:
    """``ufunc.at(out, key, values)`` for array modules other than NumPy (see
    `_ufunc_at` for why CuPy's own is not used).

    Each update is ranked by how many updates to the same position come before it; the
    updates of one rank hit distinct positions, so each rank is one plain indexed update."""
    keys = xp.broadcast_arrays(*key)
    flat = xp.zeros(keys[0].shape, dtype=np.int64)
    for k, size in zip(keys, out.shape):
        flat = flat * size + k
    flat = flat.reshape(-1)
    values = xp.broadcast_to(xp.asarray(values, dtype=out.dtype), keys[0].shape).reshape(-1)
    order = xp.argsort(flat, kind="stable")
    ordered = flat[order]
    rank = xp.empty_like(flat)
    rank[order] = xp.arange(flat.size) - xp.searchsorted(ordered, ordered, side="left")
    target = xp.ascontiguousarray(out).reshape(-1)  # (a view of `out` when contiguous)
    for r in range(int(rank.max()) + 1 if flat.size else 0):
        chosen = rank == r
        where, update = flat[chosen], values[chosen]
        target[where] = ufunc(target[where], update)
    if not out.flags.c_contiguous:
        out[...] = target.reshape(out.shape)


def _hit_mask(shape, key, xp):
    """True at every position a scatter with `key` writes to."""
    hit = xp.zeros(shape, dtype=bool)
    hit[key] = True
    return hit


def _counts(shape, key, xp, dtype):
    """How many scattered elements land on each position."""
    counts = xp.zeros(shape, dtype=dtype)
    index_shape = np.broadcast_shapes(*(k.shape for k in key))
    _scatter_add(xp, counts, key, xp.ones(index_shape, dtype=dtype))
    return counts


# ----------------------------------------------------------------------
# Functions


class Gather(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.in_shape, ctx.dim, ctx.index = x.shape, dim, index
        # NOTE: the kernel counts the indices outside the dim as it reads; only then, or
        # off the kernel, are they checked by a pass of their own (for PyTorch's error):
        # the check's min and max took ~15 us of a (4096, 16) gather's ~80
        try:
            picked = _native_scatter.gather(x, index, dim)
        except IndexError:
            picked = None
        if picked is not None:
            return picked
        _check_bounds(index, x.shape[dim], dim)
        return xp_of(x).ascontiguousarray(x[_full_key(index, dim)])

    @staticmethod
    def backward(ctx, grad):
        g = grad._data
        if not STATE.enabled and type(g) is np.ndarray:
            # first order: the zeros scattered into where they are made (ScatterAdd would
            # copy them first), row by row along the last dim
            out = _native_scatter.scatter_add_into_zeros(ctx.in_shape, ctx.index, g, ctx.dim)
            if out is not None:
                return _make(out)
            out = np.zeros(ctx.in_shape, g.dtype)
            if _native_scatter.scatter_add(out, ctx.index, g, ctx.dim):
                return _make(out)
        return ScatterAdd.apply(grad.new_zeros(ctx.in_shape), grad, dim=ctx.dim, index=ctx.index)


class ScatterAdd(Function):
    @staticmethod
    def forward(ctx, x, src, dim, index):
        ctx.dim, ctx.index, ctx.src_shape = dim, index, src.shape
        out = output_array(ctx, x)
        values = _head(src, index.shape)
        if not _native_scatter.scatter_add(out, index, values, dim):
            _scatter_add(xp_of(out), out, _full_key(index, dim), values)
        return out

    @staticmethod
    def backward(ctx, grad):
        gs = None
        if ctx._edges[1][0] is not None:
            gs = pad_to(Gather.apply(grad, dim=ctx.dim, index=ctx.index), ctx.src_shape)
        return grad, gs


ScatterAddInplace = inplace_form(ScatterAdd)


class Scatter(Function):
    """``out[index positions] = src`` (or a scalar value); legacy reduce 'add'/'multiply'."""

    @staticmethod
    def forward(ctx, x, src, dim, index, reduce=None):
        ctx.dim, ctx.index, ctx.reduce = dim, index, reduce
        ctx.src_shape = None if is_scalar(src) else src.shape
        out = output_array(ctx, x)
        key = _full_key(index, dim)
        values = src if is_scalar(src) else _head(src, index.shape)
        if reduce is None:
            out[key] = values
        else:
            xp = xp_of(out)
            values = xp.broadcast_to(xp.asarray(values, dtype=out.dtype), index.shape)
            _ufunc_at(xp, "add" if reduce == "add" else "multiply", out, key, values)
        return out

    @staticmethod
    def backward(ctx, grad):
        if ctx.reduce is not None:
            raise NotImplementedError("the derivative of scatter with reduce= is not "
                                      "implemented (as in PyTorch); use scatter_reduce")
        gx = gs = None
        if ctx._edges[0][0] is not None:
            gx = Scatter.apply(grad, 0.0, dim=ctx.dim, index=ctx.index)
        if ctx.src_shape is not None and ctx._edges[1][0] is not None:
            gs = pad_to(Gather.apply(grad, dim=ctx.dim, index=ctx.index), ctx.src_shape)
        return gx, gs

    def name(self) -> str:
        if self.reduce is not None:  # no derivative: PyTorch's node name for that
            return "NotImplemented"
        return "ScatterBackward0" if self.src_shape is not None else "ScatterBackward1"


class ScatterInplace(Scatter):
    _inplace = True


class ScatterReduce(Function):
    @staticmethod
    def forward(ctx, x, src, dim, index, reduce, include_self):
        ctx.dim, ctx.index, ctx.reduce, ctx.include_self = dim, index, reduce, include_self
        ctx.src_shape = src.shape
        xp = xp_of(x)
        key = _full_key(index, dim)
        values = _head(src, index.shape)
        # NOTE: a fresh array even in place: backward needs the old value of x.
        out = x.copy()
        if not include_self:
            out[key] = _identity(reduce, out.dtype)
        ufunc = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum",
                 "amin": "minimum"}[reduce]
        _ufunc_at(xp, ufunc, out, key, values)
        if reduce == "mean":
            counts = _counts(x.shape, key, xp, out.dtype)
            if include_self:
                counts += 1
            safe = xp.maximum(counts, 1)
            out = xp.where(counts > 0, out / safe if out.dtype.kind in "fc" else out // safe, out)
            out = out.astype(x.dtype, copy=False)
        if reduce in ("prod", "amax", "amin"):
            ctx.save_for_backward(x, src, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        reduce, dim, index = ctx.reduce, ctx.dim, ctx.index
        key = _full_key(index, dim)
        xp = xp_of(grad._data)
        shape = tuple(grad.shape)
        hit = _hit_mask(shape, key, xp)
        want_x, want_src = ctx._edges[0][0] is not None, ctx._edges[1][0] is not None
        gx = gs = None
        if reduce in ("sum", "mean"):
            g = grad
            if reduce == "mean":
                counts = _counts(shape, key, xp, grad._data.dtype)
                if ctx.include_self:
                    counts += 1
                g = grad / _make(xp.maximum(counts, 1))
            if want_x:
                gx = g if ctx.include_self else grad.masked_fill(_make(hit), 0)
            if want_src:
                gs = Gather.apply(g, dim=dim, index=index)
        elif reduce in ("amax", "amin"):
            x, src, out = ctx.saved_tensors
            src_head = _head(src._data, index.shape)
            self_eq = (x._data == out._data) if ctx.include_self else ~hit
            self_eq = self_eq | ~hit
            src_eq = src_head == out._data[key]
            n = self_eq.astype(grad._data.dtype)
            _scatter_add(xp, n, key, src_eq.astype(grad._data.dtype))
            g = grad / _make(xp.maximum(n, 1))
            if want_x:
                gx = g * _make(self_eq.astype(grad._data.dtype))
            if want_src:
                gs = Gather.apply(g, dim=dim, index=index) * _make(
                    src_eq.astype(grad._data.dtype))
        else:
            gx, gs = _prod_backward(ctx, grad, key, hit, want_x, want_src)
        if gs is not None:
            gs = pad_to(gs, ctx.src_shape)
        return gx, gs


ScatterReduceInplace = inplace_form(ScatterReduce)


def _identity(reduce: str, dtype):
    """The starting value of a reduction that leaves out the input's own value."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce != "amax"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _prod_backward(ctx, grad, key, hit, want_x, want_src):
    """Gradients of a scattered product, exact when some factors are zero."""
    x, src, _ = ctx.saved_tensors
    dim, index = ctx.dim, ctx.index
    xp = xp_of(grad._data)
    src_zero = src._data == 0
    if STATE.enabled and bool(src_zero.any()):
        raise NotImplementedError("double backward of scatter_reduce(reduce='prod') with zeros "
                                  "in src is not implemented")
    gx = gs = None
    if want_x:
        if ctx.include_self:
            # d out / d x = the product of the src elements scattered there (1 for none).
            gx = grad * ScatterReduce.apply(x.new_ones(x.shape), src, dim=dim, index=index,
                                            reduce="prod", include_self=True)
        else:
            gx = grad.masked_fill(_make(hit), 0)
    if want_src:
        base = x if ctx.include_self else x.new_ones(x.shape)
        safe_src = src.masked_fill(_make(src_zero), 1)
        # The product of everything at a position, zero factors of src left out.
        rest = ScatterReduce.apply(base, safe_src, dim=dim, index=index, reduce="prod",
                                   include_self=True)
        zeros = xp.zeros(x._data.shape, dtype=grad._data.dtype)
        _scatter_add(xp, zeros, key, _head(src_zero, index.shape).astype(zeros.dtype))
        zeros_here = zeros[key]
        head_zero = _head(src_zero, index.shape)
        # Nonzero factor: rest / itself, when no factor there is zero.  A zero factor: rest,
        # when it is the only zero there.  Otherwise 0.
        keep = (~head_zero & (zeros_here == 0)) | (head_zero & (zeros_here == 1))
        picked = Gather.apply(grad * rest, dim=dim, index=index)
        gs = picked / _head_tensor(safe_src, index.shape) * _make(keep.astype(zeros.dtype))
    return gx, gs


def _head_tensor(t: Tensor, shape) -> Tensor:
    if tuple(t.shape) == tuple(shape):
        return t
    return t[tuple(slice(0, n) for n in shape)]


# ----------------------------------------------------------------------
# argument checks


def _int_index(index, like: Tensor, op: str, dtypes=("int64", "int32"), error=RuntimeError,
               message=None):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    check_same_device(op, like, index)
    if index.dtype.name not in dtypes:
        raise error(message or f"{op}(): Expected dtype int32/int64 for index")
    return index._data


def _check_bounds(index, size: int, dim: int, prefix: str = "", error=RuntimeError) -> None:
    if index.size == 0:
        return
    low, high = int(index.min()), int(index.max())
    if low < 0 or high >= size:
        bad = high if high >= size else low
        raise error(f"{prefix}index {bad} is out of bounds for dimension {dim} with size {size}")


def _scatter_args(op: str, input: Tensor, dim: int, index, src=None,
                  check_bounds: bool = True):
    """(dim, index array) for gather/scatter, checked the way PyTorch checks them (the
    indices' range too, unless the op checks it itself: `check_bounds`)."""
    data = _int_index(index, input, op)
    ndim = input.ndim
    d = wrap_dim(dim, ndim, op)
    if data.ndim != ndim and not (max(data.ndim, ndim) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input "
                           "tensor")
    if src is not None and not is_scalar(src) and src.ndim != data.ndim and not (
            max(src.ndim, data.ndim) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    in_shape = input.shape if ndim else (1,)
    index_shape = data.shape if data.ndim else (1,)
    for k in range(len(index_shape)):
        if k == d:
            continue
        too_big = index_shape[k] > in_shape[k]
        if src is not None and not is_scalar(src) and src.ndim:
            too_big = too_big or index_shape[k] > src.shape[k]
        if too_big:
            if src is None or is_scalar(src):
                raise RuntimeError(
                    f"Size does not match at dimension {k} expected index {list(index_shape)} "
                    f"to be no larger than self {list(in_shape)} apart from dimension {d}")
            raise RuntimeError(
                f"Expected index {list(index_shape)} to be no larger than self {list(in_shape)} "
                f"apart from dimension {d} and to be no larger size than src {list(src.shape)}")
    if check_bounds:
        _check_bounds(data, in_shape[d], d)
    return d, data.astype(np.int64, copy=False)


def _same_dtype(op: str, input: Tensor, src: Tensor) -> None:
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    check_same_device(op, input, src)
    if src.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")


def _as_1d(*tensors):
    """0-dim tensors as 1-element vectors (gather/scatter treat them so)."""
    return [t.reshape(1) if isinstance(t, Tensor) and t.ndim == 0 else t for t in tensors]


# ----------------------------------------------------------------------
# public functions: gather / scatter


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Values of `input` at `index` along `dim`: ``out[i][j] = input[index[i][j]][j]`` for
    dim 0; the result has `index`'s shape."""
    d, data = _scatter_args("gather", input, dim, index, check_bounds=False)  # (Gather's)
    if input.ndim == 0 or data.ndim == 0:  # 0-d input or index: one element along dim 0
        return Gather.apply(input.reshape(-1), dim=0, index=data.reshape(1)).reshape(data.shape)
    return Gather.apply(input, dim=d, index=data)


def _scatter(cls, op, input, dim, index, src, value, reduce):
    if src is None and value is None:
        raise TypeError(f"{op}() missing the 'src' or 'value' argument")
    if src is None or is_scalar(src):
        src = value if src is None else src
        if isinstance(src, Tensor):
            src = src.item()
    else:
        _same_dtype(op.rstrip("_"), input, src)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    d, data = _scatter_args(op.rstrip("_"), input, dim, index, src)
    if input.ndim == 0 or data.ndim == 0:  # 0-d input or index: one element along dim 0
        target, src, data = *_as_1d(input, src), data.reshape(1)
        out = cls.apply(target, src, dim=0, index=data, reduce=reduce)
        return input if cls._inplace else out.reshape(input.shape)
    return cls.apply(input, src, dim=d, index=data, reduce=reduce)


def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *,
            reduce: str | None = None) -> Tensor:
    """A copy of `input` with `src` (a tensor, or a scalar `value`) written at `index` along
    `dim`: ``out[index[i][j]][j] = src[i][j]`` for dim 0."""
    return _scatter(Scatter, "scatter", input, dim, index, src, value, reduce)


def scatter_(input: Tensor, dim: int, index: Tensor, src=None, value=None, *,
             reduce: str | None = None) -> Tensor:
    """In-place ``scatter``."""
    return _scatter(ScatterInplace, "scatter_", input, dim, index, src, value, reduce)


def _scatter_add_call(cls, op, input, dim, index, src):
    _same_dtype("scatter", input, src)
    d, data = _scatter_args("scatter", input, dim, index, src)
    if input.ndim == 0 or data.ndim == 0:
        target, src = _as_1d(input, src)
        out = cls.apply(target, src, dim=0, index=data.reshape(1))
        return input if cls._inplace else out.reshape(input.shape)
    return cls.apply(input, src, dim=d, index=data)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src` added at `index` along `dim` (repeated indices sum)."""
    return _scatter_add_call(ScatterAdd, "scatter_add", input, dim, index, src)


def scatter_add_(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place ``scatter_add``."""
    return _scatter_add_call(ScatterAddInplace, "scatter_add_", input, dim, index, src)


def _scatter_reduce_call(cls, input, dim, index, src, reduce, include_self):
    if reduce not in _REDUCTIONS:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    _same_dtype("scatter_reduce", input, src)
    d, data = _scatter_args("scatter_reduce", input, dim, index, src)
    if input.ndim == 0 or data.ndim == 0:
        target, src = _as_1d(input, src)
        out = cls.apply(target, src, dim=0, index=data.reshape(1), reduce=reduce,
                        include_self=bool(include_self))
        return input if cls._inplace else out.reshape(input.shape)
    return cls.apply(input, src, dim=d, index=data, reduce=reduce,
                     include_self=bool(include_self))


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Reduce `src` into a copy of `input` at `index` along `dim` with 'sum', 'prod', 'mean',
    'amax' or 'amin'; without `include_self` the input's own values are left out where
    something is scattered."""
    return _scatter_reduce_call(ScatterReduce, input, dim, index, src, reduce, include_self)


def scatter_reduce_(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place ``scatter_reduce``."""
    return _scatter_reduce_call(ScatterReduceInplace, input, dim, index, src, reduce,
                                include_self)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` with `indices` broadcast against `input` (all but `dim`); without `dim`,
    over the flattened input."""
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if input.ndim != indices.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} "
            "dimensions for indices")
    d = wrap_dim(dim, input.ndim, "take_along_dim")
    a, b = list(input.shape), list(indices.shape)
    a[d] = b[d] = 1
    try:
        common = list(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise RuntimeError(f"take_along_dim(): input of shape {list(input.shape)} and indices of "
                           f"shape {list(indices.shape)} do not broadcast apart from dimension "
                           f"{d}") from None
    in_shape, idx_shape = list(common), list(common)
    in_shape[d], idx_shape[d] = input.shape[d], indices.shape[d]
    return gather(input.expand(in_shape), d, indices.expand(idx_shape))
