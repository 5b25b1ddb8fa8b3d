"""The continuous uniform distribution on [low, high)."""

from __future__ import annotations

from functools import cached_property

from .._core.tensor import Size, Tensor
from ..ops.sampling import rand
from . import constraints
from .distribution import Distribution, broadcast_all


class Uniform(Distribution):
    """Uniform on ``[low, high)``; ``rsample`` is ``low + u * (high - low)``."""

    arg_constraints = {"low": constraints.dependent, "high": constraints.dependent}
    has_rsample = True

    def __init__(self, low, high, validate_args=None) -> None:
        self.low, self.high = broadcast_all(low, high)
        if (validate_args if validate_args is not None else Distribution._validate_default) \
                and not bool((self.low < self.high).all()):
            raise ValueError(f"Expected parameter low (Tensor of shape {tuple(self.low.shape)}) "
                             f"of distribution Uniform to satisfy the constraint "
                             f"LessThan(upper_bound=high), but found invalid values:\n{self.low}")
        super().__init__(self.low.shape, validate_args=False)
        self._validate_args = (Distribution._validate_default if validate_args is None
                               else validate_args)

    @cached_property
    def support(self):
        return constraints.half_open_interval(self.low, self.high)

    def expand(self, batch_shape, _instance=None) -> Uniform:
        shape = Size(batch_shape)
        return Uniform(self.low.expand(shape), self.high.expand(shape), validate_args=False)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return self.low * float("nan")

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        u = rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value) -> Tensor:
        self._validate_sample(value)
        inside = ((value >= self.low) & (value < self.high)).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value) -> Tensor:
        self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
