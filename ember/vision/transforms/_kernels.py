"""The array work behind the transforms, on NumPy arrays of shape (B, C, H, W).

`functional.py` turns PIL images, NumPy images and tensors into this one layout and back,
so each operation is written once here.  Integer images are computed in float64 and
rounded back (``np.rint``) and clipped to their dtype's range; float images keep their
dtype.
"""

from __future__ import annotations

import math

import numpy as np


def max_value(dtype: np.dtype) -> float:
    """The value of full intensity: 1.0 for float images, the type's maximum otherwise."""
    if dtype == np.bool_:
        return 1
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).max
    return 1.0


def is_float(dtype: np.dtype) -> bool:
    """Whether images of this dtype hold floats (in [0, 1])."""
    return np.issubdtype(dtype, np.floating)


def cast_like(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`values` (float) back in `dtype`: rounded and clipped for integer types."""
    if dtype == np.bool_:
        return values >= 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(values), info.min, info.max).astype(dtype)
    return values.astype(dtype, copy=False)


def working(arr: np.ndarray) -> np.ndarray:
    """`arr` in a float type to compute with (float64 for integer images)."""
    if np.issubdtype(arr.dtype, np.floating):
        return arr
    return arr.astype(np.float64)


def fill_array(fill, channels: int, dtype: np.dtype) -> np.ndarray:
    """`fill` (None, a number, or one number per channel) as a (C, 1, 1) array."""
    if fill is None:
        fill = 0
    values = np.atleast_1d(np.asarray(fill, dtype=np.float64)).reshape(-1)
    if values.size == 1:
        values = np.repeat(values, channels)
    elif values.size != channels:
        raise ValueError(f"The number of elements in 'fill' ({values.size}) does not match "
                         f"the number of channels of the image ({channels})")
    return values.reshape(channels, 1, 1)


# -- crops, flips, padding ---------------------------------------------------------------

def pad(arr: np.ndarray, left: int, top: int, right: int, bottom: int, fill=0,
        mode: str = "constant") -> np.ndarray:
    """Pad the last two axes; negative amounts crop instead."""
    h, w = arr.shape[-2:]
    arr = arr[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
    left, top, right, bottom = (max(v, 0) for v in (left, top, right, bottom))
    if not (left or top or right or bottom):
        return arr
    widths = [(0, 0)] * (arr.ndim - 2) + [(top, bottom), (left, right)]
    if mode == "constant":
        out = np.pad(arr, widths, mode="constant")
        fills = cast_like(fill_array(fill, arr.shape[-3], arr.dtype), arr.dtype)
        mask = np.ones(out.shape[-2:], dtype=bool)
        mask[top:top + arr.shape[-2], left:left + arr.shape[-1]] = False
        out[..., mask] = np.broadcast_to(fills[:, :, 0], out[..., mask].shape)
        return out
    if mode in ("reflect", "symmetric") or mode == "edge":
        return np.pad(arr, widths, mode=mode)
    raise ValueError("Padding mode should be either constant, edge, reflect or symmetric, "
                     f"got {mode!r}")


def crop(arr: np.ndarray, top: int, left: int, height: int, width: int) -> np.ndarray:
    """The window at (top, left) of the given size; parts outside the image are zeros."""
    h, w = arr.shape[-2:]
    if top < 0 or left < 0 or top + height > h or left + width > w:
        arr = pad(arr, max(-left, 0), max(-top, 0), max(left + width - w, 0),
                  max(top + height - h, 0))
        top, left = max(top, 0), max(left, 0)
    return arr[..., top:top + height, left:left + width]


# -- resampling -----------------------------------------------------------------------

def _cubic(t: np.ndarray, a: float = -0.75) -> np.ndarray:
    """The cubic convolution kernel (Keys) at distance `t`: a = -0.75 as PyTorch's plain
    bicubic, -0.5 as Pillow's (and PyTorch's antialiased) one."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def resize_matrix(size_in: int, size_out: int, mode: str,
                  antialias: bool = False) -> np.ndarray:
    """The (size_out, size_in) matrix that resamples one axis.

    Pixel centres are aligned (``align_corners=False``): output pixel ``i`` reads input
    position ``(i + 0.5) * size_in / size_out - 0.5``.  'nearest' picks
    ``floor(i * size_in / size_out)`` (PyTorch's legacy nearest), 'nearest-exact'
    ``floor((i + 0.5) * size_in / size_out)``.  Without `antialias`, shrinking by more
    than 2x skips pixels; with it, bilinear and bicubic use `antialiased_matrix`.
    """
    if antialias and mode in ("bilinear", "bicubic"):
        return antialiased_matrix(size_in, size_out, mode)
    scale = size_in / size_out
    rows = np.arange(size_out)
    matrix = np.zeros((size_out, size_in))
    if mode in ("nearest", "nearest-exact"):
        offset = 0.5 if mode == "nearest-exact" else 0.0
        cols = np.minimum(np.floor((rows + offset) * scale).astype(np.int64), size_in - 1)
        matrix[rows, cols] = 1.0
        return matrix
    src = (rows + 0.5) * scale - 0.5
    if mode == "bilinear":
        src = np.maximum(src, 0.0)
        lo = np.minimum(np.floor(src).astype(np.int64), size_in - 1)
        hi = np.minimum(lo + 1, size_in - 1)
        frac = src - lo
        np.add.at(matrix, (rows, lo), 1.0 - frac)
        np.add.at(matrix, (rows, hi), frac)
        return matrix
    if mode == "bicubic":
        base = np.floor(src).astype(np.int64)
        for k in range(-1, 3):
            taps = base + k
            np.add.at(matrix, (rows, np.clip(taps, 0, size_in - 1)), _cubic(src - taps))
        return matrix
    raise ValueError(f"unsupported interpolation {mode!r}")


