"""Adaptive pooling (to a fixed output size, whatever the input size) and max-unpooling.

Adaptive windows split each input dim as evenly as possible: output i covers
``[floor(i * n / o), ceil((i + 1) * n / o))``.  Average pooling over such windows is
separable, one sparse linear map per dim (resample.py's `AxisMap`); max pooling gathers
every window by index (padded to the widest window by repeating its last element) and
keeps the argmax, its gradient scattering back by index like max_pool's.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.tensor import Tensor, _make
from ._util import check_same_device, xp_of
from .pooling import _INTS, FlatGather, FlatScatter, _tuple_arg
from .resample import axis_map


# ----------------------------------------------------------------------
# adaptive pooling


def _adaptive_output(op: str, nd: int, x: Tensor, output_size) -> tuple:
    size = tuple(x.shape[2:])
    if isinstance(output_size, _INTS) or output_size is None:
        output_size = (output_size,) * nd
    output_size = tuple(output_size)
    if len(output_size) != nd:
        raise RuntimeError(f"{op}: output_size must be {nd}")
    out = tuple(n if o is None else int(o) for o, n in zip(output_size, size))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, out))}}}")
    return out


def adaptive_windows(n: int, o: int):
    """Start and end of the o windows that split length n as evenly as possible."""
    i = np.arange(o)
    return (i * n) // o, -((-(i + 1) * n) // o)


def _adaptive_batched(op: str, input, nd: int):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    for d in range(input.dim() - nd, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(
                f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(input.shape)} with dimension {d} being empty")
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    return input, False


def _adaptive_avg(op: str, nd: int, input, output_size) -> Tensor:
    x, unbatched = _adaptive_batched(op, input, nd)
    out_size = _adaptive_output(op, nd, x, output_size)
    if all(o == 1 for o in out_size) and x.dtype.is_floating_point:
        # global average pooling (a classifier's head): one mean, MeanBackward1 as in
        # PyTorch; the window maps below took 7.3 ms for (8, 64, 32, 32) forward and
        # backward against PyTorch's 0.19 (2-core Intel Xeon, 2026-12-06)
        return input.mean(tuple(range(input.dim() - nd, input.dim())), keepdim=True)
    y = x
    for d, (n, o) in enumerate(zip(x.shape[2:], out_size)):
        if n == o:
            continue
        start, end = adaptive_windows(n, o)
        taps = int((end - start).max()) if o else 1
        t = np.arange(taps).reshape(-1, 1)
        idx = np.minimum(start + t, np.maximum(end - 1, 0))
        weight = np.where(start + t < end, 1.0 / np.maximum(end - start, 1), 0.0)
        y = axis_map(y, 2 + d, idx, weight, f"AdaptiveAvgPool{nd}DBackward0")
    if y is x:
        y = x * 1  # a new tensor, as PyTorch always returns one
    return y.squeeze(0) if unbatched else y


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed output length, windows spread evenly over the input."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed (H, W) output (an int, a pair, None keeps a size).

    >>> adaptive_avg_pool2d(ember.ones(1, 3, 7, 7), 1).shape
    ember.Size([1, 3, 1, 1])
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling to a fixed (D, H, W) output."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(op: str, nd: int, input, output_size, return_indices: bool):
    x, unbatched = _adaptive_batched(op, input, nd)
    out_size = _adaptive_output(op, nd, x, output_size)
    size = tuple(x.shape[2:])
    xp = xp_of(x._data)
    # flat index of every (output, window tap) pair: (P, taps), windows clipped by repetition
    flat = np.zeros((1,) * (2 * nd), dtype=np.int64)
    step = math.prod(size)
    for d, (n, o) in enumerate(zip(size, out_size)):
        step //= n
        start, end = adaptive_windows(n, o)
        taps = int((end - start).max()) if o else 1
        idx = np.minimum(start.reshape(-1, 1) + np.arange(taps), np.maximum(end - 1, 0)[:, None])
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = o, taps
        flat = flat + (idx * step).reshape(shape)
    taps_total = math.prod(flat.shape[nd:])
    flat = xp.asarray(flat.reshape(-1, taps_total))              # (P, T)
    n, c = x.shape[:2]
    windows = xp.take(x._data.reshape(n, c, -1), flat.reshape(-1), axis=2)
    best = xp.argmax(windows.reshape(n, c, -1, taps_total), axis=3)  # first max, or NaN
    idx = flat[xp.arange(flat.shape[0]), best].reshape((n, c) + out_size)
    out = FlatGather.apply(x, idx, False, f"AdaptiveMaxPool{nd}DBackward0")
    indices = _make(idx)
    if unbatched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return (out, indices) if return_indices else out


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a fixed output length (with `return_indices`, also the argmax)."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a fixed (H, W) output (with `return_indices`, also the argmax)."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling to a fixed (D, H, W) output (with `return_indices`, also the argmax)."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool1d`` returning (values, indices) always."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` returning (values, indices) always."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool3d`` returning (values, indices) always."""
    return adaptive_max_pool3d(input, output_size, True)


# ----------------------------------------------------------------------
# max unpooling


def _max_unpool(op: str, nd: int, input, indices, kernel_size, stride, padding, output_size):
    if not isinstance(indices, Tensor) or indices.dtype.name != "int64":
        got = indices.dtype if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"elements in indices should be type int64 but got: {got}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    check_same_device(op, input, indices)
    kernel = _tuple_arg(op, kernel_size, nd, "kernel_size")
    stride = _tuple_arg(op, stride, nd, "stride", default=kernel)
    pad = _tuple_arg(op, padding, nd, "padding")
    x, unbatched = (input.unsqueeze(0), True) if input.dim() == nd + 1 else (input, False)
    if x.dim() != nd + 2:
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    idx = indices.unsqueeze(0) if unbatched else indices
    size = _unpool_size(x, kernel, stride, pad, output_size)
    flat = idx._data
    plane = math.prod(size)
    outside = (flat < 0) | (flat >= plane)
    if outside.any():
        bad = int(flat[outside].reshape(-1)[0])
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))})")
    # A plain indexed write: where indices repeat, one of the values is kept, as in PyTorch.
    out = FlatScatter.apply(x, flat, size, True, f"MaxUnpool{nd}DBackward0")
    return out.squeeze(0) if unbatched else out


def _unpool_size(x: Tensor, kernel, stride, pad, output_size) -> tuple:
    nd = len(kernel)
    default = tuple((n - 1) * s - 2 * p + k for n, k, s, p in
                    zip(x.shape[2:], kernel, stride, pad))
    if output_size is None:
        return default
    output_size = tuple(int(v) for v in output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d, (o, dflt, s) in enumerate(zip(output_size, default, stride)):
        if not dflt - s < o < dflt + s:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{dflt - s} and {dflt + s})")
    return output_size


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of max_pool1d: each value written back at its index, zeros
    elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of max_pool2d (indices from ``return_indices=True``)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """The partial inverse of max_pool3d."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)
