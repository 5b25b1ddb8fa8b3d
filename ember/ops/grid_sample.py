"""Sampling at arbitrary points: grid_sample (bilinear, nearest, bicubic; zeros, border or
reflection padding) and affine_grid, the grid of an affine transform.

grid_sample gathers each output's neighbours by flat spatial index (pooling.py's
`FlatGather`, whose gradient scatters back into the input) and weights them with
factors computed from the grid by ember ops, so the gradient with respect to the grid
(and every higher-order one) comes from autograd itself.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import warnings

import numpy as np

from .._core.tensor import Tensor, _make
from ._util import xp_of
from .pooling import FlatGather

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")
_A = -0.75  # the cubic convolution coefficient PyTorch uses


def _const(array, like: Tensor) -> Tensor:
    """A constant tensor (no gradient) of `like`'s dtype."""
    return _make(xp_of(like._data).asarray(array, dtype=like._data.dtype))


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """Grid values in [-1, 1] as pixel coordinates in [0, size - 1] (or the pixel edges)."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: float, twice_high: float) -> Tensor:
    """Fold coordinates back into [low, high] by mirroring at the ends (any number of times)."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    xp = xp_of(dist._data)
    flips = xp.floor(dist._data / span)
    odd = xp.mod(flips, 2)
    # extra = dist - flips * span, mirrored back on odd flips
    sign = _const(1 - 2 * odd, coord)
    offset = _const(low - flips * span * sign._data + odd * span, coord)
    return dist * sign + offset


