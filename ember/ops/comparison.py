"""Comparisons, logical and bitwise ops and the floating point tests (isnan, ...): bool or
integer results, never a gradient.

Comparisons promote their operands by PyTorch's rules before comparing (so an integer
tensor equals 1.5 nowhere) and give bool tensors.  Logical ops take any dtype and give
bool; bitwise ops and shifts take bool and integer tensors only.  The in-place forms
write the result into the first tensor, converted to its dtype.
"""

from __future__ import annotations

import math

from .._core.function import Function
from .._core.tensor import Tensor, _make
from ._inplace import binary_pair, inplace_form, op_function
from ._util import check_same_device, is_scalar, promote, result_type, to_tensor, xp_of
from .arithmetic import (
    _is_integral, _short, _xp, check_broadcast, check_inplace_shape, inplace_operand,
    unsupported,
)
from .elementwise import _is_float_array


class _Binary(Function):
    """A forward-only elementwise op of two operands (tensors or numbers)."""

    @staticmethod
    def compute(xp, x, y):
        raise NotImplementedError

    @staticmethod
    def forward(ctx, x, y):
        return type(ctx).compute(_xp(x, y), x, y)


class _BinaryInplace(_Binary):
    """The in-place form: the result converted to the target's dtype; zero gradient."""

    _inplace = True

    @staticmethod
    def forward(ctx, x, y):
        if not isinstance(y, (bool, int, float)):  # PyTorch's node name for a tensor operand
            ctx._name = type(ctx)._name[:-1] + "1"
        return type(ctx).compute(_xp(x, y), x, y).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.new_zeros(grad.shape), None


class Eq(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.equal(x, y))


class Ne(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.not_equal(x, y))


def _order(kernel: str, ufunc: str):
    """The `compute` of an order comparison: complex operands have no order (PyTorch's
    NotImplementedError naming `kernel`)."""
    def compute(xp, x, y):
        for v in (x, y):
            if getattr(v, "dtype", None) is not None and v.dtype.kind == "c":
                raise unsupported(kernel, v.dtype)
        return getattr(xp, ufunc)(x, y)

    return staticmethod(compute)


class Lt(_Binary):
    compute = _order("lt_cpu", "less")


class Le(_Binary):
    compute = _order("le_cpu", "less_equal")


class Gt(_Binary):
    compute = _order("gt_cpu", "greater")


class Ge(_Binary):
    compute = _order("ge_cpu", "greater_equal")


class LogicalAnd(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.logical_and(x, y))


class LogicalOr(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.logical_or(x, y))


class LogicalXor(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.logical_xor(x, y))


class BitwiseAnd(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.bitwise_and(x, y))


class BitwiseOr(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.bitwise_or(x, y))


class BitwiseXor(_Binary):
    compute = staticmethod(lambda xp, x, y: xp.bitwise_xor(x, y))


def _shift(xp, x, y, left: bool):
    # NOTE: shifting by the width or more, or by a negative count, is undefined in C (and on
    # GPUs); PyTorch defines it as shifting every bit out: 0, or -1 for negative numbers
    # shifted right.
    if isinstance(x, (bool, int)):
        x = xp.asarray(x, dtype=y.dtype)
    bits = x.dtype.itemsize * 8
    over = xp.asarray((y < 0) | (y >= bits))  # (CuPy's where wants an array condition)
    count = xp.clip(y, 0, bits - 1) if not isinstance(y, (bool, int)) else min(max(y, 0), bits - 1)
    if left:
        out = xp.where(over, 0, xp.left_shift(x, count))
    else:
        out = xp.where(over, xp.where(x < 0, -1, 0), xp.right_shift(x, count))
    return out.astype(x.dtype, copy=False)


class LeftShift(_Binary):
    compute = staticmethod(lambda xp, x, y: _shift(xp, x, y, True))


class RightShift(_Binary):
    compute = staticmethod(lambda xp, x, y: _shift(xp, x, y, False))


