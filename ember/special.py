"""``ember.special`` (``torch.special``): special functions under their SciPy-style names.

Most are the ember functions of the same meaning (``gammaln`` is ``lgamma``, ``expit`` is
``sigmoid``, ``psi`` is ``digamma``); ``ndtr``, ``ndtri``, ``entr``, ``xlog1py``, ``sinc``
and ``multigammaln`` are written here from other ops, so their gradients follow.
"""

from __future__ import annotations

import math

import numpy as np

from ._core.function import Function
from ._core.tensor import Tensor
from .ops._util import xp_of
from .ops.activation import log_softmax_fn as log_softmax
from .ops.activation import softmax_fn as softmax
from .ops.bessel import i0, i1
from .ops.elementwise import exp2, expm1, log1p, round  # noqa: A004 - PyTorch's names
from .ops.elementwise_binary import sinc
from .ops.elementwise_special import Xlogy, erf, erfc, erfinv, logit, xlogy
from .ops.elementwise_special import sigmoid as expit
from .ops.gamma import digamma, polygamma
from .ops.shape import broadcast_tensors
from .ops.gamma import lgamma as gammaln
from .ops.gamma import mvlgamma as multigammaln
from .ops.reduction_stats import logsumexp
from ._core import dtype as dtypes

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0",
           "i1", "log1p", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy"]

psi = digamma

_SQRT_HALF = math.sqrt(0.5)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, ``(1 + erf(x / sqrt 2)) / 2``."""
    return (1 + erf(_floating(input) * _SQRT_HALF)) * 0.5


def ndtri(input: Tensor) -> Tensor:
    """The inverse of ``ndtr``: ``sqrt 2 * erfinv(2p - 1)``."""
    return erfinv(_floating(input) * 2 - 1) * math.sqrt(2)


class Entr(Function):
    """``-x log x`` (0 at 0, -inf below 0); gradient ``-(log x + 1)`` (-inf at 0, nan below)."""

    _name = "SpecialEntrBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        xp = xp_of(x)
        with np.errstate(all="ignore"):
            out = xp.where(x > 0, -x * xp.log(x), xp.where(x == 0, 0.0, -xp.inf))
        return xp.where(xp.isnan(x), x, out).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -(x.log() + 1)


def entr(input: Tensor) -> Tensor:
    """``-x log x`` elementwise (0 at 0, -inf below 0)."""
    return Entr.apply(_floating(input))


def xlog1py(input, other) -> Tensor:
    """``x * log1p(y)``, 0 where x is 0 (unless y is nan)."""
    like = input if isinstance(input, Tensor) else other
    x = input if isinstance(input, Tensor) else _floating(like).new_tensor(input)
    y = other if isinstance(other, Tensor) else x.new_tensor(other)
    x, y = _floating(x), _floating(y)
    x, y = broadcast_tensors(x, y.to(x.dtype))
    return Xlogy.apply(x, y, "SpecialXlog1PyBackward0", True)


def _floating(input: Tensor) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"argument 'input' must be Tensor, not {type(input).__name__}")
    if input.is_floating_point() or input.is_complex():
        return input
    return input.to(dtypes.get_default_dtype())
