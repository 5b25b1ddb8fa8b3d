"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area, antialiased bilinear/bicubic), grid_sample, affine_grid, pixel_shuffle and
pixel_unshuffle, unfold/fold.

Interpolation is separable: along each spatial dim, every output is a weighted sum of
a few input taps (1 for nearest, 2 for linear, 4 for cubic, a window for antialias).
`AxisMap` applies such a sparse matrix along one axis; its adjoint (the gradient)
adds each output back into its taps.  The two are each other's backward, so
gradients of any order work.  grid_sample is not separable: it gathers its corners by
flat spatial index (pooling.py's `FlatGather`) and builds the bilinear weights from the
grid with ember ops, which gives the gradient with respect to the grid for free.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.backend import scatter_add
from .._core.function import Function
from .._core.tensor import Tensor
from . import _native_axis_map
from ._util import xp_of
from .conv import ntuple
from .conv_arrays import kernel_offsets, pad_array, window_view

# ----------------------------------------------------------------------
# a sparse linear map along one axis


def _apply_map(x, axis: int, idx, weight):
    """y[..., o, ...] = sum_t weight[t, o] * x[..., idx[t, o], ...]."""
    if _native_axis_map.supports(x, idx, weight):
        return _native_axis_map.apply(x, axis, idx, weight)
    xp = xp_of(x)
    shape = [1] * x.ndim
    shape[axis] = idx.shape[1]
    out = None
    for t in range(idx.shape[0]):
        term = xp.take(x, idx[t], axis=axis)
        if weight is not None:
            term *= weight[t].astype(x.dtype, copy=False).reshape(shape)
        out = term if out is None else out + term
    return out


def _adjoint_map(g, axis: int, idx, weight, size: int):
    """The transpose of `_apply_map`: each g[..., o, ...] added into its taps' positions."""
    if _native_axis_map.supports(g, idx, weight):
        return _native_axis_map.adjoint(g, axis, idx, weight, size)
    xp = xp_of(g)
    moved = xp.moveaxis(g, axis, -1)
    vals = moved[..., None, :] * weight.astype(g.dtype, copy=False) if weight is not None \
        else moved[..., None, :]
    vals = vals.reshape(moved.shape[:-1] + (idx.size,))
    flat = idx.reshape(-1)
    out = xp.zeros(moved.shape[:-1] + (size,), dtype=g.dtype)
    if xp is np:
        # sort the taps by target, then sum each run of equal targets in one reduceat
        order = np.argsort(flat, kind="stable")
        targets = flat[order]
        starts = np.flatnonzero(np.r_[True, targets[1:] != targets[:-1]])
        if vals.shape[-1]:
            out[..., targets[starts]] = np.add.reduceat(vals[..., order], starts, axis=-1)
    else:
        scatter_add(xp, out, (slice(None),) * (out.ndim - 1) + (flat,), vals)
    return xp.ascontiguousarray(xp.moveaxis(out, -1, axis))


class AxisMap(Function):
    """A sparse matrix applied along one axis (``adjoint=True``: its transpose).

    `idx` and `weight` are (taps, out) arrays (weight None: all ones); `size` is the
    length the adjoint produces.
    """

    @staticmethod
    def forward(ctx, x, axis, idx, weight, size, adjoint=False, name=None):
        if name is not None:
            ctx._name = name
        ctx.args = (axis, idx, weight, x.shape[axis], not adjoint)
        if adjoint:
            return _adjoint_map(x, axis, idx, weight, size)
        return _apply_map(x, axis, idx, weight)

    @staticmethod
    def backward(ctx, grad):
        axis, idx, weight, size, adjoint = ctx.args
        return AxisMap.apply(grad, axis, idx, weight, size, adjoint)


class PlaneMap(Function):
    """``x[..., rows[i], cols[j]]`` for every (i, j): a map of the last two axes by index
    (``adjoint=True``: its transpose, each element added back into its source, planes of
    `size`).  The parameters are keywords: the node has one edge, its input's."""

    @staticmethod
    def forward(ctx, x, *, rows, cols, size, adjoint=False, name=None):
        if name is not None:
            ctx._name = name
        ctx.args = (rows, cols, x.shape[-2:], not adjoint, name)
        if adjoint:
            return _native_axis_map.scatter_planes(x, rows, cols, size)
        return _native_axis_map.gather_planes(x, rows, cols)

    @staticmethod
    def backward(ctx, grad):
        rows, cols, size, adjoint, name = ctx.args
        return PlaneMap.apply(grad, rows=rows, cols=cols, size=size, adjoint=adjoint,
                              name=name)


def axis_map(x: Tensor, axis: int, idx, weight=None, name: str | None = None) -> Tensor:
    """Resample `x` along `axis`: out[o] = sum_t weight[t, o] * x[idx[t, o]]."""
    xp = xp_of(x._data)
    idx = xp.asarray(idx, dtype=xp.int64)
    weight = None if weight is None else xp.asarray(weight)
    return AxisMap.apply(x, axis, idx, weight, x.shape[axis], False, name)


# ----------------------------------------------------------------------
# interpolate: the taps and weights of each mode along one dim

_CUBIC_A = -0.75


def _cubic_weights(t, a: float = _CUBIC_A):
    """Keys' cubic convolution weights of the 4 taps around a point at fraction t."""
    def near(s):  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s):  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)])


