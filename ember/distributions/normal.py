"""The normal (Gaussian) distribution."""

from __future__ import annotations

import math

from .._core.tensor import Size, Tensor
from ..ops.sampling import normal as _standard_normal
from ..ops.elementwise_special import erf, erfinv
from . import constraints
from .distribution import Distribution, broadcast_all

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class Normal(Distribution):
    """``N(loc, scale**2)``; ``rsample`` is ``loc + scale * eps`` with standard normal eps.

    >>> Normal(0.0, 1.0).log_prob(ember.tensor(0.0))
    tensor(-0.9189)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> Normal:
        """The same distribution repeated to `batch_shape` (parameters expanded, no copy)."""
        shape = Size(batch_shape)
        return Normal(self.loc.expand(shape), self.scale.expand(shape), validate_args=False)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(0.0, 1.0, size=tuple(shape), dtype=self.loc.dtype,
                               device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value) -> Tensor:
        self._validate_sample(value)
        return 0.5 * (1 + erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value) -> Tensor:
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
