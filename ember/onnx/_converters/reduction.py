"""Reductions: sum, mean, prod, max/min (with and without indices), argmax/argmin,
all/any, count_nonzero, var/std, logsumexp, vector norms, cumsum."""

from __future__ import annotations

import math

import numpy as np

from ...ops import linalg_norms, reduction, reduction_stats, sorting
from .._convert import Call
from .order import convert_median_all


def _dims(c: Call, dims) -> list:
    """The reduced dims (None: all of them)."""
    ndim = len(c.shape(0))
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, (int, np.integer)):
        return [int(dims)]
    return [int(d) for d in dims]


def _reduce(c: Call, op_type: str, x: str, dims, keepdim: bool) -> str:
    dims = _dims(c, dims)
    if not dims:
        return c.op("Identity", x)
    if not c.shape(0):  # a 0-dim input: nothing to reduce
        return c.op("Identity", x)
    return c.reduce(op_type, x, dims, keepdim)


def convert_sum(c: Call) -> None:
    x = c.input(0)
    if c.out_dtype() != c.dtype(0):
        x = c.cast(x, c.out_dtype())
    c.done(_reduce(c, "ReduceSum", x, c.arg(1), bool(c.arg(2, False))))


def convert_nansum(c: Call) -> None:
    x = c.input(0)
    if c.dtype(0).kind == "f":
        x = c.op("Where", c.op("IsNaN", x), c.const(0, c.dtype(0)), x)
    if c.out_dtype() != c.dtype(0):
        x = c.cast(x, c.out_dtype())
    c.done(_reduce(c, "ReduceSum", x, c.arg(1), bool(c.arg(2))))


def convert_mean(c: Call) -> None:
    c.done(_reduce(c, "ReduceMean", c.input(0), c.arg(1), bool(c.arg(2))))


def convert_prod(c: Call) -> None:
    c.done(_reduce(c, "ReduceProd", c.input(0), c.arg(1), bool(c.arg(2))))


def convert_even_reduce(c: Call) -> None:
    kind = c.arg(1)
    if kind in ("median", "nanmedian"):
        convert_median_all(c)
        return
    if kind not in ("max", "min"):
        c.fail(f"the {kind} reduction has no ONNX equivalent")
    op_type = "ReduceMax" if kind == "max" else "ReduceMin"
    c.done(_reduce(c, op_type, c.input(0), c.arg(2), bool(c.arg(3))))


def convert_select_along_dim(c: Call) -> None:
    """max/min along a dim: (values, indices) as Reduce{Max,Min} and Arg{Max,Min}."""
    x = c.input(0)
    dim, keepdim, largest = int(c.arg(1)), bool(c.arg(2)), bool(c.arg(3))
    values = c.reduce("ReduceMax" if largest else "ReduceMin", x, [dim], keepdim)
    indices = c.op("ArgMax" if largest else "ArgMin", x, axis=dim, keepdims=int(keepdim))
    c.done(values, indices)


def convert_aminmax(c: Call) -> None:
    """aminmax: (ReduceMin, ReduceMax)."""
    x, dims, keepdim = c.input(0), c.arg(1), bool(c.arg(2))
    c.done(_reduce(c, "ReduceMin", x, dims, keepdim), _reduce(c, "ReduceMax", x, dims, keepdim))


def convert_arg_extreme(c: Call) -> None:
    """argmax/argmin: ArgMax/ArgMin (the first index among ties, as ember's)."""
    x, dim, keepdim = c.input(0), c.arg(1), bool(c.arg(2))
    ndim = len(c.shape(0))
    op_type = "ArgMax" if c.cls is reduction.Argmax else "ArgMin"
    if c.dtype(0) == np.bool_:
        x = c.cast(x, np.int32)
    if dim is None:
        out = c.op(op_type, c.reshape(x, [-1]), axis=0, keepdims=0)
        c.done(c.reshape(out, [1] * ndim) if keepdim else c.op("Identity", out))
    elif ndim == 0:
        c.done(c.const(np.int64(0)))
    else:
        c.done(c.op(op_type, x, axis=int(dim), keepdims=int(keepdim)))


def _nonzero_mask(c: Call, x: str, dtype) -> str:
    """x != 0 as `dtype`."""
    return c.cast(c.op("Not", c.op("Equal", x, c.const(0, c.dtype(0)))), dtype)


def convert_logical(c: Call) -> None:
    """all/any: ReduceMin/ReduceMax of the non-zero mask."""
    dims, keepdim = c.arg(1), bool(c.arg(2))
    op_type = "ReduceMin" if c.cls is reduction.All else "ReduceMax"
    mask = _nonzero_mask(c, c.input(0), np.int32)
    c.done(c.cast(_reduce(c, op_type, mask, list(dims), keepdim), c.out_dtype()))