def antialiased_matrix(size_in: int, size_out: int, mode: str) -> np.ndarray:
    """Antialiased resampling of one axis, as Pillow resizes and as PyTorch's
    ``interpolate(..., antialias=True)`` (torchvision's default for tensors) computes.

    The filter (the triangle for bilinear, the cubic with a = -0.5 for bicubic) is
    stretched by the downscale factor, so each output pixel averages all the input pixels
    it covers.  Output pixel ``i`` is centred at input position ``c = (i + 0.5) * scale``
    (pixel ``j`` spans [j, j + 1]); it reads the pixels ``j`` with
    ``int(c - support + 0.5) <= j < int(c + support + 0.5)`` (inside the image) with weights
    ``filter((j + 0.5 - c) / stretch)``, normalized to sum to one.
    """
    scale = size_in / size_out
    stretch = max(scale, 1.0)  # upscaling uses the plain filter
    support = (1.0 if mode == "bilinear" else 2.0) * stretch
    centers = (np.arange(size_out) + 0.5) * scale
    # NOTE: the window bounds truncate toward zero (a C cast), as Pillow's do
    lo = np.maximum(np.trunc(centers - support + 0.5), 0.0)
    hi = np.minimum(np.trunc(centers + support + 0.5), size_in)
    cols = np.arange(size_in) + 0.0
    distance = (cols[None, :] + 0.5 - centers[:, None]) / stretch
    if mode == "bilinear":
        weights = np.maximum(1.0 - np.abs(distance), 0.0)
    else:
        weights = _cubic(distance, a=-0.5)
    weights *= (cols[None, :] >= lo[:, None]) & (cols[None, :] < hi[:, None])
    total = weights.sum(axis=1, keepdims=True)
    return weights / np.where(total == 0.0, 1.0, total)


def resize(arr: np.ndarray, height: int, width: int, mode: str,
           antialias: bool = False) -> np.ndarray:
    """Resample the last two axes to (height, width)."""
    h, w = arr.shape[-2:]
    if (h, w) == (height, width):
        return arr.copy()
    values = working(arr)
    rows = resize_matrix(h, height, mode, antialias).astype(values.dtype)
    cols = resize_matrix(w, width, mode, antialias).astype(values.dtype)
    out = np.matmul(np.matmul(rows, values), cols.T)
    return cast_like(out, arr.dtype)


