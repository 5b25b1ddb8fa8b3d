"""Fractional max pooling (Graham, 2014): max over windows placed at pseudo-random strides.

For each (sample, channel) plane one random number u in [0, 1) per spatial dimension fixes
where the windows start: with ``alpha = (in - k) / (out - 1)``, window i starts at
``floor((i + u) alpha) - floor(u alpha)`` and the last one at ``in - k``.  The windows are
gathered from the input (``gather``, whose gradient serves) and reduced with ``max``.
The random numbers come from ember's generator, or from ``_random_samples`` (N, C, nd) as
in PyTorch, whose last axis lists the dimensions from the last one backwards for 2-D
(W, H) and from the first for 3-D (T, H, W).
"""

from __future__ import annotations

import numpy as np

from .._core.tensor import Tensor
from .sampling import rand
from .creation import tensor
from .scatter import gather

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _as_tuple(value, nd: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * nd


def _window_starts(u: np.ndarray, size: int, out: int, k: int) -> np.ndarray:
    """Window starts (..., out) for the samples u (...); arithmetic in u's dtype, as PyTorch."""
    starts = np.empty(u.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = u.dtype.type(size - k) / u.dtype.type(out - 1)
        steps = np.arange(out - 1, dtype=u.dtype)
        first = np.floor(u * alpha).astype(np.int64)
        starts[..., :-1] = (np.floor((steps + u[..., None]) * alpha).astype(np.int64)
                            - first[..., None])
    starts[..., -1] = size - k
    return starts


def _fractional_max_pool(op: str, nd: int, input: Tensor, kernel_size, output_size,
                         output_ratio, random_samples) -> tuple:
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{tuple(input.shape)}")
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    kernel = _as_tuple(kernel_size, nd)
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an "
                             "output_ratio")
        ratio = _as_tuple(output_ratio, nd)
        out = tuple(int(s * r) for s, r in zip(spatial, ratio, strict=True))
    else:
        out = _as_tuple(output_size, nd)
    names = ("time", "height", "width")[-nd:]
    for name, s, o, k in zip(names, spatial, out, kernel, strict=True):
        if o + k - 1 > s:
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} "
                               f"{s}")
    if random_samples is None:
        random_samples = rand(n, c, nd, dtype=x.dtype, device=x.device)
    u = np.asarray(random_samples.detach().cpu().numpy())
    if u.shape != (n, c, nd):
        raise RuntimeError(f"{op}(): expected _random_samples of shape {(n, c, nd)}, got "
                           f"{u.shape}")
    order = range(nd - 1, -1, -1) if nd == 2 else range(nd)  # sample axis -> spatial dim
    flat = np.zeros((n, c) + out + kernel, dtype=np.int64)
    stride = 1
    for dim in range(nd - 1, -1, -1):
        sample_axis = list(order).index(dim)
        starts = _window_starts(u[..., sample_axis], spatial[dim], out[dim], kernel[dim])
        rows = starts[..., None] + np.arange(kernel[dim])  # (n, c, out_d, k_d)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + dim], shape[2 + nd + dim] = out[dim], kernel[dim]
        flat = flat + rows.reshape(shape) * stride
        stride *= spatial[dim]
    index = tensor(flat.reshape(n, c, -1), device=x.device)
    windows = gather(x.reshape(n, c, -1), 2, index).reshape((n, c) + out + (-1,))
    values, which = windows.max(dim=-1)
    indices = gather(index.reshape((n, c) + out + (-1,)), -1, which.unsqueeze(-1)).squeeze(-1)
    if unbatched:
        return values.squeeze(0), indices.squeeze(0)
    return values, indices


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None) -> tuple:
    """Fractional max pooling of (N, C, H, W) or (C, H, W); returns (output, flat indices)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """Max over k x k windows at pseudo-random positions, to ``output_size`` (or the input
    size times ``output_ratio``); with ``return_indices`` also the flat h * W + w indices.
    """
    result = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                _random_samples=_random_samples)
    return result if return_indices else result[0]


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples=None) -> tuple:
    """Fractional max pooling of (N, C, T, H, W) or (C, T, H, W); returns (output, indices)."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    """The 3-D form of :func:`fractional_max_pool2d` (flat indices t * H * W + h * W + w)."""
    result = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                _random_samples=_random_samples)
    return result if return_indices else result[0]
