"""Elementwise ops: arithmetic, unary math, comparisons and logic, clamp, where, casts."""

from __future__ import annotations

import math

import numpy as np

from ...ops import arithmetic as ar
from ...ops import arithmetic_fused as fused
from ...ops import comparison as cmp
from ...ops import conversion as conv
from ...ops import creation
from ...ops import dropout
from ...ops import elementwise as el
from ...ops import elementwise_special as sp
from .._convert import Call, to_numpy


def _operands(c: Call) -> tuple:
    """The two operands of a binary op; a number becomes a constant of the other's dtype."""
    a = c.input(0, like=1 if c.is_tensor(1) else None)
    b = c.input(1, like=0 if c.is_tensor(0) else None)
    return a, b


def binary(op_type: str):
    def convert(c: Call) -> None:
        c.done(c.op(op_type, *_operands(c)))
    convert.__name__ = f"convert_{op_type.lower()}"
    return convert


def unary(op_type: str, **attrs):
    def convert(c: Call) -> None:
        c.done(c.op(op_type, c.input(0), **attrs))
    convert.__name__ = f"convert_{op_type.lower()}"
    return convert


def composite(build):
    """A converter from ``build(c, x) -> name`` for a one-input op."""
    def convert(c: Call) -> None:
        c.done(build(c, c.input(0)))
    convert.__name__ = build.__name__
    return convert


def _scalar(c: Call, value, like_dtype=None) -> str:
    return c.const(value, like_dtype if like_dtype is not None else c.out_dtype())


# ---------------------------------------------------------------------------
# decompositions of unary functions ONNX lacks


def _trunc(c, x):
    return c.op("Mul", c.op("Sign", x), c.op("Floor", c.op("Abs", x)))


def _exp2(c, x):
    return c.op("Pow", _scalar(c, 2.0), x)


def _expm1(c, x):
    return c.op("Sub", c.op("Exp", x), _scalar(c, 1.0))


def _log2(c, x):
    return c.op("Div", c.op("Log", x), _scalar(c, math.log(2.0)))


def _log10(c, x):
    return c.op("Div", c.op("Log", x), _scalar(c, math.log(10.0)))


def _log1p(c, x):
    return c.op("Log", c.op("Add", x, _scalar(c, 1.0)))


def _rsqrt(c, x):
    return c.op("Reciprocal", c.op("Sqrt", x))


def _erfc(c, x):
    return c.op("Sub", _scalar(c, 1.0), c.op("Erf", x))


def _frac(c, x):
    return c.op("Sub", x, _trunc(c, x))


def convert_round(c: Call) -> None:
    x = c.input(0)
    decimals = c.arg(1, 0)
    if c.dtype(0).kind not in "f":
        c.done(c.op("Identity", x))
    elif not decimals:
        c.done(c.op("Round", x))
    else:
        scale = _scalar(c, 10.0 ** decimals)
        c.done(c.op("Div", c.op("Round", c.op("Mul", x, scale)), scale))


def _is_float(dtype) -> bool:
    return np.dtype(dtype).kind in "fc" or np.dtype(dtype).name == "bfloat16"


# ---------------------------------------------------------------------------
# arithmetic


def convert_pow_tensor_scalar(c: Call) -> None:
    x, e = c.input(0), c.arg(1)
    if e == 2:
        c.done(c.op("Mul", x, x))
        return
    c.done(c.op("Pow", x, c.const(e, c.dtype(0) if _is_float(c.dtype(0)) or
                                  isinstance(e, int) else np.float64)))


def convert_pow_scalar_tensor(c: Call) -> None:
    c.done(c.op("Pow", c.const(c.arg(1), c.out_dtype()), c.input(0)))


def convert_remainder(c: Call) -> None:
    a, b = _operands(c)
    if not _is_float(c.out_dtype()):
        c.done(c.op("Mod", a, b, fmod=0))
        return
    # Python's remainder (the divisor's sign): a - floor(a / b) * b
    c.done(c.op("Sub", a, c.op("Mul", c.op("Floor", c.op("Div", a, b)), b)))


def convert_fmod(c: Call) -> None:
    a, b = _operands(c)
    c.done(c.op("Mod", a, b, fmod=1))


