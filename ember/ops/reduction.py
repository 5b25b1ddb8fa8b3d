"""Reductions over dimensions: sums and means, products, extrema, logical reductions.

var/std, logsumexp and norm live in ``reduction_stats.py``; cumulative ops (cumsum,
cummax, ...) and order statistics (sort, median, topk, unique, ...) in ``sorting.py``.
They share the helpers defined here: the named-tuple result types and two small
Functions that move a gradient to/from the positions selected by an index along a dim.
"""

from __future__ import annotations

import builtins
import collections
import types
import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.backend import scatter_add
from .._core.function import Function, as_array
from .._core.grad_mode import STATE
from .._core.tensor import Tensor, _make
from . import _kernels, _native_sums
from ._broadcast import sum_to_shape
from .complex import times_conj
from ._util import normalize_dims, wrap_dim, xp_of
from .arithmetic import _short

# ---------------------------------------------------------------------------
# named-tuple results, like torch.return_types

return_types = types.SimpleNamespace()


def _return_type(name: str, fields=("values", "indices")):
    cls = collections.namedtuple(name, fields)
    cls.__qualname__ = f"return_types.{name}"  # so that pickle finds it here
    cls.__repr__ = lambda self: (f"ember.return_types.{name}(\n" + ",\n".join(
        f"{f}={v!r}" for f, v in zip(self._fields, self)) + ")")
    setattr(return_types, name, cls)
    return cls


for _name in ("max", "min", "cummax", "cummin", "median", "nanmedian", "mode", "sort",
              "topk", "kthvalue"):
    _return_type(_name)
_return_type("aminmax", ("min", "max"))


# ---------------------------------------------------------------------------
# helpers


def _is_float(array) -> bool:
    return array.dtype.kind in "fc" or array.dtype.name == "bfloat16"


def _short_name(array) -> str:
    return _short(dtypes.from_numpy_dtype(array.dtype))


def reduce_dims(input: Tensor, dim, op: str) -> tuple:
    """The dims a reduction runs over (all of them for None or an empty list).

    A 0-dim tensor accepts dim 0 or -1 and reduces over nothing.
    """
    ndim = input._data.ndim
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(ndim))
    dims = normalize_dims(dim, ndim, op)
    return dims if ndim else ()


def _kept_shape(shape, dims) -> tuple:
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _count(shape, dims) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _restore_reduced(grad: Tensor, shape: tuple, dims, keepdim: bool) -> Tensor:
    """Reshape a reduced gradient so that it broadcasts against the input again."""
    if not keepdim and dims:
        grad = grad.reshape(_kept_shape(shape, dims))
    return grad.expand(shape)


def _keep(grad: Tensor, shape: tuple, dims, keepdim: bool) -> Tensor:
    """A reduced tensor reshaped to keepdim form (no expand: it broadcasts)."""
    if not keepdim and dims:
        return grad.reshape(_kept_shape(shape, dims))
    return grad


def _const(array) -> Tensor:
    """A constant tensor (no gradient) around a backend array."""
    return _make(as_array(array))


def _check_nonempty(input: Tensor, dims, op: str) -> None:
    """IndexError when a reduction without identity runs over an empty dim."""
    shape = input._data.shape
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _check_numel(input: Tensor, op: str) -> None:
    if input._data.size == 0:
        raise RuntimeError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
            "the reduction dim with the 'dim' argument."
        )


def _axis_index(xp, indices, dim: int) -> tuple:
    """An advanced index that addresses ``a[..., indices[...], ...]`` along `dim`."""
    ndim = indices.ndim
    index = []
    for ax, n in enumerate(indices.shape):
        if ax == dim:
            index.append(indices)
        else:
            shape = [1] * ndim
            shape[ax] = n
            index.append(xp.arange(n).reshape(shape))
    return tuple(index)


class _IndexScatter(Function):
    """Put `values` at `indices` along `dim` into zeros of `shape` (the gradient of a
    selection); with ``accumulate`` repeated indices are summed."""

    _name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, values, indices, dim, shape, accumulate=False):
        ctx.indices, ctx.dim = indices, dim
        xp = xp_of(values)
        out = xp.zeros(shape, dtype=values.dtype)
        index = _axis_index(xp, indices, dim)
        if accumulate:
            scatter_add(xp, out, index, values)
        else:
            out[index] = values
        return out

    @staticmethod
    def backward(ctx, grad):
        return _IndexGather.apply(grad, ctx.indices, ctx.dim)


