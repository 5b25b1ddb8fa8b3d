"""Pooling: max, average and Lp pooling over 1, 2 or 3 dims (adaptive pooling and
max-unpooling: pooling_adaptive.py).

One N-d implementation on the window machinery of conv.py: a pooled value is a
reduction over the kernel positions, computed as a loop over the k^d kernel offsets,
each one a strided slice of the padded input covering every output at once (never a
loop over pixels).

Max pooling remembers, for each output, the flat index of its maximum within the
input's spatial plane (PyTorch's ``return_indices``).  Its gradient scatters by those
indices (`FlatScatter`), whose own gradient is a gather (`FlatGather`): the two are
each other's backward, so double backward works.  Average pooling and its adjoint
(`AvgPool` / `AvgPoolAdjoint`) pair up the same way.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np

from .._core.function import Function
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor
from . import _native_pool
from ._util import xp_of
from .conv_arrays import kernel_offsets, pad_array
from .arithmetic import abs as abs_
from .elementwise import relu, sign

_INTS = (int, np.integer)

# ----------------------------------------------------------------------
# scatter / gather by flat spatial index (max pooling's gradient, max_unpool, grid_sample)


def _scatter_array(g, idx, size: tuple, unique: bool):
    """g (N, C, *out) added into zeros (N, C, *size) at flat spatial indices `idx`."""
    if _native_pool.scatter_supported(g, idx):
        out = _native_pool.scatter(g, idx, size)
        if out is not None:
            return out
    xp = xp_of(g)
    n, c = g.shape[:2]
    plane = math.prod(size)
    g = g.reshape(n, c, -1)
    # indices into the flattened (N * C * plane) output
    flat = (idx.reshape(idx.shape[:2] + (-1,))
            + xp.arange(0, n * c * plane, plane).reshape(n, c, 1)).reshape(-1)
    if unique:  # every target hit at most once: a plain indexed write
        out = xp.zeros(n * c * plane, dtype=g.dtype)
        out[flat] = g.reshape(-1)
    else:
        # NOTE: bincount sums in float64 whatever the dtype of the weights.
        out = xp.bincount(flat, weights=g.reshape(-1), minlength=n * c * plane)
        out = out.astype(g.dtype, copy=False)
    return out.reshape((n, c) + tuple(size))


def _gather_array(x, idx):
    """x (N, C, *size) read at flat spatial indices `idx` (broadcastable to (N, C, *out))."""
    xp = xp_of(x)
    n, c = x.shape[:2]
    out_shape = (n, c) + idx.shape[2:]
    flat = xp.broadcast_to(idx, out_shape).reshape(n, c, -1)
    return xp.take_along_axis(x.reshape(n, c, -1), flat, axis=2).reshape(out_shape)


class FlatGather(Function):
    """``x[n, c, idx[n, c, ...]]`` with x's spatial dims flattened: (N, C, *out)."""

    @staticmethod
    def forward(ctx, x, idx, unique=False, name=None):
        if name is not None:
            ctx._name = name
        ctx.idx, ctx.size, ctx.unique = idx, x.shape[2:], unique
        return _gather_array(x, idx)

    @staticmethod
    def backward(ctx, grad):
        return FlatScatter.apply(grad, ctx.idx, ctx.size, ctx.unique)


class FlatScatter(Function):
    """The adjoint of FlatGather: g (N, C, *out) summed into zeros (N, C, *size) at `idx`."""

    @staticmethod
    def forward(ctx, g, idx, size, unique=False, name=None):
        if name is not None:
            ctx._name = name
        ctx.idx, ctx.unique = idx, unique
        return _scatter_array(g, idx, tuple(size), unique)

    @staticmethod
    def backward(ctx, grad):
        return FlatGather.apply(grad, ctx.idx, ctx.unique)


# ----------------------------------------------------------------------
# geometry


