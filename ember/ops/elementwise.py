"""Elementwise math of one tensor: exponentials and logarithms, roots, trigonometric and
hyperbolic functions, rounding, sign and relu.

Most ops are `_Unary` subclasses that read like a table: ``compute(xp, x)`` is the forward
kernel on a backend array and ``derivative(x, y)`` is dy/dx written with ember ops (from
the input x and/or the output y, as ``saves`` says), so backward is ``grad * derivative``
and can itself be differentiated.  Integer inputs to float functions (exp, sin, ...) give
the default float dtype; the in-place forms need a floating point tensor.

sigmoid, logit, erf and the ops of two or more tensors (clamp, where, maximum...) are in
``elementwise_special.py``; the floating point tests (isnan, ...) in ``comparison.py``.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor, _make
from . import _kernels
from . import _native_activation as _native_act
from ._util import float_input, xp_of
from .arithmetic import inplace_form, require_float_target, unsupported
from .complex import times_conj

LN2 = math.log(2.0)
LN10 = math.log(10.0)


class _Unary(Function):
    """y = f(x) elementwise; subclasses give `compute`, `derivative` and `saves`."""

    saves = "x"  # what `derivative(x, y)` reads: "x", "y" or "xy"; the other is None

    @staticmethod
    def compute(xp, x):
        raise NotImplementedError

    @staticmethod
    def derivative(x, y):
        raise NotImplementedError

    @staticmethod
    def forward(ctx, x):
        cls = type(ctx)
        with np.errstate(all="ignore"):  # domain errors give nan/inf quietly, as in PyTorch
            y = cls.compute(xp_of(x), x)
        ctx.save_for_backward(x if "x" in cls.saves else None, y if "y" in cls.saves else None)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        with np.errstate(all="ignore"):
            # (complex inputs: the conjugate derivative, see ops/complex.py)
            return times_conj(grad, type(ctx).derivative(x, y))


class _ZeroGrad(_Unary):
    """A piecewise constant function: its gradient is zero (PyTorch returns zeros too)."""

    saves = ""

    @staticmethod
    def backward(ctx, grad):
        return grad.new_zeros(grad.shape)


def _float_op(cls, input: Tensor) -> Tensor:
    return cls.apply(float_input(input))


def _float_op_(cls, op: str, input: Tensor) -> Tensor:
    require_float_target(op, input)
    return cls.apply(input)


# ---------------------------------------------------------------------------
# exponentials and logarithms


class Exp(_Unary):
    saves = "y"
    compute = staticmethod(lambda xp, x: xp.exp(x))
    derivative = staticmethod(lambda x, y: y)


class Exp2(_Unary):
    saves = "y"
    compute = staticmethod(lambda xp, x: xp.exp2(x))
    derivative = staticmethod(lambda x, y: y * LN2)


class Expm1(_Unary):
    saves = "y"
    compute = staticmethod(lambda xp, x: xp.expm1(x))
    derivative = staticmethod(lambda x, y: y + 1)


class Log(_Unary):
    compute = staticmethod(lambda xp, x: xp.log(x))
    derivative = staticmethod(lambda x, y: x.reciprocal())


class Log2(_Unary):
    compute = staticmethod(lambda xp, x: xp.log2(x))
    derivative = staticmethod(lambda x, y: (x * LN2).reciprocal())


class Log10(_Unary):
    compute = staticmethod(lambda xp, x: xp.log10(x))
    derivative = staticmethod(lambda x, y: (x * LN10).reciprocal())


class Log1p(_Unary):
    _name = "Log1PBackward0"
    compute = staticmethod(lambda xp, x: xp.log1p(x))
    derivative = staticmethod(lambda x, y: (x + 1).reciprocal())


class Sqrt(_Unary):
    saves = "y"
    compute = staticmethod(lambda xp, x: xp.sqrt(x))
    derivative = staticmethod(lambda x, y: 0.5 / y)  # NOTE: inf at 0, as in PyTorch


class Rsqrt(_Unary):
    saves = "y"
    compute = staticmethod(lambda xp, x: 1 / xp.sqrt(x))
    derivative = staticmethod(lambda x, y: -0.5 * y * y * y)


# ---------------------------------------------------------------------------
# trigonometric and hyperbolic


class Sin(_Unary):
    compute = staticmethod(lambda xp, x: xp.sin(x))
    derivative = staticmethod(lambda x, y: x.cos())


class Cos(_Unary):
    compute = staticmethod(lambda xp, x: xp.cos(x))
    derivative = staticmethod(lambda x, y: -x.sin())


class Tan(_Unary):
    saves = "y"
    compute = staticmethod(lambda xp, x: xp.tan(x))
    derivative = staticmethod(lambda x, y: 1 + y * y)


class Asin(_Unary):
    compute = staticmethod(lambda xp, x: xp.arcsin(x))
    derivative = staticmethod(lambda x, y: (1 - x * x).rsqrt())


class Acos(_Unary):
    compute = staticmethod(lambda xp, x: xp.arccos(x))
    derivative = staticmethod(lambda x, y: -(1 - x * x).rsqrt())


class Atan(_Unary):
    compute = staticmethod(lambda xp, x: xp.arctan(x))
    derivative = staticmethod(lambda x, y: (1 + x * x).reciprocal())


class Sinh(_Unary):
    compute = staticmethod(lambda xp, x: xp.sinh(x))
    derivative = staticmethod(lambda x, y: x.cosh())


class Cosh(_Unary):
    compute = staticmethod(lambda xp, x: xp.cosh(x))
    derivative = staticmethod(lambda x, y: x.sinh())


class Tanh(_Unary):
    """tanh; large float32/float64 CPU arrays take the numba kernels of
    _native_activation.py (forward, and the first-order ``grad * (1 - y * y)``)."""

    saves = "y"
    compute = staticmethod(lambda xp, x: (_native_act.forward("tanh", x)
                                          if _native_act.supports(x) else xp.tanh(x)))
    derivative = staticmethod(lambda x, y: 1 - y * y)

    @staticmethod
    def backward(ctx, grad):
        if not is_grad_enabled():
            _, y = ctx.saved_tensors
            if _native_act.supports(grad._data, y._data):
                return _make(_native_act.backward("tanh", grad._data, y._data))
        return _Unary.backward(ctx, grad)


class Asinh(_Unary):
    compute = staticmethod(lambda xp, x: xp.arcsinh(x))
    derivative = staticmethod(lambda x, y: (x * x + 1).rsqrt())


class Acosh(_Unary):
    compute = staticmethod(lambda xp, x: xp.arccosh(x))
    derivative = staticmethod(lambda x, y: (x * x - 1).rsqrt())


class Atanh(_Unary):
    compute = staticmethod(lambda xp, x: xp.arctanh(x))
    derivative = staticmethod(lambda x, y: (1 - x * x).reciprocal())


# In-place forms: the same kernel and gradient, written into the input.
ExpInplace = inplace_form(Exp)
Exp2Inplace = inplace_form(Exp2)
Expm1Inplace = inplace_form(Expm1)
LogInplace = inplace_form(Log)
Log2Inplace = inplace_form(Log2)
Log10Inplace = inplace_form(Log10)
Log1pInplace = inplace_form(Log1p)
SqrtInplace = inplace_form(Sqrt)
RsqrtInplace = inplace_form(Rsqrt)
SinInplace = inplace_form(Sin)
CosInplace = inplace_form(Cos)
TanInplace = inplace_form(Tan)
AsinInplace = inplace_form(Asin)
AcosInplace = inplace_form(Acos)
AtanInplace = inplace_form(Atan)
SinhInplace = inplace_form(Sinh)
CoshInplace = inplace_form(Cosh)
TanhInplace = inplace_form(Tanh)


# PyTorch names the nodes of the in-place inverse hyperbolic functions ...Backward1.
class AsinhInplace(inplace_form(Asinh)):
    _name = "AsinhBackward1"


class AcoshInplace(inplace_form(Acosh)):
    _name = "AcoshBackward1"


class AtanhInplace(inplace_form(Atanh)):
    _name = "AtanhBackward1"


def exp(input: Tensor) -> Tensor:
    """``e ** input``, elementwise."""
    return _float_op(Exp, input)


def exp2(input: Tensor) -> Tensor:
    """``2 ** input``, elementwise."""
    return _float_op(Exp2, input)


def expm1(input: Tensor) -> Tensor:
    """``exp(input) - 1``, accurate for small inputs."""
    return _float_op(Expm1, input)


def log(input: Tensor) -> Tensor:
    """The natural logarithm (nan below 0, -inf at 0)."""
    return _float_op(Log, input)


def log2(input: Tensor) -> Tensor:
    """The base-2 logarithm."""
    return _float_op(Log2, input)


def log10(input: Tensor) -> Tensor:
    """The base-10 logarithm."""
    return _float_op(Log10, input)


def log1p(input: Tensor) -> Tensor:
    """``log(1 + input)``, accurate for small inputs."""
    return _float_op(Log1p, input)


def sqrt(input: Tensor) -> Tensor:
    """The square root (nan below 0; the gradient at 0 is inf)."""
    return _float_op(Sqrt, input)


def rsqrt(input: Tensor) -> Tensor:
    """``1 / sqrt(input)``."""
    return _float_op(Rsqrt, input)


def sin(input: Tensor) -> Tensor:
    """The sine (radians)."""
    return _float_op(Sin, input)


def cos(input: Tensor) -> Tensor:
    """The cosine (radians)."""
    return _float_op(Cos, input)


def tan(input: Tensor) -> Tensor:
    """The tangent (radians)."""
    return _float_op(Tan, input)


def asin(input: Tensor) -> Tensor:
    """The inverse sine, in [-pi/2, pi/2] (nan outside [-1, 1])."""
    return _float_op(Asin, input)


def acos(input: Tensor) -> Tensor:
    """The inverse cosine, in [0, pi] (nan outside [-1, 1])."""
    return _float_op(Acos, input)


def atan(input: Tensor) -> Tensor:
    """The inverse tangent, in (-pi/2, pi/2)."""
    return _float_op(Atan, input)


def sinh(input: Tensor) -> Tensor:
    """The hyperbolic sine."""
    return _float_op(Sinh, input)


def cosh(input: Tensor) -> Tensor:
    """The hyperbolic cosine."""
    return _float_op(Cosh, input)


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent."""
    return _float_op(Tanh, input)