def _source(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Pixel coordinates with border/reflection padding applied (bilinear and nearest)."""
    x = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        return x.clamp(0, size - 1)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return x.clamp(0, size - 1)
    return x


def _pad_index(i, size: int, padding_mode: str, align_corners: bool):
    """Integer tap positions mapped by the padding mode (bicubic taps), and in-bounds mask."""
    xp = xp_of(i)
    if padding_mode == "border":
        i = xp.clip(i, 0, size - 1)
    elif padding_mode == "reflection":
        low2, high2 = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if low2 == high2:
            i = xp.zeros_like(i)
        else:
            low, span = low2 / 2, (high2 - low2) / 2
            d = xp.abs(i - low)
            flips = xp.floor(d / span)
            extra = d - flips * span
            i = xp.where(xp.mod(flips, 2) == 0, extra + low, span - extra + low)
            i = xp.clip(i, 0, size - 1).astype(xp.int64)
    return i, (i >= 0) & (i < size)


def _cubic(t: Tensor) -> list:
    """The four cubic-convolution weights of taps -1, 0, 1, 2 at fraction t (ember ops)."""
    def near(s):
        return ((s * (_A + 2)) - (_A + 3)) * s * s + 1

    def far(s):
        return ((s * _A - 5 * _A) * s + 8 * _A) * s - 4 * _A
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _flat_index(parts, sizes):
    """Flat spatial index from per-dim integer positions (clipped into range)."""
    xp = xp_of(parts[0])
    flat, step = 0, 1
    for pos, n in zip(reversed(parts), reversed(sizes)):
        flat = flat + xp.clip(pos, 0, n - 1) * step
        step *= n
    return flat


def _sample(input: Tensor, taps: list, sizes) -> Tensor:
    """Sum over the taps (per dim: positions, in-bounds masks, weight tensors) of
    weight * input[position]: the one gather-and-weight loop behind every mode."""
    n = input.shape[0]
    out = None
    for combo in itertools.product(*[range(len(t[0])) for t in taps]):
        parts = [taps[d][0][j] for d, j in enumerate(combo)]
        inside = functools.reduce(operator.and_, [taps[d][1][j] for d, j in enumerate(combo)])
        idx = _flat_index(parts, sizes)                          # (N, *out)
        value = FlatGather.apply(input, idx.reshape((n, 1) + idx.shape[1:]))
        weight = _const(inside, value)
        for d, j in enumerate(combo):
            w = taps[d][2][j]
            if w is not None:
                weight = weight * w
        term = value * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _default_align_corners(align_corners: bool | None) -> bool:
    """False for None, with PyTorch's warning that the default changed (said at the caller's
    caller: the user's line)."""
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", UserWarning, stacklevel=3)
        return False
    return align_corners


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample `input` (N, C, H, W) at the points of `grid` (N, H_out, W_out, 2), given as
    (x, y) in [-1, 1]; 5-D input takes a (N, D, H, W, 3) grid of (x, y, z).

    `mode` is 'bilinear', 'nearest' or 'bicubic' (4-D only); points outside the input
    read zeros, the border value, or the input mirrored (`padding_mode`).
    """
    if mode not in _MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDING:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = _default_align_corners(align_corners)
    _check_grid(input, grid, mode)
    nd = input.dim() - 2
    sizes = tuple(input.shape[2:])
    xp = xp_of(grid._data)
    taps = []
    for d in range(nd):
        coord = grid[..., nd - 1 - d]                 # grid holds (x, y, z): last dim first
        if mode == "bicubic":
            x = _unnormalize(coord, sizes[d], align_corners)
            base = xp.floor(x._data).astype(xp.int64)
            t = x - _const(base, x)
            pos, inside = zip(*(_pad_index(base + k, sizes[d], padding_mode, align_corners)
                                for k in (-1, 0, 1, 2)))
            taps.append((pos, inside, _cubic(t)))
            continue
        x = _source(coord, sizes[d], padding_mode, align_corners)
        if mode == "nearest":
            pos = xp.rint(x._data).astype(xp.int64)   # round half to even, as PyTorch
            # (a weight of x * 0 + 1 keeps the grid in the graph: its gradient is zeros, not
            # None, as in PyTorch)
            weight = x * 0 + 1 if grid.requires_grad else None
            taps.append(([pos], [(pos >= 0) & (pos < sizes[d])], [weight]))
            continue
        base = xp.floor(x._data).astype(xp.int64)
        frac = x - _const(base, x)
        pos = [base, base + 1]
        taps.append((pos, [(p >= 0) & (p < sizes[d]) for p in pos], [1 - frac, frac]))
    return _sample(input, taps, sizes)


def _check_grid(input: Tensor, grid: Tensor, mode: str) -> None:
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, Tensor):
            raise TypeError(f"grid_sample(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {_short(input)} but found {_short(grid)}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"grid_sampler_{input.dim() - 2}d_cpu_kernel_impl\" not "
                                  f"implemented for '{_short(input)}'")
    if input.shape[0] != grid.shape[0] or input.dim() not in (4, 5):
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    nd = input.dim() - 2
    if grid.dim() != input.dim() or grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def _short(t: Tensor) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int"}.get(t.dtype.name, t.dtype.name)


def _base_coords(n: int, align_corners: bool) -> np.ndarray:
    """n evenly spaced points in [-1, 1] (pixel centers unless `align_corners`)."""
    if n <= 1:
        return np.zeros(max(n, 0))
    points = np.linspace(-1.0, 1.0, n)
    return points if align_corners else points * (n - 1) / n


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps `theta` (N, 2, 3) (or (N, 3, 4) in 3-D) for an
    output of `size` (N, C, H, W) (or (N, C, D, H, W)), ready for grid_sample."""
    align_corners = _default_align_corners(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}.")
    nd = len(size) - 2
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} "
                         f"for size {size}. Got {theta.shape}.")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {nd + 1}] but got: [{theta.shape[0]}, {nd + 1}].")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=2)
    spatial = size[2:]
    axes = [_base_coords(n, align_corners) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")                 # in (D,) H, W order
    base = np.stack([m for m in reversed(mesh)] + [np.ones(spatial)], axis=-1)
    base = _const(base.reshape(1, math.prod(spatial), nd + 1), theta)
    grid = base.matmul(theta.transpose(1, 2))               # (N, points, nd)
    return grid.reshape((size[0],) + spatial + (nd,))
