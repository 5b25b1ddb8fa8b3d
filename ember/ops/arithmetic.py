"""Arithmetic with broadcasting: add, sub, mul, div, neg, pow, and their in-place forms.

Broadcast inputs need no special code here: the engine sums a gradient back to
its input's shape (``sum_to_size``) when the two differ.
"""

from __future__ import annotations

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor
from ._util import promote, result_type, cast, is_scalar


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
    return cast(other, target_dtype)


def _short(d) -> str:
    return {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
            "bool": "Bool", "float16": "Half", "bfloat16": "BFloat16", "uint8": "Byte",
            "int8": "Char", "int16": "Short", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}[d.name]


class Add(Function):
    @staticmethod
    def forward(ctx, x, y):
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class AddInplace(Add):
    _inplace = True
    _name = "AddBackward0"


class Sub(Function):
    @staticmethod
    def forward(ctx, x, y):
        return x - y

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad


class SubInplace(Sub):
    _inplace = True
    _name = "SubBackward0"


class Mul(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = grad * y if ctx._edges[0][0] is not None else None
        gy = grad * x if ctx._edges[1][0] is not None else None
        return gx, gy


class MulInplace(Mul):
    _inplace = True
    _name = "MulBackward0"


class Div(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x / y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = grad / y if ctx._edges[0][0] is not None else None
        gy = -grad * x / (y * y) if ctx._edges[1][0] is not None else None
        return gx, gy


class DivInplace(Div):
    _inplace = True
    _name = "DivBackward0"


class Neg(Function):
    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


class NegInplace(Neg):
    _inplace = True
    _name = "NegBackward0"


def _scaled(other, alpha):
    if alpha == 1:
        return other
    return other * alpha


def add(input, other, *, alpha=1) -> Tensor:
    """``input + alpha * other`` with broadcasting and PyTorch's type promotion."""
    a, b = promote("add", input, _scaled(other, alpha))
    return Add.apply(a, b)


def sub(input, other, *, alpha=1) -> Tensor:
    """``input - alpha * other``."""
    if isinstance(input, Tensor) and input.dtype is dtypes.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    a, b = promote("sub", input, _scaled(other, alpha))
    return Sub.apply(a, b)


def rsub(input, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``."""
    a, b = promote("rsub", other, _scaled(input, alpha))
    return Sub.apply(a, b)


def mul(input, other) -> Tensor:
    """Elementwise product with broadcasting."""
    a, b = promote("mul", input, other)
    return Mul.apply(a, b)


def div(input, other, *, rounding_mode: str | None = None) -> Tensor:
    """True division (integers give the default float dtype); or 'trunc'/'floor' rounding."""
    if rounding_mode is not None:
        from .elementwise import floor_divide, trunc

        if rounding_mode == "floor":
            return floor_divide(input, other)
        if rounding_mode == "trunc":
            q = div(input, other)
            kind = result_type(input, other)
            return trunc(q).to(kind) if not kind.is_floating_point else trunc(q)
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found '{rounding_mode}'")
    rt = result_type(input, other)
    if not (rt.is_floating_point or rt.is_complex):
        rt = dtypes.get_default_dtype()
    return Div.apply(cast(input, rt), cast(other, rt))


def true_divide(input, other) -> Tensor:
    """Alias of ``div`` without rounding."""
    return div(input, other)


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    if input.dtype is dtypes.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return Neg.apply(input)


negative = neg


def add_(input: Tensor, other, *, alpha=1) -> Tensor:
    """In-place ``input += alpha * other``."""
    return AddInplace.apply(input, inplace_operand("add_", input, _scaled(other, alpha)))


def sub_(input: Tensor, other, *, alpha=1) -> Tensor:
    """In-place ``input -= alpha * other``."""
    return SubInplace.apply(input, inplace_operand("sub_", input, _scaled(other, alpha)))


def mul_(input: Tensor, other) -> Tensor:
    """In-place ``input *= other``."""
    return MulInplace.apply(input, inplace_operand("mul_", input, other))


def div_(input: Tensor, other, *, rounding_mode: str | None = None) -> Tensor:
    """In-place ``input /= other``."""
    if rounding_mode is not None:
        return input.copy_(div(input, other, rounding_mode=rounding_mode))
    return DivInplace.apply(input, inplace_operand("div_", input, other))


def neg_(input: Tensor) -> Tensor:
    """In-place negation."""
    return NegInplace.apply(input)


subtract = sub
multiply = mul
divide = div
