"""Op table entries for ember/ops/arithmetic.py."""

import numpy as np

import ember
from tests.ops.opinfo import FLOATS_AND_INTS, OpInfo, Sample, binary_samples, unary_samples

OPS = [
    OpInfo("add", ember.add, np.add, binary_samples(), dtypes=FLOATS_AND_INTS,
           torch_name="add", promotes=True),
    OpInfo("add_alpha", lambda a, b: ember.add(a, b, alpha=2), lambda a, b: a + 2 * b,
           binary_samples(), torch_name=None),
    OpInfo("sub", ember.sub, np.subtract, binary_samples(), dtypes=FLOATS_AND_INTS,
           torch_name="sub", promotes=True),
    OpInfo("mul", ember.mul, np.multiply, binary_samples(), dtypes=FLOATS_AND_INTS,
           torch_name="mul", promotes=True),
    OpInfo("div", ember.div, np.divide, binary_samples(low2=0.5, high2=2.0),
           torch_name="div", promotes=True),
    OpInfo("neg", ember.neg, np.negative, unary_samples(), dtypes=FLOATS_AND_INTS),
]

# pow, abs, reciprocal, addcmul, addcdiv, lerp, floor_divide, remainder, fmod ----------------


def _three(low=-2.0, high=2.0, low3=None, high3=None):
    """Samples for ops of three tensors (addcmul, addcdiv, lerp with a tensor weight)."""
    low3 = low if low3 is None else low3
    high3 = high if high3 is None else high3

    def samples(rng):
        a = lambda *s: rng.uniform(low, high, size=s)  # noqa: E731
        c = lambda *s: rng.uniform(low3, high3, size=s)  # noqa: E731
        return [
            Sample((a(3, 4), a(3, 4), c(3, 4))),
            Sample((a(3, 1), a(1, 4), c(4))),
            Sample((a(2, 3), a(3), np.asarray(rng.uniform(low3, high3)))),
        ]
    return samples


def _pow_ref(a, b):
    return np.power(np.asarray(a, dtype=np.float64), b)


OPS += [
    OpInfo("pow", ember.pow, _pow_ref, binary_samples(0.5, 2.0, -2.0, 2.0, scalar=2.5),
           torch_name="pow"),
    OpInfo("pow_scalar_exponent", lambda a: ember.pow(a, 3), lambda a: np.power(a, 3),
           unary_samples(), dtypes=FLOATS_AND_INTS),
    OpInfo("pow_scalar_base", lambda a: ember.pow(2.5, a), lambda a: np.power(2.5, a),
           unary_samples()),
    OpInfo("float_power", ember.float_power, _pow_ref,
           binary_samples(0.5, 2.0, -2.0, 2.0, scalar=2.5)),
    OpInfo("square", ember.square, np.square, unary_samples(), dtypes=FLOATS_AND_INTS),
    OpInfo("abs", ember.abs, np.abs, unary_samples(), dtypes=FLOATS_AND_INTS),
    OpInfo("reciprocal", ember.reciprocal, np.reciprocal, unary_samples(0.5, 2.0)),
    OpInfo("addcmul", lambda a, b, c: ember.addcmul(a, b, c, value=2),
           lambda a, b, c: a + 2 * b * c, _three(), dtypes=FLOATS_AND_INTS),
    OpInfo("addcdiv", lambda a, b, c: ember.addcdiv(a, b, c, value=-1.5),
           lambda a, b, c: a - 1.5 * b / c, _three(low3=0.5, high3=2.0)),
    OpInfo("lerp_scalar", lambda a, b: ember.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a),
           binary_samples(scalar=None)),
    OpInfo("lerp_scalar_high", lambda a, b: ember.lerp(a, b, 0.8),
           lambda a, b: a + 0.8 * (b - a), binary_samples(scalar=None)),
    OpInfo("lerp_tensor", ember.lerp, lambda a, b, w: a + w * (b - a), _three(-2, 2, -1, 2)),
    OpInfo("floor_divide", ember.floor_divide, np.floor_divide,
           binary_samples(low2=0.5, high2=2.0), dtypes=FLOATS_AND_INTS, grad_order=0),
    OpInfo("remainder", ember.remainder, np.remainder, binary_samples(-4, 4, 0.5, 2.0),
           dtypes=FLOATS_AND_INTS),
    OpInfo("remainder_negative_divisor", ember.remainder, np.remainder,
           binary_samples(-4, 4, -2.0, -0.5, scalar=-1.5), dtypes=FLOATS_AND_INTS),
    OpInfo("fmod", ember.fmod, np.fmod, binary_samples(-4, 4, -2.0, -0.5),
           dtypes=FLOATS_AND_INTS),
]
