"""More elementwise ops: logaddexp, logaddexp2, copysign, heaviside, the angle
conversions deg2rad and rad2deg, sinc, ldexp, frexp, nextafter, and gcd/lcm of integers."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.grad_mode import no_grad
from .._core.tensor import Tensor, _make
from ._util import xp_of
from .arithmetic import _is_integral, inplace_form, require_float_target, unsupported
from .elementwise_special import _binary, _binary_, _tensors


class LogAddExp(Function):
    """``log(exp(x) + exp(y))`` (base 2 with `base2`), without overflow.
    Gradients: ``1 / (1 + exp(y - x))`` and ``1 / (1 + exp(x - y))`` (powers of 2 in base
    2), which stay 1 and 0 where one operand is infinite (``exp(x - out)`` gave inf - inf)."""

    @staticmethod
    def forward(ctx, x, y, base2=False):
        xp = xp_of(x)
        out = (xp.logaddexp2 if base2 else xp.logaddexp)(x, y)
        ctx._name = "Logaddexp2Backward0" if base2 else "LogaddexpBackward0"
        ctx.base2 = base2
        ctx.save_for_backward(x, y)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        power = (lambda d: d.exp2()) if ctx.base2 else (lambda d: d.exp())
        return grad / (1 + power(y - x)), grad / (1 + power(x - y))


class Copysign(Function):
    """``|x|`` with the sign of y.  Gradient of x: ``out / x`` (0 where x is 0); y gets 0.
    (PyTorch names the node of a number `y` CopysignBackward1.)"""

    @staticmethod
    def forward(ctx, x, y, name="CopysignBackward0"):
        ctx._name = name
        out = xp_of(x).copysign(x, y)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        with np.errstate(all="ignore"):
            ratio = (out / x).where(x != 0, 0.0)
        gy = grad * 0 if ctx._edges[1][0] is not None else None
        return grad * ratio, gy


CopysignInplace = inplace_form(Copysign)


def _float_operands(op: str, input, other):
    a, b = _binary(op, input, other, floats=True)
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        raise unsupported(op + "_cpu", a.dtype)
    return a, b


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))``, computed without overflow (floating point only)."""
    _tensors("logaddexp", input, other)
    a, b = _binary("logaddexp", input, other)
    if _is_integral(a.dtype):
        raise unsupported("logaddexp_cpu", a.dtype)
    return LogAddExp.apply(a, b)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)``, computed without overflow (floating point only)."""
    _tensors("logaddexp2", input, other)
    a, b = _binary("logaddexp2", input, other)
    if _is_integral(a.dtype):
        raise unsupported("logaddexp2_cpu", a.dtype)
    return LogAddExp.apply(a, b, base2=True)


def copysign(input, other) -> Tensor:
    """The magnitude of `input` with the sign of `other` (integers give floats)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return Copysign.apply(*_float_operands("copysign", input, other), name=_copysign_name(other))


def copysign_(input: Tensor, other) -> Tensor:
    """In-place ``copysign``."""
    require_float_target("copysign_", input)
    return CopysignInplace.apply(input, _binary_("copysign_", input, other),
                                 name=_copysign_name(other))


def _copysign_name(other) -> str:
    return "CopysignBackward0" if isinstance(other, Tensor) else "CopysignBackward1"


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The step function: 0 where `input` < 0, `values` where it is 0, 1 where > 0.

    It has no derivative: the result records no gradient.
    """
    _tensors("heaviside", input, values)
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    if input.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    x, v = input._data, values._data
    xp = xp_of(x)
    out = xp.where(x == 0, v, (x > 0).astype(x.dtype))
    return _make(xp.asarray(out, dtype=x.dtype))


class AngleScale(Function):
    """deg2rad / rad2deg: ``x * factor``; gradient ``grad * factor``."""

    @staticmethod
    def forward(ctx, x, factor, name):
        ctx._name, ctx.factor = name, factor
        return (x * factor).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor


AngleScaleInplace = inplace_form(AngleScale)

_TO_RADIANS = (math.pi / 180.0, "Deg2RadBackward0")
_TO_DEGREES = (180.0 / math.pi, "Rad2DegBackward0")


def _angles(op: str, input: Tensor, unit: tuple) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype.is_complex:
        raise RuntimeError(f"{op} is not supported for complex tensors.")
    if _is_integral(input.dtype):  # integers and bool give the default float dtype
        input = input.to(dtypes.get_default_dtype())
    return AngleScale.apply(input, *unit)


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians (integers give the default float dtype)."""
    return _angles("deg2rad", input, _TO_RADIANS)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees (integers give the default float dtype)."""
    return _angles("rad2deg", input, _TO_DEGREES)


def deg2rad_(input: Tensor) -> Tensor:
    """In-place ``deg2rad`` (floating-point tensors)."""
    require_float_target("deg2rad_", input)
    return AngleScaleInplace.apply(input, *_TO_RADIANS)


def rad2deg_(input: Tensor) -> Tensor:
    """In-place ``rad2deg`` (floating-point tensors)."""
    require_float_target("rad2deg_", input)
    return AngleScaleInplace.apply(input, *_TO_DEGREES)


_FrexpResult = namedtuple("frexp", ["mantissa", "exponent"])


class Sinc(Function):
    """The normalized sinc, ``sin(pi x) / (pi x)``, 1 at 0.  Gradient: ``(cos(pi x) -
    sinc(x)) / x``, 0 at 0.  NOTE: as a Function, not sin(s) / s recorded op by op, whose
    gradient divides by s squared: in float32 that is 0 for |x| below ~1e-20, and the
    gradient came out inf where it is ~0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        xp = xp_of(x)
        safe = xp.where(x == 0, 1.0, x * math.pi).astype(x.dtype, copy=False)
        return xp.where(x == 0, 1.0, xp.sin(safe) / safe).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        zero = x == 0
        safe = x.masked_fill(zero, 1.0)
        slope = ((safe * math.pi).cos() - Sinc.apply(safe)) / safe
        return grad * slope.masked_fill(zero, 0.0)


