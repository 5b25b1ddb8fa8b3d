"""numba kernels of the activations: GELU (exact and tanh form), SiLU, sigmoid and relu,
forward and fused backward (``grad * f'(x)`` in one pass; sigmoid's from its output),
tanh's backward, and the float32 math they share.  tanh's forward is NumPy's own: its
SIMD tanh took 0.6 ms for 2M float32 elements on one thread against 1.2 ms for a kernel
on two (3.0 against 19.8 ms in float64).

Each kernel is one `native.prange` loop over flat C-contiguous arrays, split between the
threads `ember.set_num_threads` allows (one thread for small arrays and on a busy
machine: `run`, which the other _native_*.py modules use too).  The ops (activation.py,
and elementwise.py for tanh) call `supports`, then `forward` / `backward`, and keep their
NumPy formulas for every other case.

Each smooth function has two kernels.  The float64 one is the reference formula on libm's
`math.exp` / `math.erf` / `math.tanh` (accurate to an ulp, one scalar call per element).
The float32 one computes in float32 with `_exp32`, written so that LLVM vectorizes it
(16 lanes with AVX-512).
NOTE: numba has no vectorized exp here (no Intel SVML): `math.exp` costs ~2 ns per
element, 5x NumPy's SIMD exp; float64 arithmetic on float32 data halves the lanes and
measured 2x slower than float32.

relu needs no math, one kernel per direction serves both dtypes: NumPy's ``maximum(x, 0)``
runs at ~0.5 ns per float32 element here (36,864 elements: 19 us), several times slower
than the vectorized select.  Its semantics are NumPy's (ember's NumPy path): a NaN stays
NaN, -0.0 and negatives give +0.0; the backward passes `grad` where the output is positive
or NaN and gives +0.0 elsewhere, as `_kernels.relu_backward`'s bit trick does.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.grad_mode import PROCESS, STATE
from . import _native as native
from . import _native_fill

# Below this many elements the NumPy path is as fast (a kernel's serial build costs a few
# us a call: GELU forward and backward of 32 x 64 took 120 us through it, 188 in NumPy).
MIN_SIZE = 1 << 6
# relu's NumPy form is one cheap call: the kernel wins from ~4K elements (4,096: 8.9 us
# against 9.5; 1,024: 8.7 against 7.1)
RELU_MIN_SIZE = 1 << 12
run = native.run  # (the kernels of this module and its neighbours call it by this name)
# LLVM may fuse a multiply and an add into one FMA (one rounding instead of two; NaN and
# inf keep their meaning).  The polynomials here are chains of them: on 1M float32
# elements, one thread, exact GELU 1.29-1.33 -> 0.90 ms, its backward 2.03-2.10 -> 1.39
# ms, SiLU 0.77-0.82 -> 0.58 ms.
FUSED_MULTIPLY_ADD = {"contract"}

_f32 = np.float32
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715

# float32 constants (module globals of a NumPy scalar type keep numba's arithmetic in
# float32; a Python float would promote it to float64)
_ZERO, _ONE, _HALF, _TWO = _f32(0.0), _f32(1.0), _f32(0.5), _f32(2.0)
_THREE, _SIX = _f32(3.0), _f32(6.0)
_LOG2E = _f32(1.4426950408889634)
_LN2_HI, _LN2_LO = _f32(0.693359375), _f32(-2.12194440e-4)  # ln 2 = hi + lo, hi exact
# exp32 gives 0 below _EXP_LO (exp(-87.33) = 1.18e-38, just above float32's smallest normal
# number) and inf above _EXP_HI.  NOTE: subnormal results are flushed to 0 on purpose:
# arithmetic on them takes a slow microcode path on x86 (~100 cycles), and a causal
# attention's softmax has half its inputs at -inf: (32, 4, 64, 64) took 2.08 ms instead of
# 0.78 when the -inf lanes were clamped to -104 and computed a subnormal.
_EXP_LO, _EXP_HI = _f32(-87.33), _f32(89.0)
_E2, _E3, _E4, _E5, _E6, _E7 = (_f32(1 / 2), _f32(1 / 6), _f32(1 / 24), _f32(1 / 120),
                                _f32(1 / 720), _f32(1 / 5040))
_E8 = _f32(1 / 40320)
# expm1_32 gives -1 below _EXPM1_LO: exp(-17.5) = 2.5e-8 is under half an ulp of 1
_EXPM1_LO = _f32(-17.5)
# Phi(x) = sigmoid(2 x P(x*x)): the fitted polynomial of _kernels._PHI_P (see there)
_P0, _P1, _P2, _P3, _P4, _P5, _P6 = (_f32(c) for c in (
    7.9788494148e-01, 3.6333084465e-02, -3.2594837837e-05, -5.5306258999e-05,
    3.9647577513e-06, -1.3226450914e-07, 1.7562063063e-09))
_PDF32 = _f32(_INV_SQRT_2PI)
_K32, _KC32, _K3C32 = _f32(_SQRT_2_OVER_PI), _f32(_SQRT_2_OVER_PI * _GELU_C), _f32(
    3 * _SQRT_2_OVER_PI * _GELU_C)
# tanh's Taylor series to x**15, for |x| < 0.4 (next term < 3e-10 relative)
_T3, _T5, _T7, _T9, _T11, _T13, _T15 = (_f32(c) for c in (
    -1 / 3, 2 / 15, -17 / 315, 62 / 2835, -1382 / 155925, 21844 / 6081075,
    -929569 / 638512875))


class _BitCast(native.Kernel):
    """A kernel helper reading a 32-bit value's bits as another type: ``_float32_from_bits(i)``
    is the float32 whose bit pattern is the int32 `i`, ``_bits_of_float32(v)`` the int32
    of float32 `v`'s (one LLVM bitcast, which vectorizes; numba has no scalar ``view``).
    Built on first use, like every kernel, so that ``import ember`` does not import
    numba."""

    def __init__(self, name: str, to_float: bool):
        self.py_func = None
        self._compiled = None
        self.__name__ = name
        self.to_float = to_float

    def _compile(self):
        from llvmlite import ir
        from numba.core import types
        from numba.extending import intrinsic

        source, target = (types.int32, types.float32) if self.to_float else (
            types.float32, types.int32)
        llvm_target = ir.FloatType() if self.to_float else ir.IntType(32)

        @intrinsic
        def bitcast(typingctx, value):
            def codegen(context, builder, signature, args):
                return builder.bitcast(args[0], llvm_target)

            return target(source), codegen

        self._compiled = bitcast
        return self._compiled


_float32_from_bits = _BitCast("_float32_from_bits", to_float=True)
_bits_of_float32 = _BitCast("_bits_of_float32", to_float=False)


@native.kernel(inline=True)
def _exp32(v):
    """exp(v) of a float32, within 2 ulps: ``2**n * p(r)`` with ``v = n ln 2 + r``,
    |r| <= ln 2 / 2 and p a degree-7 Taylor polynomial (r**8/8! < 3e-8 relative); 0
    below the normal float32 range (see _EXP_LO), inf above it, nan for nan.
    """
    tiny = v < _EXP_LO
    fn, r = _ln2_reduced(min(max(v, _EXP_LO), _EXP_HI))
    p = _E7 * r + _E6
    p = p * r + _E5
    p = p * r + _E4
    p = p * r + _E3
    p = p * r + _E2
    p = p * r + _ONE
    p = p * r + _ONE
    scale, rest = _two_to(fn)
    return _ZERO if tiny else p * scale * rest


@native.kernel(inline=True)
def _ln2_reduced(v):
    """(n, r) with ``v = n ln 2 + r``, |r| <= ln 2 / 2, n a whole float32 (np.floor stays
    float32; math.floor gives int64)."""
    fn = np.floor(v * _LOG2E + _HALF)
    return fn, v - fn * _LN2_HI - fn * _LN2_LO


@native.kernel(inline=True)
def _two_to(fn):
    """2**n for a whole float32 n in [-150, 129] as two float32 halves whose product it
    is, each from its exponent bits (n runs beyond the exponents of normal float32s)."""
    n = np.int32(fn)
    half = n >> 1
    return (_float32_from_bits((half + np.int32(127)) << np.int32(23)),
            _float32_from_bits((n - half + np.int32(127)) << np.int32(23)))


@native.kernel(inline=True)
def _expm1_32(v):
    """exp(v) - 1 of a float32, exact near 0 (NumPy's float32 expm1 is a scalar libm call
    on processors without AVX-512: 10 ms per million on an AMD EPYC, exp 1.4 ms).  With
    ``v = n ln 2 + r`` and ``q = exp(r) - 1`` (the Taylor polynomial without its constant
    term, to r**8/8!), the result is ``2**n q + (2**n - 1)``: both terms exact scalings
    of float32s while 2**n - 1 is (|n| <= 24), so a small v keeps its digits; beyond
    that ``(q + 1) 2**n - 1``.  Within 2 ulps; -1 below _EXPM1_LO, inf above _EXP_HI,
    nan for nan, and 0 keeps its sign.
    """
    fn, r = _ln2_reduced(min(max(v, _EXPM1_LO), _EXP_HI))
    q = _E8 * r + _E7
    q = q * r + _E6
    q = q * r + _E5
    q = q * r + _E4
    q = q * r + _E3
    q = q * r + _E2
    q = q * r + _ONE
    q = q * r
    scale, rest = _two_to(fn)
    exact = q * scale * rest + (scale * rest - _ONE)
    large = (q + _ONE) * scale * rest - _ONE
    result = large if fn > _f32(24) else exact
    return v if v != v or v == _ZERO else result


@native.kernel(inline=True)
def _sigmoid32(v):
    """1 / (1 + exp(-v)) in float32 (exp(-v) = inf gives 0)."""
    return _ONE / (_ONE + _exp32(-v))


@native.kernel(inline=True)
def _sigmoid_as(v):
    """sigmoid(v) in v's precision, as the sigmoid kernels compute it (numba knows v's
    type when it compiles: no branch is left in a loop)."""
    return _sigmoid32(v) if isinstance(v, np.float32) else 1.0 / (1.0 + math.exp(-v))


@native.kernel(inline=True)
def _normal_cdf32(v):
    """Phi(v) in float32 (error below 1.5e-7), through the fitted polynomial."""
    s = v * v
    p = _P6 * s + _P5
    p = p * s + _P4
    p = p * s + _P3
    p = p * s + _P2
    p = p * s + _P1
    p = p * s + _P0
    return _sigmoid32(_TWO * v * p)


@native.kernel(inline=True)
def _normal_cdf64(v):
    return 0.5 * (1.0 + math.erf(v * _INV_SQRT_2))


@native.kernel(inline=True)
def _tanh32(v):
    """tanh(v) in float32: ``(1 - e) / (1 + e)`` with ``e = exp(-2|v|)``, and the Taylor
    series below 0.4, where ``1 - e`` would lose digits to cancellation."""
    a = abs(v)
    s = a * a
    p = _T15 * s + _T13
    p = p * s + _T11
    p = p * s + _T9
    p = p * s + _T7
    p = p * s + _T5
    p = p * s + _T3
    small = a + a * s * p
    e = _exp32(-_TWO * a)
    t = small if a < _f32(0.4) else (_ONE - e) / (_ONE + e)
    return math.copysign(t, v)  # (-0 stays -0; nan stays nan)


# ---------------------------------------------------------------------------
# the kernels, two per function: float32 (fast math) and float64 (libm)


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_f32(x, out):
    for i in native.prange(x.size):
        out[i] = x[i] * _normal_cdf32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_f64(x, out):
    for i in native.prange(x.size):
        out[i] = x[i] * _normal_cdf64(x[i])


# The backward kernels multiply the incoming gradient by the slope f'(x) (of y for tanh and
# relu), one inline helper per function; each comes in two builds: into a new array
# (`out`), and over the gradient itself (`_into`, for a gradient the engine owns).
# NOTE: not one kernel called with out=grad: LLVM cannot rule out that two array
# arguments overlap, checks at run time, and on an overlap runs its scalar loop, whose
# branches mispredict on random signs (relu on 1M floats: 0.34 ms -> 5 ms).


@native.kernel(inline=True)
def _gelu_slope32(v):
    return _normal_cdf32(v) + v * (_PDF32 * _exp32(-_HALF * v * v))


@native.kernel(inline=True)
def _gelu_slope64(v):
    return _normal_cdf64(v) + v * (_INV_SQRT_2PI * math.exp(-0.5 * v * v))


@native.kernel(inline=True)
def _gelu_tanh_slope32(v):
    s = _sigmoid32(_TWO * (_K32 * v + _KC32 * v * v * v))  # (1 + t) / 2
    du = _K32 + _K3C32 * v * v
    # 0.5 (1 + t) + 0.5 v (1 - t^2) du, with 1 - t^2 = 4 s (1 - s)
    return s + _TWO * v * s * (_ONE - s) * du


@native.kernel(inline=True)
def _gelu_tanh_slope64(v):
    t = math.tanh(_SQRT_2_OVER_PI * (v + _GELU_C * v * v * v))
    du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_C * v * v)
    return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du


@native.kernel(inline=True)
def _silu_slope32(v):
    s = _sigmoid32(v)
    return s * (_ONE + v * (_ONE - s))


@native.kernel(inline=True)
def _silu_slope64(v):
    s = 1.0 / (1.0 + math.exp(-v))
    return s * (1.0 + v * (1.0 - s))


@native.kernel(inline=True)
def _tanh_slope(y):
    return 1 - y * y


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_backward_f32(grad, x, out):
    for i in native.prange(x.size):
        out[i] = grad[i] * _gelu_slope32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_backward_f32_into(grad, x):
    for i in native.prange(x.size):
        grad[i] *= _gelu_slope32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_backward_f64(grad, x, out):
    for i in native.prange(x.size):
        out[i] = grad[i] * _gelu_slope64(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_backward_f64_into(grad, x):
    for i in native.prange(x.size):
        grad[i] *= _gelu_slope64(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_tanh_backward_f32(grad, x, out):
    for i in native.prange(x.size):
        out[i] = grad[i] * _gelu_tanh_slope32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_tanh_backward_f32_into(grad, x):
    for i in native.prange(x.size):
        grad[i] *= _gelu_tanh_slope32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_tanh_backward_f64(grad, x, out):
    for i in native.prange(x.size):
        out[i] = grad[i] * _gelu_tanh_slope64(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_tanh_backward_f64_into(grad, x):
    for i in native.prange(x.size):
        grad[i] *= _gelu_tanh_slope64(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _silu_backward_f32(grad, x, out):
    for i in native.prange(x.size):
        out[i] = grad[i] * _silu_slope32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _silu_backward_f32_into(grad, x):
    for i in native.prange(x.size):
        grad[i] *= _silu_slope32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _silu_backward_f64(grad, x, out):
    for i in native.prange(x.size):
        out[i] = grad[i] * _silu_slope64(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _silu_backward_f64_into(grad, x):
    for i in native.prange(x.size):
        grad[i] *= _silu_slope64(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _tanh_f32(x, out):
    for i in native.prange(x.size):
        out[i] = _tanh32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _tanh_backward(grad, y, out):
    for i in native.prange(y.size):
        out[i] = grad[i] * _tanh_slope(y[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _tanh_backward_into(grad, y):
    for i in native.prange(y.size):
        grad[i] *= _tanh_slope(y[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_tanh_f32(x, out):
    for i in native.prange(x.size):
        v = x[i]
        # 0.5 v (1 + tanh(u)) = v sigmoid(2u)
        out[i] = v * _sigmoid32(_TWO * (_K32 * v + _KC32 * v * v * v))


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _gelu_tanh_f64(x, out):
    for i in native.prange(x.size):
        v = x[i]
        out[i] = 0.5 * v * (1.0 + math.tanh(_SQRT_2_OVER_PI * (v + _GELU_C * v * v * v)))


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _silu_f32(x, out):
    for i in native.prange(x.size):
        out[i] = x[i] * _sigmoid32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _silu_f64(x, out):
    for i in native.prange(x.size):
        out[i] = x[i] / (1.0 + math.exp(-x[i]))


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _sigmoid_f32(x, out):
    for i in native.prange(x.size):
        out[i] = _sigmoid32(x[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _sigmoid_f64(x, out):
    for i in native.prange(x.size):
        out[i] = 1.0 / (1.0 + math.exp(-x[i]))


@native.kernel(inline=True)
def _sigmoid_slope(y):
    return y * (1 - y)


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _sigmoid_backward(grad, y, out):
    for i in native.prange(y.size):
        out[i] = grad[i] * _sigmoid_slope(y[i])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _sigmoid_backward_into(grad, y):
    for i in native.prange(y.size):
        grad[i] *= _sigmoid_slope(y[i])


@native.kernel(inline=True)
def _relu_keeps(v):
    """Whether relu passes `v` (an output, or an input) on: positive, or NaN."""
    return v > _ZERO or v != v


@native.kernel(parallel=True)
def _relu(x, out):
    for i in native.prange(x.size):
        v = x[i]
        out[i] = v if _relu_keeps(v) else _ZERO


@native.kernel(parallel=True)
def _relu_backward(grad, y, out):
    for i in native.prange(y.size):
        g = grad[i]   # (read before the select: see _native_select's note)
        out[i] = g if _relu_keeps(y[i]) else _ZERO


@native.kernel
def _relu_grad_rows(grad, y, sums):
    # (sums[j] adds the rows in order, in the arrays' precision, as NumPy's sum over the
    # first axis does.  NOTE: written over grad, one array: passed as both a source and a
    # separate destination, one array fails LLVM's run-time check that the two do not
    # overlap, and the loop runs unvectorized: 128 x 512 float32, 40 against 10 us)
    for j in range(y.shape[1]):
        sums[j] = _ZERO
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            g = grad[i, j]
            v = g if _relu_keeps(y[i, j]) else _ZERO
            grad[i, j] = v
            sums[j] += v


def relu_grad_and_sums(grad: np.ndarray, y: np.ndarray, sums: np.ndarray) -> None:
    """relu's gradient of 2-D C-contiguous `supports` arrays (`y` the output), written
    over `grad`, and its column sums into `sums` (a linear layer's bias gradient), in one
    pass on the calling thread (ops/fused_linear.py)."""
    _relu_grad_rows(grad, y, sums)


@native.kernel(parallel=True)
def _abs(x, out):
    for i in native.prange(x.size):
        out[i] = abs(x[i])   # (the sign bit cleared, NaN's too, as NumPy's abs does)


@native.kernel(parallel=True)
def _abs_backward(grad, x, out):
    # grad * sgn(x): 0 where x is 0 or NaN (sgn(NaN) = 0, as in PyTorch), so a NaN or inf
    # gradient there gives NaN, as grad * 0 does on the NumPy path
    for i in native.prange(x.size):
        v = x[i]
        out[i] = grad[i] * (_ONE if v > 0 else (-_ONE if v < 0 else _ZERO))


@native.kernel(parallel=True)
def _abs_backward_into(grad, x):
    for i in native.prange(x.size):
        v = x[i]
        grad[i] = grad[i] * (_ONE if v > 0 else (-_ONE if v < 0 else _ZERO))


@native.kernel(parallel=True)
def _relu_backward_into(grad, y):
    for i in native.prange(y.size):
        g = grad[i]
        grad[i] = g if _relu_keeps(y[i]) else _ZERO


@native.kernel(parallel=True)
def _hardswish_f32(x, out):
    # (in float32, as NumPy's and PyTorch's: 1e38 overflows to inf there too)
    for i in native.prange(x.size):
        v = x[i]
        out[i] = v * min(max(v + _THREE, _ZERO), _SIX) / _SIX if v == v else v


@native.kernel(parallel=True)
def _hardswish_f64(x, out):
    for i in native.prange(x.size):
        v = x[i]
        out[i] = v * min(max(v + 3.0, 0.0), 6.0) / 6.0 if v == v else v


# hardswish's gradient, PyTorch's rule: 0 up to -3, grad from 3 on, in between (and for
# NaN, which gives NaN) ``grad * (x / 3 + 1/2)``.  Written per dtype, each with constants
# of its dtype: with float64 constants a float32 loop converted every element and did
# not vectorize (1M float32 elements: 0.196 ms against relu's 0.086).
@native.kernel(inline=True)
def _hardswish_grad_f32(g, v):
    return _ZERO if v <= -_THREE else (g if v >= _THREE else g * (v / _THREE + _HALF))


@native.kernel(inline=True)
def _hardswish_grad_f64(g, v):
    return 0.0 if v <= -3.0 else (g if v >= 3.0 else g * (v / 3.0 + 0.5))


@native.kernel(parallel=True)
def _hardswish_backward_f32(grad, x, out):
    for i in native.prange(x.size):
        out[i] = _hardswish_grad_f32(grad[i], x[i])


@native.kernel(parallel=True)
def _hardswish_backward_f64(grad, x, out):
    for i in native.prange(x.size):
        out[i] = _hardswish_grad_f64(grad[i], x[i])


@native.kernel(parallel=True)
def _hardswish_backward_f32_into(grad, x):
    for i in native.prange(x.size):
        grad[i] = _hardswish_grad_f32(grad[i], x[i])


@native.kernel(parallel=True)
def _hardswish_backward_f64_into(grad, x):
    for i in native.prange(x.size):
        grad[i] = _hardswish_grad_f64(grad[i], x[i])


@native.kernel(parallel=True)
def _leaky_relu(x, out, slope):
    for i in native.prange(x.size):
        v = x[i]
        out[i] = v if v > 0 else v * slope


@native.kernel(parallel=True)
def _leaky_relu_backward(grad, s, out, slope):
    for i in native.prange(s.size):
        g = grad[i]
        out[i] = g if s[i] > 0 else g * slope


@native.kernel(parallel=True)
def _hardtanh(x, out, lo, hi):
    for i in native.prange(x.size):
        v = x[i]
        out[i] = lo if v < lo else (hi if v > hi else v)   # (nan stays nan)


@native.kernel(parallel=True)
def _hardtanh_backward(grad, y, out, lo, hi):
    for i in native.prange(y.size):
        g, v = grad[i], y[i]   # (read before the select: see _native_select's note)
        out[i] = g if (v > lo) & (v < hi) else _ZERO   # (a NaN's gradient is 0)


def hardtanh(x: np.ndarray, lo: float, hi: float, out: np.ndarray | None = None) -> np.ndarray:
    """`x` clamped to [lo, hi] (NaN stays NaN), for a `supports` array: one parallel pass
    (NumPy's clip runs on one thread); into `out` (see `elementwise`) when given."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = _flat_out(flat, out)
    real = flat.dtype.type
    run(_hardtanh, flat.size, flat, out, real(lo), real(hi), cut=(0, 1), part="flat2_2")
    return out.reshape(x.shape)


def hardtanh_backward(grad: np.ndarray, y: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``grad`` where hardtanh's output `y` is strictly inside its bounds, else 0 (a NaN
    gets 0, as in PyTorch's vectorized loop), for `supports` arrays of one shape."""
    flat = np.ascontiguousarray(y).reshape(-1)
    out = np.empty_like(flat)
    real = flat.dtype.type
    run(_hardtanh_backward, flat.size, _native_fill.contiguous(grad).reshape(-1), flat, out,
        real(lo), real(hi), cut=(0, 1, 2), part="flat3_2")
    return out.reshape(y.shape)


@native.kernel(parallel=True)
def _clamp(x, out, lo, hi):
    for i in native.prange(x.size):
        v = x[i]
        r = lo if v < lo else v   # (strict tests: an x equal to a bound keeps its own zero)
        out[i] = hi if r > hi else r   # (and NaN stays NaN; lo > hi gives hi everywhere)


@native.kernel(parallel=True)
def _clamp_backward(grad, x, out, lo, hi):
    for i in native.prange(x.size):
        g, v = grad[i], x[i]   # (read before the select: see _native_select's note)
        out[i] = g if (v >= lo) & (v <= hi) else _ZERO   # (a NaN's gradient is 0)


def _bounds(dtype, lo, hi) -> tuple:
    """clamp's bounds in `dtype`, a missing one as an infinity that never binds."""
    real = dtype.type
    return real(-np.inf if lo is None else lo), real(np.inf if hi is None else hi)


def clamp(x: np.ndarray, lo, hi) -> np.ndarray:
    """``min(max(x, lo), hi)`` as PyTorch computes it (an element equal to a bound keeps
    its sign of zero; NaN stays NaN; either bound may be None) for a `supports` array:
    one parallel pass (NumPy's maximum and minimum take two, on one thread)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    run(_clamp, flat.size, flat, out, *_bounds(flat.dtype, lo, hi), cut=(0, 1),
        part="flat2_2")
    return out.reshape(x.shape)


def clamp_backward(grad: np.ndarray, x: np.ndarray, lo, hi) -> np.ndarray:
    """``grad`` where clamp's input `x` lies within [lo, hi], bounds included, else 0 (a
    NaN gets 0), for `supports` arrays of one shape."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    run(_clamp_backward, flat.size, _native_fill.contiguous(grad).reshape(-1), flat, out,
        *_bounds(flat.dtype, lo, hi), cut=(0, 1, 2), part="flat3_2")
    return out.reshape(x.shape)


def leaky_relu(x: np.ndarray, slope: float, out: np.ndarray | None = None) -> np.ndarray:
    """``x`` where x > 0, else ``x * slope`` (NaN stays NaN) for a `supports` array: one
    vectorized select; into `out` (see `elementwise`) when given.  NOTE: NumPy's
    ``where`` costs ~4 ns an element on a random sign pattern (1M float32: 4.3 ms; this
    kernel, one thread: 0.3-0.4 ms)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = _flat_out(flat, out)
    run(_leaky_relu, flat.size, flat, out, flat.dtype.type(slope), cut=(0, 1), part="flat2_1")
    return out.reshape(x.shape)


def leaky_relu_backward(grad: np.ndarray, saved: np.ndarray, slope: float) -> np.ndarray:
    """``grad`` where `saved` (leaky relu's input, or its output for a slope >= 0) > 0,
    else ``grad * slope``, for `supports` arrays of one shape."""
    flat = np.ascontiguousarray(saved).reshape(-1)
    out = np.empty_like(flat)
    run(_leaky_relu_backward, flat.size, _native_fill.contiguous(grad).reshape(-1), flat, out,
        flat.dtype.type(slope), cut=(0, 1, 2), part="flat3_1")
    return out.reshape(saved.shape)


_FORWARD = {("gelu", 4): _gelu_f32, ("gelu", 8): _gelu_f64,
            ("gelu_tanh", 4): _gelu_tanh_f32, ("gelu_tanh", 8): _gelu_tanh_f64,
            ("silu", 4): _silu_f32, ("silu", 8): _silu_f64,
            ("relu", 4): _relu, ("relu", 8): _relu,
            ("sigmoid", 4): _sigmoid_f32, ("sigmoid", 8): _sigmoid_f64,
            ("hardswish", 4): _hardswish_f32, ("hardswish", 8): _hardswish_f64,
            ("tanh", 4): _tanh_f32,   # (float64: NumPy's tanh)
            ("abs", 4): _abs, ("abs", 8): _abs}
_BACKWARD = {("gelu", 4): _gelu_backward_f32, ("gelu", 8): _gelu_backward_f64,
             ("gelu_tanh", 4): _gelu_tanh_backward_f32,
             ("gelu_tanh", 8): _gelu_tanh_backward_f64,
             ("silu", 4): _silu_backward_f32, ("silu", 8): _silu_backward_f64,
             ("tanh", 4): _tanh_backward, ("tanh", 8): _tanh_backward,
             ("relu", 4): _relu_backward, ("relu", 8): _relu_backward,
             ("sigmoid", 4): _sigmoid_backward, ("sigmoid", 8): _sigmoid_backward,
             ("hardswish", 4): _hardswish_backward_f32, ("hardswish", 8): _hardswish_backward_f64,
             ("abs", 4): _abs_backward, ("abs", 8): _abs_backward}
_BACKWARD_INTO = {("gelu", 4): _gelu_backward_f32_into, ("gelu", 8): _gelu_backward_f64_into,
                  ("gelu_tanh", 4): _gelu_tanh_backward_f32_into,
                  ("gelu_tanh", 8): _gelu_tanh_backward_f64_into,
                  ("silu", 4): _silu_backward_f32_into, ("silu", 8): _silu_backward_f64_into,
                  ("tanh", 4): _tanh_backward_into, ("tanh", 8): _tanh_backward_into,
                  ("relu", 4): _relu_backward_into, ("relu", 8): _relu_backward_into,
                  ("sigmoid", 4): _sigmoid_backward_into, ("sigmoid", 8): _sigmoid_backward_into,
                  ("hardswish", 4): _hardswish_backward_f32_into,
                  ("hardswish", 8): _hardswish_backward_f64_into,
                  ("abs", 4): _abs_backward_into, ("abs", 8): _abs_backward_into}


def supports(*arrays, min_size: int = MIN_SIZE) -> bool:
    """True when the kernels should take these arrays now: numba on, NumPy float32 or
    float64 arrays of one dtype and shape, large enough to gain (see `MIN_SIZE`)."""
    first = arrays[0]
    # (cheapest tests first: every call of the ops asks, tiny tensors included)
    if not (type(first) is np.ndarray and first.size >= min_size and first.dtype.char in "fd"):
        return False
    if len(arrays) == 1:  # (a forward's one input: no generator for the rest)
        return native.enabled()
    return (native.is_cpu_array(*arrays) and native.enabled()
            and all(a.dtype == first.dtype and a.shape == first.shape for a in arrays))


def first_order(grad, saved) -> bool:
    """Whether an activation's backward may run its kernel on the arrays of `grad` and
    `saved` (tensors): no graph of the backward recorded (no ``create_graph``), nothing
    observing the ops (profiler, autocast), and `supports` arrays."""
    return (not STATE.enabled and PROCESS.observer is None
            and supports(saved._data, grad._data))


def forward(name: str, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``f(x)`` for the activation `name` ('gelu', 'gelu_tanh', 'silu', 'sigmoid', 'relu',
    'hardswish', 'tanh', 'abs') of a `supports` array, in one parallel pass; into `out`
    (see `elementwise`) when given."""
    return elementwise(_FORWARD[name, x.itemsize], x, out)


def elementwise(kernel, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``kernel(x, out)``, an elementwise kernel of a `supports` array, in one pass cut
    over the threads; the result in x's shape.  `out`, when given, is a `writes_into`
    array of x's shape and dtype (x itself for an in-place op: each element is read
    before it is written)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = _flat_out(flat, out)
    run(kernel, flat.size, flat, out, cut=(0, 1), part="flat2")
    return out.reshape(x.shape)


def writes_into(x, min_size: int = MIN_SIZE) -> bool:
    """Whether an in-place activation may have its kernel write straight into `x` (a
    `supports` array, C-contiguous and writable): no new array, and no copy of it back
    into x (1M float32 relu_ forward + backward: 0.28 against 0.21 ms out of place)."""
    return (supports(x, min_size=min_size) and x.flags.c_contiguous
            and x.flags.writeable)


def inplace_out(ctx, x, min_size: int = MIN_SIZE):
    """`x` itself when the op of `ctx` is an in-place one whose kernel may write into it
    (`writes_into`), else None: the `out` argument of the forward kernels."""
    return x if ctx._inplace and writes_into(x, min_size) else None


def _flat_out(flat: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """The flat array a kernel writes: `out` seen flat, or a new one like `flat`."""
    return np.empty_like(flat) if out is None else out.reshape(-1)


def backward(name: str, grad: np.ndarray, saved: np.ndarray,
             overwrite: bool = False) -> np.ndarray:
    """``grad * f'(x)`` in one parallel pass, for `supports` arrays; `saved` is the input x
    (the output y for 'tanh' and 'relu').  With `overwrite` the result goes into `grad`
    itself when it is C-contiguous (an array the caller owns and nothing else reads).  A
    gradient of another layout is first copied (a broadcast single value, as a mean's
    backward hands on, filled by the threads) and the result written over the copy."""
    flat = np.ascontiguousarray(saved).reshape(-1)
    if not grad.flags.c_contiguous:
        grad, overwrite = _native_fill.contiguous(grad), True
    if overwrite:
        run(_BACKWARD_INTO[name, flat.itemsize], flat.size, grad.reshape(-1), flat, cut=(0, 1),
            part="flat2")
        return grad
    out = np.empty_like(flat)
    run(_BACKWARD[name, flat.itemsize], flat.size, grad.reshape(-1), flat, out, cut=(0, 1, 2),
        part="flat3")
    return out.reshape(saved.shape)
