"""Convolution: conv1d/2d/3d and conv_transpose1d/2d/3d, one N-d implementation.

The array kernels (im2col and one matrix product per chunk, col2im) are in
conv_arrays.py.  The three products hidden in a convolution are one trilinear form
``T(a, w, c) = <conv(a, w), c>``; each of conv, conv_transpose and the weight
gradient is the derivative of T in one argument, so each one's backward is made of
the other two (see ``Convolution`` and ``ConvolutionWeight``) and gradients of any
order work.
"""

from __future__ import annotations


import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import Tensor, _make
from ._autocast import casts_together
from ._direct import records
from ._kernels import sum_leading
from ._util import check_same_device
from .conv_arrays import Geometry, conv_array, conv_transpose_array, conv_weight_array

_INTS = (int, np.integer)

# ----------------------------------------------------------------------
# Functions


class Convolution(Function):
    """``conv(a, w) + b`` (or, with ``transposed``, ``conv_transpose(c, w) + b``)."""

    _name = "ConvolutionBackward0"
    _fresh_grads = True  # each gradient is a new convolution or sum

    @staticmethod
    def forward(ctx, x, w, b, geo, transposed=False):
        ctx.geo, ctx.transposed = geo, transposed
        ctx.save_for_backward(x, w)
        if transposed:
            return conv_transpose_array(x, w, geo, b)
        return conv_array(x, w, geo, b)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        geo, transposed = ctx.geo, ctx.transposed
        need_x, need_w, need_b = (e[0] is not None for e in ctx._edges[:3])
        gx = gw = gb = None
        if need_x:
            gx = _fit(Convolution.apply(grad, w, None, geo, not transposed), x.shape)
        if need_w:
            a, c = (grad, x) if transposed else (x, grad)
            gw = ConvolutionWeight.apply(a, c, tuple(w.shape[2:]), geo)
        if need_b:
            gb = _bias_grad(grad)
        return gx, gw, gb


class ConvolutionWeight(Function):
    """The weight gradient of a convolution, ``conv_weight(a, c)``, as an op of its own."""

    _name = "ConvolutionBackwardBackward0"

    @staticmethod
    def forward(ctx, a, c, kernel, geo):
        ctx.geo = geo
        ctx.save_for_backward(a, c)
        return conv_weight_array(a, c, kernel, geo)

    @staticmethod
    def backward(ctx, grad):
        a, c = ctx.saved_tensors
        ga = gc = None
        if ctx._edges[0][0] is not None:
            ga = Convolution.apply(c, grad, None, ctx.geo, True)
        if ctx._edges[1][0] is not None:
            gc = _fit(Convolution.apply(a, grad, None, ctx.geo, False), c.shape)
        return ga, gc


def _bias_grad(grad: Tensor) -> Tensor:
    """The bias gradient: `grad` summed over every dim but the channels'.  First order, on
    a large NumPy array: the sum over the batch as one product split over ember's threads
    (`_kernels.sum_leading`), then each channel's sum (474 -> ~210 us for MNIST conv2's
    (64, 64, 24, 24) gradient)."""
    g = grad._data
    if not STATE.enabled and g.ndim > 2:
        summed = sum_leading(g, (0,), False)
        if summed is not None:
            return _make(summed.reshape(g.shape[1], -1).sum(axis=1))
    return grad.sum(dim=[0] + list(range(2, grad.dim())))


def _fit(t: Tensor, shape) -> Tensor:
    """`t` cut to `shape`: a transposed convolution's output_padding leaves windows past
    the end of its input, which are no part of that input's gradient."""
    if tuple(t.shape[2:]) == tuple(shape[2:]):
        return t
    return t[(Ellipsis,) + tuple(slice(0, s) for s in shape[2:])]


# ----------------------------------------------------------------------
# argument checks


def ntuple(value, n: int, name: str, op: str) -> tuple:
    """An int or a sequence of n ints as a tuple of n ints (RuntimeError otherwise)."""
    if type(value) is tuple and len(value) == n and all(type(v) is int for v in value):
        return value  # the usual case: a module's own (already checked) tuple
    if isinstance(value, _INTS):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and all(isinstance(v, _INTS) for v in value):
        if len(value) == 1:
            return (int(value[0]),) * n
        if len(value) == n:
            return tuple(int(v) for v in value)
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {n} values to match "
            f"the convolution dimensions, but got {name}={list(value)}")
    raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not "
                    f"{type(value).__name__}")