def asinh(input: Tensor) -> Tensor:
    """The inverse hyperbolic sine."""
    return _float_op(Asinh, input)


def acosh(input: Tensor) -> Tensor:
    """The inverse hyperbolic cosine (nan below 1)."""
    return _float_op(Acosh, input)


def atanh(input: Tensor) -> Tensor:
    """The inverse hyperbolic tangent (nan outside [-1, 1], inf at the ends)."""
    return _float_op(Atanh, input)


def exp_(input: Tensor) -> Tensor:
    """In-place ``exp``."""
    return _float_op_(ExpInplace, "exp_", input)


def exp2_(input: Tensor) -> Tensor:
    """In-place ``exp2``."""
    return _float_op_(Exp2Inplace, "exp2_", input)


def expm1_(input: Tensor) -> Tensor:
    """In-place ``expm1``."""
    return _float_op_(Expm1Inplace, "expm1_", input)


def log_(input: Tensor) -> Tensor:
    """In-place ``log``."""
    return _float_op_(LogInplace, "log_", input)


def log2_(input: Tensor) -> Tensor:
    """In-place ``log2``."""
    return _float_op_(Log2Inplace, "log2_", input)


def log10_(input: Tensor) -> Tensor:
    """In-place ``log10``."""
    return _float_op_(Log10Inplace, "log10_", input)