def affine_matrix(angle: float, translate, scale: float, shear, center) -> np.ndarray:
    """The 3x3 forward map, in pixel coordinates relative to the image centre, of: shear,
    then rotate by `angle` degrees clockwise (y points down), scale, and move by
    `translate`, all about `center` (relative to the image centre).

    With ``r`` the angle and ``sx``, ``sy`` the shears in radians, the linear part is
    ``R(r - sy) @ [[1/cos sy, -tan(sx)/cos sy - sin sy], [0, cos sy]] * scale``: a pure
    x-shear (sy = 0) maps (x, y) to (x - y tan sx, y) before the rotation.
    """
    r, sx, sy = (math.radians(v) for v in (angle, shear[0], shear[1]))
    phi = r - sy
    rot = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    skew = np.array([[1 / math.cos(sy), -math.tan(sx) / math.cos(sy) - math.sin(sy)],
                     [0.0, math.cos(sy)]])
    linear = rot @ skew * scale
    cx, cy = center
    tx, ty = translate
    matrix = np.eye(3)
    matrix[:2, :2] = linear
    matrix[:2, 2] = np.array([cx + tx, cy + ty]) - linear @ np.array([cx, cy])
    return matrix


def expanded_size(matrix: np.ndarray, height: int, width: int) -> tuple[int, int]:
    """The (height, width) that holds the whole image after the forward map `matrix`."""
    corners = np.array([[-width, -height], [width, -height], [width, height],
                        [-width, height]], dtype=np.float64) * 0.5
    moved = corners @ matrix[:2, :2].T
    # NOTE: trim float noise first, so a 90-degree turn of 4x6 gives 6x4, not 7x5
    lo = np.floor(np.trunc(moved.min(axis=0) * 1e4) / 1e4)
    hi = np.ceil(np.trunc(moved.max(axis=0) * 1e4) / 1e4)
    size = (hi - lo).astype(np.int64)
    return int(size[1]), int(size[0])


def warp(arr: np.ndarray, matrix: np.ndarray, out_size: tuple[int, int], mode: str,
         fill=None) -> np.ndarray:
    """Apply the forward map `matrix` (centred pixel coordinates) to the last two axes.

    Each output pixel reads the input at the inverse-mapped position: 'nearest' takes the
    nearest pixel, 'bilinear' weighs the four around it.  Input pixels outside the image
    count as `fill` (0 when None), weighted by how much of the sample falls outside.
    """
    h, w = arr.shape[-2:]
    oh, ow = out_size
    inverse = np.linalg.inv(matrix)
    ys, xs = np.meshgrid(np.arange(oh) - (oh - 1) / 2, np.arange(ow) - (ow - 1) / 2,
                         indexing="ij")
    src_x = inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2] + (w - 1) / 2
    src_y = inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2] + (h - 1) / 2
    values = working(arr)
    out = np.zeros(arr.shape[:-2] + (oh, ow), dtype=values.dtype)
    covered = np.zeros((oh, ow), dtype=values.dtype)
    if mode == "nearest":
        taps = [(np.rint(src_y), np.rint(src_x), 1.0)]
    elif mode == "bilinear":
        y0, x0 = np.floor(src_y), np.floor(src_x)
        fy, fx = src_y - y0, src_x - x0
        taps = [(y0, x0, (1 - fy) * (1 - fx)), (y0, x0 + 1, (1 - fy) * fx),
                (y0 + 1, x0, fy * (1 - fx)), (y0 + 1, x0 + 1, fy * fx)]
    else:
        raise ValueError(f"rotation and affine support only nearest and bilinear "
                         f"interpolation, got {mode!r}")
    for ty, tx, weight in taps:
        inside = (ty >= 0) & (ty <= h - 1) & (tx >= 0) & (tx <= w - 1)
        weight = np.where(inside, weight, 0.0).astype(values.dtype)
        iy = np.clip(ty, 0, h - 1).astype(np.int64)
        ix = np.clip(tx, 0, w - 1).astype(np.int64)
        out += values[..., iy, ix] * weight
        covered += weight
    if fill is not None:
        out += (1 - covered) * fill_array(fill, arr.shape[-3], values.dtype)
    return cast_like(out, arr.dtype)


# -- filters ----------------------------------------------------------------------------

def gaussian_kernel1d(size: int, sigma: float) -> np.ndarray:
    """``exp(-x^2 / (2 sigma^2))`` at the `size` integer offsets around 0, summing to one."""
    x = np.arange(size) - (size - 1) / 2
    pdf = np.exp(-0.5 * (x / sigma) ** 2)
    return pdf / pdf.sum()