def convert_floor_divide(c: Call, trunc: bool = False) -> None:
    a, b = _operands(c)
    out = c.out_dtype()
    rounded = (lambda q: _trunc(c, q)) if trunc else (lambda q: c.op("Floor", q))
    if _is_float(out):
        c.done(rounded(c.op("Div", a, b)))
        return
    q = rounded(c.op("Div", c.cast(a, np.float64), c.cast(b, np.float64)))
    c.done(c.cast(q, out))


def convert_div_rounding(c: Call) -> None:
    """div(rounding_mode='floor' | 'trunc')."""
    convert_floor_divide(c, trunc=c.arg(2) == "trunc")


def convert_addcmul(c: Call, combine: str = "Mul") -> None:
    """``x + value * combine(t1, t2)``: addcmul, and addcdiv with ``combine="Div"``."""
    x, t1, t2 = c.input(0), c.input(1), c.input(2)
    term = c.op(combine, t1, t2)
    value = c.arg(3, 1)
    if value != 1:
        term = c.op("Mul", term, _scalar(c, value))
    c.done(c.op("Add", x, term))


def convert_addcdiv(c: Call) -> None:
    convert_addcmul(c, combine="Div")


def convert_lerp(c: Call) -> None:
    x, end = c.input(0), c.input(1)
    w = c.input(2)
    c.done(c.op("Add", x, c.op("Mul", w, c.op("Sub", end, x))))


def convert_hypot(c: Call) -> None:
    a, b = _operands(c)
    c.done(c.op("Sqrt", c.op("Add", c.op("Mul", a, a), c.op("Mul", b, b))))


def convert_atan2(c: Call) -> None:
    """atan(y / x), moved by pi into the left half-plane."""
    y, x = _operands(c)
    zero = _scalar(c, 0.0)
    base = c.op("Atan", c.op("Div", y, x))
    turn = c.op("Where", c.op("GreaterOrEqual", y, zero), _scalar(c, math.pi),
                _scalar(c, -math.pi))
    c.done(c.op("Add", base, c.op("Where", c.op("Less", x, zero), turn, zero)))


def convert_xlogy(c: Call) -> None:
    a, b = _operands(c)
    prod = c.op("Mul", a, c.op("Log", b))
    zero = _scalar(c, 0.0)
    c.done(c.op("Where", c.op("Equal", a, zero), zero, prod))


def convert_logit(c: Call) -> None:
    x = c.input(0)
    eps = c.arg(1)
    if eps is not None:
        x = c.op("Clip", x, _scalar(c, eps), _scalar(c, 1.0 - eps))
    c.done(c.op("Log", c.op("Div", x, c.op("Sub", _scalar(c, 1.0), x))))


# ---------------------------------------------------------------------------
# clamp, where, nan_to_num


def convert_clamp(c: Call) -> None:
    x = c.input(0)
    lo, hi = c.arg(1), c.arg(2)
    dtype = c.dtype(0)
    if lo is not None and hi is not None and lo > hi:
        c.done(c.op("Expand", _scalar(c, hi, dtype), c.op("Shape", x)))
        return
    c.done(c.op("Clip", x, "" if lo is None else _scalar(c, lo, dtype),
                "" if hi is None else _scalar(c, hi, dtype)))


def convert_clamp_tensor(c: Call) -> None:
    out = c.input(0)
    if c.arg(1) is not None:
        out = c.op("Max", out, c.input(1, like=0))
    if c.arg(2) is not None:
        out = c.op("Min", out, c.input(2, like=0))
    c.done(out)


def convert_where(c: Call) -> None:
    dtype = c.arg(3)
    c.done(c.op("Where", c.input(0), c.input(1, dtype=dtype), c.input(2, dtype=dtype)))


def convert_nan_to_num(c: Call) -> None:
    x = c.input(0)
    dtype = c.dtype(0)
    if not _is_float(dtype):
        c.done(c.op("Identity", x))
        return
    info = np.finfo(dtype)
    nan, posinf, neginf = c.arg(1, 0.0), c.arg(2), c.arg(3)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = c.op("Where", c.op("IsNaN", x), _scalar(c, nan, dtype), x)
    out = c.op("Where", c.op("IsInf", x, detect_negative=0), _scalar(c, posinf, dtype), out)
    out = c.op("Where", c.op("IsInf", x, detect_positive=0), _scalar(c, neginf, dtype), out)
    c.done(out)


# ---------------------------------------------------------------------------
# comparisons and logic