def sinc(input: Tensor) -> Tensor:
    """The normalized sinc, ``sin(pi x) / (pi x)``, 1 at 0 (integers give floats)."""
    return Sinc.apply(_as_float(input))


def sinc_(input: Tensor) -> Tensor:
    """In-place ``sinc``."""
    require_float_target("sinc_", input)
    return input.copy_(sinc(input.clone()))  # (the clone keeps the old values for backward)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2**other`` (integers give the default float dtype)."""
    x = _as_float(input)
    return x * _as_float(other).to(x.dtype).exp2()


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In-place ``ldexp``."""
    require_float_target("ldexp_", input)
    return input.mul_(_as_float(other).to(input.dtype).exp2())


class Frexp(Function):
    """(mantissa in [0.5, 1) with the sign of x, int32 exponent): ``x = m * 2**e``.
    Gradient of the mantissa: ``grad / 2**e``."""

    @staticmethod
    def forward(ctx, x):
        mantissa, exponent = xp_of(x).frexp(x)
        exponent = exponent.astype(np.int32)
        ctx.exponent = exponent
        ctx.mark_non_differentiable(exponent)
        return mantissa, exponent

    @staticmethod
    def backward(ctx, grad_mantissa, grad_exponent):
        xp = xp_of(ctx.exponent)
        scale = _make(xp.asarray(xp.ldexp(xp.ones((), grad_mantissa._data.dtype),
                                          -ctx.exponent)))
        return grad_mantissa * scale


def frexp(input: Tensor):
    """The mantissa (floats in [0.5, 1), signed) and int32 exponent of each element."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = Frexp.apply(input)
    return _FrexpResult(mantissa, exponent)


class NextAfter(Function):
    """The next representable float after x towards y.  Gradients as PyTorch defines them:
    x's passes through (the result is x, one step on) except where x == y (the result is
    y itself there), and y gets 0."""

    _name = "NextafterBackward0"

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return xp_of(x).nextafter(x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gy = grad * 0 if ctx._edges[1][0] is not None else None
        return grad.where(x != y, 0.0), gy


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next float after `input` towards `other` (same floating-point dtype)."""
    _tensors("nextafter", input, other)
    a, b = _binary("nextafter", input, other)
    if not a.dtype.is_floating_point:
        raise unsupported("nextafter_cpu", a.dtype)
    return NextAfter.apply(a, b)


def nextafter_(input: Tensor, other: Tensor) -> Tensor:
    """In-place ``nextafter``."""
    with no_grad():
        return input.copy_(nextafter(input, other))


def _integer_op(name: str, ufunc_name: str):
    def op(input: Tensor, other: Tensor) -> Tensor:
        _tensors(name, input, other)
        a, b = _binary(name, input, other)
        if not _is_integral(a.dtype) or a.dtype is dtypes.bool:
            raise unsupported(name + "_cpu", a.dtype)
        return _make(getattr(xp_of(a._data), ufunc_name)(a._data, b._data))
    op.__name__ = name
    return op


gcd = _integer_op("gcd", "gcd")
gcd.__doc__ = "The greatest common divisor of integers (non-negative; gcd(0, 0) = 0)."
lcm = _integer_op("lcm", "lcm")
lcm.__doc__ = "The least common multiple of integers (non-negative; 0 when either is 0)."


def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """In-place ``gcd``."""
    return input.copy_(gcd(input, other))


def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """In-place ``lcm``."""
    return input.copy_(lcm(input, other))


def _as_float(input):
    if not isinstance(input, Tensor):
        raise TypeError(f"argument 'input' must be Tensor, not {type(input).__name__}")
    return input.to(dtypes.get_default_dtype()) if _is_integral(input.dtype) else input
