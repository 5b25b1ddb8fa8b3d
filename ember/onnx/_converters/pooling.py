"""Pooling and resampling: max pooling (MaxPool), average pooling (AveragePool), the
separable maps behind adaptive average pooling, interpolation and the non-constant
pads (ReduceMean, Gather or MatMul along one axis), adaptive max pooling with even
windows (MaxPool).  Lp pooling is a composition of these and elementwise ops.

Each pool is written with explicit pads (the left padding, and the right padding the
last window needs), which reproduces ceil_mode exactly without ONNX's ceil_mode.
"""

from __future__ import annotations

import math

import numpy as np

from ...ops import pooling, resample
from .._convert import Call, to_numpy


def _pool_attrs(geo, dilation: bool = True) -> dict:
    attrs = dict(kernel_shape=list(geo.kernel), strides=list(geo.stride),
                 pads=list(geo.pad) + list(geo.hi))
    if dilation and any(d != 1 for d in geo.dilation):
        attrs["dilations"] = list(geo.dilation)
    return attrs


def convert_max_pool(c: Call) -> None:
    """(values, indices): ONNX's indices count over the whole tensor, ember's (PyTorch's)
    within each channel's plane, hence the Mod.  The node with indices is a separate one,
    dropped from the graph when nothing uses them."""
    x, geo = c.input(0), c.arg(1)
    attrs = _pool_attrs(geo)
    values = c.op("MaxPool", x, **attrs)
    _, flat = c.op("MaxPool", x, outputs=2, **attrs)
    plane = c.const(np.int64(math.prod(geo.size)))
    c.done(values, c.op("Mod", flat, plane))


def convert_max_pool_values(c: Call) -> None:
    """Max pooling's values alone (inference without indices): one MaxPool."""
    c.done(c.op("MaxPool", c.input(0), **_pool_attrs(c.arg(1))))


def _non_pad_counts(geo) -> np.ndarray:
    """Per output position, how many window elements lie inside the input."""
    counts = np.ones((1,) * len(geo.size))
    for d, (n, k, s, p, o) in enumerate(zip(geo.size, geo.kernel, geo.stride, geo.pad,
                                            geo.out)):
        start = np.arange(o) * s - p
        length = np.minimum(start + k, n) - np.maximum(start, 0)
        shape = [1] * len(geo.size)
        shape[d] = o
        counts = counts * length.reshape(shape)
    return counts


def convert_avg_pool(c: Call) -> None:
    x, geo, divisor = c.input(0), c.arg(1), c.arg(2)
    if c.out_dtype().kind not in "fc":
        c.fail("average pooling of an integer tensor has no ONNX equivalent")
    div = np.asarray(to_numpy(divisor) if hasattr(divisor, "shape") else divisor,
                     dtype=np.float64)
    window = math.prod(geo.kernel)
    attrs = _pool_attrs(geo, dilation=False)
    if np.all(div == window):
        c.done(c.op("AveragePool", x, count_include_pad=1, **attrs))
        return
    counts = _non_pad_counts(geo)
    if div.shape == counts.shape and np.array_equal(div, counts):
        c.done(c.op("AveragePool", x, count_include_pad=0, **attrs))
        return
    # window sums (the average over the full window, times its size) / ember's divisor
    mean = c.op("AveragePool", x, count_include_pad=1, **attrs)
    scale = np.broadcast_to(window / div, geo.out).reshape((1, 1) + tuple(geo.out))
    c.done(c.op("Mul", mean, c.const(scale, c.out_dtype())))