def _compare_operands(c: Call) -> tuple:
    """Operands of a comparison: a float number against an integer tensor compares in
    floating point (as NumPy does), so the tensor is cast first."""
    a, b = c.arg(0), c.arg(1)
    for tensor_i, number in ((0, b), (1, a)):
        if c.is_tensor(tensor_i) and isinstance(number, float) and not _is_float(
                c.dtype(tensor_i)):
            x = c.cast(c.input(tensor_i), np.float64)
            y = c.const(number, np.float64)
            return (x, y) if tensor_i == 0 else (y, x)
    return _operands(c)


def comparison(op_type: str, negate: bool = False):
    def convert(c: Call) -> None:
        out = c.op(op_type, *_compare_operands(c))
        c.done(c.op("Not", out) if negate else out)
    convert.__name__ = f"convert_{op_type.lower()}"
    return convert


def logical(op_type: str):
    def convert(c: Call) -> None:
        operands = []
        for i in (0, 1):
            v = c.input(i, dtype=np.bool_)
            if c.is_tensor(i) and c.dtype(i) != np.bool_:
                v = c.cast(v, np.bool_)
            operands.append(v)
        c.done(c.op(op_type, *operands))
    convert.__name__ = f"convert_{op_type.lower()}"
    return convert


def bitwise(op_type: str, logical_op: str):
    def convert(c: Call) -> None:
        if c.out_dtype() == np.bool_:
            c.done(c.op(logical_op, *_operands(c)))
        else:
            c.done(c.op(op_type, *_operands(c)))
    return convert


def convert_logical_not(c: Call) -> None:
    x = c.input(0)
    if c.dtype(0) != np.bool_:
        x = c.cast(x, np.bool_)
    c.done(c.op("Not", x))


def convert_bitwise_not(c: Call) -> None:
    x = c.input(0)
    c.done(c.op("Not" if c.dtype(0) == np.bool_ else "BitwiseNot", x))


def convert_isclose(c: Call) -> None:
    """``|x - y| <= atol + rtol * |y|`` (equal values, infinities included, always are)."""
    x, y = c.input(0), c.input(1, like=0)
    rtol, atol, equal_nan = c.arg(2), c.arg(3), c.arg(4)
    if c.dtype(0) == np.bool_:
        c.done(c.op("Equal", x, y))
        return
    dtype = c.dtype(0)
    gap = c.op("Abs", c.op("Sub", x, y))
    bound = c.op("Add", _scalar(c, atol, dtype), c.op("Mul", _scalar(c, rtol, dtype),
                                                      c.op("Abs", y)))
    close = c.op("Or", c.op("LessOrEqual", gap, bound), c.op("Equal", x, y))
    if equal_nan:
        close = c.op("Or", close, c.op("And", c.op("IsNaN", x), c.op("IsNaN", y)))
    c.done(close)


def convert_isfinite(c: Call) -> None:
    x = c.input(0)
    c.done(c.op("Not", c.op("Or", c.op("IsNaN", x), c.op("IsInf", x))))


# ---------------------------------------------------------------------------
# copies, casts, fills


def convert_to_copy(c: Call) -> None:
    x = c.input(0)
    target = c.out_dtype()
    c.done(c.op("Identity", x) if target == c.dtype(0) else c.cast(x, target))


def convert_copy(c: Call) -> None:
    """``dst.copy_(src)`` and ``dst.fill_(value)``: the second argument broadcast to dst's
    shape, in dst's dtype."""
    dst = c.input(0)
    src = c.input(1, like=0)
    if c.is_tensor(1) and c.dtype(1) != c.dtype(0):
        src = c.cast(src, c.dtype(0))
    c.done(c.op("Expand", src, c.op("Shape", dst)))


def convert_zero(c: Call) -> None:
    x = c.input(0)
    c.done(c.op("Expand", _scalar(c, 0, c.dtype(0)), c.op("Shape", x)))


def convert_masked(c: Call) -> None:
    """Dropout in training mode: a Dropout node (a fresh random mask at every run)."""
    scale = np.asarray(to_numpy(c.param("scale")), dtype=np.float64)
    kept = scale[scale != 0]
    if c.param("shift") is not None or scale.shape != c.shape(0) or (
            kept.size and not np.allclose(kept, kept[0])):
        c.fail("only elementwise dropout can be exported in training mode (not alpha or "
               "channel-wise dropout)")
    ratio = 1.0 - 1.0 / kept[0] if kept.size else 1.0
    out = c.op("Dropout", c.input(0), c.const(ratio, c.dtype(0)), c.const(True, np.bool_))
    c.done(out)


