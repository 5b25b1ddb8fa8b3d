"""The categorical distribution over the classes 0 .. K-1 (the last dim of the
parameters)."""

from __future__ import annotations

from functools import cached_property

from .._core.dtype import finfo
from .._core.grad_mode import no_grad
from .._core.tensor import Size, Tensor
from ..ops.sampling import multinomial
from ..ops._broadcast import broadcast_shapes
from ..ops.activation import softmax_fn
from ..ops.reduction_stats import logsumexp
from . import constraints
from .distribution import Distribution
from ..ops.creation import arange


class Categorical(Distribution):
    """Draws of a class index given `probs` (non-negative, normalized here) or `logits`
    (normalized to log-probabilities); one of the two.  ``batch_shape`` is the parameters'
    shape without its last dim.

    >>> Categorical(logits=ember.tensor([0.0, 0.0])).probs
    tensor([0.5000, 0.5000])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logsumexp(logits, -1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @cached_property
    def logits(self) -> Tensor:
        eps = finfo(self.probs.dtype).eps
        return self.probs.clamp(eps, 1 - eps).log()

    @cached_property
    def probs(self) -> Tensor:
        return softmax_fn(self.logits, -1)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @cached_property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    def expand(self, batch_shape, _instance=None) -> Categorical:
        shape = Size(tuple(batch_shape) + (self._num_events,))
        if "probs" in self.__dict__:
            return Categorical(probs=self.probs.expand(shape), validate_args=False)
        return Categorical(logits=self.logits.expand(shape), validate_args=False)

    @property
    def mean(self) -> Tensor:
        return self.probs.new_full(tuple(self._extended_shape()), float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.probs.new_full(tuple(self._extended_shape()), float("nan"))

    def sample(self, sample_shape=()) -> Tensor:
        sample_shape = Size(sample_shape)
        n = max(1, sample_shape.numel())
        with no_grad():
            flat = self.probs.reshape(-1, self._num_events)
            draws = multinomial(flat, n, replacement=True).t()
        return draws.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value) -> Tensor:
        self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = _broadcast_pair(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        eps_min = finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=eps_min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(self._num_events, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values


def _broadcast_pair(value: Tensor, log_pmf: Tensor) -> tuple:
    """The index tensor (..., 1) and the log-probabilities (..., K) broadcast together."""
    lead = broadcast_shapes(tuple(value.shape[:-1]), tuple(log_pmf.shape[:-1]))
    return value.expand(lead + (1,)), log_pmf.expand(lead + (log_pmf.shape[-1],))
