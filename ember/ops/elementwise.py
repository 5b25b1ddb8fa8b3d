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
from .._core.grad_mode import PROCESS, STATE, is_grad_enabled
from .._core.tensor import Tensor, _make
from . import _kernels
from . import _native_activation as _native_act
from . import _native_exp_log
from . import _native_select
from ._inplace import op_pair
from ._util import float_input, xp_of
from .arithmetic import require_float_target, unsupported
from ._inplace import inplace_form
from .complex import times_conj

LN2 = math.log(2.0)
LN10 = math.log(10.0)


class _Unary(Function):
    """y = f(x) elementwise; subclasses give `compute`, `derivative` and `saves`."""

    _fresh_grads = True  # (grad times the derivative: a new array; Node._fresh_grads)
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


def _float_pair(cls, name: str, doc: str, inplace_name: str | None = None):
    """``name`` (integer inputs give the default float dtype) and ``name_`` (float tensors
    only) of a float function."""
    return op_pair(cls, name, doc, prepare=float_input, check_=require_float_target,
                   inplace_name=inplace_name)


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


def _expm1(xp, x):
    return _native_exp_log.expm1(x) if _native_exp_log.takes(x) else xp.expm1(x)


def _log1p(xp, x):
    return _native_exp_log.log1p(x) if _native_exp_log.takes(x) else xp.log1p(x)


def _first_order_exp_log(grad: Tensor, saved: Tensor) -> bool:
    """Whether expm1's or log1p's first-order gradient runs as one kernel pass: nothing
    recorded or observed, float32 arrays the kernels take, of one shape."""
    return (not STATE.enabled and PROCESS.observer is None
            and _native_exp_log.takes(saved._data) and _native_exp_log.takes(grad._data)
            and grad._data.shape == saved._data.shape)


def _exp_log_backward(ctx, grad: Tensor, saved: Tensor, fused) -> Tensor:
    """expm1's or log1p's gradient: `fused` (grad, saved arrays) where
    `_first_order_exp_log` allows it, else the generic two ops."""
    if _first_order_exp_log(grad, saved):
        return _make(fused(grad._data, saved._data))
    return _Unary.backward(ctx, grad)


class Expm1(_Unary):
    """exp(x) - 1; large float32 CPU arrays by the kernels of _native_exp_log.py."""

    saves = "y"
    compute = staticmethod(_expm1)
    derivative = staticmethod(lambda x, y: y + 1)

    @staticmethod
    def backward(ctx, grad):
        return _exp_log_backward(ctx, grad, ctx.saved_tensors[1], _native_exp_log.expm1_backward)


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
    """log(1 + x); large float32 CPU arrays by the kernels of _native_exp_log.py."""

    _name = "Log1PBackward0"
    compute = staticmethod(_log1p)
    derivative = staticmethod(lambda x, y: (x + 1).reciprocal())

    @staticmethod
    def backward(ctx, grad):
        return _exp_log_backward(ctx, grad, ctx.saved_tensors[0], _native_exp_log.log1p_backward)


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


def _tanh(xp, x):
    # NOTE: NumPy's float32 tanh runs on one thread (2.8 ms per million on an AMD EPYC);
    # the kernel on ember's threads, within 3 ulps
    if x.dtype == np.float32 and _native_act.supports(x):
        return _native_act.forward("tanh", x)
    return xp.tanh(x)


class Tanh(_Unary):
    """tanh; for large float32 CPU arrays one numba kernel of _native_activation.py, and
    for large float32/float64 ones the first-order backward ``grad * (1 - y * y)``."""

    saves = "y"
    _reuses_grad = True  # (see Node._reuses_grad)
    compute = staticmethod(_tanh)
    derivative = staticmethod(lambda x, y: 1 - y * y)

    @staticmethod
    def backward(ctx, grad):
        # NOTE: saved_tensors is read once: under non-reentrant checkpointing a second
        # read would recompute the forward again.
        _, y = ctx.saved_tensors
        if not is_grad_enabled() and _native_act.supports(grad._data, y._data):
            return _make(_native_act.backward("tanh", grad._data, y._data,
                                              overwrite=ctx._owns_grad))
        with np.errstate(all="ignore"):
            return times_conj(grad, 1 - y * y)


