"""Pillow, imported only when an image file or a PIL image is involved (the ``data``
extra: ``pip install "ember[data]"``)."""

from __future__ import annotations


def pil_image(purpose: str):
    """The ``PIL.Image`` module, or an ImportError saying what needs it and how to get it."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{purpose} needs Pillow, which is not installed; install it with "
                          "pip install \"ember[data]\" (or pip install Pillow)") from None
    return Image


def is_pil_image(obj) -> bool:
    """True for a PIL image (without importing Pillow when it was never imported)."""
    import sys

    module = sys.modules.get("PIL.Image")
    return module is not None and isinstance(obj, module.Image)


def image_or_array(array):
    """A uint8 (H, W) or (H, W, C) array as torchvision's data sets return images: a PIL
    image when Pillow is installed, else a copy of the array itself."""
    try:
        from PIL import Image
    except ImportError:
        return array.copy()
    return Image.fromarray(array.copy())  # a copy: PIL may share the array's memory