def convert_count_nonzero(c: Call) -> None:
    mask = _nonzero_mask(c, c.input(0), np.int64)
    c.done(_reduce(c, "ReduceSum", mask, list(c.arg(1)), False))


def convert_var(c: Call) -> None:
    c.done(*_var(c))


def convert_var_mean(c: Call) -> None:
    """var_mean/std_mean: the variance (or deviation), then the mean."""
    c.done(*_var(c, with_mean=True))


def _var(c: Call, with_mean: bool = False) -> tuple:
    x = c.input(0)
    dims, correction, keepdim, take_sqrt = c.arg(1), c.arg(2), bool(c.arg(3)), c.arg(4)
    dims = _dims(c, dims)
    c.static_dims(0, dims, "the variance divides by the number of elements")
    shape = c.shape(0)
    count = math.prod(shape[d] for d in dims)
    mean = c.reduce("ReduceMean", x, dims, True)
    d = c.op("Sub", x, mean)
    total = c.reduce("ReduceSum", c.op("Mul", d, d), dims, keepdim)
    dof = max(0, count - (correction if correction is not None else 1))
    out = c.op("Div", total, c.const(float(dof), c.out_dtype()))
    out = c.op("Sqrt", out) if take_sqrt else out
    return (out, c.reduce("ReduceMean", x, dims, keepdim)) if with_mean else (out,)


def convert_logsumexp(c: Call) -> None:
    c.done(_reduce(c, "ReduceLogSumExp", c.input(0), c.arg(1), bool(c.arg(2))))


def convert_norm(c: Call) -> None:
    """VectorNorm(x, ord, dims, keepdim)."""
    x = c.input(0)
    p, dims, keepdim = c.arg(1), c.arg(2), bool(c.arg(3))
    if c.out_dtype() != c.dtype(0):
        x = c.cast(x, c.out_dtype())
    if p == 2:
        out = _reduce(c, "ReduceL2", x, dims, keepdim)
    elif p == 1:
        out = _reduce(c, "ReduceL1", x, dims, keepdim)
    elif p == math.inf:
        out = _reduce(c, "ReduceMax", c.op("Abs", x), dims, keepdim)
    elif p == -math.inf:
        out = _reduce(c, "ReduceMin", c.op("Abs", x), dims, keepdim)
    elif p == 0:
        nonzero = c.cast(c.op("Not", c.op("Equal", x, c.const(0, c.out_dtype()))),
                         c.out_dtype())
        out = _reduce(c, "ReduceSum", nonzero, dims, keepdim)
    else:
        powered = c.op("Pow", c.op("Abs", x), c.const(float(p), c.out_dtype()))
        total = _reduce(c, "ReduceSum", powered, dims, keepdim)
        out = c.op("Pow", total, c.const(1.0 / float(p), c.out_dtype()))
    c.done(out)


def convert_sorted(c: Call) -> None:
    """sort and topk: a TopK node (values and indices, in order)."""
    dim, descending, k = int(c.arg(1)), bool(c.arg(2)), c.arg(3)
    c.static_dims(0, [dim], "a full sort returns as many values as the dim has")
    count = c.shape(0)[dim] if k is None else int(k)
    values, indices = c.op("TopK", c.input(0), c.ints([count]), axis=dim,
                           largest=int(descending), sorted=1, outputs=2)
    c.done(values, indices)


def convert_cumsum(c: Call) -> None:
    x = c.input(0)
    if c.out_dtype() != c.dtype(0):
        x = c.cast(x, c.out_dtype())
    c.done(c.op("CumSum", x, c.const(np.int64(c.arg(1)))))


CONVERTERS = {
    reduction.Sum: convert_sum, reduction.Nansum: convert_nansum, reduction.Mean: convert_mean,
    reduction.Prod: convert_prod, reduction.Aminmax: convert_aminmax,
    reduction.Argmax: convert_arg_extreme, reduction.Argmin: convert_arg_extreme,
    reduction.All: convert_logical, reduction.Any: convert_logical,
    reduction.CountNonzero: convert_count_nonzero,
    reduction._EvenReduce: convert_even_reduce,
    reduction._SelectAlongDim: convert_select_along_dim,
    reduction_stats.Var: convert_var, reduction_stats.VarMean: convert_var_mean,
    reduction_stats.LogSumExp: convert_logsumexp, linalg_norms.VectorNorm: convert_norm,
    sorting.Cumsum: convert_cumsum, sorting._Sorted: convert_sorted,
}