class Asinh(_Unary):
    compute = staticmethod(lambda xp, x: xp.arcsinh(x))
    derivative = staticmethod(lambda x, y: (x * x + 1).rsqrt())


class Acosh(_Unary):
    compute = staticmethod(lambda xp, x: xp.arccosh(x))
    derivative = staticmethod(lambda x, y: (x * x - 1).rsqrt())


class Atanh(_Unary):
    compute = staticmethod(lambda xp, x: xp.arctanh(x))
    derivative = staticmethod(lambda x, y: (1 - x * x).reciprocal())


# The public functions, out-of-place and in-place, of each class above.  PyTorch names
# the nodes of the in-place inverse hyperbolic functions ...Backward1.

exp, exp_ = _float_pair(Exp, "exp", "``e ** input``, elementwise.")
exp2, exp2_ = _float_pair(Exp2, "exp2", "``2 ** input``, elementwise.")
expm1, expm1_ = _float_pair(Expm1, "expm1", "``exp(input) - 1``, accurate for small inputs.")
log, log_ = _float_pair(Log, "log", "The natural logarithm (nan below 0, -inf at 0).")
log2, log2_ = _float_pair(Log2, "log2", "The base-2 logarithm.")
log10, log10_ = _float_pair(Log10, "log10", "The base-10 logarithm.")
log1p, log1p_ = _float_pair(Log1p, "log1p", "``log(1 + input)``, accurate for small inputs.")
sqrt, sqrt_ = _float_pair(Sqrt, "sqrt", "The square root (nan below 0; the gradient at 0 is inf).")
rsqrt, rsqrt_ = _float_pair(Rsqrt, "rsqrt", "``1 / sqrt(input)``.")
sin, sin_ = _float_pair(Sin, "sin", "The sine (radians).")
cos, cos_ = _float_pair(Cos, "cos", "The cosine (radians).")
tan, tan_ = _float_pair(Tan, "tan", "The tangent (radians).")
asin, asin_ = _float_pair(Asin, "asin", "The inverse sine, in [-pi/2, pi/2] (nan outside [-1, 1]).")
acos, acos_ = _float_pair(Acos, "acos", "The inverse cosine, in [0, pi] (nan outside [-1, 1]).")
atan, atan_ = _float_pair(Atan, "atan", "The inverse tangent, in (-pi/2, pi/2).")
sinh, sinh_ = _float_pair(Sinh, "sinh", "The hyperbolic sine.")
cosh, cosh_ = _float_pair(Cosh, "cosh", "The hyperbolic cosine.")
tanh, tanh_ = _float_pair(Tanh, "tanh", "The hyperbolic tangent.")
asinh, asinh_ = _float_pair(Asinh, "asinh", "The inverse hyperbolic sine.",
                            inplace_name="AsinhBackward1")
acosh, acosh_ = _float_pair(Acosh, "acosh", "The inverse hyperbolic cosine (nan below 1).",
                            inplace_name="AcoshBackward1")
atanh, atanh_ = _float_pair(Atanh, "atanh",
                            "The inverse hyperbolic tangent (nan beyond [-1, 1], inf at the ends).",
                            inplace_name="AtanhBackward1")

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
    if _is_float_array(x):  # PyTorch: sign(nan) == 0
        out = _native_select.where_of(xp)(xp.isnan(x), 0, out).astype(x.dtype, copy=False)
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
    _fresh_grads = False  # (its gradient is the incoming one: Node._passes_grad)
    _passes_grad = True
    compute = staticmethod(lambda xp, x: x - xp.trunc(x))

    @staticmethod
    def backward(ctx, grad):
        return grad


