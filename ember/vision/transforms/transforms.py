"""Image transforms as objects (``torchvision.transforms``' API), built on `functional`.

Like torchvision's, the transforms with settings are `nn.Module`s (so they fit in an
``nn.Sequential``); the conversions and `Compose` are plain callables.  Random transforms
draw from ember's default generator (``ember.rand``, ``ember.randint``...), which the
DataLoader seeds per sample: the same seed gives the same augmented batches whatever the
number of workers.

This file holds the composition, conversion and geometric transforms; the colour ones
(`_color.py`) and the random application ones (`_random_apply.py`) are re-exported here,
where torchvision keeps them; `_base.py` has what they share.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from ..._core.tensor import Tensor
from . import functional as F
from ._base import (
    _apply_in_turn, _listing, _rand, _randint, _random_sides, _setup_size, _Transform,
    _uniform,
)
from ._color import ColorJitter, GaussianBlur, Grayscale, RandomGrayscale  # noqa: F401
from ._random_apply import (  # noqa: F401 - torchvision's module holds them all
    RandomApply, RandomChoice, RandomErasing, RandomOrder,
)
from .functional import InterpolationMode

# -- composition and conversions ------------------------------------------------------


class Compose:
    """Apply `transforms` one after the other."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        return _apply_in_turn(self.transforms, img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_listing(self.transforms)}\n)"


class ToTensor:
    """PIL or NumPy (H, W, C) image -> (C, H, W) tensor; uint8 scaled to [0, 1]."""

    def __call__(self, pic) -> Tensor:
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PILToTensor:
    """PIL image -> (C, H, W) tensor of the same pixel type, without scaling."""

    def __call__(self, pic) -> Tensor:
        return F.pil_to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ToPILImage:
    """Tensor (C, H, W) or NumPy (H, W, C) image -> PIL image (see `F.to_pil_image`)."""

    def __init__(self, mode: str | None = None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + (f"mode={self.mode}" if self.mode else "") + ")"


class ConvertImageDtype(_Transform):
    """Convert a tensor image to `dtype`, rescaling the values (uint8 255 <-> float 1.0)."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class Lambda:
    """Apply a user function."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Normalize(_Transform):
    """Per channel ``(x - mean[c]) / std[c]`` on a float tensor image."""

    def __init__(self, mean, std, inplace: bool = False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def extra_repr(self) -> str:
        return f"mean={self.mean}, std={self.std}"


# -- geometry -------------------------------------------------------------------------


class Resize(_Transform):
    """Resize to `size` ((h, w), or an int for the smaller edge): see `F.resize` (PIL
    images by Pillow; tensors antialiased by default, as in torchvision)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        super().__init__()
        if not isinstance(size, (int, Sequence)) or (isinstance(size, Sequence) and
                                                     len(size) not in (1, 2)):
            raise TypeError(f"Size should be int or sequence of 1 or 2 ints. Got {size!r}")
        self.size, self.interpolation = size, interpolation
        self.max_size, self.antialias = max_size, antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def extra_repr(self) -> str:
        mode = getattr(self.interpolation, "value", self.interpolation)
        return (f"size={self.size}, interpolation={mode}, max_size={self.max_size}, "
                f"antialias={self.antialias}")


class CenterCrop(_Transform):
    """The central `size` window (zero-padded when the image is smaller)."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size)

    def forward(self, img):
        return F.center_crop(img, self.size)

    def extra_repr(self) -> str:
        return f"size={self.size}"


class FiveCrop(_Transform):
    """The four corners and the centre, each a `size` window: a tuple of five images."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size)

    def forward(self, img) -> tuple:
        return F.five_crop(img, self.size)

    def extra_repr(self) -> str:
        return f"size={self.size}"


class TenCrop(FiveCrop):
    """`FiveCrop` of the image and of its mirror image (left-right, or top-bottom with
    `vertical_flip`): a tuple of ten images."""

    def __init__(self, size, vertical_flip: bool = False):
        super().__init__(size)
        self.vertical_flip = vertical_flip

    def forward(self, img) -> tuple:
        return F.ten_crop(img, self.size, self.vertical_flip)

    def extra_repr(self) -> str:
        return f"size={self.size}, vertical_flip={self.vertical_flip}"


class Pad(_Transform):
    """Pad the borders (see `F.pad`)."""

    def __init__(self, padding, fill=0, padding_mode: str = "constant"):
        super().__init__()
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or "
                             "symmetric")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode}"


class RandomCrop(_Transform):
    """A `size` window at a random place, after optional `padding` (see `F.pad`);
    `pad_if_needed` pads images smaller than `size` (by the missing amount on each
    side)."""

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0,
                 padding_mode: str = "constant"):
        super().__init__()
        self.size = _setup_size(size)
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    @staticmethod
    def get_params(img, output_size) -> tuple[int, int, int, int]:
        """A random (top, left, height, width) window of `output_size`."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size "
                             f"{(h, w)}")
        if (h, w) == (th, tw):
            return 0, 0, h, w
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        return F.crop(img, *self.get_params(img, self.size))

    def extra_repr(self) -> str:
        return f"size={self.size}, padding={self.padding}"


class RandomResizedCrop(_Transform):
    """A random window (area a random fraction in `scale` of the image, aspect ratio
    log-uniform in `ratio`) resized to `size`; after 10 failed draws, a central crop."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.size = _setup_size(size)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        self.scale, self.ratio = tuple(scale), tuple(ratio)
        self.interpolation, self.antialias = interpolation, antialias

    @staticmethod
    def get_params(img, scale, ratio) -> tuple[int, int, int, int]:
        """A random (top, left, height, width) window (see the class)."""
        _, height, width = F.get_dimensions(img)
        for _ in range(10):
            w, h = _random_sides(height * width, scale, ratio)
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        in_ratio = width / height
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation)

    def extra_repr(self) -> str:
        return f"size={self.size}, scale={self.scale}, ratio={self.ratio}"


class RandomHorizontalFlip(_Transform):
    """Mirror left to right with probability `p`."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return F.hflip(img) if _rand() < self.p else img

    def extra_repr(self) -> str:
        return f"p={self.p}"


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top to bottom with probability `p`."""

    def forward(self, img):
        return F.vflip(img) if _rand() < self.p else img


def _degrees(degrees, name: str = "degrees") -> tuple[float, float]:
    if isinstance(degrees, numbers.Number):
        if degrees < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return -float(degrees), float(degrees)
    if len(degrees) != 2:
        raise ValueError(f"If {name} is a sequence, it must be of len 2.")
    return float(degrees[0]), float(degrees[1])


class RandomRotation(_Transform):
    """Rotate by an angle drawn uniformly from `degrees` ((-d, d) for a number d);
    see `F.rotate` for the other arguments."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand: bool = False,
                 center=None, fill=0):
        super().__init__()
        self.degrees = _degrees(degrees)
        self.interpolation, self.expand = interpolation, expand
        self.center, self.fill = center, fill

    @staticmethod
    def get_params(degrees) -> float:
        """A random angle in `degrees`."""
        return _uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img):
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)

    def extra_repr(self) -> str:
        return f"degrees={list(self.degrees)}, expand={self.expand}, fill={self.fill}"