def _source(n_out: int, n_in: int, scale, align_corners: bool, clamp: bool):
    """Where each output position samples the input, in input coordinates."""
    i = np.arange(n_out, dtype=np.float64)
    if align_corners:
        return i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    ratio = 1.0 / scale if scale else n_in / n_out
    src = (i + 0.5) * ratio - 0.5
    return np.maximum(src, 0.0) if clamp else src


def _taps(mode: str, n_in: int, n_out: int, scale, align_corners: bool, antialias: bool):
    """(idx, weight) of shape (taps, n_out) for one dim."""
    ratio = 1.0 / scale if scale else n_in / n_out
    if mode in ("nearest", "nearest-exact"):
        shift = 0.5 if mode == "nearest-exact" else 0.0
        src = np.floor((np.arange(n_out) + shift) * ratio).astype(np.int64)
        return np.minimum(src, n_in - 1)[None], None
    if antialias:
        if align_corners:
            ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return _antialias_taps(mode, n_in, n_out, ratio)
    if mode == "linear":
        src = _source(n_out, n_in, scale, align_corners, clamp=True)
        i0 = np.floor(src).astype(np.int64)
        lam = src - i0
        i1 = np.minimum(i0 + 1, n_in - 1)
        return np.stack([np.minimum(i0, n_in - 1), i1]), np.stack([1 - lam, lam])
    src = _source(n_out, n_in, scale, align_corners, clamp=False)  # cubic
    i0 = np.floor(src).astype(np.int64)
    idx = np.clip(i0 + np.arange(-1, 3).reshape(-1, 1), 0, n_in - 1)
    return idx, _cubic_weights(src - i0)


def _antialias_taps(mode: str, n_in: int, n_out: int, ratio: float):
    """Windowed filter taps (PyTorch's ``antialias=True``, after PIL): a triangle or cubic
    filter, widened by the ratio when downsampling, normalized to sum to 1."""
    support = 1.0 if mode == "linear" else 2.0
    widen = max(ratio, 1.0)
    center = ratio * (np.arange(n_out) + 0.5)
    lo = np.maximum((center - support * widen + 0.5).astype(np.int64), 0)
    hi = np.minimum((center + support * widen + 0.5).astype(np.int64), n_in)
    taps = int((hi - lo).max())
    j = lo + np.arange(taps).reshape(-1, 1)
    s = np.abs((j - center + 0.5) / widen)
    if mode == "linear":
        w = np.maximum(1 - s, 0.0)
    else:  # cubic with a = -0.5, PIL's choice for antialiasing
        a = -0.5
        w = np.where(s < 1, ((a + 2) * s - (a + 3)) * s * s + 1,
                     np.where(s < 2, ((a * s - 5 * a) * s + 8 * a) * s - 4 * a, 0.0))
    w = np.where(j < hi, w, 0.0)
    w = w / w.sum(axis=0, keepdims=True)
    return np.minimum(j, n_in - 1), w


_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_NEEDS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_NAMES = {"nearest": "UpsampleNearest", "nearest-exact": "UpsampleNearestExact",
          "linear": "UpsampleLinear", "bilinear": "UpsampleBilinear",
          "bicubic": "UpsampleBicubic", "trilinear": "UpsampleTrilinear"}