def gaussian_blur(arr: np.ndarray, kernel_size, sigma) -> np.ndarray:
    """Convolve the last two axes with the Gaussian of `kernel_size` (kx, ky) and `sigma`
    (sx, sy), one axis at a time, after reflect-padding by half a kernel."""
    (kx, ky), (sx, sy) = kernel_size, sigma
    h, w = arr.shape[-2:]
    if kx // 2 >= w or ky // 2 >= h:
        raise RuntimeError(f"gaussian_blur: padding ({kx // 2}, {ky // 2}) by reflection "
                           f"must be less than the image size ({h}, {w})")
    values = working(arr)
    widths = [(0, 0)] * (arr.ndim - 2) + [(ky // 2, ky // 2), (kx // 2, kx // 2)]
    out = np.pad(values, widths, mode="reflect")
    for axis, size, s in ((-1, kx, sx), (-2, ky, sy)):
        kernel = gaussian_kernel1d(size, s).astype(values.dtype)
        windows = np.lib.stride_tricks.sliding_window_view(out, size, axis=axis)
        out = windows @ kernel
    return cast_like(out, arr.dtype)


# -- colour ---------------------------------------------------------------------------

def grayscale(arr: np.ndarray) -> np.ndarray:
    """Luma of an RGB image, ``0.2989 R + 0.587 G + 0.114 B`` (torchvision's weights), as
    float (B, 1, H, W).

    Integer and float32 images are computed in float32 as PyTorch does: the red term, then
    two multiply-adds, each rounded to float32 once (an FMA: the product of a float32 and an
    8- to 16-bit value is exact in float64).  So ``trunc`` of the result matches
    torchvision's uint8 grayscale bit for bit.
    """
    if arr.dtype == np.float64:
        return 0.2989 * arr[:, 0:1] + 0.587 * arr[:, 1:2] + 0.114 * arr[:, 2:3]
    f32 = np.float32
    channels = [arr[:, c:c + 1].astype(f32) for c in range(3)]
    out = channels[0] * f32(0.2989)
    for channel, weight in ((channels[1], 0.587), (channels[2], 0.114)):
        out = (out.astype(np.float64) + channel.astype(np.float64) * float(f32(weight))
               ).astype(f32)
    return out


def blend(arr: np.ndarray, other, factor: float) -> np.ndarray:
    """``factor * arr + (1 - factor) * other``, clipped to the image's value range, as
    torchvision computes it: float64 images in float64, others in float32 (the second
    term added by a multiply-add rounded once, as PyTorch's fused kernel does), integer
    images truncated back."""
    bound = max_value(arr.dtype)
    if arr.dtype == np.float64 or arr.dtype == np.bool_:
        out = np.clip(factor * arr + (1.0 - factor) * np.asarray(other), 0, bound)
        return cast_like(out, arr.dtype)
    f32 = np.float32
    out = arr.astype(f32) * f32(factor)
    out = (out.astype(np.float64) + np.asarray(other, f32).astype(np.float64)
           * float(f32(1.0 - factor))).astype(f32)
    return np.clip(out, 0, bound).astype(arr.dtype)


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """RGB in [0, 1] (channel axis 1) to HSV, all three in [0, 1]."""
    r, g, b = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    high, low = rgb.max(axis=1), rgb.min(axis=1)
    chroma = high - low
    safe = np.where(chroma == 0, 1.0, chroma)
    sat = np.where(high == 0, 0.0, chroma / np.where(high == 0, 1.0, high))
    hue = np.where(high == r, (g - b) / safe,
                   np.where(high == g, 2.0 + (b - r) / safe, 4.0 + (r - g) / safe))
    hue = np.where(chroma == 0, 0.0, (hue / 6.0) % 1.0)
    return np.stack([hue, sat, high], axis=1)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """The inverse of `rgb_to_hsv`."""
    h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    sector = np.floor(h * 6.0)
    f = h * 6.0 - sector
    sector = sector.astype(np.int64) % 6
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    choices = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    channels = [np.select([sector == k for k in range(6)], [c[i] for c in choices])
                for i in range(3)]
    return np.stack(channels, axis=1)
