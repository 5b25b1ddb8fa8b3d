"""The base class of the distributions: shapes, argument checks, and the methods each
family fills in."""

from __future__ import annotations

from .._core.grad_mode import no_grad
from .._core.tensor import Size, Tensor
from ..ops.creation import tensor as make_tensor
from ..ops.shape import broadcast_tensors


class Distribution:
    """A batch of probability distributions.

    ``batch_shape`` indexes independent distributions; ``event_shape`` is the shape of one
    draw (empty for the scalar families here).  With `validate_args` (the default; see
    ``set_default_validate_args``) the parameters are checked against `arg_constraints`
    and the values given to ``log_prob`` against `support`.
    """

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support = None
    _validate_default = True

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument checking on or off for distributions made from now on."""
        if value not in (True, False):
            raise ValueError("Expected a boolean")
        Distribution._validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None) -> None:
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        self._validate_args = (Distribution._validate_default if validate_args is None
                               else validate_args)
        if not self._validate_args:
            return
        for name, constraint in self.arg_constraints.items():
            if name not in self.__dict__:  # a parameter derived on demand (probs from logits)
                continue
            value = self.__dict__[name]
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint {constraint!r}, but "
                    f"found invalid values:\n{value}")

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    # -- what each family provides ----------------------------------------------------------

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """Draws of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Draws that are differentiable in the parameters (reparameterized)."""
        raise NotImplementedError(f"{type(self).__name__}.rsample: this distribution has no "
                                  "reparameterized sampler")

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.cdf")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.icdf")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.entropy")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.enumerate_support")

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    # -- helpers for the families -------------------------------------------------------------

    def _extended_shape(self, sample_shape=()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """ValueError when `value` is not a tensor of the support (with validate_args)."""
        if not self._validate_args:
            return
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        if not bool(self.support.check(value).all()):
            raise ValueError(
                f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within "
                f"the support ({self.support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{value}")

    def __repr__(self) -> str:
        shown = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                shown.append(f"{name}: {value if value.numel() == 1 else value.size()}")
        return f"{type(self).__name__}({', '.join(shown)})"


def broadcast_all(*values) -> tuple:
    """The parameters as tensors of one broadcast shape; numbers take the dtype of the
    tensors among them (the default float dtype when there are none)."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    tensors = [v if isinstance(v, Tensor) else
               make_tensor(float(v), dtype=None if like is None else like.dtype,
                           device=None if like is None else like.device) for v in values]
    return broadcast_tensors(*tensors)

