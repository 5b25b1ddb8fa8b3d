"""Modified Bessel functions of the first kind: i0 (``torch.i0``, ``torch.special.i0``) and
i1 (``torch.special.i1``), with gradients.

Both are computed in float64 with NumPy alone: the power series
``I_n(x) = sum_k (x/2)^(2k+n) / (k! (k+n)!)`` for ``|x| < 30`` (all its terms are positive,
so summing them loses no precision; 60 terms reach float64's epsilon there) and Hankel's
asymptotic expansion ``I_n(x) ~ e^x / sqrt(2 pi x) * sum_k c_k / x^k`` beyond (its terms
keep shrinking for 30 more terms than the 25 used).  ``i0' = i1`` and
``i1' = i0 - i1 / x`` (1/2 at 0), written with these ops, so gradients of any order work.
"""

from __future__ import annotations

import math


from .._core.tensor import Tensor
from .arithmetic import inplace_form
from .elementwise import _float_op, _float_op_, _Unary
from .elementwise_special import _in_float64

_SERIES_TERMS = 60
_ASYMPTOTIC_TERMS = 25
_SERIES_LIMIT = 30.0


def _series(xp, x, order: int):
    quarter_square = x * x / 4
    term = (x / 2) ** order / math.factorial(order)
    total = term
    for k in range(1, _SERIES_TERMS):
        term = term * quarter_square / (k * (k + order))
        total = total + term
    return total


def _asymptotic(xp, x, order: int):
    """For x > 0: Hankel's expansion, with the exponential taken in log space so that the
    result overflows only where I_n itself does."""
    mu = 4.0 * order * order
    term = xp.ones_like(x)
    total = term
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * ((2 * k - 1) ** 2 - mu) / (8.0 * k * x)
        total = total + term
    return xp.exp(x - 0.5 * xp.log(2 * math.pi * x)) * total


def _bessel(order: int):
    def kernel(xp, x):
        a = xp.abs(x)
        small = a < _SERIES_LIMIT
        near = _series(xp, xp.where(small, a, 0.0), order)
        far = _asymptotic(xp, xp.where(small, _SERIES_LIMIT, a), order)
        # NOTE: at +-inf this gives NaN (inf - inf in the exponent), as PyTorch's i0/i1 do
        out = xp.where(small, near, far)
        # I0 is even and I1 odd; NaN stays NaN
        out = out if order == 0 else xp.where(x < 0, -out, out)
        return xp.where(xp.isnan(x), x, out)
    return kernel


class I0(_Unary):
    compute = _in_float64(_bessel(0))
    derivative = staticmethod(lambda x, y: i1(x))


class I1(_Unary):
    _name = "SpecialI1Backward0"
    saves = "xy"
    compute = _in_float64(_bessel(1))

    @staticmethod
    def derivative(x, y):
        # NOTE: I1(x)/x -> 1/2 at 0; divide by a safe x so that the unused branch's gradient
        # stays finite (0/0 would leak NaN into higher-order gradients).
        zero = x == 0
        safe = x.where(~zero, 1.0)
        return i0(x) - (y / safe).where(~zero, 0.5)


I0Inplace = inplace_form(I0)


def i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0, elementwise; integer inputs
    give the default float dtype.  ``ember.i0(ember.tensor([0., 1.]))`` is
    ``tensor([1.0000, 1.2661])``."""
    return _float_op(I0, input)


def i0_(input: Tensor) -> Tensor:
    """In-place ``i0``."""
    return _float_op_(I0Inplace, "i0_", input)


def i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1, elementwise
    (``torch.special.i1``)."""
    return _float_op(I1, input)
