"""The gamma function family: lgamma, digamma, polygamma and mvlgamma.

NumPy has none of them (SciPy is not a dependency), so they are written here, computed in
float64 (float32 inputs are cast back):

* lgamma: the Lanczos approximation (g = 7, 9 terms) for x >= 1/2, accurate to about
  1e-15; below, the reflection ``lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)``.
* digamma: the recurrence ``psi(x) = psi(x + 1) - 1/x`` up to x >= 10, then the asymptotic
  series in 1/x^2; reflection below 0.
* polygamma(n, x) for n >= 1: ``(-1)^(n+1) n! zeta(n + 1, x)`` with the Hurwitz zeta
  function summed directly until the argument passes 9, then Euler-Maclaurin (as Cephes
  does), which also covers negative non-integer x.

Gradients: lgamma' = digamma, digamma' = polygamma(1), polygamma(n)' = polygamma(n + 1),
so every order works.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor, _make
from ._util import xp_of
from .arithmetic import _is_integral, inplace_form, require_float_target

# Lanczos coefficients for g = 7, n = 9 (the published set)
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Bernoulli numbers B_2k / (2k)! for the Euler-Maclaurin tail of the Hurwitz zeta function
_ZETA_TAIL = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160,
              -691 / 1307674368000, 1 / 74724249600, -3617 / 10670622842880000,
              43867 / 5109094217170944000, -174611 / 802857662698291200000)


def _sin_pi(xp, x):
    """sin(pi x), exact at the integers (x reduced mod 2 first)."""
    r = xp.fmod(x, 2.0)
    return xp.where(r == xp.round(r), 0.0, xp.sin(math.pi * r))


def _lgamma(xp, x):
    """log|Gamma(x)| of a float64 array."""
    with np.errstate(all="ignore"):
        small = x < 0.5
        z = xp.where(small, 1.0 - x, x) - 1.0  # the Lanczos series needs z + 1 >= 1/2
        series = xp.full(x.shape, _LANCZOS[0])
        for i, c in enumerate(_LANCZOS[1:], 1):
            series = series + c / (z + i)
        t = z + 7.5
        positive = _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(series)
        reflected = xp.log(math.pi / xp.abs(_sin_pi(xp, x))) - positive
        out = xp.where(small, reflected, positive)
        out = xp.where(xp.isinf(x), xp.inf, out)  # lgamma(+-inf) = inf
        out = xp.where((x == 1) | (x == 2), 0.0, out)  # exact zeros, not +-1e-16
        return xp.where((x <= 0) & (x == xp.floor(x)), xp.inf, out)


def _digamma(xp, x):
    """psi(x) of a float64 array."""
    with np.errstate(all="ignore"):
        negative = x < 0
        y = xp.where(negative, 1.0 - x, x)
        shift = xp.zeros(x.shape)
        for _ in range(10):  # psi(y) = psi(y + 1) - 1/y until y >= 10
            low = y < 10
            shift = shift - xp.where(low, 1.0 / y, 0.0)
            y = xp.where(low, y + 1.0, y)
        inv2 = 1.0 / (y * y)
        series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
            1 / 240 - inv2 * (1 / 132 - inv2 * (691 / 32760 - inv2 / 12))))))
        out = xp.log(y) - 0.5 / y - series + shift
        reflected = out - math.pi / xp.tan(math.pi * xp.fmod(x, 1.0))
        out = xp.where(negative, reflected, out)
        out = xp.where(negative & (x == xp.floor(x)), xp.nan, out)
        out = xp.where(x == 0, xp.where(xp.signbit(x), xp.inf, -xp.inf), out)
        out = xp.where(xp.isposinf(x), xp.inf, out)
        return xp.where(xp.isneginf(x), xp.nan, out)


def _hurwitz_zeta(xp, s: int, q):
    """zeta(s, q) = sum_k (q + k)^-s for an integer s >= 2 and a float64 array q."""
    with np.errstate(all="ignore"):
        total = q ** -s
        a = q.copy()
        for _ in range(10000):  # direct terms until every argument passes 9
            active = a <= 9.0
            if not bool(active.any()):
                break
            a = xp.where(active, a + 1.0, a)
            total = total + xp.where(active, a ** -s, 0.0)
        # Euler-Maclaurin tail from a: a^(1-s)/(s-1) - a^-s/2 + sum B_2k/(2k)! (s)_(2k-1) a^...
        tail = a ** (1 - s) / (s - 1) - 0.5 * a ** -s
        rising, power = float(s), a ** (-s - 1)
        for j, coefficient in enumerate(_ZETA_TAIL):
            tail = tail + coefficient * rising * power
            rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
            power = power / (a * a)
        out = total + tail
        return xp.where((q <= 0) & (q == xp.floor(q)), xp.inf, out)


def _polygamma(xp, n: int, x):
    if n == 0:
        return _digamma(xp, x)
    sign = 1.0 if n % 2 == 1 else -1.0
    with np.errstate(all="ignore"):
        out = sign * math.factorial(n) * _hurwitz_zeta(xp, n + 1, x)
        out = xp.where(xp.isposinf(x), 0.0, out)
        return xp.where(xp.isneginf(x) | xp.isnan(x), xp.nan, out)


class GammaFamily(Function):
    """polygamma(order, x) for order >= 0, and lgamma as order -1; the gradient is the
    next order."""

    @staticmethod
    def forward(ctx, x, order):
        ctx.order = order
        ctx._name = {-1: "LgammaBackward0", 0: "DigammaBackward0"}.get(order,
                                                                        "PolygammaBackward0")
        ctx.save_for_backward(x)
        xp = xp_of(x)
        wide = x.astype(np.float64)
        out = _lgamma(xp, wide) if order < 0 else _polygamma(xp, order, wide)
        return out.astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * GammaFamily.apply(x, ctx.order + 1)


GammaFamilyInplace = inplace_form(GammaFamily)


def _floating(op: str, input: Tensor) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype.is_complex:
        raise NotImplementedError(f"\"{op}\" not implemented for complex tensors")
    return input.to(dtypes.get_default_dtype()) if _is_integral(input.dtype) else input


def lgamma(input: Tensor) -> Tensor:
    """``log |Gamma(x)|`` (integers give the default float dtype)."""
    return GammaFamily.apply(_floating("lgamma", input), -1)


def digamma(input: Tensor) -> Tensor:
    """``psi(x) = d/dx log Gamma(x)``."""
    return GammaFamily.apply(_floating("digamma", input), 0)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma (``polygamma(0, x)`` is digamma)."""
    if not isinstance(n, int) or n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return GammaFamily.apply(_floating("polygamma", input), n)


def lgamma_(input: Tensor) -> Tensor:
    """In-place ``lgamma``."""
    require_float_target("lgamma_", input)
    return GammaFamilyInplace.apply(input, -1)


def digamma_(input: Tensor) -> Tensor:
    """In-place ``digamma``."""
    require_float_target("digamma_", input)
    return GammaFamilyInplace.apply(input, 0)


def polygamma_(input: Tensor, n: int) -> Tensor:
    """In-place ``polygamma(n, input)``."""
    require_float_target("polygamma_", input)
    return GammaFamilyInplace.apply(input, n)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension `p`:
    ``p(p-1)/4 log(pi) + sum_{i<p} lgamma(x - i/2)``; every x must exceed (p - 1)/2."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _floating("mvlgamma", input)
    if bool((x <= (p - 1) / 2).any()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    steps = _make(xp_of(x._data).arange(p, dtype=x._data.dtype) / 2)
    return lgamma(x.unsqueeze(-1) - steps).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def mvlgamma_(input: Tensor, p: int) -> Tensor:
    """In-place ``mvlgamma``."""
    require_float_target("mvlgamma_", input)
    return input.copy_(mvlgamma(input, p))