def _shape(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _sizes(values) -> str:
    return " x ".join(str(v) for v in values)


def _check_tensors(op: str, input, weight, bias) -> None:
    x, w = getattr(input, "_data", None), getattr(weight, "_data", None)
    if (type(x) is np.ndarray and type(w) is np.ndarray and x.dtype is w.dtype
            and isinstance(input, Tensor) and isinstance(weight, Tensor)
            and (bias is None or (isinstance(bias, Tensor) and type(bias._data) is np.ndarray
                                  and bias._data.dtype is x.dtype))):
        return  # the usual case, CPU tensors of one dtype: nothing to report (~4 us saved)
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    check_same_device(op, input, weight, bias)
    mixed = input.dtype != weight.dtype or (bias is not None and bias.dtype != input.dtype)
    if mixed and casts_together(input, weight, bias):  # (autocast gives them one dtype)
        return
    if input.dtype != weight.dtype:
        raise RuntimeError(f"expected scalar type {_ctype(input)} but found {_ctype(weight)}")
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(f"Input type ({_ctype(input).lower()}) and bias type "
                           f"({_ctype(bias).lower()}) should be the same")


def _ctype(t: Tensor) -> str:
    """PyTorch's C type name of a tensor's dtype (as its error messages print it)."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "bfloat16": "BFloat16"}.get(t.dtype.name, t.dtype.name)


def _batched(op: str, input: Tensor, nd: int) -> tuple:
    """The input with a batch dim (added for unbatched input), and whether one was added."""
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() == nd + 2:
        return input, False
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
                       f"but got input of size: {_shape(input.shape)}")


def _check_common(nd: int, weight: Tensor, stride, dilation, groups, op: str):
    if weight.dim() != nd + 2:
        raise RuntimeError(
            f"expected stride to be a single integer value or a list of {weight.dim() - 2} "
            f"values to match the convolution dimensions, but got stride={list(stride)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if not isinstance(groups, _INTS):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size [{_shape(weight.shape)}] instead")


def _check_bias(weight: Tensor, bias, channels: int) -> None:
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != channels):
        raise RuntimeError(
            f"Given weight of size {_shape(weight.shape)}, expected bias to be 1-dimensional "
            f"with {channels} elements, but got bias of size {_shape(bias.shape)} instead")


def _padding(padding, nd: int, kernel, stride, dilation, op: str) -> tuple:
    """(lo, hi) zero padding per spatial dim from an int, a tuple, 'same' or 'valid'."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * nd, (0,) * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for k, d in zip(kernel, dilation)]
            lo = tuple(t // 2 for t in total)
            return lo, tuple(t - a for t, a in zip(total, lo))
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    pad = ntuple(padding, nd, "padding", op)
    if any(p < 0 for p in pad):
        raise RuntimeError("negative padding is not supported")
    return pad, pad


# Geometries already checked, by everything they depend on: a model calls each layer
# with the same arguments every step, and the checks cost ~10 us (a batch-1 layer's
# kernel takes ~30 us).  Bounded: a new key is only stored while there is room.
_CHECKED: dict = {}
_CHECKED_MAX = 512


def _conv(op: str, nd: int, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    _check_tensors(op, input, weight, bias)
    x, unbatched = _batched(op, input, nd)
    key = geo = None
    if type(groups) is int and all(_plain_arg(a) for a in (stride, padding, dilation)):
        key = (op, x.shape, weight.shape, None if bias is None else bias.shape, stride,
               padding, dilation, groups)
        geo = _CHECKED.get(key)
    if geo is None:
        geo = _conv_geometry(op, nd, x, weight, bias, stride, padding, dilation, groups)
        if key is not None and len(_CHECKED) < _CHECKED_MAX:
            _CHECKED[key] = geo
    out = _direct_conv(x, weight, bias, geo)
    if out is None:
        out = Convolution.apply(x, weight, bias, geo, False)
    return out.squeeze(0) if unbatched else out


def _direct_conv(x, weight, bias, geo):
    """The convolution on the arrays when nothing is recorded (inference), else None: the
    same `conv_array` call as Convolution's forward, without the node (~4 us a call)."""
    if records(x, weight, bias):
        return None
    a, w = x._data, weight._data
    if type(a) is not np.ndarray or type(w) is not np.ndarray:
        return None
    return _make(conv_array(a, w, geo, None if bias is None else bias._data))


def _plain_arg(value) -> bool:
    """An int, a string or a tuple of ints, by exact type: equal values then mean equal
    arguments (1.0 == 1 but a float stride is an error, so floats never hit the cache)."""
    kind = type(value)
    if kind is int or kind is str:
        return True
    if kind is not tuple:
        return False
    for v in value:   # (a loop, not all() over a generator: this runs per layer call)
        if type(v) is not int:
            return False
    return True


def _conv_geometry(op: str, nd: int, x, weight, bias, stride, padding, dilation,
                   groups) -> Geometry:
    """The checked geometry of a convolution (PyTorch's errors for bad arguments)."""
    stride = ntuple(stride, nd, "stride", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    _check_common(nd, weight, stride, dilation, groups, op)
    kernel = tuple(weight.shape[2:])
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_shape(weight.shape)}, expected "
            f"input{_shape(x.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead")
    _check_bias(weight, bias, weight.shape[0])
    lo, hi = _padding(padding, nd, kernel, stride, dilation, op)
    geo = Geometry(tuple(x.shape[2:]), stride, lo, hi, dilation, groups)
    padded = geo.padded()
    if any(p < d * (k - 1) + 1 for p, k, d in zip(padded, kernel, dilation)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({_sizes(padded)}). Kernel size: "
            f"({_sizes(d * (k - 1) + 1 for k, d in zip(kernel, dilation))}). Kernel size "
            "can't be greater than actual input size")
    return geo


def transposed_size(in_size, kernel, stride, padding, dilation, output_padding) -> tuple:
    """The spatial output shape of a transposed convolution."""
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, k, s, p, d, op in
                 zip(in_size, kernel, stride, padding, dilation, output_padding))


def _conv_transpose(op: str, nd: int, input, weight, bias, stride, padding, output_padding,
                    groups, dilation) -> Tensor:
    _check_tensors(op, input, weight, bias)
    x, unbatched = _batched(op, input, nd)
    stride = ntuple(stride, nd, "stride", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str")
    pad = ntuple(padding, nd, "padding", op)
    out_pad = ntuple(output_padding, nd, "output_padding", op)
    _check_common(nd, weight, stride, dilation, groups, op)
    if any(p < 0 for p in pad):
        raise RuntimeError("negative padding is not supported")
    if any(o >= s and o >= d for o, s, d in zip(out_pad, stride, dilation)) or any(
            o < 0 for o in out_pad):
        names = ("depth", "height", "width")[3 - nd:] if nd <= 3 else range(nd)
        parts = ([f"output_padding_{n}: {o}" for n, o in zip(names, out_pad)]
                 + [f"stride_{n}: {s}" for n, s in zip(names, stride)]
                 + [f"dilation_{n}: {d}" for n, d in zip(names, dilation)])
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           "but got " + " ".join(parts))
    kernel = tuple(weight.shape[2:])
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {_shape(weight.shape)}, expected "
            f"input{_shape(x.shape)} to have {weight.shape[0]} channels, but got "
            f"{x.shape[1]} channels instead")
    _check_bias(weight, bias, weight.shape[1] * groups)
    size = transposed_size(x.shape[2:], kernel, stride, pad, dilation, out_pad)
    if any(s <= 0 for s in size):
        raise RuntimeError(f"Given input size per channel: ({_sizes(x.shape[2:])}). Calculated "
                           f"output size per channel: ({_sizes(size)}). Output size is too small")
    geo = Geometry(size, stride, pad, pad, dilation, groups)
    out = Convolution.apply(x, weight, bias, geo, True)
    return out.squeeze(0) if unbatched else out


