"""Pictures of tensors: `make_grid` tiles a batch of images, `save_image` writes one.

PNG files are written by ember itself (zlib, no Pillow needed); other formats (``.jpg``
...) go through Pillow, the ``data`` extra.
"""

from __future__ import annotations

import math
import os
import struct
import zlib

import numpy as np

from .._core.tensor import Tensor, _make
from ._pil import pil_image


def _normalized(images: np.ndarray, value_range, scale_each: bool) -> np.ndarray:
    def rescale(x: np.ndarray) -> np.ndarray:
        low, high = (float(x.min()), float(x.max())) if value_range is None else value_range
        x = np.clip(x, low, high)
        return (x - low) / max(high - low, 1e-5)

    if scale_each:
        return np.stack([rescale(img) for img in images])
    return rescale(images)


def make_grid(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range: tuple[float, float] | None = None, scale_each: bool = False,
              pad_value: float = 0.0) -> Tensor:
    """Tile images into one (C, H', W') image, `nrow` per row, `padding` pixels apart.

    Args:
        tensor: a (B, C, H, W) tensor, a list of (C, H, W) tensors, one (C, H, W) or one
            (H, W) image.  One-channel images are repeated into three (RGB) channels.
        nrow: images per row.
        padding: the border around and between images, filled with `pad_value`.
        normalize: rescale values to [0, 1]: from `value_range` (clipping to it) if
            given, else from the minimum and maximum (of each image if `scale_each`,
            else of the whole batch).

    A batch of one image is returned as that image (without padding).
    """
    if isinstance(tensor, (list, tuple)):
        if not tensor or not all(isinstance(t, Tensor) for t in tensor):
            raise TypeError("make_grid: expected a tensor or a non-empty list of tensors")
        arrays = np.stack([t.cpu_array() for t in tensor])
        device = tensor[0].device
    elif isinstance(tensor, Tensor):
        arrays, device = tensor.cpu_array(), tensor.device
    else:
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor).__name__}")
    if value_range is not None and not isinstance(value_range, tuple):
        raise TypeError("value_range has to be a tuple (min, max) if specified. min and max "
                        "are numbers")
    if arrays.ndim == 2:
        arrays = arrays[None]
    if arrays.ndim == 3:
        arrays = arrays[None]
    if arrays.ndim != 4:
        raise ValueError(f"make_grid: expected images of 2 to 4 dimensions, got shape "
                         f"{arrays.shape}")
    if arrays.shape[1] == 1:
        arrays = np.repeat(arrays, 3, axis=1)
    if normalize:
        arrays = _normalized(arrays.astype(np.result_type(arrays.dtype, np.float32)),
                             value_range, scale_each)
    if arrays.shape[0] == 1:
        return _place(arrays[0].copy(), device)
    count, channels, height, width = arrays.shape
    columns = min(nrow, count)
    rows = int(math.ceil(count / columns))
    cell_h, cell_w = height + padding, width + padding
    grid = np.full((channels, rows * cell_h + padding, columns * cell_w + padding), pad_value,
                   dtype=arrays.dtype)
    for k in range(count):
        y, x = divmod(k, columns)
        top, left = y * cell_h + padding, x * cell_w + padding
        grid[:, top:top + height, left:left + width] = arrays[k]
    return _place(grid, device)


def _place(array: np.ndarray, device) -> Tensor:
    result = _make(array)
    return result if device.type == "cpu" else result.to(device)


def _png_bytes(pixels: np.ndarray) -> bytes:
    """A PNG file holding `pixels`, uint8 (H, W) or (H, W, C) with C in 1..4."""
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    height, width, channels = pixels.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]  # gray, gray+alpha, RGB, RGBA

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    rows = np.concatenate([np.zeros((height, 1), np.uint8),  # filter type 0 on each row
                           pixels.reshape(height, width * channels)], axis=1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) + chunk(b"IEND", b""))


def save_image(tensor, fp, format: str | None = None, **kwargs) -> None:
    """Save a tensor (or list of tensors) as an image file, tiled by `make_grid` (which
    takes the keyword arguments).  Values are taken as [0, 1] and scaled to 0..255.

    `fp` is a path or a binary file object; the format comes from `format` or the file's
    extension.  PNG needs nothing extra; other formats need Pillow (``ember[data]``).
    """
    grid = make_grid(tensor, **kwargs).cpu_array()
    pixels = np.clip(grid.astype(np.float64) * 255 + 0.5, 0, 255).astype(np.uint8)
    pixels = np.ascontiguousarray(pixels.transpose(1, 2, 0))
    kind = format
    if kind is None:
        ext = os.path.splitext(os.fspath(fp))[1] if isinstance(fp, (str, os.PathLike)) else ""
        kind = ext[1:] if ext else "png"
    if kind.lower() == "png":
        data = _png_bytes(pixels)
        if isinstance(fp, (str, os.PathLike)):
            with open(fp, "wb") as f:
                f.write(data)
        else:
            fp.write(data)
        return
    image_module = pil_image(f"save_image in format {kind!r} (PNG needs nothing)")
    image = image_module.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels)
    image.save(fp, format=format)