class RandomAffine(_Transform):
    """A random affine map keeping the centre: angle uniform in `degrees`, translation up
    to `translate` = (fx, fy) of the width/height, scale uniform in `scale`, shear in
    `shear` (a number s: x-shear in (-s, s); 2 values: x-shear range; 4: x then y)."""

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        super().__init__()
        self.degrees = _degrees(degrees)
        if translate is not None:
            if len(translate) != 2 or not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translate should be a sequence of length 2 with values "
                                 "between 0 and 1")
        if scale is not None:
            if len(scale) != 2 or any(s <= 0 for s in scale):
                raise ValueError("scale values should be positive")
        if shear is not None:
            if isinstance(shear, numbers.Number):
                shear = _degrees(shear, "shear")
            elif len(shear) not in (2, 4):
                raise ValueError("shear should be a number or a sequence of length 2 or 4")
        self.translate, self.scale, self.shear = translate, scale, shear
        self.interpolation, self.fill, self.center = interpolation, fill, center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """(angle, (tx, ty), scale, (shear_x, shear_y)) for an image of `img_size` (w, h)."""
        angle = _uniform(float(degrees[0]), float(degrees[1]))
        if translate is not None:
            max_dx, max_dy = float(translate[0] * img_size[0]), float(translate[1] *
                                                                       img_size[1])
            tx = int(round(_uniform(-max_dx, max_dx)))
            ty = int(round(_uniform(-max_dy, max_dy)))
            translations = (tx, ty)
        else:
            translations = (0, 0)
        scale = 1.0 if scale_ranges is None else _uniform(scale_ranges[0], scale_ranges[1])
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        _, h, w = F.get_dimensions(img)
        angle, translations, scale, shear = self.get_params(
            self.degrees, self.translate, self.scale, self.shear, [w, h])
        return F.affine(img, angle, list(translations), scale, list(shear),
                        self.interpolation, self.fill, self.center)

    def extra_repr(self) -> str:
        return (f"degrees={list(self.degrees)}, translate={self.translate}, "
                f"scale={self.scale}, shear={self.shear}")
