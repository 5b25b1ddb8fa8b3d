"""The Bernoulli distribution: 1 with probability `probs`, 0 otherwise."""

from __future__ import annotations

from functools import cached_property

from .._core.dtype import finfo
from .._core.grad_mode import no_grad
from .._core.tensor import Size, Tensor
from ..ops.sampling import bernoulli
from ..ops.loss import binary_cross_entropy_with_logits
from . import constraints
from .distribution import Distribution, broadcast_all
from ..ops.creation import arange


class Bernoulli(Distribution):
    """Bernoulli draws given `probs` or `logits` (exactly one); the other is derived."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            shape = self.probs.shape
        else:
            (self.logits,) = broadcast_all(logits)
            shape = self.logits.shape
        super().__init__(shape, validate_args=validate_args)

    @cached_property
    def logits(self) -> Tensor:
        p = self.probs.clamp(finfo(self.probs.dtype).eps, 1 - finfo(self.probs.dtype).eps)
        return p.log() - (-p).log1p()

    @cached_property
    def probs(self) -> Tensor:
        return self.logits.sigmoid()

    @property
    def param_shape(self) -> Size:
        return self.__dict__.get("probs", self.__dict__.get("logits")).shape

    def expand(self, batch_shape, _instance=None) -> Bernoulli:
        shape = Size(batch_shape)
        if "probs" in self.__dict__:
            return Bernoulli(probs=self.probs.expand(shape), validate_args=False)
        return Bernoulli(logits=self.logits.expand(shape), validate_args=False)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            return bernoulli(self.probs.expand(shape))

    def log_prob(self, value) -> Tensor:
        self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self.probs.dtype, device=self.probs.device)
        values = values.reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values
