"""Normalization: batch norm in eval mode (BatchNormalization, from the module), layer
norm (LayerNormalization from opset 17), and every other use of the fused `Normalize`
op (group/instance norm, batch norm with batch statistics, older opsets) written out
with ReduceMean, as are RMS norm and the 2-norm's normalize; eval-mode functional batch
norm is elementwise arithmetic already."""

from __future__ import annotations

import numpy as np

from ...nn.modules import batchnorm
from ...ops import normalization
from .._convert import Call


def convert_normalize(c: Call) -> None:
    x = c.input(0)
    has_w, has_b = c.arg(1) is not None, c.arg(2) is not None
    dims, eps, bshape = c.param("dims"), float(c.param("eps")), tuple(c.param("bshape"))
    in_shape = c.shape(0)
    ndim, dtype = len(in_shape), c.out_dtype()
    trailing = tuple(dims) == tuple(range(ndim - len(dims), ndim))
    if (c.opset >= 17 and trailing and dims
            and (not (has_w or has_b) or bshape == tuple(in_shape[d] for d in dims))):
        norm_shape = [in_shape[d] for d in dims]
        if not has_w:
            c.static_dims(0, dims, "layer norm without a weight gets a constant scale")
        scale = c.input(1) if has_w else c.const(np.ones(norm_shape), dtype)
        bias = [c.input(2)] if has_b else []
        c.done(c.op("LayerNormalization", x, scale, *bias, axis=dims[0], epsilon=eps))
        return
    mean = c.reduce("ReduceMean", x, dims, True)
    centered = c.op("Sub", x, mean)
    var = c.reduce("ReduceMean", c.op("Mul", centered, centered), dims, True)
    rstd = c.op("Reciprocal", c.op("Sqrt", c.op("Add", var, c.const(eps, dtype))))
    y = c.op("Mul", centered, rstd)
    out = y
    if has_w:
        out = c.op("Mul", out, c.reshape(c.input(1), bshape))
    if has_b:
        out = c.op("Add", out, c.reshape(c.input(2), bshape))
    c.done(out, mean, rstd, y if (has_w or has_b) else None)


def convert_group_norm(c: Call) -> None:
    """Group norm (one node in ember): the groups standardized with ReduceMean over a
    (N, groups, rest) view, then the per-channel affine map."""
    x = c.input(0)
    has_w, has_b = c.arg(1) is not None, c.arg(2) is not None
    groups, eps = int(c.param("groups")), float(c.param("eps"))
    in_shape = c.shape(0)
    dtype = c.out_dtype()
    c.static_dims(0, (1,), "group norm's affine map is per channel")
    grouped = c.reshape(x, (0, groups, -1))  # (0: the batch size as it comes)
    mean = c.reduce("ReduceMean", grouped, (2,), True)
    centered = c.op("Sub", grouped, mean)
    var = c.reduce("ReduceMean", c.op("Mul", centered, centered), (2,), True)
    rstd = c.op("Reciprocal", c.op("Sqrt", c.op("Add", var, c.const(eps, dtype))))
    out = c.op("Reshape", c.op("Mul", centered, rstd), c.op("Shape", x))
    channel = (in_shape[1],) + (1,) * (len(in_shape) - 2)
    if has_w:
        out = c.op("Mul", out, c.reshape(c.input(1), channel))
    if has_b:
        out = c.op("Add", out, c.reshape(c.input(2), channel))
    c.done(out)


def convert_rms_norm(c: Call) -> None:
    """RMS norm (one node in ember): x / sqrt(ReduceMean(x * x) + eps) over its dims,
    times the weight (of the normalized shape: it broadcasts as it is)."""
    x = c.input(0)
    dims, eps, dtype = tuple(c.param("dims")), float(c.param("eps")), c.out_dtype()
    mean_square = c.reduce("ReduceMean", c.op("Mul", x, x), dims, True)
    rstd = c.op("Reciprocal", c.op("Sqrt", c.op("Add", mean_square, c.const(eps, dtype))))
    out = c.op("Mul", x, rstd)
    if c.arg(1) is not None:
        out = c.op("Mul", out, c.input(1))
    c.done(out)


def convert_l2_normalize(c: Call) -> None:
    """normalize(x, 2, dim) (one node in ember): x / Max(Sqrt(ReduceSum(x * x)), eps)."""
    x = c.input(0)
    dim, eps, dtype = int(c.param("dim")), float(c.param("eps")), c.out_dtype()
    norm = c.op("Sqrt", c.reduce("ReduceSum", c.op("Mul", x, x), (dim,), True))
    c.done(c.op("Div", x, c.op("Max", norm, c.const(eps, dtype))))


def _accepts_batch_norm(module, args, kwargs) -> bool:
    return (not module.training and module.running_mean is not None
            and module.running_var is not None and len(args) == 1 and not kwargs
            and args[0].dim() >= 2)


def convert_batch_norm(c: Call) -> None:
    """BatchNorm in eval mode: one BatchNormalization node with the running statistics."""
    m = c.module
    dtype = c.out_dtype()
    channels = c.shape(0)[1]
    scale = c.tensor(m.weight) if m.weight is not None else c.const(np.ones(channels), dtype)
    bias = c.tensor(m.bias) if m.bias is not None else c.const(np.zeros(channels), dtype)
    c.done(c.op("BatchNormalization", c.input(0), scale, bias, c.tensor(m.running_mean),
                c.tensor(m.running_var), epsilon=float(m.eps)))


CONVERTERS = {normalization.Normalize: convert_normalize,
              normalization.GroupNorm: convert_group_norm,
              normalization.RmsNorm: convert_rms_norm,
              normalization.L2Normalize: convert_l2_normalize}

MODULE_CONVERTERS = {
    cls: (_accepts_batch_norm, convert_batch_norm)
    for cls in (batchnorm.BatchNorm1d, batchnorm.BatchNorm2d, batchnorm.BatchNorm3d)
}
