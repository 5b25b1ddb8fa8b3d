"""Op table entries for ember/ops/comparison.py (bool/integer results: forward only)."""

import numpy as np

import ember
from tests.ops.opinfo import FLOATS_AND_INTS, OpInfo, binary_samples, unary_samples

ALL = FLOATS_AND_INTS + ("bool",)
INTEGERS = ("int64", "bool")


def _compare(name, fn, ref, dtypes=ALL):
    return OpInfo(name, fn, ref, binary_samples(scalar=1), dtypes=dtypes, grad_order=0)


def _shift(name, fn, ref):
    # Shift counts from 0 to 6; the values may be negative.
    return OpInfo(name, fn, ref, binary_samples(-2.0, 2.0, 0.0, 2.0, scalar=2),
                  dtypes=("int64",), grad_order=0)


OPS = [
    _compare("eq", ember.eq, np.equal),
    _compare("ne", ember.ne, np.not_equal),
    _compare("lt", ember.lt, np.less),
    _compare("le", ember.le, np.less_equal),
    _compare("gt", ember.gt, np.greater),
    _compare("ge", ember.ge, np.greater_equal),
    _compare("logical_and", ember.logical_and, np.logical_and),
    _compare("logical_or", ember.logical_or, np.logical_or),
    _compare("logical_xor", ember.logical_xor, np.logical_xor),
    OpInfo("logical_not", ember.logical_not, np.logical_not, unary_samples(), dtypes=ALL,
           grad_order=0),
    _compare("bitwise_and", ember.bitwise_and, np.bitwise_and, INTEGERS),
    _compare("bitwise_or", ember.bitwise_or, np.bitwise_or, INTEGERS),
    _compare("bitwise_xor", ember.bitwise_xor, np.bitwise_xor, INTEGERS),
    OpInfo("bitwise_not", ember.bitwise_not, np.invert, unary_samples(), dtypes=INTEGERS,
           grad_order=0),
    _shift("bitwise_left_shift", ember.bitwise_left_shift, np.left_shift),
    _shift("bitwise_right_shift", ember.bitwise_right_shift, np.right_shift),
    _compare("isclose", lambda a, b: ember.isclose(a, b, rtol=0.1, atol=0.5),
             lambda a, b: np.isclose(a, b, rtol=0.1, atol=0.5), FLOATS_AND_INTS),
]