def _output_size(input: Tensor, size, scale_factor, recompute_scale_factor) -> tuple:
    nd = input.dim() - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * nd
        if len(sizes) != nd:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {spatial} and output size of {size}. Please "
                "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format.")
        return tuple(int(s) for s in sizes), (None,) * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = (tuple(scale_factor) if isinstance(scale_factor, (tuple, list))
              else (scale_factor,) * nd)
    if len(scales) != nd:
        raise ValueError(
            "Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {spatial} and scale_factor of shape "
            f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
            "scale_factor in (s1, s2, ...,sK) format.")
    out = tuple(int(math.floor(n * float(s))) for n, s in zip(spatial, scales))
    if recompute_scale_factor:
        return out, (None,) * nd
    return out, tuple(float(s) for s in scales)


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) to `size` (or by `scale_factor`).

    Modes: 'nearest', 'nearest-exact', 'linear' (3-D input), 'bilinear', 'bicubic'
    (4-D), 'trilinear' (5-D), 'area' (adaptive average pooling).  `align_corners`
    maps the corner pixels' centers onto each other; `antialias` widens the filter
    when downsampling (bilinear/bicubic).

    >>> interpolate(ember.ones(1, 1, 2, 2), scale_factor=2).shape
    ember.Size([1, 1, 4, 4])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if mode not in _MODES or input.dim() not in (3, 4, 5):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})")
    if mode in _NEEDS and input.dim() != _NEEDS[mode]:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{_NEEDS[mode]}D input")
    if align_corners is not None and mode not in _NEEDS:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias and not (mode in ("bilinear", "bicubic") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    out_size, scales = _output_size(input, size, scale_factor, recompute_scale_factor)
    nd = input.dim() - 2
    if any(o <= 0 for o in out_size) or any(n <= 0 for n in input.shape[2:]):
        names = ("D", "H", "W")[3 - nd:]
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{k}: {n}" for k, n in zip(names, input.shape[2:])) + ") output ("
            + ", ".join(f"{k}: {n}" for k, n in zip(names, out_size)) + ")")
    if mode == "area":
        from .pooling_adaptive import _adaptive_avg  # (lazy: it imports this module)

        return _adaptive_avg(f"adaptive_avg_pool{nd}d", nd, input, out_size)
    if not input.is_floating_point():
        raise NotImplementedError(f"\"upsample_{mode}{nd}d\" not implemented for "
                                  f"'{input.dtype.name}'")
    kind = "linear" if mode in ("linear", "bilinear", "trilinear") else (
        "cubic" if mode == "bicubic" else mode)
    name = f"{_NAMES[mode]}{nd}D{'Aa' if antialias else ''}Backward0"
    y = input
    for d in range(nd):
        idx, weight = _taps(kind, input.shape[2 + d], out_size[d], scales[d],
                            bool(align_corners), antialias)
        y = axis_map(y, 2 + d, idx, weight, name)
    return y


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners=None) -> Tensor:
    """Deprecated alias of ``interpolate``."""
    import warnings

    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    import warnings

    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    import warnings

    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----------------------------------------------------------------------
# pixel shuffle


