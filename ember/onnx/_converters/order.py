"""Order along a dim: cumprod, cummax/cummin and logcumsumexp (which ONNX has no node
for), and the order statistics median, kthvalue and mode.

The scans are written as a reduction over a (..., n, n) "prefix" tensor: row i holds
the slice's elements 0..i and a neutral filler after them.  That costs n*n memory per
slice but is exact (zeros, negative values and NaN behave as in ember) and follows a
dynamic length, since the n*n mask is built from ``Range(n)`` in the graph.

median and kthvalue are a TopK of the k smallest values (sorted, the lower index first
among ties, as ember's stable sort) followed by taking the k-th; mode compares every
pair of elements of a slice (n*n again) to count each value's occurrences.
"""

from __future__ import annotations

import numpy as np

from ...ops import sorting
from .._convert import Call


def _dim_size(c: Call, x: str, axis: int) -> str:
    """Dim `axis` of `x` as a 0-dim int64 tensor (read from the graph: it may be dynamic)."""
    return c.op("Gather", c.op("Shape", x), c.const(np.int64(axis)), axis=0)


def _positions(c: Call, x: str, axis: int) -> str:
    """``Range(x.shape[axis])``: 0, 1, ..., n - 1 (int64)."""
    return c.op("Range", c.const(np.int64(0)), _dim_size(c, x, axis), c.const(np.int64(1)))


def _to_last(c: Call, x: str, dim: int, ndim: int) -> str:
    perm = [d for d in range(ndim) if d != dim] + [dim]
    return x if dim == ndim - 1 else c.transpose(x, perm)


def _from_last(c: Call, y: str, dim: int, ndim: int) -> str:
    """Undo `_to_last` for a result that kept the moved dim (size n or 1) last."""
    if dim == ndim - 1:
        return y
    perm = list(range(ndim - 1))
    perm.insert(dim, ndim - 1)
    return c.transpose(y, perm)


def _prefix(c: Call, xl: str, filler: str) -> tuple:
    """(rows, mask, positions): rows[..., i, j] is xl[..., j] for j <= i and `filler` after;
    mask[i, j] is j <= i."""
    pos = _positions(c, xl, -1)
    mask = c.op("LessOrEqual", c.unsqueeze(pos, [0]), c.unsqueeze(pos, [1]))
    rows = c.op("Where", mask, c.unsqueeze(xl, [-2]), filler)
    return rows, mask, pos


def _scan_args(c: Call) -> tuple:
    dim = int(c.arg(1))
    ndim = len(c.shape(0))
    return c.input(0), dim % ndim, ndim


def convert_cumprod(c: Call) -> None:
    """cumprod: ReduceProd of the prefix rows (filled with 1)."""
    x, dim, ndim = _scan_args(c)
    rows, _, _ = _prefix(c, _to_last(c, x, dim, ndim), c.const(1, c.dtype(0)))
    c.done(_from_last(c, c.reduce("ReduceProd", rows, [-1], False), dim, ndim))


def convert_logcumsumexp(c: Call) -> None:
    """logcumsumexp: ReduceLogSumExp of the prefix rows (filled with -inf)."""
    x, dim, ndim = _scan_args(c)
    rows, _, _ = _prefix(c, _to_last(c, x, dim, ndim), c.const(-np.inf, c.dtype(0)))
    c.done(_from_last(c, c.reduce("ReduceLogSumExp", rows, [-1], False), dim, ndim))


def convert_cum_extreme(c: Call) -> None:
    """cummax/cummin: the extreme of the prefix rows (filled with the slice's first element,
    which every prefix holds), and the last position in the prefix holding it."""
    x, dim, ndim = _scan_args(c)
    largest = bool(c.arg(2))
    xl = _to_last(c, x, dim, ndim)
    first = c.unsqueeze(c.slice(xl, [0], [1], [-1]), [-1])
    rows, mask, pos = _prefix(c, xl, first)
    values = c.reduce("ReduceMax" if largest else "ReduceMin", rows, [-1], False)
    column = c.unsqueeze(values, [-1])
    hit = c.op("Equal", c.unsqueeze(xl, [-2]), column)
    if c.dtype(0).kind == "f":  # NaN propagates, and a NaN "equals" the NaN it produced
        nan = c.op("IsNaN", rows)
        seen = c.cast(c.reduce("ReduceMax", c.cast(nan, np.int32), [-1], False), np.bool_)
        values = c.op("Where", seen, c.const(np.nan, c.dtype(0)), values)
        column = c.unsqueeze(values, [-1])
        both = c.op("And", c.op("IsNaN", c.unsqueeze(xl, [-2])), c.op("IsNaN", column))
        hit = c.op("Or", c.op("Equal", c.unsqueeze(xl, [-2]), column), both)
    hit = c.op("And", hit, mask)
    last = c.op("Where", hit, pos, c.const(np.int64(-1)))
    indices = c.reduce("ReduceMax", last, [-1], False)
    c.done(_from_last(c, values, dim, ndim), _from_last(c, indices, dim, ndim))


# ---------------------------------------------------------------------------
# order statistics


