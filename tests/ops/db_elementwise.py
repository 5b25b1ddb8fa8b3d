"""Op table entries for ember/ops/elementwise.py and ember/ops/elementwise_special.py."""

import numpy as np
import scipy.special

import ember
from tests.ops.opinfo import (
    FLOATS, FLOATS_AND_INTS, OpInfo, Sample, binary_samples, unary_samples,
)


def _float_unary(name, fn, ref, low=-2.0, high=2.0, **kw):
    """A float function of one tensor; integer inputs give the default float dtype."""
    kw.setdefault("dtypes", FLOATS_AND_INTS)
    return OpInfo(name, fn, ref, unary_samples(low, high), **kw)


def _rounding(name, fn, ref, **kw):
    # Piecewise constant: the gradient is zero and has no gradient of its own.
    kw.setdefault("dtypes", FLOATS_AND_INTS)
    return OpInfo(name, fn, ref, unary_samples(-3.0, 3.0), grad_order=1, **kw)


def _predicate(name, fn, ref):
    return OpInfo(name, fn, ref, unary_samples(), dtypes=FLOATS_AND_INTS, grad_order=0)


def _cumulative_trapezoid_ref(y):
    return np.cumsum((y[..., 1:] + y[..., :-1]) / 2, axis=-1)


def _renorm_ref(x, p=2, maxnorm=1.0):
    norms = np.linalg.norm(x, ord=p, axis=1, keepdims=True)
    return x * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


def _sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


def _clamp_samples(rng):
    x = lambda *s: rng.uniform(-2, 2, size=s)  # noqa: E731
    return [
        Sample((x(3, 4),), {"min": -0.5, "max": 0.7}),
        Sample((x(3, 4),), {"min": -0.5}),
        Sample((x(3, 4),), {"max": 0.3}),
    ]


def _clamp_tensor_samples(rng):
    x = lambda *s: rng.uniform(-2, 2, size=s)  # noqa: E731
    lo = lambda *s: rng.uniform(-1.0, -0.2, size=s)  # noqa: E731
    hi = lambda *s: rng.uniform(0.2, 1.0, size=s)  # noqa: E731
    return [
        Sample((x(3, 4), lo(3, 4), hi(3, 4))),
        Sample((x(3, 4), lo(4), hi(3, 1))),
        Sample((x(2, 3), lo(3), None)),
        Sample((x(2, 3), None, hi(2, 3))),
    ]


def _where_samples(rng):
    # The condition comes as a float array (the harness casts every array): positive = True.
    u = lambda *s: rng.uniform(-2, 2, size=s)  # noqa: E731
    return [
        Sample((u(3, 4), u(3, 4), u(3, 4)), grad_args=(1, 2)),
        Sample((u(3, 1), u(1, 4), u(4)), grad_args=(1, 2)),
        Sample((u(3, 4), u(3, 4), 0.5), grad_args=(1,)),
        Sample((u(2, 3), -1.5, u(3)), grad_args=(2,)),
    ]


def _where(c, x, y):
    return ember.where(c > 0, x, y)


def _xlogy_samples(rng):
    return binary_samples(-2.0, 2.0, 0.5, 2.0)(rng) + [
        # PyTorch's gradient w.r.t. x is 0 where x == 0 (not log(y)): only check y there.
        Sample((np.array([0.0, 1.0, 0.0]), rng.uniform(0.5, 2.0, size=3)), grad_args=(1,)),
        Sample((1.5, rng.uniform(0.5, 2.0, size=(2, 3)))),
    ]


def _nan_to_num_ref(x, **kw):
    return np.nan_to_num(x, **kw)


