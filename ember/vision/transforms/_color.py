"""Colour transforms as objects: ColorJitter, Grayscale, RandomGrayscale and GaussianBlur
(re-exported by `transforms.py`, where torchvision keeps them)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from ...ops import sampling as _sampling
from . import functional as F
from ._base import _pair_range, _rand, _setup_size, _Transform, _uniform

# -- colour ---------------------------------------------------------------------------


class ColorJitter(_Transform):
    """Random brightness, contrast, saturation and hue changes, in a random order.

    Each argument is a number v (factor drawn from [max(0, 1 - v), 1 + v]; for hue, the
    shift from [-v, v] with v <= 0.5) or a (min, max) range; 0 leaves it alone.
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = self._range(brightness, "brightness", 1.0)
        self.contrast = self._range(contrast, "contrast", 1.0)
        self.saturation = self._range(saturation, "saturation", 1.0)
        self.hue = self._range(hue, "hue", 0.0, (-0.5, 0.5))

    @staticmethod
    def _range(value, name, center, bound=(0.0, float("inf"))):
        low, high = _pair_range(value, name, center, bound)
        return None if low == high == center else (low, high)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order of the four changes, brightness, contrast, saturation, hue factors)."""
        order = [int(i) for i in _sampling.randperm(4).tolist()]
        factors = [None if r is None else _uniform(r[0], r[1])
                   for r in (brightness, contrast, saturation, hue)]
        return (order, *factors)

    def forward(self, img):
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation,
                                          self.hue)
        changes = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation,
                   F.adjust_hue)
        for index in order:
            if factors[index] is not None:
                img = changes[index](img, factors[index])
        return img

    def extra_repr(self) -> str:
        return (f"brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue}")


class Grayscale(_Transform):
    """Convert to gray (1 or 3 channels)."""

    def __init__(self, num_output_channels: int = 1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)

    def extra_repr(self) -> str:
        return f"num_output_channels={self.num_output_channels}"


class GaussianBlur(_Transform):
    """Gaussian blur (see `F.gaussian_blur`) with a standard deviation drawn uniformly from
    `sigma` = (min, max) for each image (a number: that one value)."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of "
                                                    "two integers")
        if any(k <= 0 or k % 2 == 0 for k in self.kernel_size):
            raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        """A standard deviation drawn uniformly from [sigma_min, sigma_max]."""
        return _uniform(float(sigma_min), float(sigma_max))

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, list(self.kernel_size), [sigma, sigma])

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, sigma={self.sigma}"


class RandomGrayscale(_Transform):
    """Convert to gray with probability `p`, keeping the number of channels."""

    def __init__(self, p: float = 0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        if _rand() < self.p:
            return F.rgb_to_grayscale(img, F.get_image_num_channels(img))
        return img

    def extra_repr(self) -> str:
        return f"p={self.p}"
