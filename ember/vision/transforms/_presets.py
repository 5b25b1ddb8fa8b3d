"""The preprocessing that goes with pretrained classification weights
(``weights.transforms()``)."""

from __future__ import annotations

import numpy as np

from ..._core.tensor import Tensor, _make
from ...nn.modules.module import Module
from . import functional as F
from .functional import InterpolationMode


class ImageClassification(Module):
    """Resize the smaller edge to `resize_size`, crop the centre `crop_size`, scale to
    floats in [0, 1] and normalize with `mean` and `std` (ImageNet's by default).

    Takes a PIL image, a uint8 NumPy (H, W, C) image or a (..., C, H, W) tensor and returns
    a float tensor.  Resizing antialiases unless `antialias` is False, as torchvision's.
    """

    def __init__(self, *, crop_size: int, resize_size: int = 256,
                 mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean, self.std = list(mean), list(std)
        self.interpolation, self.antialias = interpolation, antialias

    def forward(self, img) -> Tensor:
        if isinstance(img, np.ndarray):
            img = _make(np.ascontiguousarray(img.transpose(2, 0, 1) if img.ndim == 3
                                             else img[None]))
        elif not isinstance(img, Tensor):
            img = F.pil_to_tensor(img)
        img = F.resize(img, self.resize_size, self.interpolation, antialias=self.antialias)
        img = F.center_crop(img, self.crop_size)
        if not img.is_floating_point():
            img = F.convert_image_dtype(img)
        return F.normalize(img, self.mean, self.std)

    def __repr__(self) -> str:
        mode = getattr(self.interpolation, "value", self.interpolation)
        return (f"{type(self).__name__}(\n    crop_size={self.crop_size}\n"
                f"    resize_size={self.resize_size}\n    mean={self.mean}\n"
                f"    std={self.std}\n    interpolation={mode}\n)")