def log1p_(input: Tensor) -> Tensor:
    """In-place ``log1p``."""
    return _float_op_(Log1pInplace, "log1p_", input)


def sqrt_(input: Tensor) -> Tensor:
    """In-place ``sqrt``."""
    return _float_op_(SqrtInplace, "sqrt_", input)


def rsqrt_(input: Tensor) -> Tensor:
    """In-place ``rsqrt``."""
    return _float_op_(RsqrtInplace, "rsqrt_", input)


def sin_(input: Tensor) -> Tensor:
    """In-place ``sin``."""
    return _float_op_(SinInplace, "sin_", input)


def cos_(input: Tensor) -> Tensor:
    """In-place ``cos``."""
    return _float_op_(CosInplace, "cos_", input)


def tan_(input: Tensor) -> Tensor:
    """In-place ``tan``."""
    return _float_op_(TanInplace, "tan_", input)


def asin_(input: Tensor) -> Tensor:
    """In-place ``asin``."""
    return _float_op_(AsinInplace, "asin_", input)


def acos_(input: Tensor) -> Tensor:
    """In-place ``acos``."""
    return _float_op_(AcosInplace, "acos_", input)


def atan_(input: Tensor) -> Tensor:
    """In-place ``atan``."""
    return _float_op_(AtanInplace, "atan_", input)