OPS = [
    # exponentials and logarithms
    _float_unary("exp", ember.exp, np.exp),
    _float_unary("exp2", ember.exp2, np.exp2),
    _float_unary("expm1", ember.expm1, np.expm1),
    _float_unary("log", ember.log, np.log, 0.5, 3.0),
    _float_unary("log2", ember.log2, np.log2, 0.5, 3.0),
    _float_unary("log10", ember.log10, np.log10, 0.5, 3.0),
    _float_unary("log1p", ember.log1p, np.log1p, -0.5, 2.0, dtypes=FLOATS),
    _float_unary("sqrt", ember.sqrt, np.sqrt, 0.5, 3.0),
    _float_unary("rsqrt", ember.rsqrt, lambda x: 1 / np.sqrt(x), 0.5, 3.0),
    # trigonometric and hyperbolic
    _float_unary("sin", ember.sin, np.sin),
    _float_unary("cos", ember.cos, np.cos),
    _float_unary("tan", ember.tan, np.tan, -1.2, 1.2),
    _float_unary("asin", ember.asin, np.arcsin, -0.9, 0.9, dtypes=FLOATS),
    _float_unary("acos", ember.acos, np.arccos, -0.9, 0.9, dtypes=FLOATS),
    _float_unary("atan", ember.atan, np.arctan),
    _float_unary("sinh", ember.sinh, np.sinh),
    _float_unary("cosh", ember.cosh, np.cosh),
    _float_unary("tanh", ember.tanh, np.tanh),
    _float_unary("asinh", ember.asinh, np.arcsinh),
    _float_unary("acosh", ember.acosh, np.arccosh, 1.1, 3.0),
    _float_unary("atanh", ember.atanh, np.arctanh, -0.9, 0.9, dtypes=FLOATS),
    # special functions
    _float_unary("sigmoid", ember.sigmoid, _sigmoid_ref, -4.0, 4.0),
    _float_unary("logit", ember.logit, scipy.special.logit, 0.1, 0.9, dtypes=FLOATS),
    OpInfo("logit_eps", lambda x: ember.logit(x, eps=0.2),
           lambda x: scipy.special.logit(np.clip(x, 0.2, 0.8)), unary_samples(0.25, 0.75)),
    _float_unary("erf", ember.erf, scipy.special.erf, -3.0, 3.0),
    _float_unary("erfc", ember.erfc, scipy.special.erfc, -3.0, 3.0),
    _float_unary("erfinv", ember.erfinv, scipy.special.erfinv, -0.9, 0.9, dtypes=FLOATS),
    # rounding and sign
    _rounding("sign", ember.sign, np.sign),
    _rounding("sgn", ember.sgn, np.sign),
    _rounding("floor", ember.floor, np.floor),
    _rounding("ceil", ember.ceil, np.ceil),
    _rounding("round", ember.round, np.round),
    _rounding("round_decimals", lambda x: ember.round(x, decimals=1),
              lambda x: np.round(x, 1), dtypes=FLOATS),
    _rounding("trunc", ember.trunc, np.trunc),
    _rounding("fix", ember.fix, np.trunc),
    OpInfo("frac", ember.frac, lambda x: x - np.trunc(x), unary_samples(-3.0, 3.0)),
    OpInfo("relu", ember.relu, lambda x: np.maximum(x, 0), unary_samples(),
           dtypes=FLOATS_AND_INTS),
    # floating point tests
    _predicate("isnan", ember.isnan, np.isnan),
    _predicate("isinf", ember.isinf, np.isinf),
    _predicate("isfinite", ember.isfinite, np.isfinite),
    _predicate("isposinf", ember.isposinf, np.isposinf),
    _predicate("isneginf", ember.isneginf, np.isneginf),
    _predicate("signbit", ember.signbit, np.signbit),
    # functions of two tensors
    # (these take two tensors only: a number raises TypeError, as in PyTorch)
    OpInfo("atan2", ember.atan2, np.arctan2, binary_samples(scalar=None),
           dtypes=FLOATS_AND_INTS),
    OpInfo("hypot", ember.hypot, np.hypot, binary_samples(scalar=None)),
    OpInfo("maximum", ember.maximum, np.maximum, binary_samples(scalar=None),
           dtypes=FLOATS_AND_INTS, promotes=True),
    OpInfo("minimum", ember.minimum, np.minimum, binary_samples(scalar=None),
           dtypes=FLOATS_AND_INTS, promotes=True),
    OpInfo("fmax", ember.fmax, np.fmax, binary_samples(scalar=None), dtypes=FLOATS_AND_INTS,
           promotes=True),
    OpInfo("fmin", ember.fmin, np.fmin, binary_samples(scalar=None), dtypes=FLOATS_AND_INTS,
           promotes=True),
    OpInfo("xlogy", ember.xlogy, scipy.special.xlogy, _xlogy_samples),
    OpInfo("logaddexp", ember.logaddexp, np.logaddexp, binary_samples(scalar=None)),
    OpInfo("logaddexp2", ember.logaddexp2, np.logaddexp2, binary_samples(scalar=None)),
    # (copysign is not differentiable where x is 0: the samples avoid it)
    OpInfo("copysign", ember.copysign, np.copysign, binary_samples(0.2, 2.0, -2.0, 2.0),
           dtypes=FLOATS_AND_INTS),
    _float_unary("deg2rad", ember.deg2rad, np.deg2rad),
    OpInfo("ldexp", lambda x: ember.ldexp(x, ember.tensor([2, -1, 0, 3])[:x.shape[-1]]),
           lambda x: np.ldexp(x, np.array([2, -1, 0, 3])[:x.shape[-1]]),
           unary_samples(shapes=((3, 4), (4,)))),
    OpInfo("frexp_mantissa", lambda x: ember.frexp(x).mantissa, lambda x: np.frexp(x)[0],
           unary_samples(-5.0, 5.0)),
    OpInfo("dist", ember.dist, lambda a, b: np.linalg.norm((a - b).ravel()),
           binary_samples(scalar=None)),
    OpInfo("dist_p3", lambda a, b: ember.dist(a, b, 3),
           lambda a, b: (np.abs(a - b) ** 3).sum() ** (1 / 3), binary_samples(scalar=None)),
    OpInfo("trapezoid", ember.trapezoid, np.trapezoid, unary_samples(shapes=((3, 4), (5,)))),
    OpInfo("trapezoid_x", lambda y, x: ember.trapezoid(y, x), lambda y, x: np.trapezoid(y, x),
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)), np.sort(rng.uniform(0, 3, 4)))),
                        Sample((rng.uniform(-2, 2, size=(5,)), np.sort(rng.uniform(0, 3, 5))))]),
    OpInfo("cumulative_trapezoid", ember.cumulative_trapezoid, _cumulative_trapezoid_ref,
           unary_samples(shapes=((3, 4), (5,)))),
    OpInfo("renorm", lambda x: ember.renorm(x, 2, 0, 1.0), _renorm_ref,
           lambda rng: [Sample((rng.uniform(-2, 2, size=(3, 4)),))]),
    # the gamma family (gamma.py) and ember.special
    _float_unary("lgamma", ember.lgamma, scipy.special.gammaln, -3.5, 6.0),
    _float_unary("digamma", ember.digamma, scipy.special.digamma, 0.2, 6.0),
    OpInfo("polygamma_1", lambda x: ember.polygamma(1, x), lambda x: scipy.special.polygamma(1, x),
           unary_samples(0.3, 5.0)),
    OpInfo("polygamma_3", lambda x: ember.polygamma(3, x), lambda x: scipy.special.polygamma(3, x),
           unary_samples(0.5, 4.0)),
    OpInfo("mvlgamma", lambda x: ember.mvlgamma(x, 3), lambda x: scipy.special.multigammaln(x, 3),
           lambda rng: [Sample((rng.uniform(1.5, 4.0, size=(2, 3)),))]),
    _float_unary("special_ndtr", ember.special.ndtr, scipy.special.ndtr),
    _float_unary("special_ndtri", ember.special.ndtri, scipy.special.ndtri, 0.05, 0.95,
                 dtypes=FLOATS),
    _float_unary("special_entr", ember.special.entr, scipy.special.entr, 0.1, 3.0),
    _float_unary("i0", ember.i0, scipy.special.i0, -4.0, 4.0),
    _float_unary("special_i1", ember.special.i1, scipy.special.i1, -4.0, 4.0),
    _float_unary("special_sinc", ember.special.sinc, np.sinc),
    OpInfo("special_xlog1py", ember.special.xlog1py, scipy.special.xlog1py,
           binary_samples(-2.0, 2.0, -0.5, 2.0, scalar=None)),
    _float_unary("rad2deg", ember.rad2deg, np.rad2deg),
    # clamp, where, nan_to_num
    OpInfo("clamp", ember.clamp, lambda x, min=None, max=None: np.clip(x, min, max),
           _clamp_samples, dtypes=FLOATS_AND_INTS),
    OpInfo("clamp_tensor", ember.clamp, lambda x, lo, hi: np.clip(x, lo, hi),
           _clamp_tensor_samples),
    OpInfo("where", _where, lambda c, x, y: np.where(c > 0, x, y), _where_samples,
           dtypes=FLOATS_AND_INTS),
    OpInfo("nan_to_num", ember.nan_to_num, _nan_to_num_ref, unary_samples(),
           dtypes=FLOATS_AND_INTS),
]
