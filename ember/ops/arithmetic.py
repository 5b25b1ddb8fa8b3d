"""Arithmetic with broadcasting: add, sub, mul, div, neg, pow, abs, reciprocal, floor_divide,
remainder, fmod, and their in-place forms (addcmul, addcdiv, lerp: arithmetic_fused.py).

Broadcast inputs need no special code here: the engine sums a gradient back to
its input's shape (``sum_to_size``) when the two differ.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function, check_graph_leak
from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Tensor, _make
from ._broadcast import broadcast_shapes
from . import _native_activation as _native_act
from . import _native_binary
from ._direct import direct
from ._inplace import inplace_form, op_pair
from .complex import times_conj
from ._util import (
    cast, cpp_name, float_input, is_scalar, promote, result_type, write_out, xp_of,
)


def inplace_operand(op: str, target: Tensor, other):
    """Cast `other` for an in-place op on `target`, refusing casts PyTorch refuses."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{op}(): expected a Tensor, got {type(target).__name__}")
    if not (isinstance(other, Tensor) or is_scalar(other)):
        raise TypeError(f"{op}(): unsupported operand type {type(other).__name__}")
    target_dtype = target.dtype
    rt = result_type(target, other)
    if not dtypes.can_cast(rt, target_dtype):
        raise RuntimeError(
            f"result type {_short(rt)} can't be cast to the desired output type "
            f"{_short(target_dtype)}"
        )
    return cast(other, target_dtype, wrap=True, like=target)


_short = cpp_name  # dtype names as PyTorch's messages spell them ("Float", "Long")


class Add(Function):
    _passes_grad = True  # (its gradient is the incoming one: Node._passes_grad)

    @staticmethod
    def forward(ctx, x, y):
        return _native_binary.add(x, y)  # (large same-shape arrays: on the threads)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


AddInplace = inplace_form(Add)


class Sub(Function):
    _passes_grad = True  # (x's gradient is the incoming one, y's a new array: Node._passes_grad)

    @staticmethod
    def forward(ctx, x, y):
        return _native_binary.subtract(x, y)  # (large same-shape arrays: on the threads)

    @staticmethod
    def backward(ctx, grad):
        # (no negated copy for a y that needs no gradient: ``x - target`` in a loss)
        return grad, (-grad if ctx._edges[1][0] is not None else None)


SubInplace = inplace_form(Sub)


class Rsub(Sub):
    """``other - input`` (forward receives them in that order)."""

    _name = "RsubBackward0"


class RsubScalar(Sub):
    """``number - input``."""

    _name = "RsubBackward1"


class Mul(Function):
    _fresh_grads = True  # (each gradient is a new product or quotient: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _native_binary.multiply(x, y)  # (large same-shape arrays: on the threads)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        plain = not (STATE.enabled or grad.is_sparse or _sparse(x) or _sparse(y))
        product = _array_product if plain else _tensor_product
        if grad._data.dtype.kind == "c":  # grad * conj(other) (see ops/complex.py)
            product = times_conj
        gx = product(grad, y) if ctx._edges[0][0] is not None else None
        gy = product(grad, x) if ctx._edges[1][0] is not None else None
        return gx, gy


def _is_complex(t) -> bool:
    return isinstance(t, Tensor) and t._data.dtype.kind == "c"


def _sparse(t) -> bool:
    return isinstance(t, Tensor) and t.is_sparse


def _tensor_product(grad: Tensor, other) -> Tensor:
    return grad * other


def _array_product(grad: Tensor, other) -> Tensor:
    """``grad * other`` computed on the arrays: a first-order backward records no graph,
    and the two products of a mul node were half of its backward's time as ember ops."""
    data = _native_binary.multiply(grad._data, other._data if isinstance(other, Tensor)
                                   else other)
    if not isinstance(data, type(grad._data)):  # NumPy gives a scalar for 0-d operands
        data = xp_of(grad._data).asarray(data)
    return _make(data)