def convert_adaptive_max(c: Call) -> None:
    """Adaptive max pooling (recorded as a gather by the argmax index) when the windows
    do not overlap and all have one size: a MaxPool."""
    name = c.arg(3) or ""
    if not name.startswith("AdaptiveMaxPool"):
        c.fail("gathers by spatial index (grid_sample, max_unpool) have no ONNX converter")
    size = c.shape(0)[2:]
    out = c.out_shape()[2:]
    if any(o == 0 or n % o for n, o in zip(size, out)):
        c.fail(f"adaptive max pooling from {list(size)} to {list(out)} is only exported "
               "when each output size divides the input size")
    kernel = [n // o for n, o in zip(size, out)]
    c.done(c.op("MaxPool", c.input(0), kernel_shape=kernel, strides=kernel))


def _dense(idx: np.ndarray, weight, n_in: int) -> np.ndarray:
    """The (n_in, n_out) matrix of a sparse axis map."""
    taps, n_out = idx.shape
    matrix = np.zeros((n_in, n_out))
    w = np.ones(idx.shape) if weight is None else weight
    for t in range(taps):
        np.add.at(matrix, (idx[t], np.arange(n_out)), w[t])
    return matrix


def convert_plane_map(c: Call) -> None:
    """``x[..., rows[i], cols[j]]``: two Gathers (the usual 2-D padding)."""
    ndim = len(c.shape(0))
    c.static_dims(0, [ndim - 2, ndim - 1], "padding maps a fixed number of positions")
    rows = np.asarray(to_numpy(c.param("rows")), np.int64)
    cols = np.asarray(to_numpy(c.param("cols")), np.int64)
    if c.param("adjoint", False):  # (its transpose: one-hot matrices on both sides)
        height, width = c.param("size")
        left = np.zeros((height, rows.size))
        left[rows, np.arange(rows.size)] = 1
        right = np.zeros((cols.size, width))
        right[np.arange(cols.size), cols] = 1
        dtype = c.out_dtype()
        c.done(c.op("MatMul", c.op("MatMul", c.const(left, dtype), c.input(0)),
                    c.const(right, dtype)))
        return
    c.done(c.op("Gather", c.op("Gather", c.input(0), c.const(rows), axis=ndim - 2),
                c.const(cols), axis=ndim - 1))


def convert_axis_map(c: Call) -> None:
    """``out[.., o, ..] = sum_t weight[t, o] * x[.., idx[t, o], ..]`` along one axis."""
    x = c.input(0)
    axis, adjoint = int(c.arg(1)), bool(c.arg(5, False))
    idx = to_numpy(c.arg(2))
    weight = c.arg(3)
    weight = None if weight is None else to_numpy(weight).astype(np.float64)
    ndim = len(c.shape(0))
    c.static_dims(0, [axis], "resampling maps a fixed number of positions")
    n_in = c.shape(0)[axis]
    dtype = c.out_dtype()
    if not adjoint:
        taps, n_out = idx.shape
        if n_out == 1 and weight is not None and np.array_equal(
                np.sort(idx[:, 0]), np.arange(n_in)) and np.allclose(weight, 1.0 / n_in):
            c.done(c.reduce("ReduceMean", x, [axis], True))
            return
        if weight is None or taps <= 4:
            out = None
            for t in range(taps):
                term = c.op("Gather", x, c.const(idx[t].astype(np.int64)), axis=axis)
                if weight is not None:
                    shape = [1] * ndim
                    shape[axis] = n_out
                    term = c.op("Mul", term, c.const(weight[t].reshape(shape), dtype))
                out = term if out is None else c.op("Add", out, term)
            c.done(out)
            return
        matrix = _dense(idx, weight, n_in)
    else:
        matrix = _dense(idx, weight, int(c.arg(4))).T
    perm = [d for d in range(ndim) if d != axis] + [axis]
    moved = x if axis == ndim - 1 else c.transpose(x, perm)
    out = c.op("MatMul", moved, c.const(matrix, dtype))
    if axis != ndim - 1:
        out = c.transpose(out, np.argsort(perm))
    c.done(out)


CONVERTERS = {
    pooling.MaxPool: convert_max_pool,
    pooling.MaxPoolValues: convert_max_pool_values,
    pooling.AvgPool: convert_avg_pool,
    pooling.FlatGather: convert_adaptive_max,
    resample.AxisMap: convert_axis_map, resample.PlaneMap: convert_plane_map,
}
