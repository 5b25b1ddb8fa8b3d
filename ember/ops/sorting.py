"""Order along a dimension: cumulative ops (cumsum, cumprod, cummax, logcumsumexp),
sorting and order statistics (sort, topk, kthvalue, median, mode), and the
non-differentiable set and counting ops (unique, bincount, histc, searchsorted).

Every op that returns (values, indices) sends its gradient back to the selected
positions with `scatter_to_input` (from ``reduction.py``), so double backward works.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import Tensor, _make
from ._inplace import inplace_form
from . import _native_scan
from ._util import wrap_dim, xp_of
from .reduction import (
    _EvenReduce, _ExpShifted, _PickAlongDim, _check_nonempty, _const, _is_float, _short_name,
    return_types, scatter_to_input,
)

# ---------------------------------------------------------------------------
# backend helpers


def _accumulate(xp, ufunc, x, axis: int):
    """``ufunc.accumulate`` along `axis` (a loop for backends without it)."""
    if xp is np:
        return ufunc.accumulate(x, axis=axis)
    out = x.copy()
    moved = xp.moveaxis(out, axis, 0)
    for i in range(1, moved.shape[0]):
        moved[i] = ufunc(moved[i - 1], moved[i])
    return out


def _reverse_cumsum_array(xp, x, axis: int):
    if _native_scan.supports(x):
        return _native_scan.cumsum(x, axis, reverse=True)
    return xp.flip(xp.cumsum(xp.flip(x, axis), axis=axis), axis)


def _argsort(xp, x, axis: int, descending: bool):
    """A stable argsort (NaN sorts as the largest value, as in PyTorch)."""
    kind = {"kind": "stable"} if xp is np else {}
    if not descending:
        return xp.argsort(x, axis=axis, **kind).astype(np.int64, copy=False)
    # Stable descending order: sort the reversed input ascending, then reverse back.
    idx = xp.argsort(xp.flip(x, axis), axis=axis, **kind)
    return (x.shape[axis] - 1 - xp.flip(idx, axis)).astype(np.int64, copy=False)


def _prefix(dim: int, stop: int) -> tuple:
    return (slice(None),) * dim + (slice(0, stop),)


def _dim_of(input: Tensor, dim, op: str):
    """(the input as at least 1-d, the wrapped dim, whether it was 0-dim)."""
    d = wrap_dim(dim, input._data.ndim, op)
    if input._data.ndim == 0:
        return input.reshape(1), 0, True
    return input, d, False


# ---------------------------------------------------------------------------
# cumulative ops


class Cumsum(Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        if _native_scan.supports(x):
            return _native_scan.cumsum(x, dim)
        return xp_of(x).cumsum(x, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        return _ReverseCumsum.apply(grad, ctx.dim)


class _ReverseCumsum(Function):
    """Sums from each position to the end (the gradient of cumsum)."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _reverse_cumsum_array(xp_of(x), x, dim)

    @staticmethod
    def backward(ctx, grad):
        return Cumsum.apply(grad, ctx.dim)


def _cumprod_grad_values(x, y, g, dim: int):
    """First-order cumprod gradient, exact with zeros in the input.

    Before the first zero of a slice, ``sum_{i>=k} g_i y_i / x_k``; at the first zero z,
    ``sum_{i>=z} g_i prod_{j<=i, j!=z} x_j``; after it, 0.
    """
    xp = xp_of(x)
    zero = x == 0
    seen = xp.cumsum(zero, axis=dim)
    first = zero & (seen == 1)
    safe = xp.where(zero, 1, x)
    grad = xp.where(seen == 0, _reverse_cumsum_array(xp, g * y, dim) / safe, 0)
    skip_first = xp.cumprod(xp.where(first, 1, x), axis=dim)
    grad = grad + xp.where(first, _reverse_cumsum_array(xp, g * skip_first, dim), 0)
    return grad.astype(x.dtype, copy=False)


def _cumprod_grad_exact(x: Tensor, g: Tensor, dim: int) -> Tensor:
    """The cumprod gradient as a differentiable function without division (n*n per
    slice): row k holds the cumulative products of the slice with x_k replaced by 1."""
    xt, gt = x.transpose(dim, -1), g.transpose(dim, -1)
    lead, n = list(xt.shape[:-1]), xt.shape[-1]
    xp = xp_of(x._data)
    eye = xp.eye(n, dtype=x._data.dtype)
    rows = xt.reshape(lead + [1, n]) * _const(1 - eye) + _const(eye)
    upper = xp.triu(xp.ones((n, n), dtype=x._data.dtype))  # [k, i] = 1 for i >= k
    out = (rows.cumprod(-1) * gt.reshape(lead + [1, n]) * _const(upper)).sum(-1)
    return out.transpose(dim, -1)


