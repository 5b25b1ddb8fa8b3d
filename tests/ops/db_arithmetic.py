"""Op table entries for ember/ops/arithmetic.py."""

import numpy as np

import ember
from tests.ops.opinfo import FLOATS_AND_INTS, OpInfo, binary_samples, unary_samples

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
