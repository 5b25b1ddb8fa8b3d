"""The op parity sweep's tables: elementwise, comparison and arithmetic ops (here); then
`CASES`, every table together: reductions and sorting (ops_parity_cases2.py), shape,
indexing and linear algebra (ops_parity_cases3.py), creation, conversion and nn-level
functions (ops_parity_cases4.py, which also holds the bad calls and the names left out)."""

from __future__ import annotations

from .ops_parity_cases2 import REDUCTION_CASES, SCAN_SORT_CASES
from .ops_parity_cases3 import INDEX_CASES, LINALG_CASES, SHAPE_CASES
from .ops_parity_cases4 import CONVERSION_CASES, CREATION_CASES, NN_CASES
from .ops_parity_cases5 import NEW_CASES
from .ops_parity_spec import (
    ALL, FI, FLOAT, INT, INTB, NONE, Case, T, binary, s, unary, vals,
)

INF, NAN = float("inf"), float("nan")
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, INF, -INF, NAN]

# ---------------------------------------------------------------------------
# unary elementwise: name -> value range (ints take the whole numbers in it)

_UNARY_FLOAT = {
    "exp": (-2, 2), "exp2": (-2, 2), "expm1": (-2, 2), "log": (0.5, 3), "log2": (0.5, 3),
    "log10": (0.5, 3), "log1p": (-0.5, 2), "sqrt": (0.5, 3), "rsqrt": (0.5, 3),
    "sin": (-3, 3), "cos": (-3, 3), "tan": (-1, 1), "asin": (-0.9, 0.9),
    "acos": (-0.9, 0.9), "atan": (-3, 3), "sinh": (-2, 2), "cosh": (-2, 2),
    "tanh": (-2, 2), "asinh": (-3, 3), "acosh": (1.5, 3), "atanh": (-0.9, 0.9),
    "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctan": (-3, 3), "arcsinh": (-3, 3),
    "arccosh": (1.5, 3), "arctanh": (-0.9, 0.9), "sigmoid": (-3, 3), "erf": (-2, 2),
    "erfc": (-2, 2), "erfinv": (-0.9, 0.9), "logit": (0.1, 0.9), "reciprocal": (0.5, 2),
    "i0": (-3, 3),
}
_UNARY_SAME = {  # the result keeps the input's dtype
    "neg": (-3, 3), "negative": (-3, 3), "abs": (-3, 3), "absolute": (-3, 3),
    "sign": (-3, 3), "sgn": (-3, 3), "floor": (-3, 3), "ceil": (-3, 3), "round": (-3, 3),
    "trunc": (-3, 3), "fix": (-3, 3), "frac": (-3, 3), "relu": (-3, 3), "square": (-3, 3),
}
_UNARY_BOOL = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"]


def _unary_cases() -> list:
    cases = []
    for name, (lo, hi) in _UNARY_FLOAT.items():
        cases.append(Case(name, unary(lo, hi), ALL))
        cases.append(Case(name + "_", unary(lo, hi), FI))
        cases.append(Case(name, [s(vals(SPECIAL))], FLOAT, grad=False, tag="special"))
    for name, (lo, hi) in _UNARY_SAME.items():
        cases.append(Case(name, unary(lo, hi), ALL))
        cases.append(Case(name + "_", unary(lo, hi), ALL))
        cases.append(Case(name, [s(vals(SPECIAL))], FLOAT, grad=False, tag="special"))
    for name in _UNARY_BOOL:
        cases.append(Case(name, unary(), ALL))
        cases.append(Case(name, [s(vals(SPECIAL))], FLOAT, tag="special"))
    cases += [
        Case("logical_not_", unary(), ALL),
        Case("bitwise_not", unary(-8, 8), INTB),
        Case("bitwise_not_", unary(-8, 8), INTB + FLOAT),
        Case("round", [s(T(2, 3, low=-30, high=30), decimals=1),
                       s(vals([0.5, 1.5, 2.5, -0.5, -2.5])), s(T(4), decimals=-1)], FLOAT,
             tag="decimals"),
        Case("logit", [s(T(2, 3, low=0, high=1), eps=0.2), s(T(2, 3, low=0, high=1), 1e-6)],
             FLOAT, tag="eps"),
        Case("nan_to_num", [s(T(2, 3)), s(T(2, 3), nan=1.0)], ALL),
        Case("nan_to_num", [s(vals(SPECIAL)), s(vals(SPECIAL), nan=1.0, posinf=2.0, neginf=-2.0)],
             FLOAT, tag="special"),
        Case("nan_to_num_", [s(vals(SPECIAL)), s(vals(SPECIAL), 0.5, 3.0)], FLOAT),
        Case("relu", [s(vals([-1.0, 0.0, 2.0]))], FLOAT, tag="zero"),
        Case("abs", [s(vals([-1.0, 0.0, 2.0]))], FLOAT, tag="zero"),
    ]
    return cases


