"""Convolution: conv1d/2d/3d and conv_transpose1d/2d/3d, one N-d implementation.

Everything rests on sliding windows: the zero-padded input seen as a strided view
of shape (N, C, *out, *kernel) (no copy), copied into a column matrix and multiplied by
the weight, one matrix product for each group and each cache-sized chunk of the batch
("im2col").  The transposed convolution runs the other way: the matrix product gives
the columns, which are added back into the (padded) output by strided slices, one per
kernel offset ("col2im", a loop over the k^d kernel positions, never over pixels).

The three products hidden in a convolution are one trilinear form
``T(a, w, c) = <conv(a, w), c>``; each of conv, conv_transpose and the weight
gradient is the derivative of T in one argument, so each one's backward is made of
the other two (see ``Convolution`` and ``ConvolutionWeight``) and gradients of any
order work.

The window helpers (``window_view``, ``kernel_offsets``, ``pad_array``) are shared
with pooling.py and resample.py.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from .._core.function import Function
from .._core.tensor import Tensor
from ._util import check_same_device, xp_of

_INTS = (int, np.integer)

# ----------------------------------------------------------------------
# sliding windows (shared with pooling.py and resample.py)


def window_view(x, kernel, stride, dilation):
    """A read-only view (..., *out, *kernel) of the windows over the last len(kernel) dims.

    `x` is already padded; ``out[i] = (size[i] - dilation[i]*(kernel[i]-1) - 1)
    // stride[i] + 1``.  No data is copied.
    """
    nd = len(kernel)
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    out = tuple((n - d * (k - 1) - 1) // s + 1
                for n, k, s, d in zip(spatial, kernel, stride, dilation))
    st = x.strides[-nd:]
    strides = (x.strides[:-nd] + tuple(a * s for a, s in zip(st, stride))
               + tuple(a * d for a, d in zip(st, dilation)))
    xp = xp_of(x)
    return xp.lib.stride_tricks.as_strided(x, lead + out + tuple(kernel), strides,
                                           writeable=False)


def kernel_offsets(kernel, stride, dilation, out):
    """(kernel index, slices) for every kernel position: the slices pick, from a padded
    buffer, the elements that position touches for every output (a strided view)."""
    for index in itertools.product(*(range(k) for k in kernel)):
        slices = tuple(slice(i * d, i * d + s * (o - 1) + 1, s)
                       for i, s, d, o in zip(index, stride, dilation, out))
        yield index, slices


def pad_array(x, lo, hi, value=0):
    """`x` with its last len(lo) dims padded by lo/hi elements of `value` (x itself if none)."""
    if not any(lo) and not any(hi):
        return x
    nd = len(lo)
    xp = xp_of(x)
    shape = x.shape[:-nd] + tuple(n + a + b for n, a, b in zip(x.shape[-nd:], lo, hi))
    out = xp.full(shape, value, dtype=x.dtype)
    inner = tuple(slice(a, a + n) for a, n in zip(lo, x.shape[-nd:]))
    out[(Ellipsis,) + inner] = x
    return out


# ----------------------------------------------------------------------
# array kernels


class Geometry(NamedTuple):
    """Where the windows of a convolution lie.

    `size` is the spatial shape of the convolution's input (the "a" of ``T(a, w, c)``),
    before padding; `lo`/`hi` the zeros added before/after each spatial dim.
    """

    size: tuple
    stride: tuple
    lo: tuple
    hi: tuple
    dilation: tuple
    groups: int

    def padded(self) -> tuple:
        return tuple(n + a + b for n, a, b in zip(self.size, self.lo, self.hi))

    def out(self, kernel) -> tuple:
        return tuple((n - d * (k - 1) - 1) // s + 1
                     for n, k, s, d in zip(self.padded(), kernel, self.stride, self.dilation))


# NOTE: the batch is processed in chunks of a few MB of columns, with the buffers allocated
# once per call: the column matrix is then written and read back by the matrix product
# from the CPU's cache, not memory (measured on the MNIST shapes: 1.3-1.5x faster than one
# product over the whole batch, whose columns also take 9x the input's memory for a 3x3
# kernel).  Each chunk is ONE matrix product per group, with the images side by side in
# its columns (layout (C, *kernel, images, *out)), not one small product per image: a
# multithreaded BLAS synchronizes its threads at every product, and on a busy machine
# (a descheduled thread) per-image products made the MNIST CNN step up to 2x slower.
_CHUNK_BYTES = 4 << 20


def _chunks(xp, n: int, item_bytes: int) -> list:
    """Slices of the batch holding about _CHUNK_BYTES of columns each (all of it on GPU)."""
    step = n if xp is not np else max(1, _CHUNK_BYTES // max(item_bytes, 1))
    return [slice(s, min(s + step, n)) for s in range(0, n, step)]


def _column_view(a, kernel, geo):
    """The windows of zero-padded `a` as a view (C, *kernel, N, *out) (nothing copied)."""
    nd = len(kernel)
    win = window_view(pad_array(a, geo.lo, geo.hi), kernel, geo.stride, geo.dilation)
    return win.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,)
                         + tuple(range(2, 2 + nd)))


def _images_last(x, g: int, m: int):
    """(m, C, *out) chunk -> a fresh (G, C/G, m * prod(out)) array, images side by side."""
    rows = x.reshape(m, g, x.shape[1] // g, -1).transpose(1, 2, 0, 3)
    return rows.reshape(g, x.shape[1] // g, -1)                     # copies (transposed)


def _images_first(prod, target, m: int) -> None:
    """(G, O/G, m * P) product -> written into `target` (m, O, P)."""
    g, og = prod.shape[:2]
    target[...] = prod.reshape(g * og, m, -1).transpose(1, 0, 2)


def conv_array(a, w, geo, bias=None):
    """The convolution of `a` (N, C, *size) with `w` (Cout, C/groups, *k), plus `bias`."""
    xp = xp_of(a)
    kernel = tuple(w.shape[2:])
    out_shape = geo.out(kernel)
    g, co, n, c = geo.groups, w.shape[0], a.shape[0], a.shape[1]
    p = math.prod(out_shape)
    view = _column_view(a, kernel, geo)                              # (C, *k, N, *out)
    wg = w.reshape(g, co // g, -1)                                   # (G, Og, Cg*k)
    dtype = xp.result_type(a, w)
    out = xp.empty((n, co, p), dtype=dtype)
    parts = _chunks(xp, n, c * math.prod(kernel) * p * a.itemsize)
    step = parts[0].stop if parts else 0
    lead = view.shape[:1 + len(kernel)]                              # (C, *k)
    cols = xp.empty(math.prod(lead) * step * p, dtype=a.dtype)       # flat: chunks stay
    prod = xp.empty(co * step * p, dtype=dtype)                      # contiguous
    per_channel = None if bias is None else bias.reshape(co, 1)
    for part in parts:
        m = part.stop - part.start
        chunk = cols[:math.prod(lead) * m * p].reshape(lead + (m,) + out_shape)
        xp.copyto(chunk, view[(slice(None),) * len(lead) + (part,)])   # im2col
        result = xp.matmul(wg, chunk.reshape(g, -1, m * p),
                           out=prod[:co * m * p].reshape(g, co // g, m * p))
        _images_first(result, out[part], m)
        if per_channel is not None:  # added while the chunk is still in cache
            out[part] += per_channel
    return out.reshape((n, co) + out_shape)


def conv_transpose_array(c, w, geo, bias=None):
    """The adjoint of `conv_array` in its input: (N, Cout, *out) -> (N, C, *size)."""
    xp = xp_of(c)
    kernel = tuple(w.shape[2:])
    out_shape = tuple(c.shape[2:])
    nd = len(kernel)
    g, co, cg, n = geo.groups, w.shape[0], w.shape[1], c.shape[0]
    p = math.prod(out_shape)
    wt = w.reshape(g, co // g, -1).transpose(0, 2, 1)               # (G, Cg*k, Og)
    buf = xp.zeros((n, g * cg) + geo.padded(), dtype=xp.result_type(c, w))
    parts = _chunks(xp, n, g * cg * math.prod(kernel) * p * c.itemsize)
    step = parts[0].stop if parts else 0
    ck = g * cg * math.prod(kernel)
    cols = xp.empty(ck * step * p, dtype=buf.dtype)                 # flat: chunks contiguous
    offsets = list(kernel_offsets(kernel, geo.stride, geo.dilation, out_shape))
    every = (slice(None), slice(None))
    for part in parts:
        m = part.stop - part.start
        rows = _images_last(c[part], g, m)                           # (G, Og, m*P)
        chunk = xp.matmul(wt, rows, out=cols[:ck * m * p].reshape(g, ck // g, m * p))
        chunk = chunk.reshape((g * cg,) + kernel + (m,) + out_shape)    # (C, *k, m, *out)
        target = buf[part]
        for index, slices in offsets:                                # col2im
            piece = chunk[(slice(None),) + index]                    # (C, m, *out)
            target[every + slices] += piece.swapaxes(0, 1)
    if any(geo.lo) or any(geo.hi):
        inner = tuple(slice(a, a + s) for a, s in zip(geo.lo, geo.size))
        buf = xp.ascontiguousarray(buf[(Ellipsis,) + inner])
    if bias is not None:
        buf += bias.reshape((-1,) + (1,) * nd)
    return buf


def conv_weight_array(a, c, kernel, geo):
    """The adjoint of `conv_array` in its weight: <conv(a, w), c> = <w, conv_weight(a, c)>."""
    xp = xp_of(a)
    kernel = tuple(kernel)
    g, co, n, ch = geo.groups, c.shape[1], a.shape[0], a.shape[1]
    p = math.prod(c.shape[2:])
    view = _column_view(a, kernel, geo)                              # (C, *k, N, *out)
    ck = ch * math.prod(kernel)
    dtype = xp.result_type(a, c)
    parts = _chunks(xp, n, ck * p * a.itemsize)
    step = parts[0].stop if parts else 0
    lead = view.shape[:1 + len(kernel)]                              # (C, *k)
    cols = xp.empty(ck * step * p, dtype=a.dtype)                   # flat: chunks contiguous
    gw = xp.zeros((g, co // g, ck // g), dtype=dtype)
    for part in parts:
        m = part.stop - part.start
        chunk = cols[:ck * m * p].reshape(lead + (m,) + tuple(c.shape[2:]))
        xp.copyto(chunk, view[(slice(None),) * len(lead) + (part,)])   # im2col
        rows = _images_last(c[part], g, m)                           # (G, Og, m*P)
        gw += xp.matmul(rows, chunk.reshape(g, ck // g, m * p).transpose(0, 2, 1))
    return gw.reshape((co, ch // g) + kernel)


# ----------------------------------------------------------------------
# Functions


class Convolution(Function):
    """``conv(a, w) + b`` (or, with ``transposed``, ``conv_transpose(c, w) + b``)."""

    _name = "ConvolutionBackward0"

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
            gx = Convolution.apply(grad, w, None, geo, not transposed)
        if need_w:
            a, c = (grad, x) if transposed else (x, grad)
            gw = ConvolutionWeight.apply(a, c, tuple(w.shape[2:]), geo)
        if need_b:
            gb = grad.sum(dim=[0] + list(range(2, grad.dim())))
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
            gc = Convolution.apply(a, grad, None, ctx.geo, False)
        return ga, gc


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
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    check_same_device(op, input, weight, bias)
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
    out = Convolution.apply(x, weight, bias, geo, False)
    return out.squeeze(0) if unbatched else out


def _plain_arg(value) -> bool:
    """An int, a string or a tuple of ints, by exact type: equal values then mean equal
    arguments (1.0 == 1 but a float stride is an error, so floats never hit the cache)."""
    kind = type(value)
    return kind is int or kind is str or (kind is tuple and all(type(v) is int for v in value))


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
