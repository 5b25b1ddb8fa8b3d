"""What torchvision hands to Pillow when the image is a PIL image, so ember does too:
rotation and affine maps (``Image.rotate``, ``Image.transform``), the colour enhancements
(``ImageEnhance``) and the hue shift (in Pillow's 8-bit HSV).  `functional.py` checks the
arguments and resolves them (interpolation to Pillow's resample code, the affine map)
before calling these."""

from __future__ import annotations

import numpy as np

from .._pil import pil_image


def fill_color(fill, img):
    """`fill` (None, a number, or one number per band) as Pillow's ``fillcolor`` for
    `img`: one value per band, ints unless the image holds floats (mode F)."""
    bands = len(img.getbands())
    fill = 0 if fill is None else fill
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = list(fill) * bands
        elif len(fill) != bands:
            raise ValueError(f"The number of elements in 'fill' ({len(fill)}) does not match "
                             f"the number of bands of the image ({bands})")
    elif bands > 1:
        fill = [fill] * bands
    convert = float if img.mode == "F" else int
    return tuple(convert(v) for v in fill) if isinstance(fill, (list, tuple)) \
        else convert(fill)


def rotate(img, angle: float, resample: int, expand: bool, center, fill):
    """``Image.rotate``: `angle` degrees counter-clockwise about `center` ((x, y) from the
    top-left corner; None for the image centre)."""
    return img.rotate(angle, resample, expand, None if center is None else tuple(center),
                      fillcolor=fill_color(fill, img))


def affine(img, forward: np.ndarray, resample: int, fill):
    """``Image.transform`` by the forward map `forward` (3x3, in coordinates relative to
    the image centre): Pillow takes the inverse, in coordinates from the top-left corner."""
    image_module = pil_image("affine")
    w, h = img.size
    to_corner = np.array([[1.0, 0.0, w * 0.5], [0.0, 1.0, h * 0.5], [0.0, 0.0, 1.0]])
    inverse = np.linalg.inv(to_corner @ forward @ np.linalg.inv(to_corner))
    method = getattr(image_module, "Transform", image_module).AFFINE
    return img.transform(img.size, method, inverse[:2].ravel().tolist(), resample,
                         fillcolor=fill_color(fill, img))


def enhance(img, kind: str, factor: float):
    """Pillow's ``ImageEnhance`` `kind` (Brightness, Contrast, Color) by `factor`."""
    from PIL import ImageEnhance

    return getattr(ImageEnhance, kind)(img).enhance(factor)


def adjust_hue(img, hue_factor: float):
    """Shift the 8-bit hue of Pillow's HSV by ``hue_factor * 255`` (wrapping around);
    images without colour come back unchanged."""
    if img.mode in ("L", "1", "I", "F"):
        return img
    image_module = pil_image("adjust_hue")
    h, s, v = img.convert("HSV").split()
    shift = np.uint8(int(hue_factor * 255) % 256)
    h = image_module.fromarray((np.asarray(h, dtype=np.uint8) + shift).astype(np.uint8), "L")
    return image_module.merge("HSV", (h, s, v)).convert(img.mode)