# ---------------------------------------------------------------------------
# binary elementwise


def _binary_cases() -> list:
    pos = binary(0.5, 2.0)
    nonzero = binary(1.0, 3.0)
    cases = [
        Case("add", binary(), ALL),
        Case("add", [s(T(2, 3), T(3), alpha=2), s(T(2, 3), 1.5, alpha=0.5),
                     s(T(2, 3, dtype="int64"), T(3, dtype="int64"), alpha=3)], FLOAT,
             tag="alpha"),
        Case("sub", binary(), FI),
        Case("sub", [s(T(2, 3), T(3), alpha=2), s(T(2, 3), 2, alpha=-1.5)], FLOAT, tag="alpha"),
        Case("subtract", binary(), FLOAT),
        Case("rsub", binary(), FI),
        Case("mul", binary(), ALL),
        Case("multiply", binary(), FLOAT),
        Case("div", nonzero, ALL),
        Case("div", [s(T(2, 3, low=-5, high=5), T(3, low=1, high=3), rounding_mode=m)
                     for m in ("trunc", "floor")]
             + [s(T(2, 3, low=-5, high=5), 2, rounding_mode="floor")], FI, tag="rounding"),
        Case("divide", nonzero, FLOAT),
        Case("true_divide", nonzero, FI),
        Case("floor_divide", binary(-5, 5, 1, 3, scalars=(2, 1.5)), FI, grad=False),
        Case("remainder", binary(-5, 5, 1, 3, scalars=(2, -1.5)), FI),
        Case("fmod", binary(-5, 5, 1, 3, scalars=(2, -1.5)), FI),
        Case("pow", binary(0.5, 2.0, -2, 2, scalars=(2, 0.5, -1, 0)), FLOAT),
        Case("pow", [s(T(2, 3, low=-3, high=3), 2), s(T(2, 3, low=-3, high=3), T(3, low=0, high=3)),
                     s(2, T(2, 3, low=0, high=3)), s(1.5, T(2, 3))], INT + FLOAT, tag="mixed"),
        Case("float_power", binary(0.5, 2.0, scalars=(2, 0.5)), FI),
        Case("atan2", binary(), FI),
        Case("arctan2", binary(), FLOAT),
        Case("hypot", binary(scalars=(), promote=False), FLOAT),
        Case("xlogy", binary(-2, 2, 0.5, 3), FI),
        Case("maximum", binary(scalars=()), ALL),
        Case("minimum", binary(scalars=()), ALL),
        Case("fmax", binary(scalars=()), FI),
        Case("fmin", binary(scalars=()), FI),
        Case("maximum", [s(vals([1.0, NAN, 2.0]), vals([NAN, 0.0, 3.0]))], FLOAT, tag="nan"),
        Case("fmax", [s(vals([1.0, NAN, 2.0]), vals([NAN, 0.0, 3.0]))], FLOAT, tag="nan"),
        Case("div", [s(vals([1.0, -1.0, 0.0, INF]), vals([0.0, 0.0, 0.0, 0.0]))], FLOAT,
             tag="by_zero"),
        Case("mul", [s(vals([0.0, INF, -INF]), vals([INF, 0.0, 0.0]))], FLOAT, tag="zero_inf"),
        Case("log", [s(vals([0.0, -1.0]))], FLOAT, tag="domain"),
        Case("sqrt", [s(vals([-1.0, 0.0]))], FLOAT, tag="domain"),
    ]
    inplace = ["add_", "sub_", "mul_", "div_", "pow_", "remainder_", "fmod_", "atan2_",
               "hypot_", "xlogy_", "float_power_", "floor_divide_", "arctan2_"]
    for name in inplace:
        samples = [s(T(2, 3, low=0.5, high=2), T(3, low=0.5, high=2)),
                   s(T(2, 3, low=0.5, high=2), 2),
                   s(T(2, 3, low=0.5, high=2), T(3, dtype="int64", low=1, high=3))]
        cases.append(Case(name, samples, FI, grad=not name.startswith("floor")))
    for name in ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                 "less_equal", "not_equal"]:
        cases.append(Case(name, binary(-2, 2, scalars=(1, 0.5)), ALL))
        cases.append(Case(name + "_", [s(T(2, 3), T(3)), s(T(2, 3), 0.5)], ALL))
    for name in ["logical_and", "logical_or", "logical_xor"]:
        cases.append(Case(name, binary(-1, 1, scalars=()), ALL))
        cases.append(Case(name + "_", [s(T(2, 3, low=-1, high=1), T(3, low=-1, high=1))], ALL))
    for name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        cases.append(Case(name, binary(-8, 8, scalars=(3, True), promote=False), INTB))
        cases.append(Case(name + "_", [s(T(2, 3, low=-8, high=8), T(3, low=-8, high=8))], INTB))
    for name in ["bitwise_left_shift", "bitwise_right_shift"]:
        cases.append(Case(name, binary(-8, 8, 0, 3, scalars=(2,), promote=False), INT))
        cases.append(Case(name, [s(T(3, dtype="bool"), 1), s(T(3, dtype="int32"), 2),
                                 s(T(3, dtype="uint8", low=0, high=255), 3),
                                 s(T(3, dtype="int64"), vals([64, -1, 70], dtype="int64"))],
                          NONE, tag="dtypes"))
        cases.append(Case(name + "_", [s(T(2, 3, low=-8, high=8), T(3, low=0, high=3))], INT))
    cases += [
        Case("eq", [s(T(3, dtype="uint8", low=0, high=255), -1),
                    s(T(3, dtype="uint8", low=0, high=255), 256),
                    s(T(3, dtype="uint8", low=0, high=255), 255.0),
                    s(vals([0, 255], dtype="uint8"), vals([-1, 255]))], NONE, tag="uint8"),
        # integer scalars out of range: binary arithmetic wraps them, scalar arguments of
        # other ops are checked (negative values still wrap into unsigned types)
        Case("add", [s(T(3, dtype="uint8", low=0, high=255), 300),
                     s(T(3, dtype="int8", low=-100, high=100), -200),
                     s(T(3, dtype="uint8", low=0, high=255), -1),
                     s(T(3, dtype="int32", low=-9, high=9), 2 ** 40),
                     s(T(3, dtype="uint8", low=0, high=9), 2 ** 64)], NONE, tag="wrap"),
        Case("mul_", [s(T(3, dtype="uint8", low=0, high=255), -3)], NONE, tag="wrap"),
        Case("clamp", [s(T(3, dtype="uint8", low=0, high=255), max=300),
                       s(T(3, dtype="uint8", low=0, high=255), min=-1),
                       s(T(3, dtype="int8", low=-9, high=9), -200, 5)], NONE, tag="int"),
        Case("where", [s(T(2, dtype="bool"), T(2, dtype="uint8", low=0, high=9), v)
                       for v in (300, -1)], NONE, variants=("fn",), tag="int"),
        Case("pow", [s(T(3, dtype="uint8", low=0, high=3), 257)], NONE, tag="int"),
        Case("lt", [s(T(3, dtype="uint8", low=0, high=255), -1),
                    s(T(3, dtype="uint8", low=0, high=255), 300)], NONE, tag="uint8"),
        Case("equal", [s(T(2, 3), T(2, 3)), s(T(2, 3), T(3))], ALL),
        Case("equal", [s(vals([1.0, 2.0]), vals([1.0, 2.0])), s(vals([NAN]), vals([NAN]))],
             FLOAT, tag="same"),
        Case("allclose", [s(T(2, 3), T(2, 3)), s(vals([1.0, NAN]), vals([1.0 + 1e-9, NAN]),
                                                 equal_nan=True)], FLOAT),
        Case("isclose", [s(T(2, 3), T(3)), s(T(2, 3), T(2, 3), rtol=0.5, atol=0.1)], ALL),
        Case("isclose", [s(vals([1.0, NAN, INF]), vals([1.0 + 1e-6, NAN, INF]), rtol=1e-3,
                           equal_nan=True)], FLOAT, tag="special"),
        Case("where", [s(T(2, 3, dtype="bool"), T(2, 3), T(3)),
                       s(T(2, 3, dtype="bool"), T(3), 0.0), s(T(2, 3, dtype="bool"), 1.0, T(3)),
                       s(T(2, 3, dtype="bool"), T(2, 3), T(3, dtype="int64")),
                       s(T(3, dtype="bool"))], ALL, variants=("fn",)),
        Case("where", [s(T(2, 3), T(2, 3, dtype="bool"), T(3)),
                       s(T(2, 3), T(3, dtype="bool"), 0.0)], FI, variants=("method",),
             tag="method"),
        Case("clamp", [s(T(2, 3), -0.5, 0.5), s(T(2, 3), min=0.0), s(T(2, 3), max=0.3),
                       s(T(2, 3), T(3, low=-1, high=0), T(2, 1, low=0, high=1)),
                       s(T(2, 3), 1, 0)], FI),
        Case("clip", [s(T(2, 3), -0.5, 0.5), s(T(2, 3), T(3))], FI),
        Case("clamp_", [s(T(2, 3), -0.5, 0.5), s(T(2, 3), T(3, low=-1, high=0))], FI),
        Case("clip_", [s(T(2, 3), -0.5, 0.5)], FI),
        Case("clamp_min", [s(T(2, 3), 0.1), s(T(2, 3), T(3))], FI),
        Case("clamp_max", [s(T(2, 3), 0.1), s(T(2, 3), T(3))], FI),
        Case("clamp_min_", [s(T(2, 3), 0.1)], FI),
        Case("clamp_max_", [s(T(2, 3), 0.1)], FI),
        Case("clamp", [s(T(2, 3, dtype="int64"), 0.5, 1.5), s(T(2, 3), dtype="float64")],
             NONE, tag="promote"),
        Case("lerp", [s(T(2, 3), T(3), 0.3), s(T(2, 3), T(2, 3), T(3, low=0, high=1))], FLOAT),
        Case("lerp_", [s(T(2, 3), T(3), 0.3), s(T(2, 3), T(2, 3), T(3, low=0, high=1))], FLOAT),
        Case("addcmul", [s(T(2, 3), T(3), T(2, 1)), s(T(2, 3), T(2, 3), T(2, 3), value=0.5)],
             FI),
        Case("addcmul_", [s(T(2, 3), T(3), T(2, 1), value=2)], FI),
        Case("addcdiv", [s(T(2, 3), T(3), T(2, 1, low=1, high=2)),
                         s(T(2, 3), T(2, 3), T(2, 3, low=1, high=2), value=0.5)], FLOAT),
        Case("addcdiv_", [s(T(2, 3), T(3), T(2, 1, low=1, high=2), value=2)], FLOAT),
    ]
    cases += [Case("pow", pos, FLOAT, tag="positive")]
    return cases


CASES = (_unary_cases() + _binary_cases() + REDUCTION_CASES + SCAN_SORT_CASES + SHAPE_CASES
         + INDEX_CASES + LINALG_CASES + CREATION_CASES + CONVERSION_CASES + NN_CASES
         + NEW_CASES)