class PoolGeometry(NamedTuple):
    """Windows of a pooling op: input `size`, `kernel`, `stride`, `pad` (both sides),
    `dilation`, output shape `out` and the padding `hi` the last window needs at the end."""

    size: tuple
    kernel: tuple
    stride: tuple
    pad: tuple
    dilation: tuple
    out: tuple

    @property
    def hi(self) -> tuple:
        return tuple(max(p, (o - 1) * s + d * (k - 1) + 1 - n - p) for n, k, s, p, d, o in
                     zip(self.size, self.kernel, self.stride, self.pad, self.dilation, self.out))

    def disjoint(self) -> bool:
        """True when no input element lies in two windows (gradients never collide)."""
        return all(s >= d * (k - 1) + 1 for k, s, d in zip(self.kernel, self.stride,
                                                          self.dilation))


def _pool_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def _tuple_arg(op: str, value, nd: int, name: str, default=None) -> tuple:
    words = {1: "a single int", 2: "a tuple of two ints", 3: "a tuple of three ints"}
    if value is None or (isinstance(value, (tuple, list)) and len(value) == 0):
        if default is not None:
            return default
    if isinstance(value, _INTS):
        return (int(value),) * nd
    if (isinstance(value, (tuple, list)) and len(value) in (1, nd)
            and all(isinstance(v, _INTS) for v in value)):
        return tuple(int(v) for v in value) * (nd if len(value) == 1 else 1)
    lead = "stride must either be omitted, a single int" if name == "stride" else (
        f"{name} must either be a single int")
    raise RuntimeError(f"{op}: {lead}, or {words.get(nd, f'a tuple of {nd} ints')}")


def _batched(op: str, input: Tensor, nd: int) -> tuple:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dim() not in (nd + 1, nd + 2) or any(  # only the batch dim may be empty
            s == 0 for s in input.shape[input.dim() - nd - 1:]):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got:"
                           f"{list(input.shape)}")
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    return input, False


def _geometry(op: str, nd: int, x: Tensor, kernel_size, stride, padding, dilation,
              ceil_mode: bool) -> PoolGeometry:
    kernel = _tuple_arg(op, kernel_size, nd, "kernel_size")
    stride = _tuple_arg(op, stride, nd, "stride", default=kernel)
    pad = _tuple_arg(op, padding, nd, "padding")
    dilation = _tuple_arg(op, dilation, nd, "dilation")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got {list(kernel)}")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got {list(stride)}")
    if any(p < 0 for p in pad):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(pad)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    for k, p, d in zip(kernel, pad, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    size = tuple(x.shape[2:])
    out = tuple(_pool_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(size, kernel, stride, pad, dilation))
    if any(o <= 0 for o in out):
        c = x.shape[1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + size))}). Calculated "
                           f"output size: ({'x'.join(map(str, (c,) + out))}). Output size is "
                           "too small")
    return PoolGeometry(size, kernel, stride, pad, dilation, out)


@functools.lru_cache(maxsize=64)
def _max_pool_tables(geo: PoolGeometry) -> tuple:
    """(slices, offsets, corner) of a max pooling geometry.  For each kernel position,
    `slices` pick from the padded input the element every output reads there, and that
    element's flat index in the unpadded input plane is ``offsets[t] + corner``.  Cached:
    a model pools the same geometry at every step, and building these is a dozen small
    NumPy calls."""
    corner, step = 0, 1
    for d in reversed(range(len(geo.size))):
        shape = [1] * len(geo.size)
        shape[d] = geo.out[d]
        start = np.arange(geo.out[d]) * geo.stride[d] - geo.pad[d]
        corner = corner + start.reshape(shape) * step
        step *= geo.size[d]
    positions = list(kernel_offsets(geo.kernel, geo.stride, geo.dilation, geo.out))
    offsets = np.array([sum(i * d * math.prod(geo.size[k + 1:])
                            for k, (i, d) in enumerate(zip(index, geo.dilation)))
                        for index, _ in positions], dtype=np.int64)
    corner = np.asarray(corner, dtype=np.int64)
    offsets.flags.writeable = corner.flags.writeable = False
    return tuple(slices for _, slices in positions), offsets, corner