MulInplace = inplace_form(Mul)


class Div(Function):
    _fresh_grads = True  # (each gradient is a new product or quotient: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _native_binary.divide(x, y)  # (a large array by a number: on the threads)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        if grad._data.dtype.kind == "c" or _is_complex(x) or _is_complex(y):
            gx = times_conj(grad, 1 / y) if ctx._edges[0][0] is not None else None
            gy = times_conj(-grad, x / (y * y)) if ctx._edges[1][0] is not None else None
            return gx, gy
        gx = grad / y if ctx._edges[0][0] is not None else None
        gy = -grad * x / (y * y) if ctx._edges[1][0] is not None else None
        return gx, gy


DivInplace = inplace_form(Div)


class DivRounding(Function):
    """Division rounded toward zero ('trunc') or minus infinity ('floor').

    PyTorch defines its gradient as zero (the result is piecewise constant).
    """

    _name = "DivBackward2"

    @staticmethod
    def forward(ctx, x, y, mode):
        xp = _xp(x, y)
        like = y if isinstance(x, (bool, int, float)) else x
        with np.errstate(all="ignore"):
            if mode == "floor":
                out = xp.floor_divide(x, y)
            elif like.dtype.kind not in "iu":
                out = xp.trunc(xp.true_divide(x, y))
            else:
                # NOTE: integers round toward zero without a trip through floats (which
                # would lose precision beyond 2**53): floor, plus one where they differ.
                out = xp.floor_divide(x, y)
                inexact = xp.remainder(x, y) != 0
                out = xp.where(inexact & ((xp.asarray(x) < 0) != (xp.asarray(y) < 0)),
                               out + 1, out)
        return _same_dtype(out, x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad.new_zeros(grad.shape), grad.new_zeros(grad.shape)


class Neg(Function):
    _fresh_grads = True  # (-grad: a new array; Node._fresh_grads)

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


NegInplace = inplace_form(Neg)


def _scaled(other, alpha):
    if alpha == 1:
        return other
    return other * alpha


def _into(op: str, result: Tensor, out) -> Tensor:
    """PyTorch's out= of the elementwise ops: `result` cast to `out`'s dtype where that cast
    is safe (a float result into an integer `out` raises), written into `out` (resized, with
    a warning, when it held elements of another shape), and `out` returned."""
    if isinstance(out, Tensor) and out.dtype != result.dtype:
        if not dtypes.can_cast(result.dtype, out.dtype):
            raise RuntimeError(f"result type {cpp_name(result.dtype)} can't be cast to the "
                               f"desired output type {cpp_name(out.dtype)}")
        result = result.to(out.dtype)
    return write_out(op, result, out)


def add(input, other, *, alpha=1, out=None) -> Tensor:
    """``input + alpha * other`` with broadcasting and PyTorch's type promotion; with `out`,
    the result is written there (see ``_into``)."""
    if out is None and alpha == 1:
        result = direct(operator.add, input, other)
        if result is not None:
            return result
    a, b = promote("add", input, _scaled(other, alpha))
    result = Add.apply(a, b)
    if out is not None:
        return _into("add", result, out)
    if result._data.ndim == 0 and result._grad_fn is not None:
        check_graph_leak(result, Add)  # `total_loss = total_loss + loss` across optimizer steps
    return result


def sub(input, other, *, alpha=1, out=None) -> Tensor:
    """``input - alpha * other`` (into `out` if given)."""
    if out is None and alpha == 1:
        result = direct(operator.sub, input, other)
        if result is not None:
            return result
    _no_bool_subtraction(input, other)
    a, b = promote("sub", input, _scaled(other, alpha))
    # `number - tensor` (the reflected operator) is PyTorch's rsub
    result = (Sub if isinstance(a, Tensor) else RsubScalar).apply(a, b)
    return result if out is None else _into("sub", result, out)


def _no_bool_subtraction(*operands) -> None:
    """PyTorch's RuntimeError when either side of a subtraction is a bool tensor or a
    Python bool."""
    for operand in operands:
        if (operand.dtype is dtypes.bool if isinstance(operand, Tensor)
                else isinstance(operand, bool)):
            raise RuntimeError(
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                "are trying to invert a mask, use the `~` or `logical_not()` operator "
                "instead.")


def rsub(input, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``."""
    _no_bool_subtraction(input, other)
    a, b = promote("rsub", other, _scaled(input, alpha))
    return (Rsub if isinstance(a, Tensor) else RsubScalar).apply(a, b)


def mul(input, other, *, out=None) -> Tensor:
    """Elementwise product with broadcasting (into `out` if given)."""
    if out is None:
        result = direct(operator.mul, input, other)
        if result is not None:
            return result
    a, b = promote("mul", input, other)
    result = Mul.apply(a, b)
    return result if out is None else _into("mul", result, out)


def div(input, other, *, rounding_mode: str | None = None, out=None) -> Tensor:
    """True division (integers give the default float dtype); or 'trunc'/'floor' rounding;
    into `out` if given."""
    if out is not None:
        return _into("div", div(input, other, rounding_mode=rounding_mode), out)
    if rounding_mode is None:
        result = direct(operator.truediv, input, other)
        if result is not None:
            return result
    if rounding_mode is not None:
        if rounding_mode not in ("floor", "trunc"):
            raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or "
                               f"'floor' but found '{rounding_mode}'")
        check_broadcast(input, other)
        a, b = promote("div", input, other)
        _check_divisor("div_" + rounding_mode + "_cpu", a, b)
        return DivRounding.apply(a, b, rounding_mode)
    rt = result_type(input, other)
    if not (rt.is_floating_point or rt.is_complex):
        rt = dtypes.get_default_dtype()
    like = input if isinstance(input, Tensor) else other
    return Div.apply(cast(input, rt, like=like), cast(other, rt, like=like))


def true_divide(input, other, *, out=None) -> Tensor:
    """Alias of ``div`` without rounding."""
    return div(input, other, out=out)


def positive(input: Tensor) -> Tensor:
    """`input` itself (``+input``); bool tensors are refused, as in PyTorch."""
    if input.dtype is dtypes.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    if input.is_sparse:  # a sparse COO tensor negates its values (ops/sparse_coo.py)
        return input.neg()
    if input.dtype is dtypes.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return Neg.apply(input)


negative = neg


def add_(input: Tensor, other, *, alpha=1) -> Tensor:
    """In-place ``input += alpha * other``."""
    out = AddInplace.apply(input, inplace_operand("add_", input, _scaled(other, alpha)))
    if out._data.ndim == 0 and out._grad_fn is not None:
        check_graph_leak(out, Add)  # `total_loss += loss` across optimizer steps
    return out


def sub_(input: Tensor, other, *, alpha=1) -> Tensor:
    """In-place ``input -= alpha * other``."""
    _no_bool_subtraction(input, other)
    return SubInplace.apply(input, inplace_operand("sub_", input, _scaled(other, alpha)))


def mul_(input: Tensor, other) -> Tensor:
    """In-place ``input *= other``."""
    return MulInplace.apply(input, inplace_operand("mul_", input, other))


def div_(input: Tensor, other, *, rounding_mode: str | None = None) -> Tensor:
    """In-place ``input /= other``."""
    if rounding_mode is not None:
        return input.copy_(div(input, other, rounding_mode=rounding_mode))
    if _is_integral(input.dtype):  # true division gives floats
        raise RuntimeError(f"result type {_short(dtypes.get_default_dtype())} can't be cast to "
                           f"the desired output type {_short(input.dtype)}")
    return DivInplace.apply(input, inplace_operand("div_", input, other))


def neg_(input: Tensor) -> Tensor:
    """In-place negation."""
    if input.dtype is dtypes.bool:
        neg(input)  # raises PyTorch's error
    return NegInplace.apply(input)


negative_ = neg_


subtract = sub
multiply = mul
divide = div


# ---------------------------------------------------------------------------
# helpers shared by the elementwise op files; then pow, abs, reciprocal, floor_divide,
# remainder and fmod


def check_broadcast(*operands) -> None:
    """RuntimeError (PyTorch's message) when the tensors among `operands` can't broadcast."""
    shapes = [o._data.shape for o in operands if isinstance(o, Tensor)]
    if shapes and any(s != shapes[0] for s in shapes[1:]):
        broadcast_shapes(*shapes)


def check_inplace_shape(target: Tensor, *others) -> None:
    """An in-place op can't grow its target: the operands must broadcast to its shape."""
    shapes = [o._data.shape for o in others if isinstance(o, Tensor)]
    if all(s == target._data.shape for s in shapes):
        return
    full = broadcast_shapes(target._data.shape, *shapes)
    if full != tuple(target._data.shape):
        raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the broadcast "
                           f"shape {list(full)}")


def unsupported(kernel: str, d) -> NotImplementedError:
    """PyTorch's error for a dtype an op's kernel does not take (a RuntimeError subclass)."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_short(d)}\'')


def _xp(*values):
    """The array module of the first array among `values` (others may be Python numbers)."""
    for v in values:
        if not isinstance(v, (bool, int, float, complex)):
            return xp_of(v)
    return np


def _same_dtype(out, x, y):
    """`out` in the dtype of the array operand (bfloat16 with a Python float gives float32)."""
    like = y if isinstance(x, (bool, int, float, complex)) else x
    return out.astype(like.dtype, copy=False)


def _is_integral(d) -> bool:
    return not (d.is_floating_point or d.is_complex)


# A float array to these numbers: PyTorch's own arithmetic for them (``x * x * x`` for 3,
# a square root for 0.5, ...), not NumPy's power, which for any exponent but 2 calls
# powf per element: x ** 3 of 1M float32 took 10.3 ms, x * x * x 0.32 (AMD EPYC).
# (The products as Mul's forward runs them: large ones cut over the threads.)
_SCALAR_POWERS = {
    2: lambda x: _native_binary.multiply(x, x),
    3: lambda x: _native_binary.multiply(_native_binary.multiply(x, x), x),
    0.5: np.sqrt,
    -0.5: lambda x: np.reciprocal(np.sqrt(x)),
    -1: np.reciprocal,
    -2: lambda x: np.reciprocal(_native_binary.multiply(x, x)),
}


def _power(x, y):
    """``x ** y``; an integer to a negative power gives 0 unless the base is 1 or -1."""
    xp = _xp(x, y)
    with np.errstate(all="ignore"):
        if (type(x) is np.ndarray and x.dtype.char in "fd" and type(y) in (int, float)
                and y in _SCALAR_POWERS):
            return _SCALAR_POWERS[y](x)
        if (isinstance(y, (bool, int, float, complex)) or y.dtype.kind not in "iu"
                or not (y < 0).any()):
            return _same_dtype(xp.power(x, y), x, y)
        base = x if not isinstance(x, (bool, int)) else xp.asarray(x, dtype=y.dtype)
        out = xp.power(base, xp.abs(y))
        odd = (y % 2) == 1
        special = xp.where(base == 1, 1, xp.where(base == -1, xp.where(odd, -1, 1), 0))
        return xp.where(y < 0, special, out).astype(out.dtype)


class Pow(Function):
    """tensor ** tensor."""

    _name = "PowBackward1"

    @staticmethod
    def forward(ctx, x, y):
        out = _power(x, y)
        ctx.save_for_backward(x, y, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y, out = ctx.saved_tensors
        gx = gy = None
        with np.errstate(all="ignore"):  # the masked-out values may be nan
            if ctx._edges[0][0] is not None:
                # NOTE: x ** 0 is constant, even at x == 0 where y * x ** (y - 1) is nan.
                gx = times_conj(grad, y * x.pow(y - 1)).where(y != 0, 0.0)
            if ctx._edges[1][0] is not None:
                # NOTE: 0 ** y is constant (0 or 1) for y >= 0; log(0) would make it nan.
                # (A nan y is not >= 0: its gradient stays nan, as in PyTorch.)
                xp = xp_of(y._data)
                constant = _make(xp.asarray((x._data == 0) & (xp.real(y._data) >= 0)))
                gy = times_conj(grad, out * x.log()).where(~constant, 0.0)
        return gx, gy


PowInplace = inplace_form(Pow)


class PowTensorScalar(Function):
    """tensor ** number."""

    _name = "PowBackward0"
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, exponent):
        ctx.exponent = exponent
        ctx.save_for_backward(x)
        return _power(x, exponent)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        e = ctx.exponent
        if e == 0:
            return grad.new_zeros(grad.shape)
        a, g = x._data, grad._data
        if (not STATE.enabled and PROCESS.observer is None and type(a) is np.ndarray
                and type(g) is np.ndarray and a.dtype.char in "fd" and g.dtype == a.dtype
                and g.shape == a.shape and a.ndim > 0):
            # first order on real arrays: the same arithmetic without recording, two
            # passes (x ** 2 forward + backward took 1.4x PyTorch's time in five)
            # (large ones cut over the threads, as Mul's forward runs them)
            with np.errstate(all="ignore"):
                d = (_native_binary.add(a, a) if e == 2     # (2 x: exact)
                     else _native_binary.multiply(_power(a, e - 1), e))
                _native_binary.multiply_into(d, g)
            return _make(d)
        return times_conj(grad, e * x.pow(e - 1))


PowTensorScalarInplace = inplace_form(PowTensorScalar)


class PowScalarTensor(Function):
    """number ** tensor (the number comes second here, as a non-tensor argument)."""

    _name = "PowBackward2"

    @staticmethod
    def forward(ctx, y, base):
        ctx.base = base
        out = _power(base, y)
        ctx.save_for_backward(y, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        y, out = ctx.saved_tensors
        base = ctx.base
        log_base = math.log(base) if base > 0 else (-math.inf if base == 0 else math.nan)
        with np.errstate(all="ignore"):
            gy = times_conj(grad, out * log_base)
            if base == 0:
                gy = gy.where(y < 0, 0.0)  # 0 ** y is constant for y >= 0
        return gy


def _check_pow_dtype(d) -> None:
    if d is dtypes.bool:
        raise unsupported("pow", d)


def pow(input, exponent, *, out=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """``input ** exponent`` elementwise; either one (not both) may be a Python number.

    Integer tensors stay integers; an integer tensor to a negative number raises.
    Example: ``ember.pow(ember.tensor([1., 2., 3.]), 2)`` is ``tensor([1., 4., 9.])``.
    With `out`, the result is written there.
    """
    if out is not None:
        return _into("pow", pow(input, exponent), out)
    if isinstance(input, Tensor) and isinstance(exponent, Tensor):
        check_broadcast(input, exponent)
        x, y = promote("pow", input, exponent)
        _check_pow_dtype(x.dtype)
        return Pow.apply(x, y)
    if isinstance(input, Tensor) and is_scalar(exponent):
        x, e = promote("pow", input, exponent, wrap=False)  # (a checked scalar in PyTorch)
        _check_pow_dtype(x.dtype)
        if _is_integral(x.dtype) and e < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return PowTensorScalar.apply(x, e)
    b, y = promote("pow", input, exponent)
    _check_pow_dtype(y.dtype)
    return PowScalarTensor.apply(y, b)


def pow_(input: Tensor, exponent) -> Tensor:
    """In-place ``input **= exponent``."""
    _check_pow_dtype(input.dtype)
    e = inplace_operand("pow_", input, exponent)
    if isinstance(e, Tensor):
        check_inplace_shape(input, e)
        return PowInplace.apply(input, e)
    if _is_integral(input.dtype) and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return PowTensorScalarInplace.apply(input, e)


def float_power(input, exponent, *, out=None) -> Tensor:
    """``input ** exponent`` computed in double precision (float64 result; `out`, if given,
    must be of that dtype)."""
    def wide(v):
        if isinstance(v, Tensor):
            return v.to(dtypes.complex128 if v.is_complex() else dtypes.float64)
        return v if isinstance(v, complex) else float(v)
    result = pow(wide(input), wide(exponent))
    if isinstance(out, Tensor) and out.dtype != result.dtype:
        raise RuntimeError(f"the output given to float_power has dtype {cpp_name(out.dtype)} "
                           f"but the operation's result requires dtype "
                           f"{cpp_name(result.dtype)}")
    return write_out("float_power", result, out)


def float_power_(input: Tensor, exponent) -> Tensor:
    """In-place ``float_power``: `input` must already be float64."""
    if input.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_short(input.dtype)} "
                           "but the operation's result requires dtype Double")
    return pow_(input, exponent.to(dtypes.float64) if isinstance(exponent, Tensor) else
                float(exponent))


def square(input: Tensor) -> Tensor:
    """``input * input`` (bool tensors give int64, as ``input ** 2`` does)."""
    return pow(input, 2)


def square_(input: Tensor) -> Tensor:
    """In-place ``square``."""
    return pow_(input, 2)


# |x| of this many elements or more runs cut over the threads: NumPy's abs against the
# cut kernel, float32 (AMD EPYC VM, 2026-12-07): 256K 0.022 against 0.025-0.027 ms, 512K
# 0.043-0.051 against 0.043-0.048, 1M 0.088 against 0.064-0.073, 4M 0.76-0.81 against
# 0.45-0.66.
ABS_CUT_MIN = 1 << 19


class Abs(Function):
    _reuses_grad = True  # (see Node._reuses_grad)

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if _native_act.supports(x, min_size=ABS_CUT_MIN):
            return _native_act.forward("abs", x)
        return xp_of(x).abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if _native_act.first_order(grad, x):  # one pass on the arrays (l1_loss's backward)
            return _make(_native_act.backward("abs", grad._data, x._data,
                                              overwrite=ctx._owns_grad))
        return grad * x.sign()  # NOTE: sign(0) = 0, so abs'(0) = 0 as in PyTorch


def _check_abs(input: Tensor) -> None:
    if input.dtype is dtypes.bool:
        raise unsupported("abs_cpu", input.dtype)


abs, abs_ = op_pair(Abs, "abs", "``|input|`` elementwise (the gradient at 0 is 0).",  # noqa: A001
                    check=_check_abs)
absolute = abs
absolute_ = abs_


class Reciprocal(Function):
    @staticmethod
    def forward(ctx, x):
        with np.errstate(all="ignore"):
            y = xp_of(x).reciprocal(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return times_conj(-grad, y * y)


def require_float_target(op: str, target: Tensor) -> None:
    """In-place float functions can't write into integer tensors."""
    if _is_integral(target.dtype):
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_short(target.dtype)}")


reciprocal, reciprocal_ = op_pair(
    Reciprocal, "reciprocal", "``1 / input`` elementwise (integer tensors give the default "
    "float dtype).", prepare=float_input, check_=require_float_target)


def _check_divisor(kernel: str, a, b) -> None:
    """Bool and complex operands are refused; integer division by zero raises, as in
    PyTorch."""
    d = a.dtype if isinstance(a, Tensor) else b.dtype
    if d is dtypes.bool or d.is_complex:
        raise unsupported(kernel, d)
    if _is_integral(d):
        zero = (b == 0) if not isinstance(b, Tensor) else bool((b._data == 0).any())
        if zero:
            raise RuntimeError("ZeroDivisionError")


def _detached(v):
    return v.detach() if isinstance(v, Tensor) else v


class FloorDivide(Function):
    # PyTorch records floor_divide in the graph with no derivative: backward through it raises.
    _name = "NotImplemented"

    @staticmethod
    def forward(ctx, x, y):
        with np.errstate(all="ignore"):
            return _same_dtype(_xp(x, y).floor_divide(x, y), x, y)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the derivative for 'floor_divide' is not implemented.")


FloorDivideInplace = inplace_form(FloorDivide)


class Remainder(Function):
    """Remainder with the sign of the divisor (Python's ``%``): x - y * floor(x / y).

    `Fmod` below is the same op with another rounding of the quotient: a subclass sets the
    op name, the kernel's name in the array module and `_quotient`.
    """

    _op, _kernel = "Remainder", "remainder"

    @staticmethod
    def _quotient(x, y):
        return floor_divide(x, y)

    @staticmethod
    def forward(ctx, x, y):
        tensor_divisor = not isinstance(y, (bool, int, float))
        ctx._name = ctx._op + ("Backward1" if tensor_divisor else "Backward0")
        ctx.save_for_backward(x, y)
        with np.errstate(all="ignore"):
            return _same_dtype(getattr(_xp(x, y), ctx._kernel)(x, y), x, y)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gy = None
        if ctx._edges[1][0] is not None:
            gy = -grad * ctx._quotient(_detached(x), _detached(y))
        return grad, gy


RemainderInplace = inplace_form(Remainder)


class Fmod(Remainder):
    """Remainder with the sign of the dividend (C's ``fmod``): x - y * trunc(x / y)."""

    _op, _kernel = "Fmod", "fmod"

    @staticmethod
    def _quotient(x, y):
        return div(x, y, rounding_mode="trunc")


FmodInplace = inplace_form(Fmod)


def _division_like(op: str, kernel: str, cls, input, other):
    check_broadcast(input, other)
    a, b = promote(op, input, other)
    _check_divisor(kernel, a, b)
    return cls.apply(a, b)


def _division_like_(op: str, kernel: str, cls, input: Tensor, other):
    b = inplace_operand(op, input, other)
    check_inplace_shape(input, b)
    _check_divisor(kernel, input, b)
    return cls.apply(input, b)


def floor_divide(input, other, *, out=None) -> Tensor:
    """``input // other``: the quotient rounded toward minus infinity (Python's ``//``)."""
    result = _division_like("floor_divide", "div_floor_cpu", FloorDivide, input, other)
    return result if out is None else _into("floor_divide", result, out)


def floor_divide_(input: Tensor, other) -> Tensor:
    """In-place ``floor_divide``."""
    return _division_like_("floor_divide_", "div_floor_cpu", FloorDivideInplace, input, other)


def remainder(input, other, *, out=None) -> Tensor:
    """``input % other`` with the sign of `other`, as Python's ``%``."""
    result = _division_like("remainder", "remainder_cpu", Remainder, input, other)
    return result if out is None else _into("remainder", result, out)


def remainder_(input: Tensor, other) -> Tensor:
    """In-place ``remainder``."""
    return _division_like_("remainder_", "remainder_cpu", RemainderInplace, input, other)


def fmod(input, other, *, out=None) -> Tensor:
    """The remainder of ``input / other`` with the sign of `input`, as C's ``fmod``."""
    result = _division_like("fmod", "fmod_cpu", Fmod, input, other)
    return result if out is None else _into("fmod", result, out)


def fmod_(input: Tensor, other) -> Tensor:
    """In-place ``fmod``."""
    return _division_like_("fmod_", "fmod_cpu", FmodInplace, input, other)