CONVERTERS = {
    ar.Add: binary("Add"), ar.Sub: binary("Sub"), ar.Mul: binary("Mul"),
    ar.Rsub: binary("Sub"), ar.RsubScalar: binary("Sub"),
    ar.Div: binary("Div"), ar.Neg: unary("Neg"), ar.Abs: unary("Abs"),
    ar.Reciprocal: unary("Reciprocal"), ar.Pow: binary("Pow"),
    ar.PowTensorScalar: convert_pow_tensor_scalar,
    ar.PowScalarTensor: convert_pow_scalar_tensor,
    ar.Remainder: convert_remainder, ar.Fmod: convert_fmod,
    ar.FloorDivide: convert_floor_divide, ar.DivRounding: convert_div_rounding,
    fused.Addcmul: convert_addcmul, fused.Addcdiv: convert_addcdiv,
    fused.Lerp: convert_lerp, fused.LerpTensor: convert_lerp,
    el.Exp: unary("Exp"), el.Log: unary("Log"), el.Sqrt: unary("Sqrt"),
    el.Sin: unary("Sin"), el.Cos: unary("Cos"), el.Tan: unary("Tan"),
    el.Asin: unary("Asin"), el.Acos: unary("Acos"), el.Atan: unary("Atan"),
    el.Sinh: unary("Sinh"), el.Cosh: unary("Cosh"), el.Tanh: unary("Tanh"),
    el.Asinh: unary("Asinh"), el.Acosh: unary("Acosh"), el.Atanh: unary("Atanh"),
    el.Sign: unary("Sign"), el.Sgn: unary("Sign"), el.Floor: unary("Floor"),
    el.Ceil: unary("Ceil"), el.Trunc: composite(_trunc), el.Round: convert_round,
    el.Exp2: composite(_exp2), el.Expm1: composite(_expm1), el.Log2: composite(_log2),
    el.Log10: composite(_log10), el.Log1p: composite(_log1p), el.Rsqrt: composite(_rsqrt),
    el.Frac: composite(_frac),
    sp.Sigmoid: unary("Sigmoid"), sp.Erf: unary("Erf"), sp.Erfc: composite(_erfc),
    sp.Maximum: binary("Max"), sp.Minimum: binary("Min"), sp.Fmax: binary("Max"),
    sp.Fmin: binary("Min"), sp.Hypot: convert_hypot, sp.Atan2: convert_atan2,
    sp.Xlogy: convert_xlogy,
    sp.Logit: convert_logit, sp.Clamp: convert_clamp, sp.ClampTensor: convert_clamp_tensor,
    sp.Where: convert_where, sp.NanToNum: convert_nan_to_num,
    cmp.Eq: comparison("Equal"), cmp.Ne: comparison("Equal", negate=True),
    cmp.Lt: comparison("Less"), cmp.Le: comparison("LessOrEqual"),
    cmp.Gt: comparison("Greater"), cmp.Ge: comparison("GreaterOrEqual"),
    cmp.LogicalAnd: logical("And"), cmp.LogicalOr: logical("Or"),
    cmp.LogicalXor: logical("Xor"), cmp.LogicalNot: convert_logical_not,
    cmp.BitwiseAnd: bitwise("BitwiseAnd", "And"), cmp.BitwiseOr: bitwise("BitwiseOr", "Or"),
    cmp.BitwiseXor: bitwise("BitwiseXor", "Xor"), cmp.BitwiseNot: convert_bitwise_not,
    cmp.IsClose: convert_isclose, cmp.IsNan: unary("IsNaN"), cmp.IsInf: unary("IsInf"),
    cmp.IsFinite: convert_isfinite,
    cmp.IsPosInf: unary("IsInf", detect_negative=0),
    cmp.IsNegInf: unary("IsInf", detect_positive=0),
    conv.ToCopy: convert_to_copy, conv.Clone: unary("Identity"), conv.Copy: convert_copy,
    creation.Fill: convert_copy, creation.Zero: convert_zero,
    dropout.Masked: convert_masked,
}