def _inplace_form(cls):
    """The in-place variant of a `_Binary` op (its node keeps the op's name)."""
    return type(cls.__name__ + "Inplace", (_BinaryInplace, cls),
                {"_name": cls.__name__ + "Backward0", "__module__": cls.__module__})


LogicalAndInplace = _inplace_form(LogicalAnd)
LogicalOrInplace = _inplace_form(LogicalOr)
LogicalXorInplace = _inplace_form(LogicalXor)
BitwiseAndInplace = _inplace_form(BitwiseAnd)
BitwiseOrInplace = _inplace_form(BitwiseOr)
BitwiseXorInplace = _inplace_form(BitwiseXor)
LeftShiftInplace = _inplace_form(LeftShift)
RightShiftInplace = _inplace_form(RightShift)


class _Not(Function):
    """logical_not or bitwise_not: forward only; the in-place form converts the result to
    the target's dtype and gives a zero gradient."""

    @staticmethod
    def compute(xp, x):
        raise NotImplementedError

    @staticmethod
    def forward(ctx, x):
        out = type(ctx).compute(xp_of(x), x)
        return out.astype(x.dtype) if ctx._inplace else out

    @staticmethod
    def backward(ctx, grad):
        return grad.new_zeros(grad.shape)


class LogicalNot(_Not):
    compute = staticmethod(lambda xp, x: xp.logical_not(x))


class BitwiseNot(_Not):
    compute = staticmethod(lambda xp, x: xp.invert(x))


LogicalNotInplace = inplace_form(LogicalNot)
BitwiseNotInplace = inplace_form(BitwiseNot)


# ---------------------------------------------------------------------------
# public functions


def _promoted(op: str, cls, input, other):
    check_broadcast(input, other)
    return cls.apply(*promote(op, input, other))


def _promoted_(op: str, cls, input: Tensor, other):
    # The comparison runs in the promoted dtype; only its 0/1 result is written into `input`.
    check_inplace_shape(input, other)
    target, other = promote(op, input, other)
    if target is input:
        return cls.apply(input, other)
    return input.copy_(cls.apply(target.detach(), other))


def _comparison(cls, name: str, doc: str):
    return binary_pair(cls, name, doc, _promoted, _promoted_, inplace=_inplace_form(cls))


eq, eq_ = _comparison(Eq, "eq", "``input == other`` elementwise, as a bool tensor.")
ne, ne_ = _comparison(Ne, "ne", "``input != other`` elementwise.")
lt, lt_ = _comparison(Lt, "lt", "``input < other`` elementwise.")
le, le_ = _comparison(Le, "le", "``input <= other`` elementwise.")
gt, gt_ = _comparison(Gt, "gt", "``input > other`` elementwise.")
ge, ge_ = _comparison(Ge, "ge", "``input >= other`` elementwise.")


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_


def _logical(cls, input, other):
    check_same_device(cls.__name__, input, other)
    check_broadcast(input, other)
    if not (isinstance(input, Tensor) or isinstance(other, Tensor)):
        raise TypeError(f"{cls.__name__}: expected at least one Tensor argument")
    return cls.apply(input, other)


def logical_and(input, other) -> Tensor:
    """True where both are nonzero."""
    return _logical(LogicalAnd, input, other)


def logical_or(input, other) -> Tensor:
    """True where either is nonzero."""
    return _logical(LogicalOr, input, other)


def logical_xor(input, other) -> Tensor:
    """True where exactly one is nonzero."""
    return _logical(LogicalXor, input, other)


def logical_not(input: Tensor) -> Tensor:
    """True where `input` is zero."""
    return LogicalNot.apply(input)


def _logical_(cls, input: Tensor, other):
    if isinstance(other, Tensor):
        check_same_device(cls.__name__, input, other)
        check_inplace_shape(input, other)
    return cls.apply(input, other)


