"""More elementwise ops: logaddexp, logaddexp2, copysign, heaviside, and the angle
conversions deg2rad and rad2deg."""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor, _make
from ._util import xp_of
from .arithmetic import _is_integral, inplace_form, require_float_target, unsupported
from .elementwise_special import _binary, _binary_, _tensors


class LogAddExp(Function):
    """``log(exp(x) + exp(y))`` (base 2 with `base2`), without overflow.
    Gradients: ``exp(x - out)`` and ``exp(y - out)`` (powers of 2 in base 2)."""

    @staticmethod
    def forward(ctx, x, y, base2=False):
        xp = xp_of(x)
        out = (xp.logaddexp2 if base2 else xp.logaddexp)(x, y)
        ctx._name = "Logaddexp2Backward0" if base2 else "LogaddexpBackward0"
        ctx.base2 = base2
        ctx.save_for_backward(x, y, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y, out = ctx.saved_tensors
        weight = (lambda d: d.exp2()) if ctx.base2 else (lambda d: d.exp())
        return grad * weight(x - out), grad * weight(y - out)


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
