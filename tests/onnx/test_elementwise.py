"""Converters of elementwise ops: arithmetic, math functions, comparisons, casts."""

from __future__ import annotations

import pytest

import ember
from tests.onnx._check import check_fn, op_types


def _x(*shape):
    return ember.randn(*shape)


def _pos(*shape):
    return ember.rand(*shape) + 0.5


UNARY = {
    "neg": lambda x: -x, "abs": ember.abs, "reciprocal": lambda x: x.reciprocal(),
    "exp": ember.exp, "sin": ember.sin, "cos": ember.cos, "tan": lambda x: ember.tan(x * 0.5),
    "asin": lambda x: ember.asin(x.clamp(-0.9, 0.9)), "acos": lambda x: ember.acos(x * 0.3),
    "atan": ember.atan, "sinh": ember.sinh, "cosh": ember.cosh, "tanh": ember.tanh,
    "asinh": ember.asinh, "atanh": lambda x: ember.atanh(x * 0.3), "sign": ember.sign,
    "floor": ember.floor, "ceil": ember.ceil, "trunc": ember.trunc, "round": ember.round,
    "round_decimals": lambda x: ember.round(x * 10, decimals=1), "exp2": ember.exp2,
    "expm1": ember.expm1, "frac": ember.frac, "sigmoid": ember.sigmoid, "erf": ember.erf,
    "erfc": ember.erfc, "square": ember.square, "nan_to_num": lambda x: ember.nan_to_num(
        ember.log(x)), "clamp": lambda x: x.clamp(-0.5, 0.7), "clamp_min": lambda x: x.clamp(
        min=0.1), "clamp_max": lambda x: x.clamp(max=0.1), "pow_int": lambda x: x ** 3,
    "pow2": lambda x: x ** 2, "scalar_pow": lambda x: 2.0 ** x, "rsub": lambda x: 2 - x,
    "div_floor": lambda x: x.div(0.7, rounding_mode="floor"),
    "div_trunc": lambda x: ember.div(x, x.abs() + 1, rounding_mode="trunc"),
    "scalar_div": lambda x: 3 / (x.abs() + 1), "mul_scalar": lambda x: x * 2.5,
    "add_alpha": lambda x: ember.add(x, x, alpha=2), "sub_scalar": lambda x: x - 1,
    "isnan": lambda x: ember.isnan(ember.log(x)),
    "isinf": lambda x: ember.isinf(ember.log(x.abs() * 0)),
    "isfinite": lambda x: ember.isfinite(ember.log(x)),
}

POSITIVE = {
    "log": ember.log, "sqrt": ember.sqrt, "rsqrt": ember.rsqrt, "log2": ember.log2,
    "log10": ember.log10, "log1p": ember.log1p, "acosh": lambda x: ember.acosh(x + 1),
    "pow_frac": lambda x: x ** 0.5, "logit": lambda x: ember.logit(x / 3, eps=1e-3),
}

BINARY = {
    "add": ember.add, "sub": ember.sub, "mul": ember.mul, "div": ember.div,
    "maximum": ember.maximum, "minimum": ember.minimum, "fmax": ember.fmax, "fmin": ember.fmin,
    "pow": lambda a, b: a.abs() ** b, "hypot": ember.hypot, "atan2": ember.atan2,
    "remainder": ember.remainder, "fmod": ember.fmod, "floor_divide": ember.floor_divide,
    "xlogy": lambda a, b: ember.xlogy(a, b.abs() + 0.1),
    "where": lambda a, b: ember.where(a > b, a, b), "where_scalar": lambda a, b: ember.where(
        a > 0, a, 0.0), "clamp_tensor": lambda a, b: a.clamp(min=b, max=b + 1),
    "lerp": lambda a, b: ember.lerp(a, b, 0.3), "lerp_tensor": lambda a, b: ember.lerp(
        a, b, b.sigmoid()), "addcmul": lambda a, b: ember.addcmul(a, a, b, value=0.5),
    "addcdiv": lambda a, b: ember.addcdiv(a, a, b.abs() + 1, value=2),
}

COMPARE = {
    "eq": lambda a, b: a.round() == b.round(), "ne": lambda a, b: a.round() != b.round(),
    "lt": ember.lt, "le": ember.le, "gt": ember.gt, "ge": ember.ge,
    "gt_scalar": lambda a, b: a > 0.5, "and": lambda a, b: (a > 0) & (b > 0),
    "or": lambda a, b: (a > 0) | (b > 0), "xor": lambda a, b: (a > 0) ^ (b > 0),
    "not": lambda a, b: ~(a > b), "logical_and": lambda a, b: ember.logical_and(a, b),
    "logical_not": lambda a, b: ember.logical_not(a > b),
    "isclose": lambda a, b: ember.isclose(a, (a * 100).round() / 100, rtol=1e-3, atol=1e-3),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    check_fn(UNARY[name], _x(3, 4))


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_unary_positive(name):
    check_fn(POSITIVE[name], _pos(3, 4))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    check_fn(BINARY[name], _x(3, 4), _pos(3, 4))


def test_broadcasting_operands():
    check_fn(lambda a, b: a * b + b, _x(3, 4), _x(3, 1))


@pytest.mark.parametrize("name", sorted(COMPARE))
def test_comparison(name):
    check_fn(COMPARE[name], _x(3, 4), _x(3, 4))


def test_integer_arithmetic():
    a = ember.randint(-9, 9, (3, 4))
    b = ember.randint(1, 5, (3, 4))
    check_fn(lambda a, b: (a + b * 2, a // b, a % b, a > 2.5, a.abs()), a, b)


def test_casts():
    check_fn(lambda x: (x.to(ember.float64), x.int(), (x > 0).float(), x.clone()), _x(3, 4))


def test_inplace_ops():
    def fn(x):
        y = x * 1
        y.add_(1).mul_(2)
        z = y.clone()
        z.zero_()
        w = y.clone().fill_(3.0)
        return y, z + w
    check_fn(fn, _x(3, 4))


def test_scalar_operand_keeps_dtype():
    proto = check_fn(lambda x: x * 2 + 1, _x(2, 3).double())
    assert op_types(proto) == {"Mul", "Add"}
