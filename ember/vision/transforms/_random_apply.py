"""Random application of transforms (RandomApply, RandomChoice, RandomOrder) and
RandomErasing (re-exported by `transforms.py`, where torchvision keeps them)."""

from __future__ import annotations

import numbers

import numpy as np

from ..._core.tensor import Tensor, _make
from ...ops import sampling as _sampling
from . import functional as F
from ._base import _apply_in_turn, _listing, _rand, _randint, _random_sides, _Transform

# -- random application ---------------------------------------------------------------


class RandomApply(_Transform):
    """Apply all of `transforms` with probability `p`, or none of them."""

    def __init__(self, transforms, p: float = 0.5):
        super().__init__()
        self.transforms = list(transforms)
        self.p = p

    def forward(self, img):
        if self.p < _rand():
            return img
        return _apply_in_turn(self.transforms, img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(\n    p={self.p}{_listing(self.transforms)}\n)"


class RandomChoice:
    """Apply one of `transforms`, picked with probabilities `p` (uniform by default)."""

    def __init__(self, transforms, p=None):
        self.transforms = list(transforms)
        if p is not None and len(p) != len(self.transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} "
                             f"!= {len(self.transforms)}")
        total = float(sum(p)) if p is not None else float(len(self.transforms))
        self.p = [x / total for x in p] if p is not None else [1.0 / total] * len(
            self.transforms)

    def __call__(self, *args):
        draw, acc = _rand(), 0.0
        for t, weight in zip(self.transforms, self.p):
            acc += weight
            if draw < acc:
                return t(*args)
        return self.transforms[-1](*args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(transforms={self.transforms}, p={self.p})"


class RandomOrder:
    """Apply all of `transforms` in a random order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        order = _sampling.randperm(len(self.transforms)).tolist()
        return _apply_in_turn([self.transforms[int(i)] for i in order], img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_listing(self.transforms)}\n)"


class RandomErasing(_Transform):
    """With probability `p`, set a random rectangle of a tensor image to `value`.

    The rectangle's area is a fraction in `scale` of the image's, its aspect ratio
    log-uniform in `ratio` (10 tries, else nothing is erased).  `value`: a number, one
    number per channel, or ``"random"`` (standard normal noise).
    """

    def __init__(self, p: float = 0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0,
                 inplace: bool = False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio = p, scale, ratio
        self.value, self.inplace = value, inplace

    @staticmethod
    def get_params(img: Tensor, scale, ratio, value=None):
        """(top, left, height, width, fill tensor); the whole image and the image itself
        when no rectangle fits.  `value` None means random normal values."""
        channels, height, width = img.shape[-3], img.shape[-2], img.shape[-1]
        for _ in range(10):
            h, w = _random_sides(height * width, scale, ratio)
            if not (h < height and w < width):
                continue
            if value is None:
                fill = _sampling.randn(channels, h, w, dtype=img.dtype)
            else:
                fill = _make(np.asarray(value, dtype=img.dtype.np_dtype).reshape(-1, 1, 1))
            i, j = _randint(0, height - h + 1), _randint(0, width - w + 1)
            return i, j, h, w, fill.to(img.device)
        return 0, 0, height, width, img

    def forward(self, img):
        if not isinstance(img, Tensor):
            raise TypeError(f"img should be a Tensor image, got {type(img).__name__}")
        if _rand() >= self.p:
            return img
        if isinstance(self.value, numbers.Number):
            value = [float(self.value)]
        elif isinstance(self.value, str):
            value = None
        else:
            value = [float(v) for v in self.value]
        if value is not None and len(value) not in (1, img.shape[-3]):
            raise ValueError("If value is a sequence, it should have either a single value "
                             f"or {img.shape[-3]} (number of input channels)")
        i, j, h, w, fill = self.get_params(img, self.scale, self.ratio, value)
        return F.erase(img, i, j, h, w, fill, self.inplace)

    def extra_repr(self) -> str:
        return (f"p={self.p}, scale={self.scale}, ratio={self.ratio}, value={self.value}, "
                f"inplace={self.inplace}")