def sinh_(input: Tensor) -> Tensor:
    """In-place ``sinh``."""
    return _float_op_(SinhInplace, "sinh_", input)


def cosh_(input: Tensor) -> Tensor:
    """In-place ``cosh``."""
    return _float_op_(CoshInplace, "cosh_", input)


def tanh_(input: Tensor) -> Tensor:
    """In-place ``tanh``."""
    return _float_op_(TanhInplace, "tanh_", input)


def asinh_(input: Tensor) -> Tensor:
    """In-place ``asinh``."""
    return _float_op_(AsinhInplace, "asinh_", input)


def acosh_(input: Tensor) -> Tensor:
    """In-place ``acosh``."""
    return _float_op_(AcoshInplace, "acosh_", input)


def atanh_(input: Tensor) -> Tensor:
    """In-place ``atanh``."""
    return _float_op_(AtanhInplace, "atanh_", input)


arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh
arcsin_, arccos_, arctan_ = asin_, acos_, atan_
arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_


# ---------------------------------------------------------------------------
# rounding, sign, relu


def _is_float_array(x) -> bool:
    return x.dtype.kind in "fc" or x.dtype.name == "bfloat16"


def _sign(xp, x):
    if x.dtype.kind == "b":
        return x.copy()
    out = xp.sign(x)
    if _is_float_array(x):
        out = xp.where(xp.isnan(x), 0, out).astype(x.dtype)  # PyTorch: sign(nan) == 0
    return out


def _keep_integers(kernel):
    """A rounding kernel that returns a copy for integer arrays (already whole)."""
    return staticmethod(lambda xp, x: kernel(xp, x) if _is_float_array(x) else x.copy())


class Sign(_ZeroGrad):
    compute = staticmethod(_sign)


class Sgn(_ZeroGrad):
    compute = staticmethod(_sign)  # for real numbers sgn is sign


class Floor(_ZeroGrad):
    compute = _keep_integers(lambda xp, x: xp.floor(x))


class Ceil(_ZeroGrad):
    compute = _keep_integers(lambda xp, x: xp.ceil(x))


class Trunc(_ZeroGrad):
    compute = _keep_integers(lambda xp, x: xp.trunc(x))


class Round(_ZeroGrad):
    """Round half to even, optionally to `decimals` decimal places."""

    @staticmethod
    def forward(ctx, x, decimals=0):
        if decimals:
            ctx._name = "RoundBackward1"
        if not _is_float_array(x):
            return x.copy()
        with np.errstate(all="ignore"):
            return xp_of(x).round(x, decimals)


class Frac(_Unary):
    saves = ""
    compute = staticmethod(lambda xp, x: x - xp.trunc(x))

    @staticmethod
    def backward(ctx, grad):
        return grad