def logical_and_(input: Tensor, other) -> Tensor:
    """In-place ``logical_and`` (the result in `input`'s dtype)."""
    return _logical_(LogicalAndInplace, input, other)


def logical_or_(input: Tensor, other) -> Tensor:
    """In-place ``logical_or``."""
    return _logical_(LogicalOrInplace, input, other)


def logical_xor_(input: Tensor, other) -> Tensor:
    """In-place ``logical_xor``."""
    return _logical_(LogicalXorInplace, input, other)


def logical_not_(input: Tensor) -> Tensor:
    """In-place ``logical_not``."""
    return LogicalNotInplace.apply(input)


def _check_bitwise(kernel: str, d, shift: bool = False) -> None:
    if not _is_integral(d) or (shift and d.name == "bool"):
        raise unsupported(kernel, d)


def _bitwise(op: str, kernel: str, cls, input, other, shift: bool = False):
    check_broadcast(input, other)
    a, b = promote(op, input, other)
    _check_bitwise(kernel, (a if isinstance(a, Tensor) else b).dtype, shift)
    return cls.apply(a, b)


def _bitwise_(op: str, kernel: str, cls, input: Tensor, other, shift: bool = False):
    _check_bitwise(kernel, input.dtype, shift)
    _check_bitwise(kernel, result_type(input, other), shift)
    other = inplace_operand(op, input, other)
    check_inplace_shape(input, other)
    return cls.apply(input, other)


def bitwise_and(input, other) -> Tensor:
    """Bitwise AND of integer or bool tensors (logical AND for bool)."""
    return _bitwise("bitwise_and", "bitwise_and_cpu", BitwiseAnd, input, other)


def bitwise_or(input, other) -> Tensor:
    """Bitwise OR of integer or bool tensors."""
    return _bitwise("bitwise_or", "bitwise_or_cpu", BitwiseOr, input, other)


def bitwise_xor(input, other) -> Tensor:
    """Bitwise XOR of integer or bool tensors."""
    return _bitwise("bitwise_xor", "bitwise_xor_cpu", BitwiseXor, input, other)


def bitwise_left_shift(input, other) -> Tensor:
    """``input << other`` for integer tensors (0 when shifted past the width)."""
    return _bitwise("bitwise_left_shift", "lshift_cpu", LeftShift, input, other, True)


def bitwise_right_shift(input, other) -> Tensor:
    """``input >> other`` for integer tensors (an arithmetic shift for signed types)."""
    return _bitwise("bitwise_right_shift", "rshift_cpu", RightShift, input, other, True)


def bitwise_not(input: Tensor) -> Tensor:
    """Bitwise NOT of an integer tensor; logical NOT of a bool tensor."""
    _check_bitwise("bitwise_not_cpu", input.dtype)
    return BitwiseNot.apply(input)


def bitwise_and_(input: Tensor, other) -> Tensor:
    """In-place ``bitwise_and``."""
    return _bitwise_("bitwise_and_", "bitwise_and_cpu", BitwiseAndInplace, input, other)


def bitwise_or_(input: Tensor, other) -> Tensor:
    """In-place ``bitwise_or``."""
    return _bitwise_("bitwise_or_", "bitwise_or_cpu", BitwiseOrInplace, input, other)


def bitwise_xor_(input: Tensor, other) -> Tensor:
    """In-place ``bitwise_xor``."""
    return _bitwise_("bitwise_xor_", "bitwise_xor_cpu", BitwiseXorInplace, input, other)


def bitwise_left_shift_(input: Tensor, other) -> Tensor:
    """In-place ``bitwise_left_shift``."""
    return _bitwise_("bitwise_left_shift_", "lshift_cpu", LeftShiftInplace, input, other, True)


def bitwise_right_shift_(input: Tensor, other) -> Tensor:
    """In-place ``bitwise_right_shift``."""
    return _bitwise_("bitwise_right_shift_", "rshift_cpu", RightShiftInplace, input, other,
                     True)