class Relu(_Unary):
    saves = "y"
    _reuses_grad = True  # (see Node._reuses_grad)

    @staticmethod
    def compute(xp, x):
        if _native_act.supports(x, min_size=_native_act.RELU_MIN_SIZE):
            return _native_act.forward("relu", x)
        return xp.maximum(x, 0)

    @staticmethod
    def forward(ctx, x):
        # (`_Unary.forward` without its errstate block, ~1 us: max(x, 0) warns of nothing)
        if ctx._inplace and _native_act.writes_into(x, min_size=_native_act.RELU_MIN_SIZE):
            y = _native_act.forward("relu", x, out=x)   # (relu_: no copy back into x)
        else:
            y = type(ctx).compute(xp_of(x), x)
        ctx.save_for_backward(None, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        _, y = ctx.saved_tensors
        # NOTE: relu'(0) = 0, as in PyTorch; a nan output passes the gradient (also PyTorch's).
        if ctx._owns_grad and _native_act.supports(y._data, grad._data,
                                                   min_size=_native_act.RELU_MIN_SIZE):
            return _make(_native_act.backward("relu", grad._data, y._data, overwrite=True))
        if not STATE.enabled and PROCESS.observer is None and type(grad._data) is np.ndarray:
            # nothing records: ReluBackward's forward without its node (~3 us)
            return _make(np.asarray(ReluBackward.forward(None, grad._data, y._data)))
        return ReluBackward.apply(grad, y)


class ReluBackward(Function):
    """relu's gradient, ``grad`` where ``y > 0`` else 0, as one op (one fused kernel
    instead of three tensor ops); its own backward serves double backward."""

    _name = "ThresholdBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, y):
        if ctx is not None:  # (None: called on arrays by Relu.backward, nothing to save)
            ctx.save_for_backward(y)
        if _native_act.supports(y, grad, min_size=_native_act.RELU_MIN_SIZE):
            return _native_act.backward("relu", grad, y)
        return _kernels.relu_backward(grad, y)

    @staticmethod
    def backward(ctx, gg):
        (y,) = ctx.saved_tensors
        return ReluBackward.apply(gg, y), None


RoundInplace = inplace_form(Round)


def _check_rounding(kernel: str):
    """A check refusing bool tensors, naming PyTorch's `kernel`."""
    def check(input: Tensor) -> None:
        if input.dtype is dtypes.bool:
            raise unsupported(kernel, input.dtype)
    return check


def _check_frac(input: Tensor) -> None:
    if not input.dtype.is_floating_point:
        raise unsupported("frac_cpu", input.dtype)


def _check_relu(input: Tensor) -> None:
    if input.dtype is dtypes.bool:
        raise RuntimeError("Boolean inputs not supported for relu")


sign, sign_ = op_pair(Sign, "sign", "-1, 0 or 1 by the sign of each element (0 for nan); the "
                      "gradient is zero.")
sgn, sgn_ = op_pair(Sgn, "sgn", "The sign; for real tensors the same as ``sign``.")
floor, floor_ = op_pair(Floor, "floor", "The largest integer <= each element (integer tensors "
                        "are returned as a copy).", check=_check_rounding("floor_vml_cpu"))
ceil, ceil_ = op_pair(Ceil, "ceil", "The smallest integer >= each element.",
                      check=_check_rounding("ceil_vml_cpu"))
trunc, trunc_ = op_pair(Trunc, "trunc", "Each element rounded toward zero.",
                        check=_check_rounding("trunc_vml_cpu"))
fix, fix_ = trunc, trunc_
frac, frac_ = op_pair(Frac, "frac", "The fractional part, ``input - trunc(input)`` (floating "
                      "point only).", check=_check_frac)
relu, relu_ = op_pair(Relu, "relu", "``max(input, 0)`` elementwise (the gradient at 0 is 0).",
                      check=_check_relu, direct=True)
_check_round = _check_rounding("round_vml_cpu")


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001 - PyTorch's name
    """Round half to even; with `decimals`, to that many decimal places (may be negative)."""
    _check_round(input)
    if decimals and not input.dtype.is_floating_point:
        raise unsupported("round_cpu", input.dtype)
    return Round.apply(input, int(decimals))


def round_(input: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place ``round``."""
    _check_round(input)
    if decimals and not input.dtype.is_floating_point:
        raise unsupported("round_cpu", input.dtype)
    return RoundInplace.apply(input, int(decimals))