class _ScanWithOutput(Function):
    """Base of the scans whose gradient needs both their input and their output (cumprod,
    logcumsumexp): a subclass gives `_scan(xp, x, dim)`."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        out = ctx._scan(xp_of(x), x, dim)
        ctx.save_for_backward(x, out)
        return out


class Cumprod(_ScanWithOutput):
    @staticmethod
    def _scan(xp, x, dim):
        return xp.cumprod(x, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim = ctx.dim
        # NOTE: dividing by x is only valid without zeros; with zeros, first-order
        # gradients use a direct formula and higher-order ones an n*n exact one.
        if not (x._data == 0).any():
            return _ReverseCumsum.apply(grad * out, dim) / x
        if not STATE.enabled:
            return _const(_cumprod_grad_values(x._data, out._data, grad._data, dim))
        return _cumprod_grad_exact(x, grad, dim)


def _scan(input: Tensor, dim, dtype, op: str, fn) -> Tensor:
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    elif input._data.dtype.kind in "biu":
        input = input.to(dtypes.int64)  # PyTorch accumulates integers in int64
    x, d, scalar = _dim_of(input, dim, op)
    out = fn.apply(x, d)
    return out.reshape(()) if scalar else out


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running sum along `dim`; integer and bool inputs give int64."""
    return _scan(input, dim, dtype, "cumsum", Cumsum)


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running product along `dim` (gradient exact also with zeros in the input)."""
    return _scan(input, dim, dtype, "cumprod", Cumprod)


CumsumInplace = inplace_form(Cumsum)


CumprodInplace = inplace_form(Cumprod)


def _scan_inplace(input: Tensor, dim, dtype, op: str, fn) -> Tensor:
    if dtype is not None and dtypes.to_dtype(dtype) is not input.dtype:
        raise RuntimeError(f"{op}(): dtype {dtypes.to_dtype(dtype)} differs from the "
                           f"tensor's dtype {input.dtype}")
    d = wrap_dim(dim, input._data.ndim, op)
    if input._data.ndim == 0:
        return input  # a running sum/product of one element is that element
    return fn.apply(input, d)


def cumsum_(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """In-place ``cumsum`` (keeps the tensor's dtype)."""
    return _scan_inplace(input, dim, dtype, "cumsum_", CumsumInplace)


def cumprod_(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """In-place ``cumprod`` (keeps the tensor's dtype)."""
    return _scan_inplace(input, dim, dtype, "cumprod_", CumprodInplace)


class _CumExtreme(Function):
    """cummax/cummin: (values, indices); the latest index wins ties, NaN propagates."""

    _materialize_grads = False  # (no zeros made for the integer indices' "gradient")

    @staticmethod
    def forward(ctx, x, dim, largest):
        xp = xp_of(x)
        values = _accumulate(xp, xp.maximum if largest else xp.minimum, x, dim)
        record = x == values
        if _is_float(x):
            record |= xp.isnan(x) & xp.isnan(values)
        shape = [1] * x.ndim
        shape[dim] = x.shape[dim]
        pos = xp.arange(x.shape[dim], dtype=np.int64).reshape(shape)
        indices = _accumulate(xp, xp.maximum, xp.where(record, pos, 0), dim)
        ctx.dim, ctx.shape, ctx.indices = dim, x.shape, indices
        ctx._name = "CummaxBackward0" if largest else "CumminBackward0"
        return values, indices

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        return scatter_to_input(grad, ctx.indices, ctx.dim, ctx.shape, accumulate=True)


def _cum_extreme(input: Tensor, dim: int, largest: bool):
    op = "cummax" if largest else "cummin"
    x, d, scalar = _dim_of(input, dim, op)
    values, indices = _CumExtreme.apply(x, d, largest)
    if scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return getattr(return_types, op)(values, indices)


def cummax(input: Tensor, dim: int):
    """Running maximum along `dim` and the index where it was reached."""
    return _cum_extreme(input, dim, True)


def cummin(input: Tensor, dim: int):
    """Running minimum along `dim` and the index where it was reached."""
    return _cum_extreme(input, dim, False)


def _logcumsumexp_array(xp, x, dim: int):
    with np.errstate(invalid="ignore"):
        return _accumulate(xp, xp.logaddexp, x, dim)


def _logcumsumexp_grad_values(x, y, g, dim: int):
    """``sum_{i>=k} g_i exp(x_k - y_i)``, stably: the positive and negative parts of g
    are summed in log space from the end (a reversed logcumsumexp)."""
    xp = xp_of(x)
    out = xp.zeros_like(x)
    for sign in (1, -1):
        part = xp.where(sign * g > 0, sign * g, 0)
        with np.errstate(divide="ignore"):
            logs = xp.log(part) - y
        tail = xp.flip(_logcumsumexp_array(xp, xp.flip(logs, dim), dim), dim)
        out = out + sign * xp.exp(x + tail)
    return out


class LogCumSumExp(_ScanWithOutput):
    _name = "LogcumsumexpBackward0"
    _scan = staticmethod(_logcumsumexp_array)

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        dim = ctx.dim
        if not STATE.enabled:
            return _const(_logcumsumexp_grad_values(x._data, out._data, grad._data, dim))
        # Differentiable form (n*n per slice): W[k, i] = exp(x_k - y_i) for i >= k.
        xt, yt, gt = x.transpose(dim, -1), out.transpose(dim, -1), grad.transpose(dim, -1)
        lead, n = list(xt.shape[:-1]), xt.shape[-1]
        xp = xp_of(x._data)
        below = xp.tril(xp.full((n, n), -xp.inf, dtype=x._data.dtype), -1)  # i < k: -inf
        w = _ExpShifted.apply(xt.reshape(lead + [n, 1]) + _const(below),
                              yt.reshape(lead + [1, n]))
        return (w * gt.reshape(lead + [1, n])).sum(-1).transpose(dim, -1)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input)))`` along `dim`, without overflow."""
    if not _is_float(input._data):
        raise NotImplementedError(
            f'"logcumsumexp" not implemented for \'{_short_name(input._data)}\'')
    x, d, scalar = _dim_of(input, dim, "logcumsumexp")
    out = LogCumSumExp.apply(x, d)
    return out.reshape(()) if scalar else out


# ---------------------------------------------------------------------------
# sorting and selection


class _Sorted(Function):
    """sort / topk: values in order along `dim` (the first `k`) and their indices."""

    _materialize_grads = False  # (no zeros made for the integer indices' "gradient")

    @staticmethod
    def forward(ctx, x, dim, descending, k=None, stable_given=False):
        xp = xp_of(x)
        indices = _argsort(xp, x, dim, descending)
        if k is not None:
            indices = indices[_prefix(dim, k)]
        ctx.dim, ctx.shape, ctx.indices = dim, x.shape, indices
        # (PyTorch's sort with a `stable` argument is another overload: SortBackward1)
        ctx._name = ("TopkBackward0" if k is not None else
                     "SortBackward1" if stable_given else "SortBackward0")
        return xp.take_along_axis(x, indices, axis=dim), indices

    @staticmethod
    def backward(ctx, grad, _grad_indices=None):
        return scatter_to_input(grad, ctx.indices, ctx.dim, ctx.shape)


def sort(input: Tensor, dim: int = -1, descending: bool = False, *,
         stable: bool | None = None):
    """Sorted values along `dim` and the indices that sort (always a stable sort)."""
    x, d, scalar = _dim_of(input, dim, "sort")
    values, indices = _Sorted.apply(x, d, descending, None, stable is not None)
    if scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return return_types.sort(values, indices)


def argsort(input: Tensor, dim: int = -1, descending: bool = False,
            stable: bool = False) -> Tensor:
    """The indices that sort `input` along `dim` (stable)."""
    x, d, scalar = _dim_of(input, dim, "argsort")
    out = _argsort(xp_of(x._data), x._data, d, descending)
    return _make(out.reshape(()) if scalar else out)


def msort(input: Tensor) -> Tensor:
    """Values sorted along the first dim."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The `k` largest (or smallest) values along `dim` and their indices.

    The result is always sorted; among equal values the lower index comes first.
    """
    x, d, scalar = _dim_of(input, dim, "topk")
    if not 0 <= k <= x._data.shape[d]:
        raise RuntimeError("selected index k out of range")
    values, indices = _Sorted.apply(x, d, largest, int(k))
    if scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return return_types.topk(values, indices)


def _mode_indices(xp, x, dim: int):
    """Index (keepdims) of the most frequent value; ties: the smallest value, and of
    its occurrences the last one (as PyTorch on the CPU)."""
    xl = xp.moveaxis(x, dim, -1)
    n = xl.shape[-1]
    s = xp.sort(xl, axis=-1)
    start = xp.ones(s.shape, dtype=bool)
    start[..., 1:] = s[..., 1:] != s[..., :-1]
    pos = xp.arange(n)
    run_start = _accumulate(xp, xp.maximum, xp.where(start, pos, 0), -1)
    best = xp.argmax(pos - run_start, axis=-1, keepdims=True)  # first longest run
    value = xp.take_along_axis(s, best, axis=-1)
    hit = xl == value
    if _is_float(x):
        hit |= xp.isnan(xl) & xp.isnan(value)
    last = n - 1 - xp.argmax(xp.flip(hit, -1), axis=-1, keepdims=True)
    return xp.moveaxis(last, -1, dim).astype(np.int64, copy=False)


_SELECT_NAMES = {"kthvalue": "KthvalueBackward0", "median": "MedianBackward1",
                 "nanmedian": "NanmedianBackward1", "mode": "ModeBackward0"}


class _SelectAlong(_PickAlongDim):
    """kthvalue / median / nanmedian / mode along one dim: (values, indices)."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, kind, k=1):
        xp = xp_of(x)
        if kind == "mode":
            indices = _mode_indices(xp, x, dim)
        else:
            order = _argsort(xp, x, dim, False)
            n = x.shape[dim]
            if kind == "kthvalue":
                pos = k - 1
            else:
                if not _is_float(x):  # (no NaN: the middle)
                    pos = (n - 1) // 2
                else:
                    n_nan = xp.isnan(x).sum(axis=dim, keepdims=True)
                    if kind == "nanmedian":
                        pos = xp.maximum((n - n_nan - 1) // 2, 0)
                    else:  # NaN anywhere: the result is the first NaN
                        pos = xp.where(n_nan > 0, n - n_nan, (n - 1) // 2)
            kept = x.shape[:dim] + (1,) + x.shape[dim + 1:]
            pos = xp.broadcast_to(xp.asarray(pos, dtype=np.int64), kept)
            indices = xp.take_along_axis(order, pos, axis=dim)
        ctx._name = _SELECT_NAMES[kind]
        return _PickAlongDim._picked(ctx, x, indices, dim, keepdim)


def _select(input: Tensor, dim, keepdim: bool, kind: str, k: int = 1):
    x, d, scalar = _dim_of(input, dim, kind)
    _check_nonempty(x, (d,), kind)
    if kind == "kthvalue" and not 1 <= k <= x._data.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    values, indices = _SelectAlong.apply(x, d, keepdim and not scalar, kind, k)
    if scalar:
        values, indices = values.reshape(()), indices.reshape(())
    return getattr(return_types, kind)(values, indices)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The k-th smallest value (k counts from 1) along `dim` and its index."""
    return _select(input, dim, keepdim, "kthvalue", int(k))


def median(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median: of all elements (gradient shared among ties), or
    (values, indices) along `dim`.  NaN in a slice makes its median NaN."""
    if dim is None:
        return _EvenReduce.apply(input, "median", tuple(range(input._data.ndim)), False, False)
    return _select(input, dim, keepdim, "median")


def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """``median`` that ignores NaN (NaN only when a slice is all NaN)."""
    if dim is None:
        return _EvenReduce.apply(input, "nanmedian", tuple(range(input._data.ndim)), False,
                                 False)
    return _select(input, dim, keepdim, "nanmedian")


def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along `dim` (the smallest on ties) and an index of it."""
    return _select(input, dim, keepdim, "mode")


# ---------------------------------------------------------------------------
# sets, counts, buckets (no gradients)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim=None):
    """The distinct values (sorted), optionally with the inverse map and the counts.

    With `dim`, the distinct slices along that dim.
    """
    data = input._data
    xp = xp_of(data)
    axis = None if dim is None else wrap_dim(dim, data.ndim, "unique")
    kwargs = {"equal_nan": False} if xp is np else {}
    values, inverse, counts = xp.unique(data, return_inverse=True, return_counts=True,
                                        axis=axis, **kwargs)
    inverse = inverse.reshape(data.shape if axis is None else (-1,)).astype(np.int64)
    out = [_make(values)]
    if return_inverse:
        out.append(_make(inverse))
    if return_counts:
        out.append(_make(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input: Tensor, return_inverse: bool = False,
                       return_counts: bool = False, dim=None):
    """Collapse runs of equal consecutive values (or slices along `dim`) to one."""
    data = input._data
    xp = xp_of(data)
    if dim is None:
        rows = data.reshape(-1, 1)
    else:
        axis = wrap_dim(dim, data.ndim, "unique_consecutive")
        rows = xp.moveaxis(data, axis, 0).reshape(data.shape[axis], -1)
    change = xp.ones(rows.shape[0], dtype=bool)
    if rows.shape[0] > 1:
        change[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    keep = xp.nonzero(change)[0]
    if dim is None:
        values = data.reshape(-1)[keep]
        inverse_shape = data.shape
    else:
        values = xp.take(data, keep, axis=axis)
        inverse_shape = (rows.shape[0],)
    out = [_make(values)]
    if return_inverse:
        out.append(_make((xp.cumsum(change) - 1).astype(np.int64).reshape(inverse_shape)))
    if return_counts:
        out.append(_make(xp.diff(xp.append(keep, rows.shape[0])).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs in a 1-d tensor (or the sum of its
    `weights`); the result has ``max(input) + 1`` or `minlength` entries."""
    data = input._data
    xp = xp_of(data)
    if data.dtype.kind not in "iub":
        raise NotImplementedError(
            f'"bincount_cpu" not implemented for \'{_short_name(data)}\'')
    if data.ndim != 1 or (data.size and data.min() < 0) or minlength < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None
    if weights is not None:
        w = weights._data
        if w.shape != data.shape:
            raise RuntimeError("weights should be 1-d and have the same length as input")
    out = xp.bincount(data.astype(np.int64), weights=w, minlength=minlength)
    if w is None:
        return _make(out.astype(np.int64, copy=False))
    return _make(out.astype(w.dtype if w.dtype.kind == "f" else np.float64, copy=False))


def histc(input: Tensor, bins: int = 100, min=0, max=0) -> Tensor:
    """Histogram with `bins` equal-width bins over [min, max] (the data's range when
    both are equal); values outside are ignored."""
    data = input._data
    xp = xp_of(data)
    if not _is_float(data):
        raise NotImplementedError(f'"histogram_cpu" not implemented for \'{_short_name(data)}\'')
    if bins <= 0:
        raise RuntimeError("torch.histc: bins must be > 0")
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    flat = data.reshape(-1).astype(np.float64)
    inside = (flat >= lo) & (flat <= hi)
    flat = flat[inside]
    index = xp.floor((flat - lo) * bins / (hi - lo)).astype(np.int64)
    index = xp.minimum(index, bins - 1)  # the top edge belongs to the last bin
    return _make(xp.bincount(index, minlength=bins).astype(data.dtype))


def _as_values(values, like):
    if isinstance(values, Tensor):
        return values._data, False
    return xp_of(like).asarray(values), True


def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter=None) -> Tensor:
    """Indices where `input` would be inserted into the innermost dim of
    `sorted_sequence` to keep it sorted ('left': before equal values, 'right': after)."""
    seq = sorted_sequence._data
    xp = xp_of(seq)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' "
                               f"but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    values, scalar = _as_values(input, seq)
    if sorter is not None:
        order = sorter._data if isinstance(sorter, Tensor) else xp.asarray(sorter)
        seq = xp.take_along_axis(seq, order.astype(np.int64), axis=-1)
    how = "right" if right else "left"
    if seq.ndim <= 1:
        out = xp.searchsorted(seq, values, side=how)
    else:
        if values.ndim != seq.ndim or values.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                "N-1 dimensions of boundaries tensor and input value tensor must match, but "
                f"we got boundaries tensor {list(seq.shape)} and input value tensor "
                f"{list(values.shape)}")
        rows = seq.reshape(-1, seq.shape[-1])
        vals = values.reshape(-1, values.shape[-1])
        out = xp.stack([xp.searchsorted(r, v, side=how) for r, v in zip(rows, vals)])
        out = out.reshape(values.shape)
    out = xp.asarray(out).astype(np.int32 if out_int32 else np.int64)
    return _make(out.reshape(()) if scalar else out)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The bucket of each value given sorted 1-d `boundaries`: i such that
    ``boundaries[i-1] < x <= boundaries[i]`` (``<=``/``<`` swapped with `right`)."""
    if boundaries._data.ndim != 1:
        raise RuntimeError("boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)