def _first_inside(xp, geo: PoolGeometry):
    """Number (row-major) of each window's first kernel position inside the input."""
    number, step = 0, 1
    for d in reversed(range(len(geo.size))):
        shape = [1] * len(geo.size)
        shape[d] = geo.out[d]
        start = xp.arange(geo.out[d]) * geo.stride[d] - geo.pad[d]
        first = xp.where(start < 0, -(start // geo.dilation[d]), 0)
        number = number + first.reshape(shape) * step
        step *= geo.kernel[d]
    return number


# ----------------------------------------------------------------------
# max pooling


def _padded_low(x, geo: PoolGeometry):
    """(xp, whether x is floating, the lowest value, x padded with it) for max pooling."""
    xp = xp_of(x)
    floating = x.dtype.kind in "fc" or x.dtype.name == "bfloat16"
    low = -xp.inf if floating else xp.iinfo(x.dtype).min
    return xp, floating, low, pad_array(x, geo.pad, geo.hi, low)


def _max_pool_array(x, geo: PoolGeometry):
    """(values, flat indices) of the window maxima; NaN wins, ties keep the first.  The
    indices are int64, or int32 from the numba kernel (planes under 2**31 elements)."""
    if len(geo.size) == 2 and _native_pool.supports(x) and math.prod(geo.size) < 2**31:
        return _native_pool.max_pool2d(x, geo, with_index=True)
    xp, floating, low, padded = _padded_low(x, geo)
    best, which = _max_scan(xp, padded, geo, low, nan_aware=False)
    # NaN must win its window (the last NaN, as in PyTorch). `maximum` has carried any NaN
    # into `best`; only then is the scan redone with the per-position NaN tests.
    if floating and best.size and bool(xp.isnan(best.max())):
        best, which = _max_scan(xp, padded, geo, low, nan_aware=True)
    _, offsets, corner = _max_pool_tables(geo)
    offsets, corner = xp.asarray(offsets), xp.asarray(corner)
    idx = offsets[which]
    idx += corner
    return best, idx


def _max_scan(xp, padded, geo: PoolGeometry, low, nan_aware: bool):
    """(window maxima, number of the kernel position holding each) over `padded`."""
    positions = _max_pool_tables(geo)[0]
    lead = padded.shape[:2]
    small_int = xp.int8 if len(positions) < 128 else xp.int32
    if any(geo.pad):
        best = xp.full(lead + geo.out, low, dtype=padded.dtype)
        # which kernel position won, starting from the first one inside the input (where
        # PyTorch points when every value is -inf)
        which = xp.empty(lead + geo.out, dtype=small_int)
        which[...] = _first_inside(xp, geo)
        begin = 0
    else:  # every window starts inside the input: begin with its first position
        best = padded[(Ellipsis,) + positions[0]].copy()
        which = xp.zeros(lead + geo.out, dtype=small_int)
        begin = 1
    for t in range(begin, len(positions)):
        v = padded[(Ellipsis,) + positions[t]]
        hit = v > best
        if nan_aware:
            hit |= xp.isnan(v)
        # NOTE: arithmetic blends, not masked copies (copyto(where=) is ~8x slower)
        which += hit * (t - which)
        xp.maximum(best, v, out=best)                      # NaN propagates, as hit says
    return best, which


def _max_pool_values(x, geo: PoolGeometry):
    """The window maxima alone (NaN wins, through `maximum`): one running maximum over
    the kernel positions, without `_max_scan`'s bookkeeping of which position won."""
    if len(geo.size) == 2 and _native_pool.supports(x):
        return _native_pool.max_pool2d(x, geo, with_index=False)[0]
    xp, _, _, padded = _padded_low(x, geo)
    positions = _max_pool_tables(geo)[0]
    best = padded[(Ellipsis,) + positions[0]].copy()
    for position in positions[1:]:
        xp.maximum(best, padded[(Ellipsis,) + position], out=best)
    return best


class MaxPoolValues(Function):
    """Max pooling for calls that need neither the indices nor a gradient (inference):
    the values alone, about half the work of `MaxPool`.  Never recorded (see _max_pool)."""

    @staticmethod
    def forward(ctx, x, geo):
        return _max_pool_values(x, geo)


class MaxPool(Function):
    """Max pooling; returns (values, indices), the indices non-differentiable."""

    _fresh_grads = True  # the gradient is scattered into a new array
    _materialize_grads = False  # (no zeros made for the integer indices' "gradient")

    @staticmethod
    def forward(ctx, x, geo, indices_returned=True):
        ctx._name = f"MaxPool{len(geo.size)}DWithIndicesBackward0"
        out, idx = _max_pool_array(x, geo)
        ctx.idx, ctx.size, ctx.unique = idx, geo.size, geo.disjoint()
        if indices_returned and idx.dtype != np.int64:  # (the graph keeps the int32 ones)
            idx = idx.astype(np.int64)
        return out, idx

    @staticmethod
    def backward(ctx, grad, _grad_idx):
        return FlatScatter.apply(grad, ctx.idx, ctx.size, ctx.unique)


def _max_pool(op: str, nd: int, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    x, unbatched = _batched(op, input, nd)
    geo = _geometry(op, nd, x, kernel_size, stride, padding, dilation, ceil_mode)
    if not return_indices and not (x.requires_grad and is_grad_enabled()):
        out = MaxPoolValues.apply(x, geo)
        return out.squeeze(0) if unbatched else out
    # (the caller never sees the indices unless it asks: then they must be int64)
    out, idx = MaxPool.apply(x, geo, indices_returned=return_indices)
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """1-D max pooling over (N, C, L) or (C, L); with `return_indices` also the argmax
    positions (flat within L), as max_unpool1d wants them."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """2-D max pooling over (N, C, H, W) or (C, H, W); `stride` defaults to the kernel
    size, `padding` counts as -inf, `ceil_mode` keeps a last partial window.

    >>> max_pool2d(ember.arange(16.).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool1d`` returning (values, indices) always."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool2d`` returning (values, indices) always."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """``max_pool3d`` returning (values, indices) always."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ----------------------------------------------------------------------
# average pooling


def _divisor(xp, geo: PoolGeometry, count_include_pad: bool, divisor_override):
    """The number each window's sum is divided by, per output position."""
    if divisor_override is not None:
        return divisor_override
    div = 1
    for d, (n, k, s, p, o) in enumerate(zip(geo.size, geo.kernel, geo.stride, geo.pad,
                                            geo.out)):
        start = xp.arange(o) * s - p
        end = xp.minimum(start + k, n + p)
        if count_include_pad:
            length = end - start
        else:
            length = xp.minimum(end, n) - xp.maximum(start, 0)
        shape = [1] * len(geo.size)
        shape[d] = o
        div = div * length.reshape(shape)
    return div


def _avg_pool_array(x, geo: PoolGeometry, divisor):
    xp = xp_of(x)
    padded = pad_array(x, geo.pad, geo.hi, 0)
    floating = x.dtype.kind in "fc" or x.dtype.name == "bfloat16"
    total = xp.zeros(x.shape[:2] + geo.out, dtype=x.dtype if floating else xp.int64)
    for _, slices in kernel_offsets(geo.kernel, geo.stride, geo.dilation, geo.out):
        total += padded[(Ellipsis,) + slices]
    if floating:
        return total / xp.asarray(divisor, dtype=x.dtype)
    return xp.trunc(total / divisor).astype(x.dtype)


def _tiles(geo: PoolGeometry) -> bool:
    """Whether the windows tile the input exactly: stride = kernel, no padding or
    dilation, and the sizes whole multiples of the kernel (the usual 2x2 pooling)."""
    return (tuple(geo.stride) == tuple(geo.kernel) and not any(geo.pad) and not any(geo.hi)
            and all(d == 1 for d in geo.dilation)
            and all(n == o * k for n, o, k in zip(geo.size, geo.out, geo.kernel)))


def _avg_pool_adjoint_array(g, geo: PoolGeometry, divisor):
    xp = xp_of(g)
    share = g / xp.asarray(divisor, dtype=g.dtype)
    if _tiles(geo):
        # each input position gets its window's share once: written tap by tap into an
        # empty array, not added into a zeroed one ((8, 64, 32, 32) 2x2 float32 backward:
        # docs/performance.md, twenty-ninth session)
        out = xp.empty(g.shape[:2] + tuple(geo.size), dtype=g.dtype)
        tiles = out.reshape(g.shape[:2] + tuple(x for o, k in zip(geo.out, geo.kernel)
                                                for x in (o, k)))
        for tap in itertools.product(*(range(k) for k in geo.kernel)):
            tiles[(Ellipsis,) + tuple(x for t in tap for x in (slice(None), t))] = share
        return out
    full = tuple(n + p + h for n, p, h in zip(geo.size, geo.pad, geo.hi))
    buf = xp.zeros(g.shape[:2] + full, dtype=g.dtype)
    for _, slices in kernel_offsets(geo.kernel, geo.stride, geo.dilation, geo.out):
        buf[(Ellipsis,) + slices] += share
    inner = tuple(slice(p, p + n) for p, n in zip(geo.pad, geo.size))
    return xp.ascontiguousarray(buf[(Ellipsis,) + inner])


class AvgPool(Function):
    """Average pooling: window sums divided by `divisor` (a scalar or per-output array)."""

    @staticmethod
    def forward(ctx, x, geo, divisor):
        ctx._name = f"AvgPool{len(geo.size)}DBackward0"
        ctx.geo, ctx.divisor = geo, divisor
        return _avg_pool_array(x, geo, divisor)

    @staticmethod
    def backward(ctx, grad):
        return AvgPoolAdjoint.apply(grad, ctx.geo, ctx.divisor)


class AvgPoolAdjoint(Function):
    """The adjoint of AvgPool: each output's share spread back over its window."""

    @staticmethod
    def forward(ctx, g, geo, divisor):
        ctx.geo, ctx.divisor = geo, divisor
        return _avg_pool_adjoint_array(g, geo, divisor)

    @staticmethod
    def backward(ctx, grad):
        return AvgPool.apply(grad, ctx.geo, ctx.divisor)


def _avg_pool(op: str, nd: int, input, kernel_size, stride, padding, ceil_mode,
              count_include_pad, divisor_override):
    x, unbatched = _batched(op, input, nd)
    geo = _geometry(op, nd, x, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    divisor = _divisor(xp_of(x._data), geo, count_include_pad, divisor_override)
    out = AvgPool.apply(x, geo, divisor)
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-D average pooling over (N, C, L) or (C, L)."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """2-D average pooling.  Zero padding counts in the average unless
    `count_include_pad` is False; `divisor_override` replaces the window size."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ----------------------------------------------------------------------
# Lp pooling


def _lp_pool(op: str, nd: int, input, norm_type, kernel_size, stride, ceil_mode) -> Tensor:
    kernel = _tuple_arg(op, kernel_size, nd, "kernel_size")
    pooled = _avg_pool(op, nd, input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None)
    # sign * relu(abs) keeps the gradient at zero sums finite, as PyTorch does.
    return (sign(pooled) * relu(abs_(pooled))).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """Power-average pooling: ``(sum over the window of x^p)^(1/p)``."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """2-D power-average pooling: ``(sum over the window of x^p)^(1/p)``."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """3-D power-average pooling: ``(sum over the window of x^p)^(1/p)``."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)
