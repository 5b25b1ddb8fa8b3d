"""What the transform classes share: random numbers from ember's default generator, the
argument checks, applying a list of transforms, and the base class of transforms with
settings."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from ...nn.modules.module import Module
from ...ops import sampling as _sampling

# -- random numbers, from ember's default generator ----------------------------------


def _rand() -> float:
    return float(_sampling.rand(1).item())


def _uniform(low: float, high: float) -> float:
    return low + (high - low) * _rand()


def _randint(low: int, high: int) -> int:
    return int(_sampling.randint(low, high, (1,)).item())


def _random_sides(area: float, scale, ratio) -> tuple[int, int]:
    """The two sides of a random rectangle: its area a uniform fraction in `scale` of
    `area`, the first side over the second log-uniform in `ratio`."""
    target = area * _uniform(scale[0], scale[1])
    aspect = math.exp(_uniform(math.log(ratio[0]), math.log(ratio[1])))
    return int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))


def _apply_in_turn(transforms, img):
    """`img` through each of `transforms`, in order."""
    for t in transforms:
        img = t(img)
    return img


def _listing(transforms) -> str:
    """The transforms one per line, indented, for a ``__repr__``."""
    return "".join(f"\n    {t}" for t in transforms)


def _pair_range(value, name: str, center: float = 0.0, bound=(0.0, float("inf"))):
    """A number v -> (center - v, center + v) clipped to `bound`; a pair is checked."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        low, high = center - float(value), center + float(value)
        low = max(low, bound[0])
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        low, high = float(value[0]), float(value[1])
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    if not bound[0] <= low <= high <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {[low, high]}.")
    return low, high


def _setup_size(size, message: str = "Please provide only two dimensions (h, w) for size."):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ValueError(message)
    return int(size[0]), int(size[1])


class _Transform(Module):
    """A transform with settings: `forward` does the work, `extra_repr` shows settings."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"