def _count(c: Call, x: str, axis: int, k: int | None) -> tuple:
    """(k, k - 1) as 1-element int64 tensors: `k`, or the lower median's rank
    ``(n - 1) // 2 + 1`` of the dim (computed in the graph when it is dynamic)."""
    static = c.rec2 is None or c.shape(0)[axis] == c.shape2(0)[axis]
    if k is None and static:
        k = (c.shape(0)[axis] - 1) // 2 + 1
    if k is not None:
        return c.ints([k]), c.ints([k - 1])
    n = c.unsqueeze(_dim_size(c, x, axis), [0])
    below = c.op("Div", c.op("Sub", n, c.ints([1])), c.ints([2]))
    return c.op("Add", below, c.ints([1])), below


def _kth_smallest(c: Call, x: str, axis: int, k: int | None) -> tuple:
    """(values, indices) of the k-th smallest along `axis`, keeping the dim (size 1)."""
    count, before = _count(c, x, axis, k)
    values, indices = c.op("TopK", x, count, axis=axis, largest=0, sorted=1, outputs=2)
    end = c.op("Add", before, c.ints([1]))
    pick = [before, end, c.ints([axis])]
    return c.op("Slice", values, *pick), c.op("Slice", indices, *pick)


def _nan_to_median(c: Call, x: str, axis: int, values: str, indices: str | None) -> tuple:
    """ember's median is NaN where a slice holds NaN, its index the first NaN's."""
    if c.dtype(0).kind != "f":
        return values, indices
    nan = c.cast(c.op("IsNaN", x), np.int32)
    seen = c.cast(c.reduce("ReduceMax", nan, [axis], True), np.bool_)
    values = c.op("Where", seen, c.const(np.nan, c.dtype(0)), values)
    if indices is not None:
        first = c.op("ArgMax", nan, axis=axis, keepdims=1)
        indices = c.op("Where", seen, first, indices)
    return values, indices


def convert_select_along(c: Call) -> None:
    """kthvalue / median / mode along one dim: (values, indices)."""
    x = c.input(0)
    dim, keepdim, kind, k = int(c.arg(1)), bool(c.arg(2)), c.arg(3), c.arg(4, 1)
    ndim = len(c.shape(0))
    if kind == "mode":
        values, indices = _mode(c, x, dim, ndim)
    elif kind in ("kthvalue", "median"):
        values, indices = _kth_smallest(c, x, dim, int(k) if kind == "kthvalue" else None)
        if kind == "median":
            values, indices = _nan_to_median(c, x, dim, values, indices)
    else:
        c.fail(f"{kind} picks a different rank in each slice (after dropping its NaNs), which "
               "ONNX TopK cannot express; use median, or replace the NaNs first")
    if not keepdim:
        values, indices = c.squeeze(values, [dim]), c.squeeze(indices, [dim])
    c.done(values, indices)


def _mode(c: Call, x: str, dim: int, ndim: int) -> tuple:
    """The most frequent value (the smallest among equally frequent ones) and the last
    index holding it, both keeping `dim` (size 1)."""
    dtype = c.dtype(0)
    xl = _to_last(c, x, dim, ndim)
    if dtype == np.bool_:
        xl = c.cast(xl, np.int32)
    pairs = c.op("Equal", c.unsqueeze(xl, [-1]), c.unsqueeze(xl, [-2]))
    counts = c.reduce("ReduceSum", c.cast(pairs, np.int64), [-1], False)
    best = c.op("Equal", counts, c.reduce("ReduceMax", counts, [-1], True))
    work = np.dtype(np.int32) if dtype == np.bool_ else dtype
    top = np.inf if work.kind == "f" else np.iinfo(work).max
    value = c.reduce("ReduceMin", c.op("Where", best, xl, c.const(top, work)), [-1], True)
    pos = _positions(c, xl, -1)
    last = c.op("Where", c.op("Equal", xl, value), pos, c.const(np.int64(-1)))
    index = c.reduce("ReduceMax", last, [-1], True)
    if dtype == np.bool_:
        value = c.cast(value, np.bool_)
    return _from_last(c, value, dim, ndim), _from_last(c, index, dim, ndim)


def convert_median_all(c: Call) -> None:
    """median of all elements (``_EvenReduce`` of kind median): the k-th smallest of the
    flattened input."""
    if c.arg(1) != "median":
        c.fail(f"{c.arg(1)} picks a rank that depends on the number of NaNs in the input, "
               "which ONNX TopK cannot express")
    if 0 in c.shape(0):
        c.fail("the median of an empty tensor")
    flat = c.reshape(c.input(0), [-1])
    if c.rec2 is None or c.shape(0) == c.shape2(0):
        k = (int(np.prod(c.shape(0))) - 1) // 2 + 1
        count, before = c.ints([k]), c.ints([k - 1])
    else:
        before = c.op("Div", c.op("Sub", c.op("Shape", flat), c.ints([1])), c.ints([2]))
        count = c.op("Add", before, c.ints([1]))
    values, _ = c.op("TopK", flat, count, axis=0, largest=0, sorted=1, outputs=2)
    value = c.op("Slice", values, before, c.op("Add", before, c.ints([1])), c.ints([0]))
    value, _ = _nan_to_median(c, flat, 0, value, None)
    c.done(c.reshape(value, [1] * len(c.shape(0)) if bool(c.arg(3)) else []))


CONVERTERS = {
    sorting.Cumprod: convert_cumprod, sorting.LogCumSumExp: convert_logcumsumexp,
    sorting._CumExtreme: convert_cum_extreme, sorting._SelectAlong: convert_select_along,
}
