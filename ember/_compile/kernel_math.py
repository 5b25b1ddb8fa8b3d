"""The scalar functions generated kernels call, by dtype (imported by the generated
sources, see ``codegen.py``).

float32 chains use the float32 helpers of ``ops/_native_activation.py`` (a polynomial
exp within 2 ulps, tanh, sigmoid and the normal CDF built on it): LLVM vectorizes them,
where a loop calling libm's ``exp`` stays one element at a time (5x slower than NumPy's
SIMD exp).  float64 chains use libm, accurate to an ulp.  Each helper is inlined into
the kernel that calls it (numba's ``inline="always"``).
"""

from __future__ import annotations

import math

from ..ops import _native as native
from ..ops import _native_activation as activation


@native.kernel(inline=True)
def _sigmoid64(v):
    return 1.0 / (1.0 + math.exp(-v))


@native.kernel(inline=True)
def _ncdf64(v):
    return 0.5 * (1.0 + math.erf(v * 0.7071067811865476))


def _compiled(kernel):
    return kernel._compiled or kernel._compile()


exp32 = _compiled(activation._exp32)
tanh32 = _compiled(activation._tanh32)
sigmoid32 = _compiled(activation._sigmoid32)
ncdf32 = _compiled(activation._normal_cdf32)
sigmoid64 = _compiled(_sigmoid64)
ncdf64 = _compiled(_ncdf64)