class Relu(_Unary):
    saves = "y"
    compute = staticmethod(lambda xp, x: xp.maximum(x, 0))

    @staticmethod
    def backward(ctx, grad):
        _, y = ctx.saved_tensors
        # NOTE: relu'(0) = 0, as in PyTorch; a nan output passes the gradient (also PyTorch's).
        return ReluBackward.apply(grad, y)


class ReluBackward(Function):
    """relu's gradient, ``grad`` where ``y > 0`` else 0, as one op (one fused kernel
    instead of three tensor ops); its own backward serves double backward."""

    _name = "ThresholdBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, y):
        ctx.save_for_backward(y)
        return _kernels.relu_backward(grad, y)

    @staticmethod
    def backward(ctx, gg):
        (y,) = ctx.saved_tensors
        return ReluBackward.apply(gg, y), None


SignInplace = inplace_form(Sign)
SgnInplace = inplace_form(Sgn)
FloorInplace = inplace_form(Floor)
CeilInplace = inplace_form(Ceil)
TruncInplace = inplace_form(Trunc)
RoundInplace = inplace_form(Round)
FracInplace = inplace_form(Frac)
ReluInplace = inplace_form(Relu)


def _check_rounding(kernel: str, input: Tensor) -> None:
    if input.dtype is dtypes.bool:
        raise unsupported(kernel, input.dtype)


def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (0 for nan); the gradient is zero."""
    return Sign.apply(input)


def sgn(input: Tensor) -> Tensor:
    """The sign; for real tensors the same as ``sign``."""
    return Sgn.apply(input)


def floor(input: Tensor) -> Tensor:
    """The largest integer <= each element (integer tensors are returned as a copy)."""
    _check_rounding("floor_vml_cpu", input)
    return Floor.apply(input)


def ceil(input: Tensor) -> Tensor:
    """The smallest integer >= each element."""
    _check_rounding("ceil_vml_cpu", input)
    return Ceil.apply(input)


def trunc(input: Tensor) -> Tensor:
    """Each element rounded toward zero."""
    _check_rounding("trunc_vml_cpu", input)
    return Trunc.apply(input)


fix = trunc


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Round half to even; with `decimals`, to that many decimal places (may be negative)."""
    _check_rounding("round_vml_cpu", input)
    if decimals and not input.dtype.is_floating_point:
        raise unsupported("round_cpu", input.dtype)
    return Round.apply(input, int(decimals))


def frac(input: Tensor) -> Tensor:
    """The fractional part, ``input - trunc(input)`` (floating point only)."""
    if not input.dtype.is_floating_point:
        raise unsupported("frac_cpu", input.dtype)
    return Frac.apply(input)


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)`` elementwise (the gradient at 0 is 0)."""
    if input.dtype is dtypes.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    return Relu.apply(input)


def sign_(input: Tensor) -> Tensor:
    """In-place ``sign``."""
    return SignInplace.apply(input)


def sgn_(input: Tensor) -> Tensor:
    """In-place ``sgn``."""
    return SgnInplace.apply(input)


def floor_(input: Tensor) -> Tensor:
    """In-place ``floor``."""
    _check_rounding("floor_vml_cpu", input)
    return FloorInplace.apply(input)


def ceil_(input: Tensor) -> Tensor:
    """In-place ``ceil``."""
    _check_rounding("ceil_vml_cpu", input)
    return CeilInplace.apply(input)


def trunc_(input: Tensor) -> Tensor:
    """In-place ``trunc``."""
    _check_rounding("trunc_vml_cpu", input)
    return TruncInplace.apply(input)


fix_ = trunc_


def round_(input: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place ``round``."""
    _check_rounding("round_vml_cpu", input)
    if decimals and not input.dtype.is_floating_point:
        raise unsupported("round_cpu", input.dtype)
    return RoundInplace.apply(input, int(decimals))


def frac_(input: Tensor) -> Tensor:
    """In-place ``frac``."""
    if not input.dtype.is_floating_point:
        raise unsupported("frac_cpu", input.dtype)
    return FracInplace.apply(input)


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    if input.dtype is dtypes.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    return ReluInplace.apply(input)