def _check_shuffle(op: str, input: Tensor, arg: str, factor) -> int:
    """The factor `arg` of pixel_shuffle / pixel_unshuffle as an int, after PyTorch's checks
    of it and of the input's rank."""
    r = int(factor)
    if input.dim() < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {arg}, but got {r}")
    return r


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): channel blocks become r x r patches."""
    r = _check_shuffle("pixel_shuffle", input, "upscale_factor", upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c}"
                           f" is not divisible by {r * r}")
    nl = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) with the channels of `groups` groups interleaved (ShuffleNet): channel
    ``g * (C / groups) + i`` moves to ``i * groups + g``."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W), the inverse of pixel_shuffle."""
    r = _check_shuffle("pixel_unshuffle", input, "downscale_factor", downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        dim, n = ("height", h) if h % r else ("width", w)
        raise RuntimeError(f"pixel_unshuffle expects {dim} to be divisible by "
                           f"downscale_factor, but input.size({-2 if dim == 'height' else -1})"
                           f"={n} is not divisible by {r}")
    nl = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


# ----------------------------------------------------------------------
# unfold / fold (im2col / col2im)


def _im2col(x, kernel, dilation, padding, stride):
    """(N, C, *size) -> (N, C * prod(kernel), L) columns of sliding windows."""
    xp = xp_of(x)
    nd = len(kernel)
    win = window_view(pad_array(x, padding, padding), kernel, stride, dilation)
    n, c = x.shape[:2]
    order = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    return xp.ascontiguousarray(win.transpose(order)).reshape(n, c * math.prod(kernel), -1)


def _col2im(cols, size, kernel, dilation, padding, stride):
    """The adjoint of _im2col: columns added back into an (N, C, *size) image."""
    xp = xp_of(cols)
    padded = tuple(s + 2 * p for s, p in zip(size, padding))
    out = tuple((n - d * (k - 1) - 1) // st + 1
                for n, k, d, st in zip(padded, kernel, dilation, stride))
    n = cols.shape[0]
    c = cols.shape[1] // math.prod(kernel)
    cols = cols.reshape((n, c) + tuple(kernel) + out)
    buf = xp.zeros((n, c) + padded, dtype=cols.dtype)
    for index, slices in kernel_offsets(kernel, stride, dilation, out):
        buf[(slice(None), slice(None)) + slices] += cols[(slice(None), slice(None)) + index]
    inner = tuple(slice(p, p + s) for p, s in zip(padding, size))
    return xp.ascontiguousarray(buf[(Ellipsis,) + inner]) if any(padding) else buf


class Im2Col(Function):
    """F.unfold: sliding windows as columns; its adjoint is Col2Im (F.fold)."""

    @staticmethod
    def forward(ctx, x, kernel, dilation, padding, stride):
        ctx.args = (tuple(x.shape[2:]), kernel, dilation, padding, stride)
        return _im2col(x, kernel, dilation, padding, stride)

    @staticmethod
    def backward(ctx, grad):
        return Col2Im.apply(grad, *ctx.args)


class Col2Im(Function):
    """F.fold: columns summed back into an image; its adjoint is Im2Col (F.unfold)."""

    @staticmethod
    def forward(ctx, cols, size, kernel, dilation, padding, stride):
        ctx.args = (kernel, dilation, padding, stride)
        return _col2im(cols, size, kernel, dilation, padding, stride)

    @staticmethod
    def backward(ctx, grad):
        return Im2Col.apply(grad, *ctx.args)


def _window_args(op: str, kernel_size, dilation, padding, stride) -> tuple:
    args = tuple(ntuple(v, 2, name, op) for v, name in
                 ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"),
                  (stride, "stride")))
    kernel, dilation, padding, stride = args
    for name, vals, low in (("kernel size", kernel, 1), ("dilation", dilation, 1),
                            ("padding", padding, 0), ("stride", stride, 1)):
        if any(v < low for v in vals):
            raise RuntimeError(f"{op}(): expected {name} to be "
                               f"{'non-negative' if low == 0 else 'greater than zero'}, but got "
                               f"{name.replace(' ', '_')}={list(vals)}")
    return args


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding local blocks: (N, C, H, W) -> (N, C * kH * kW, L) (im2col).

    >>> unfold(ember.ones(1, 2, 4, 4), 2).shape
    ember.Size([1, 8, 9])
    """
    kernel, dilation, padding, stride = _window_args("unfold", kernel_size, dilation, padding,
                                                     stride)
    if input.dim() not in (3, 4) or any(s == 0 for s in input.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    x, unbatched = (input.unsqueeze(0), True) if input.dim() == 3 else (input, False)
    size = x.shape[2:]
    blocks = [(n + 2 * p - d * (k - 1) - 1) // s + 1
              for n, k, d, p, s in zip(size, kernel, dilation, padding, stride)]
    if any(b < 1 for b in blocks):
        raise RuntimeError(
            f"Given input with spatial size ({size[0]}, {size[1]}), kernel_size={kernel}, "
            f"dilation={dilation}, padding={padding}, calculated shape of the array of "
            f"sliding blocks as ({blocks[0]}, {blocks[1]}), but its components must be at "
            "least one.")
    out = Im2Col.apply(x, kernel, dilation, padding, stride)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Combine sliding blocks into an image, summing overlaps: (N, C * kH * kW, L) ->
    (N, C, *output_size) (col2im, the adjoint of unfold)."""
    size = ntuple(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _window_args("fold", kernel_size, dilation, padding,
                                                     stride)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions, but got: {list(input.shape)}")
    x, unbatched = (input.unsqueeze(0), True) if input.dim() == 2 else (input, False)
    k = math.prod(kernel)
    if x.shape[1] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={kernel}")
    blocks = [(n + 2 * p - d * (kk - 1) - 1) // s + 1
              for n, kk, d, p, s in zip(size, kernel, dilation, padding, stride)]
    if math.prod(blocks) != x.shape[2] or any(b < 1 for b in blocks):
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, stride={stride}, expected size of input's dimension 2 to "
            f"match the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{math.prod(blocks)}, but got input.size(2)={x.shape[2]}.")
    out = Col2Im.apply(x, size, kernel, dilation, padding, stride)
    return out.squeeze(0) if unbatched else out