# ----------------------------------------------------------------------
# public functions


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of (N, C_in, L) with a (C_out, C_in/groups, k)
    weight; `padding` is an int, a tuple, ``'valid'`` or ``'same'``."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D convolution of (N, C_in, H, W) (or unbatched (C_in, H, W)) with a
    (C_out, C_in/groups, kH, kW) weight.

    >>> conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3)).shape
    ember.Size([1, 1, 2, 2])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-D convolution of (N, C_in, D, H, W) with a (C_out, C_in/groups, kD, kH, kW) weight."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 1-D convolution ("deconvolution"): the gradient of conv1d with respect
    to its input.  `weight` is (C_in, C_out/groups, k)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 2-D convolution; output size ``(in - 1) * stride - 2 * padding +
    dilation * (k - 1) + output_padding + 1`` per dim.  `weight` is (C_in, C_out/groups,
    kH, kW)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 3-D convolution; `weight` is (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding,
                dilation, transposed: bool, output_padding, groups: int) -> Tensor:
    """The general form behind conv*d and conv_transpose*d (dims from the weight)."""
    nd = weight.dim() - 2
    if transposed:
        return _conv_transpose(f"conv_transpose{nd}d", nd, input, weight, bias, stride,
                               padding, output_padding, groups, dilation)
    return _conv(f"conv{nd}d", nd, input, weight, bias, stride, padding, dilation, groups)