def bitwise_not_(input: Tensor) -> Tensor:
    """In-place ``bitwise_not``."""
    _check_bitwise("bitwise_not_cpu", input.dtype)
    return BitwiseNotInplace.apply(input)


def invert(input: Tensor) -> Tensor:
    """The ``~`` operator: bitwise NOT, for integer and bool tensors only."""
    if not _is_integral(input.dtype):
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return BitwiseNot.apply(input)


# ---------------------------------------------------------------------------
# whole-tensor comparisons


class IsClose(Function):
    @staticmethod
    def forward(ctx, x, y, rtol, atol, equal_nan):
        xp = xp_of(x)
        if x.dtype.kind == "b":
            return xp.equal(x, y)
        return xp.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)


def isclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """True where ``|input - other| <= atol + rtol * |other|`` (or the two are equal).

    Both tensors must have the same dtype; nan is close to nan only with `equal_nan`.
    """
    if is_scalar(other):
        other = to_tensor(other, input).to(input.dtype)
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("isclose(): expected Tensor arguments")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_short(input.dtype)} did not match {_short(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    check_same_device("isclose", input, other)
    check_broadcast(input, other)
    return IsClose.apply(input, other, float(rtol), float(atol), bool(equal_nan))


def allclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when every element of `input` is close to `other` (see ``isclose``)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and the same values (nan never equals nan)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("equal(): expected Tensor arguments")
    check_same_device("equal", input, other)
    if input._data.shape != other._data.shape:
        return False
    a, b = promote("equal", input, other)
    return bool(xp_of(a._data).array_equal(a._data, b._data))


# ---------------------------------------------------------------------------
# floating point tests: isnan, isinf, isfinite, isposinf, isneginf, signbit


class _Test(Function):
    """A forward-only elementwise test giving a bool tensor."""

    @staticmethod
    def forward(ctx, x):
        return type(ctx).compute(xp_of(x), x)


def _false(xp, x):
    return xp.zeros(x.shape, dtype=bool)


class IsNan(_Test):
    compute = staticmethod(lambda xp, x: xp.isnan(x) if _is_float_array(x) else _false(xp, x))


class IsInf(_Test):
    compute = staticmethod(lambda xp, x: xp.isinf(x) if _is_float_array(x) else _false(xp, x))


class IsFinite(_Test):
    compute = staticmethod(lambda xp, x: xp.isfinite(x) if _is_float_array(x)
                           else xp.ones(x.shape, dtype=bool))


class IsPosInf(_Test):
    compute = staticmethod(lambda xp, x: (x == math.inf) if _is_float_array(x)
                           else _false(xp, x))


class IsNegInf(_Test):
    compute = staticmethod(lambda xp, x: (x == -math.inf) if _is_float_array(x)
                           else _false(xp, x))


class Signbit(_Test):
    compute = staticmethod(lambda xp, x: xp.signbit(x) if x.dtype.kind != "b"
                           else _false(xp, x))


isnan = op_function(IsNan, "isnan", "True where an element is nan.")
isinf = op_function(IsInf, "isinf", "True where an element is +inf or -inf.")
isfinite = op_function(IsFinite, "isfinite", "True where an element is neither inf nor nan.")
isposinf = op_function(IsPosInf, "isposinf", "True where an element is +inf.")
isneginf = op_function(IsNegInf, "isneginf", "True where an element is -inf.")
signbit = op_function(Signbit, "signbit",
                      "True where the sign bit is set (negative numbers and -0.0).")


def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each of `elements` occurs in `test_elements` (a bool tensor shaped like
    `elements`; either may be a number).  `invert` gives the opposite."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: expected at "
                        "least one Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    a = elements._data if isinstance(elements, Tensor) else like._data.dtype.type(elements)
    b = test_elements._data if isinstance(test_elements, Tensor) else test_elements
    xp = xp_of(like._data)
    out = xp.isin(a, b, assume_unique=assume_unique, invert=invert)
    return _make(xp.asarray(out, dtype=bool))