class _IndexGather(Function):
    """``take_along_axis``: the values at `indices` along `dim`."""

    _name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, indices, dim):
        ctx.indices, ctx.dim, ctx.shape = indices, dim, x.shape
        return xp_of(x).take_along_axis(x, indices, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        return _IndexScatter.apply(grad, ctx.indices, ctx.dim, ctx.shape, True)


def scatter_to_input(grad: Tensor, indices, dim: int, shape: tuple, keepdim: bool = True,
                     accumulate: bool = False) -> Tensor:
    """The gradient of ``values = input.gather(dim, indices)`` (indices: a backend array)."""
    if not keepdim:
        grad = grad.reshape(indices.shape)
    return _IndexScatter.apply(grad, indices, dim, tuple(shape), accumulate)


class _ExpShifted(Function):
    """``exp(x - s)`` (s broadcasts): the softmax-like factor of logsumexp gradients."""

    @staticmethod
    def forward(ctx, x, s):
        out = as_array(xp_of(x).exp(x - s))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        g = grad * out
        return g, -g


# ---------------------------------------------------------------------------
# sums and means


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dims=None, keepdim=False, np_dtype=None, all_dims=False):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx._name = "SumBackward0" if dims is None or all_dims else "SumBackward1"
        if np_dtype is None:
            out = _kernels.sum_leading(x, dims, keepdim)
            if out is None and _native_sums.supports(x):
                out = _native_sums.trailing_sums(x, dims, keepdim)
            if out is not None:
                return out
        return x.sum(axis=dims, keepdims=keepdim, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        return _restore_reduced(grad, ctx.shape, ctx.dims, ctx.keepdim)


class Nansum(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, np_dtype):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.save_for_backward(x)
        return xp_of(x).nansum(x, axis=dims, keepdims=keepdim, dtype=np_dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        g = _restore_reduced(grad, ctx.shape, ctx.dims, ctx.keepdim)
        keep = ~xp_of(x._data).isnan(x._data)
        return g * _const(keep.astype(grad._data.dtype))


class Mean(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, all_dims=False):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.count = _count(x.shape, dims)
        ctx._name = "MeanBackward0" if all_dims else "MeanBackward1"
        if _native_sums.supports(x):
            out = _native_sums.trailing_sums(x, dims, keepdim, mean=True)
            if out is not None:
                return out
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # mean of nothing is nan
            return x.mean(axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        # (the division on the reduced gradient, then the broadcast: not a full-size pass)
        return _restore_reduced(grad / float(ctx.count), ctx.shape, ctx.dims, ctx.keepdim)


def _sum_dtype(input: Tensor, dtype):
    """The NumPy dtype a sum/prod accumulates in (int and bool inputs give int64)."""
    if dtype is not None:
        return dtypes.to_dtype(dtype).np_dtype
    if input._data.dtype.kind in "biu":
        return dtypes.int64.np_dtype
    return None


def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum of all elements, or over `dim` (an int or a tuple of ints).

    Integer and bool inputs are summed in int64, as in PyTorch.
    """
    np_dtype = _sum_dtype(input, dtype)
    if dim is None and not keepdim:
        return Sum.apply(input, None, False, np_dtype)
    return Sum.apply(input, reduce_dims(input, dim, "sum"), keepdim, np_dtype, dim is None)


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum that treats NaN as zero."""
    return Nansum.apply(input, reduce_dims(input, dim, "nansum"), keepdim,
                        _sum_dtype(input, dtype))


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Arithmetic mean of all elements or over `dim`; floating-point (or complex) only."""
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not _is_float(input._data):
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {_short_name(input._data)}"
        )
    all_dims = dim is None
    dims = reduce_dims(input, dim, "mean")
    return Mean.apply(input, dims, keepdim, all_dims)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over the elements that are not NaN."""
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not _is_float(input._data):
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_short_name(input._data)}")
    dims = reduce_dims(input, dim, "nanmean")
    data = input._data
    count = (~xp_of(data).isnan(data)).sum(axis=dims, keepdims=keepdim).astype(data.dtype)
    return nansum(input, dims, keepdim) / _const(count)


# ---------------------------------------------------------------------------
# products


def _prod_of_others(x: Tensor, dims: tuple) -> Tensor:
    """For each element, the product of the other elements of its reduced slice.

    Exact as a function (it never divides), so it gives correct higher derivatives
    when the input has zeros; costs n * n per slice of n elements.
    """
    shape = tuple(x.shape)
    rest = [d for d in range(len(shape)) if d not in dims]
    order = rest + list(dims)
    moved = x.permute(order) if order != list(range(len(shape))) else x
    outer = [shape[d] for d in rest]
    n = _count(shape, dims)
    flat = moved.reshape(outer + [1, n])
    xp = xp_of(x._data)
    off_diagonal = _const(~xp.eye(n, dtype=bool))
    rows = flat.where(off_diagonal, 1.0)  # row k: the slice with x_k replaced by 1 (even inf)
    others = rows.prod(-1).reshape([shape[d] for d in order])
    inverse = [order.index(i) for i in range(len(shape))]
    return others.permute(inverse) if order != list(range(len(shape))) else others


def _prod_of_others_values(x, dims):
    """The same values as `_prod_of_others`, computed directly (for first-order use): the
    products of the elements before and after each one, so nothing is divided (a zero,
    an inf or a nan elsewhere in the slice reaches only the others' products)."""
    xp = xp_of(x)
    lead = x.ndim - len(dims)
    moved = xp.moveaxis(x, dims, range(lead, x.ndim))   # the reduced dims last
    flat = moved.reshape(moved.shape[:lead] + (-1,))
    if flat.shape[-1] == 0:
        return xp.zeros_like(x)
    ones = xp.ones(flat.shape[:-1] + (1,), x.dtype)
    before = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = xp.cumprod(xp.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = (before * after).reshape(moved.shape)
    return xp.moveaxis(others, range(lead, x.ndim), dims).astype(x.dtype, copy=False)


class Prod(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, has_dim=True):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx._name = "ProdBackward1" if has_dim else "ProdBackward0"
        # NOTE: a forward that saves its output must save the very array it returns, and
        # NumPy reduces to 0-dim as a scalar: make it an array first (here and elsewhere).
        out = as_array(x.prod(axis=dims, keepdims=keepdim))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.shape, ctx.dims, ctx.keepdim
        g = _restore_reduced(grad, shape, dims, keepdim)
        # NOTE: out / x is the product of the others only where every element is finite
        # and not zero (an inf or nan element would get inf / inf; PyTorch gives it the
        # others' product).  (complex: the conjugate of the derivative, see ops/complex.py)
        data = x._data
        if data.all() and xp_of(data).isfinite(data).all():   # (no zero; then no inf, nan)
            return times_conj(g, _restore_reduced(out, shape, dims, keepdim) / x)
        if not STATE.enabled:
            return times_conj(g, _const(_prod_of_others_values(x._data, dims)))
        return times_conj(g, _prod_of_others(x, dims))


def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product of all elements, or over one dim.  Integer inputs give int64."""
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    elif input._data.dtype.kind in "biu":
        input = input.to(dtypes.int64)
    if dim is not None and not isinstance(dim, (int, np.integer)):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    dims = reduce_dims(input, dim, "prod")
    return Prod.apply(input, dims, keepdim, dim is not None)


# ---------------------------------------------------------------------------
# extrema


_EVEN_NAMES = {("max", False): "MaxBackward1", ("min", False): "MinBackward1",
               ("max", True): "AmaxBackward0", ("min", True): "AminBackward0",
               ("median", False): "MedianBackward0", ("nanmedian", False): "NanmedianBackward0"}


def _lower_median(x, dims, skip_nan: bool):
    """The lower median over `dims` (keepdims); NaN if any (without `skip_nan`)."""
    xp = xp_of(x)
    rest = [d for d in range(x.ndim) if d not in dims]
    flat = x.transpose(rest + list(dims)).reshape([x.shape[d] for d in rest] + [-1])
    s = xp.sort(flat, axis=-1)
    n = s.shape[-1]
    if not _is_float(x):  # (no NaN: the middle)
        pos = (n - 1) // 2
    else:
        n_nan = xp.isnan(s).sum(axis=-1, keepdims=True)
        if skip_nan:
            pos = xp.maximum((n - n_nan - 1) // 2, 0)
        else:
            pos = xp.where(n_nan > 0, n - n_nan, (n - 1) // 2)
    pos = xp.broadcast_to(xp.asarray(pos), s.shape[:-1] + (1,))
    return xp.take_along_axis(s, pos, axis=-1).reshape(_kept_shape(x.shape, dims))


class _EvenReduce(Function):
    """A reduction to one of the input's values (max, min, median) whose gradient is
    shared evenly among all the elements equal to the result (NaN matches NaN)."""

    @staticmethod
    def forward(ctx, x, kind, dims, keepdim, amax):
        xp = xp_of(x)
        if x.size == 0 and kind in ("median", "nanmedian"):  # the median of nothing is nan
            return xp.full((), xp.nan, dtype=x.dtype)
        if kind == "max":
            kept = x.max(axis=dims, keepdims=True)
        elif kind == "min":
            kept = x.min(axis=dims, keepdims=True)
        else:
            kept = _lower_median(x, dims, kind == "nanmedian")
        ctx.shape, ctx.dims, ctx.keepdim, ctx.kept = x.shape, dims, keepdim, kept
        ctx._name = _EVEN_NAMES[kind, amax]
        ctx.match_nan = not amax
        ctx.save_for_backward(x)
        return kept if keepdim else kept.reshape(
            [s for i, s in enumerate(x.shape) if i not in dims])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        xd, kept = x._data, ctx.kept
        xp = xp_of(xd)
        mask = xd == kept
        if ctx.match_nan:
            mask |= xp.isnan(xd) & xp.isnan(kept)
        # NOTE: amax/amin, like PyTorch's, give a nan gradient when the result is nan.
        with np.errstate(invalid="ignore", divide="ignore"):
            weight = mask / mask.sum(axis=ctx.dims, keepdims=True)
        g = _restore_reduced(grad, ctx.shape, ctx.dims, ctx.keepdim)
        return g * _const(weight.astype(grad._data.dtype))


class _PickAlongDim(Function):
    """Base of the ops that pick one element of each slice along a dim (max/min with a dim
    here; kthvalue, median, mode in sorting.py): forward finds the indices and returns
    `_picked`; the gradient goes back to the picked positions."""

    _materialize_grads = False  # (no zeros made for the integer indices' "gradient")

    @staticmethod
    def _picked(ctx, x, indices, dim: int, keepdim: bool):
        """(values, indices) at `indices` (int64, `dim` kept with size 1), squeezed unless
        `keepdim`; remembers what backward needs."""
        values = xp_of(x).take_along_axis(x, indices, axis=dim)
        ctx.shape, ctx.dim, ctx.keepdim, ctx.indices = x.shape, dim, keepdim, indices
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return values, indices

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        return scatter_to_input(grad, ctx.indices, ctx.dim, ctx.shape, ctx.keepdim)


class _SelectAlongDim(_PickAlongDim):
    """max/min along one dim: (values, indices); the gradient goes to the index."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, largest):
        xp = xp_of(x)
        idx = (xp.argmax if largest else xp.argmin)(x, axis=dim, keepdims=True)
        ctx._name = "MaxBackward0" if largest else "MinBackward0"
        return _PickAlongDim._picked(ctx, x, idx.astype(np.int64, copy=False), dim, keepdim)


def _extreme(input: Tensor, dim, keepdim: bool, other, largest: bool):
    op = "max" if largest else "min"
    if isinstance(dim, Tensor) or other is not None:
        # The binary form is the elementwise maximum/minimum (ops/elementwise*.py).
        other = dim if other is None else other
        return input.maximum(other) if largest else input.minimum(other)
    if dim is None:
        _check_numel(input, op)
        return _EvenReduce.apply(input, op, tuple(range(input._data.ndim)), False, False)
    if input._data.ndim == 0:
        wrap_dim(dim, 0, op)
        values, indices = _SelectAlongDim.apply(input.reshape(1), 0, False, largest)
    else:
        d = wrap_dim(dim, input._data.ndim, op)
        _check_nonempty(input, (d,), op)
        values, indices = _SelectAlongDim.apply(input, d, keepdim, largest)
    return getattr(return_types, op)(values, indices)


def max(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """Largest element; or (values, indices) along `dim`; or ``maximum(input, other)``.

    With `dim`, ties return the first index.  The gradient of the no-dim form is
    shared evenly among tied maxima.
    """
    return _extreme(input, dim, keepdim, other, True)


def min(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """Smallest element; or (values, indices) along `dim`; or ``minimum(input, other)``."""
    return _extreme(input, dim, keepdim, other, False)


def _amax_amin(input: Tensor, dim, keepdim: bool, kind: str) -> Tensor:
    op = "amax" if kind == "max" else "amin"
    dims = reduce_dims(input, dim, op)
    if input._data.size == 0 and (dim is None or dim == () or dim == []):
        _check_numel(input, op)
    _check_nonempty(input, dims, op)
    return _EvenReduce.apply(input, kind, dims, keepdim, True)


def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Largest values over `dim` (all dims by default); gradient shared among ties."""
    return _amax_amin(input, dim, keepdim, "max")


def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Smallest values over `dim` (all dims by default); gradient shared among ties."""
    return _amax_amin(input, dim, keepdim, "min")


class Aminmax(Function):
    """(min, max) in one node; each gradient is shared evenly among the tied elements."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        kept = (x.min(axis=dims, keepdims=True), x.max(axis=dims, keepdims=True))
        ctx.shape, ctx.dims, ctx.keepdim, ctx.kept = x.shape, dims, keepdim, kept
        ctx.save_for_backward(x)
        if keepdim:
            return kept
        shape = [s for i, s in enumerate(x.shape) if i not in dims]
        return tuple(k.reshape(shape) for k in kept)

    @staticmethod
    def backward(ctx, grad_min, grad_max):
        (x,) = ctx.saved_tensors
        total = None
        for grad, kept in zip((grad_min, grad_max), ctx.kept):
            mask = x._data == kept
            with np.errstate(invalid="ignore", divide="ignore"):
                weight = mask / mask.sum(axis=ctx.dims, keepdims=True)
            g = _restore_reduced(grad, ctx.shape, ctx.dims, ctx.keepdim)
            g = g * _const(weight.astype(grad._data.dtype))
            total = g if total is None else total + g
        return total


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """(min, max) over one dim or over everything, as a named tuple."""
    if dim is None:
        _check_numel(input, "aminmax")
        dims = tuple(range(input._data.ndim))
    else:
        dims = reduce_dims(input, wrap_dim(dim, input._data.ndim, "aminmax"), "aminmax")
        _check_nonempty(input, dims, "aminmax")
    return return_types.aminmax(*Aminmax.apply(input, dims, keepdim))


class Argmax(Function):
    """The index of the first largest element (of the flattened input when `dim` is None).

    Integer results carry no gradient; the op still goes through ``Function.apply`` so that
    the profiler and the ONNX exporter see it.
    """

    find = "argmax"

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        xp = xp_of(x)
        find = getattr(xp, type(ctx).find)
        if dim is None:
            out = xp.asarray(find(x.reshape(-1)), dtype=np.int64)
            return out.reshape((1,) * x.ndim) if keepdim else out
        if x.ndim == 0:
            return xp.zeros((), dtype=np.int64)
        return find(x, axis=dim, keepdims=keepdim).astype(np.int64, copy=False)


class Argmin(Argmax):
    """The index of the first smallest element."""

    find = "argmin"


def _arg_extreme(input: Tensor, dim, keepdim: bool, largest: bool) -> Tensor:
    op = "argmax" if largest else "argmin"
    data = input._data
    if dim is None:
        if data.size == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
    else:
        dim = wrap_dim(dim, data.ndim, op)
        if data.ndim:
            _check_nonempty(input, (dim,), op)
    return (Argmax if largest else Argmin).apply(input, dim, keepdim)


def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (of the flattened input when `dim` is None)."""
    return _arg_extreme(input, dim, keepdim, True)


def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the smallest element (of the flattened input when `dim` is None)."""
    return _arg_extreme(input, dim, keepdim, False)


# ---------------------------------------------------------------------------
# logical reductions and counting (no gradients)


class All(Function):
    """True where every element over `dims` is non-zero (uint8 for uint8 inputs, as in
    PyTorch).  Bool results carry no gradient; see ``Argmax`` for why this is a Function."""

    reduce = "all"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        xp = xp_of(x)
        out = xp.asarray(getattr(xp, type(ctx).reduce)(x, axis=dims, keepdims=keepdim))
        return out.astype(np.uint8) if x.dtype == np.uint8 else out


class Any(All):
    """True where some element over `dims` is non-zero."""

    reduce = "any"


def _logical(input: Tensor, dim, keepdim: bool, cls) -> Tensor:
    # NOTE: unlike sum or mean, all/any over an empty list of dims reduce nothing
    empty = isinstance(dim, (tuple, list)) and not dim
    dims = () if empty else reduce_dims(input, dim, cls.reduce)
    return cls.apply(input, dims, keepdim)


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """True where every element (over `dim`, or all) is non-zero."""
    return _logical(input, dim, keepdim, All)


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """True where some element (over `dim`, or all) is non-zero."""
    return _logical(input, dim, keepdim, Any)


class CountNonzero(Function):
    """The number of non-zero elements over `dims` (int64, no gradient)."""

    @staticmethod
    def forward(ctx, x, dims):
        return xp_of(x).asarray((x != 0).sum(axis=dims), dtype=np.int64)


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """Number of non-zero elements (int64), over `dim` or in total."""
    return CountNonzero.apply(input, reduce_dims(input, dim, "count_nonzero"))


def sum_to_size(input: Tensor, *size) -> Tensor:
    """Sum `input` down to `size`, undoing a broadcast to its shape."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = tuple(input.shape)
    if len(size) > len(shape) or builtins.any(s != 1 and s != d for s, d in zip(
            reversed(size), reversed(shape))):
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(shape)}")
    return sum_to_shape(input, size)
