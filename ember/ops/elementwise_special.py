"""Elementwise special functions (sigmoid, logit, erf, erfc, erfinv, xlogy) and the
elementwise ops of several tensors: atan2, hypot, maximum/minimum, fmax/fmin, clamp,
where and nan_to_num.

erf and erfinv are written with NumPy alone (SciPy is not a dependency): erf is a
Maclaurin series near 0 and a Chebyshev expansion of ``exp(x*x) * erfc(x)`` beyond,
accurate to a few ulps in float64; erfinv refines a closed-form first guess by Halley's
method on erf (or on erfc in the tails, where erf is too flat to invert precisely).
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor, _make
from ._inplace import binary_function
from ._util import (check_same_device, cpp_name, float_input, is_scalar, promote, result_type,
                    to_tensor, xp_of)
from .arithmetic import (
    _is_integral, _xp, cast, check_broadcast, check_inplace_shape, inplace_form, inplace_operand,
    require_float_target, unsupported,
)
from . import _native_activation as _native_act
from . import _native_erf
from . import _native_select
from .elementwise import _float_pair, _Unary

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)); 24 terms are exact in float64
# for |x| <= 1 (the last term is below 1e-25 there).
_ERF_SERIES = tuple((-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(24))

# Chebyshev coefficients c_k of h(v) = x * exp(x*x) * erfc(x), which lies in [0.42, 0.57] for
# x >= 1, in the variable v = (4u - 1) / 3 with u = (x - 3) / (x + 3): x in [1, inf) maps
# onto v in [-1, 1).  Computed with mpmath at 50 digits from 90 Chebyshev nodes; the terms
# left out are below 6e-21.
_ERFCX_CHEB = (
    0.5270327699645345, 0.058438373634075017, -0.028760006767845146, 0.00942338429719674,
    -0.0023281563723139085, 0.00043730093384926333, -5.8303544643230866e-05,
    4.043114560930833e-06, 2.70898072771642e-07, -9.965420547129235e-08, 5.899419235825997e-09,
    1.3859802863792783e-09, -2.3156333271134693e-10, -1.5604196875242842e-11,
    6.283638983525689e-12, 1.2178727055545494e-13, -1.6752992531325616e-13,
    3.133338732321978e-16, 4.754423145110417e-15, -2.4579810618655913e-17,
    -1.4571109178923862e-16, -1.1939383999583008e-18, 4.74192559805803e-18,
    1.7736754227671548e-19, -1.5819572551692075e-19, -1.3149092119193461e-20,
)

# First guess for erfinv(a) / a (least-squares Chebyshev fits to mpmath values, relative error
# below 1e-9 and 3e-8): in w = -log(1 - a*a) for w < 6.25, mapped from [0, 6.25]; and in
# s = sqrt(w) beyond, mapped from [2.5, 6.1] (a = 1 - 2**-53 gives s = 6.003).
_ERFINV_CENTRAL = (
    1.6304220989459326, 0.7315674456742255, -0.021235032142504492, -0.006580887542449515,
    0.0019488711426910528, -0.0001415834338638589, -4.9292864636074105e-05,
    1.4752887929049757e-05, -6.111918602956083e-07, -5.106997338333718e-07,
    1.1590277222781632e-07, 1.4907998332035147e-09, -5.2447768914941936e-09,
)
_ERFINV_TAIL = (
    4.144960288545253, 1.8142936511700314, 0.002751236141797204, -0.0015682019016953984,
    0.00059369939085739, -0.00022618672512544162, 8.991029707306168e-05,
    -3.461299685577915e-05, 1.1711521278434289e-05, -3.0629792983407828e-06,
    4.03159603860767e-07, 1.3127448222070475e-07, -1.1541521879261245e-07,
)


def _chebyshev(coeffs, t):
    """sum_k coeffs[k] * T_k(t) for t in [-1, 1], by Clenshaw's recurrence."""
    t2 = 2 * t
    b1 = b2 = 0.0
    for c in reversed(coeffs[1:]):
        b1, b2 = t2 * b1 - b2 + c, b1
    return t * b1 - b2 + coeffs[0]


def _piecewise(xp, condition, x, where_true, where_false):
    """``where_true(x)`` where `condition` holds, else ``where_false(x)``; each function only
    sees its own elements (these kernels are long, so this halves the work or better)."""
    out = xp.empty_like(x)
    out[condition] = where_true(x[condition])
    rest = ~condition
    out[rest] = where_false(x[rest])
    return out


def _erf_series(x):
    """erf(x) for |x| <= 1."""
    t = x * x
    acc = _ERF_SERIES[-1]
    for c in reversed(_ERF_SERIES[:-1]):
        acc = acc * t + c
    return _TWO_OVER_SQRT_PI * x * acc


def _exp_neg_square(xp, x):
    """exp(-x*x) without the rounding error of forming x*x for large x."""
    # NOTE: x*x has a relative error of 1e-16, i.e. an absolute one of 1e-16 * x*x, which
    # exp turns into a relative error of x*x * 1e-16; split x = hi + lo with hi on a 1/16
    # grid so that hi*hi is exact and only the small (x - hi)(x + hi) is rounded.
    hi = xp.floor(x * 16) / 16
    return xp.exp(-hi * hi) * xp.exp(-(x - hi) * (x + hi))


def _erfc_tail(xp, x):
    """erfc(x) for x >= 1, accurate in relative terms."""
    x = xp.minimum(x, 30.0)  # erfc(30) underflows to 0; this also keeps inf out of the maths
    h = _chebyshev(_ERFCX_CHEB, (4 * (x - 3) / (x + 3) - 1) / 3)
    return _exp_neg_square(xp, x) * h / x


def _erf_pair(xp, x):
    """(erf(x), erfc(x)), each accurate to a few ulps in relative terms (float64)."""
    near = xp.abs(x) < 1
    erf, erfc = xp.empty_like(x), xp.empty_like(x)
    series = _erf_series(x[near])
    erf[near], erfc[near] = series, 1.0 - series
    far = ~near  # nan goes this way and stays nan
    xf = x[far]
    tail = _erfc_tail(xp, xp.abs(xf))  # erfc(|x|)
    erf[far] = xp.copysign(1.0 - tail, xf)
    erfc[far] = xp.where(xf > 0, tail, 2.0 - tail)
    return erf, erfc


def _erf64(xp, x):
    """erf of a float64 array (also used by GELU in activation.py)."""
    return _erf_pair(xp, x)[0]


def _erfc64(xp, x):
    return _erf_pair(xp, x)[1]


def _erfinv64(xp, x):
    a = xp.abs(x)
    a = xp.where(a < 1, a, 0.5)  # keep 1, >1 and nan out of the maths (fixed at the end)
    w = -xp.log((1 - a) * (1 + a))
    y = a * _piecewise(xp, w < 6.25, w,
                       lambda v: _chebyshev(_ERFINV_CENTRAL, v / 3.125 - 1),
                       lambda v: _chebyshev(_ERFINV_TAIL, (xp.sqrt(v) - 4.3) / 1.8))
    # One Halley step on f(y) = erf(y) - a takes the guess to full precision.  In the tails
    # f is written (1 - a) - erfc(y): 1 - a is exact there and erfc keeps its relative
    # accuracy, where erf(y) - a would cancel.
    erf, erfc = _erf_pair(xp, y)
    f = xp.where(a <= 0.5, erf - a, (1 - a) - erfc)
    step = f / (_TWO_OVER_SQRT_PI * _exp_neg_square(xp, y))
    y = y - step / (1 + y * step)  # erf'' / erf' = -2y
    abs_x = xp.abs(x)
    y = xp.where(abs_x < 1, y, xp.where(abs_x == 1, math.inf, math.nan))
    return xp.copysign(y, x)


_CHUNK = 1 << 16


def _in_float64(fn):
    """Run a float64 kernel and give back the input's dtype."""
    def kernel(xp, x):
        flat = x.astype(np.float64).reshape(-1)
        if xp is np and flat.size > _CHUNK:
            # NOTE: these kernels make ~100 temporaries; on the CPU, blocks that stay in the
            # cache run about three times faster than whole-array passes.
            out = np.empty_like(flat)
            for i in range(0, flat.size, _CHUNK):
                out[i:i + _CHUNK] = fn(np, flat[i:i + _CHUNK])
        else:
            out = fn(xp, flat)
        return out.reshape(x.shape).astype(x.dtype, copy=False)
    return staticmethod(kernel)


def _sigmoid(xp, x):
    if _native_act.supports(x):
        # NOTE: one pass; the select below costs ~4 ns an element on a random sign
        # pattern (1M float32: 4.3 ms forward, PyTorch 0.3)
        return _native_act.forward("sigmoid", x)
    if x.dtype.kind == "c":  # |x| and x >= 0 mean nothing for complex numbers
        return 1 / (1 + xp.exp(-x))
    # NOTE: exp(-|x|) never overflows; the two branches are the same function.
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


class Sigmoid(_Unary):
    saves = "y"
    _reuses_grad = True  # (see Node._reuses_grad)
    compute = staticmethod(_sigmoid)
    derivative = staticmethod(lambda x, y: y * (1 - y))

    @staticmethod
    def backward(ctx, grad):
        _, y = ctx.saved_tensors
        if _native_act.first_order(grad, y):  # one pass on the arrays
            return _make(_native_act.backward("sigmoid", grad._data, y._data,
                                              overwrite=ctx._owns_grad))
        return _Unary.backward(ctx, grad)


_erf_in_float64, _erfc_in_float64 = _in_float64(_erf64).__func__, _in_float64(_erfc64).__func__


def _erf(xp, x):
    return _native_erf.erf(x) if _native_erf.takes(x) else _erf_in_float64(xp, x)


def _erfc(xp, x):
    return _native_erf.erfc(x) if _native_erf.takes(x) else _erfc_in_float64(xp, x)


class Erf(_Unary):
    """erf; large float CPU arrays by the C library's erf on ember's threads
    (_native_erf.py), others by `_erf_pair`'s float64 formulas."""

    compute = staticmethod(_erf)
    derivative = staticmethod(lambda x, y: _TWO_OVER_SQRT_PI * (-x * x).exp())


class Erfc(_Unary):
    """erfc, as `Erf`."""

    compute = staticmethod(_erfc)
    derivative = staticmethod(lambda x, y: -_TWO_OVER_SQRT_PI * (-x * x).exp())


class Erfinv(_Unary):
    saves = "y"
    compute = _in_float64(_erfinv64)
    derivative = staticmethod(lambda x, y: (y * y).exp() / _TWO_OVER_SQRT_PI)


class Logit(Function):
    @staticmethod
    def forward(ctx, x, eps=None):
        ctx.eps = eps
        ctx.save_for_backward(x)
        xp = xp_of(x)
        z = x if eps is None else xp.clip(x, eps, 1 - eps)
        with np.errstate(all="ignore"):
            return xp.log(z / (1 - z)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with np.errstate(all="ignore"):
            g = grad / (x * (1 - x))
        if ctx.eps is None:  # outside [0, 1] logit is nan, and so is its gradient
            return g.where((x >= 0) & (x <= 1), math.nan)
        return g.where((x >= ctx.eps) & (x <= 1 - ctx.eps), 0.0)


LogitInplace = inplace_form(Logit)

sigmoid, sigmoid_ = _float_pair(Sigmoid, "sigmoid",
                                "``1 / (1 + exp(-input))``, computed without overflow.")
erf, erf_ = _float_pair(Erf, "erf",
                        "The error function ``2/sqrt(pi) * integral_0^x exp(-t*t) dt``.")
erfc, erfc_ = _float_pair(Erfc, "erfc", "The complementary error function ``1 - erf(input)``, "
                          "accurate in the tails.")
erfinv, erfinv_ = _float_pair(Erfinv, "erfinv",
                              "The inverse of erf on [-1, 1] (+-inf at +-1, nan outside).")


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``; with `eps`, p is first clamped to [eps, 1 - eps]."""
    return Logit.apply(float_input(input), None if eps is None else float(eps))


def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """In-place ``logit``."""
    require_float_target("logit_", input)
    return LogitInplace.apply(input, None if eps is None else float(eps))


# ---------------------------------------------------------------------------
# functions of two tensors


class Atan2(Function):
    _fresh_grads = True  # (each gradient a new where: Node._fresh_grads)

    @staticmethod
    def forward(ctx, y, x):
        if y.dtype.kind == "c":   # (here, so that atan2_ refuses it too)
            raise unsupported("atan2_cpu", y.dtype)
        ctx.save_for_backward(y, x)
        return xp_of(y).arctan2(y, x)

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        r2 = x * x + y * y
        with np.errstate(all="ignore"):
            g = grad / r2
            # NOTE: the gradient at the origin is taken as 0 (PyTorch does the same).
            gy = (g * x).where(r2 != 0, 0.0) if ctx._edges[0][0] is not None else None
            gx = (-g * y).where(r2 != 0, 0.0) if ctx._edges[1][0] is not None else None
        return gy, gx


class Hypot(Function):
    _fresh_grads = True  # (each gradient a new product: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, y):
        out = xp_of(x).hypot(x, y)
        ctx.save_for_backward(x, y, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, y, out = ctx.saved_tensors
        with np.errstate(all="ignore"):
            g = grad / out
            return g * x, g * y


class _Pairwise(Function):
    """Base of the elementwise max/min ops: the array module's `_kernel` of x and y."""

    _kernel = ""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return getattr(xp_of(x), ctx._kernel)(x, y)


class Maximum(_Pairwise):
    """The larger of x and y, nan winning; `_beats` is the strict order that picks it."""

    _fresh_grads = True  # (each gradient a new where: Node._fresh_grads)

    _kernel, _beats = "maximum", staticmethod(operator.gt)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        shared = grad.where(x != y, grad / 2)  # NOTE: ties split the gradient equally
        return shared.where(~ctx._beats(y, x), 0.0), shared.where(~ctx._beats(x, y), 0.0)


class Minimum(Maximum):
    _kernel, _beats = "minimum", staticmethod(operator.lt)


class Fmax(_Pairwise):
    """The larger of x and y, a nan losing to a number; ties go to the first argument, so
    `_first_wins` is the order with ties included."""

    _fresh_grads = True  # (each gradient a new where: Node._fresh_grads)

    _kernel, _first_wins = "fmax", staticmethod(operator.ge)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        first = ctx._first_wins(x, y) | y.isnan()
        return grad.where(first, 0.0), grad.where(~first, 0.0)


class Fmin(Fmax):
    _kernel, _first_wins = "fmin", staticmethod(operator.le)


class Xlogy(Function):
    """x * log(y) (x * log1p(y) with `log1p`: ``special.xlog1py``), with 0 where x == 0
    unless y is nan.  Gradients: log(y) (log1p(y)) for x, 0 where x is 0 and the log is
    -inf or nan; x / y (x / (1 + y)) for y."""

    @staticmethod
    def forward(ctx, x, y, node_name=None, log1p=False):
        if node_name is not None:
            ctx._name = node_name
        ctx.log1p = log1p
        ctx.save_for_backward(x, y)
        xp = xp_of(x)
        with np.errstate(all="ignore"):
            out = xp.where((x == 0) & ~xp.isnan(y), 0.0, x * (xp.log1p if log1p else xp.log)(y))
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx = gy = None
        with np.errstate(all="ignore"):
            if ctx._edges[0][0] is not None:
                # PyTorch's rule: log(y) (log1p(y)) even where x is 0, but 0 there where
                # y <= 0 (y <= -1), where the log is not a number or is -inf
                if not isinstance(y, Tensor):   # (xlogy_ with a number)
                    y = grad.new_full((), y)
                slope = y.log1p() if ctx.log1p else y.log()
                gx = grad * slope.where(~((x == 0) & (y <= (-1 if ctx.log1p else 0))), 0.0)
            if ctx._edges[1][0] is not None:
                gy = grad * x / (1 + y) if ctx.log1p else grad * x / y
        return gx, gy


Atan2Inplace = inplace_form(Atan2)
HypotInplace = inplace_form(Hypot)
XlogyInplace = inplace_form(Xlogy)


def _binary(op: str, input, other, *, floats: bool = False):
    """The two operands of a binary op as tensors of their promoted dtype (the default float
    dtype for integers when `floats`); a number becomes a 0-dim tensor."""
    check_broadcast(input, other)
    a, b = promote(op, input, other)
    d = (a if isinstance(a, Tensor) else b).dtype
    if floats and _is_integral(d):
        d = dtypes.get_default_dtype()
    like = a if isinstance(a, Tensor) else b
    return tuple(cast(v, d) if isinstance(v, Tensor) else to_tensor(v, like).to(d)
                 for v in (a, b))


def _tensors(op: str, input, other) -> None:
    """TypeError (as PyTorch) when an op taking two tensors is given something else."""
    for position, (name, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")


def _binary_(op: str, input: Tensor, other):
    other = inplace_operand(op, input, other)
    check_inplace_shape(input, other)
    return other


def atan2(input, other) -> Tensor:
    """The angle of the point (other, input), i.e. atan(input / other) in the right quadrant."""
    _tensors("atan2", input, other)
    return Atan2.apply(*_binary("atan2", input, other, floats=True))


def atan2_(input: Tensor, other) -> Tensor:
    """In-place ``atan2``."""
    _tensors("atan2_", input, other)
    require_float_target("atan2_", input)
    return Atan2Inplace.apply(input, _binary_("atan2_", input, other))


arctan2, arctan2_ = atan2, atan2_


def hypot(input, other) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow (floating point only)."""
    _tensors("hypot", input, other)
    a, b = _binary("hypot", input, other)
    d = (a if isinstance(a, Tensor) else b).dtype
    if not d.is_floating_point:
        raise unsupported("hypot_cpu", d)
    return Hypot.apply(a, b)


def hypot_(input: Tensor, other) -> Tensor:
    """In-place ``hypot``."""
    _tensors("hypot_", input, other)
    if not input.dtype.is_floating_point:
        raise unsupported("hypot_cpu", input.dtype)
    return HypotInplace.apply(input, _binary_("hypot_", input, other))


def _of_two_tensors(op: str, cls, input: Tensor, other: Tensor) -> Tensor:
    """Apply `cls` to two tensors (numbers are refused) in their promoted dtype, which
    may not be complex (no order)."""
    _tensors(op, input, other)
    a, b = _binary(op, input, other)
    if a.dtype.is_complex:
        raise RuntimeError(f"{op} not implemented for complex tensors.")
    return cls.apply(a, b)


maximum, minimum, fmax, fmin = (
    binary_function(cls, name, doc, _of_two_tensors) for cls, name, doc in [
        (Maximum, "maximum", "The larger of two tensors, elementwise (nan if either is nan)."),
        (Minimum, "minimum", "The smaller of two tensors, elementwise (nan if either is nan)."),
        (Fmax, "fmax", "The larger of two tensors, elementwise, ignoring a nan on one side."),
        (Fmin, "fmin", "The smaller of two tensors, elementwise, ignoring a nan on one side."),
    ]
)


def xlogy(input, other) -> Tensor:
    """``input * log(other)``, and 0 where input is 0 (unless other is nan)."""
    name = ("XlogyBackward1" if not isinstance(input, Tensor) else
            "XlogyBackward2" if not isinstance(other, Tensor) else None)
    return Xlogy.apply(*_binary("xlogy", input, other, floats=True), name)


def xlogy_(input: Tensor, other) -> Tensor:
    """In-place ``xlogy``."""
    require_float_target("xlogy_", input)
    name = "XlogyBackward2" if not isinstance(other, Tensor) else None
    return XlogyInplace.apply(input, _binary_("xlogy_", input, other), name)


# ---------------------------------------------------------------------------
# clamp, where, nan_to_num


class Clamp(Function):
    """clamp with number bounds (either may be None)."""

    _name = "ClampBackward1"
    _number_first = True  # (see forward)
    _fresh_grads = True  # (each gradient is a new array, kernel's or where's: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, lo, hi, node_name=None):
        if node_name is not None:
            ctx._name = node_name
        ctx._keep(x, lo, hi)
        if _number_bound(lo) and _number_bound(hi) and _native_act.supports(x):
            return _native_act.clamp(x, lo, hi)   # (one pass, on the threads)
        xp = xp_of(x)
        # NOTE: on a tie NumPy's maximum and minimum give their second operand.  Number
        # bounds go first, so an element equal to one keeps its own sign of zero, as in
        # PyTorch; tensor bounds go second, giving the bound's zero as PyTorch's vectorized
        # loop does (its scalar loop gives the element's).  A NaN on either side gives NaN.
        first, out = ctx._number_first, x
        if lo is not None:
            out = xp.maximum(lo, out) if first else xp.maximum(out, lo)
        if hi is not None:
            out = xp.minimum(hi, out) if first else xp.minimum(out, hi)
        return out.astype(x.dtype, copy=False)

    def _keep(self, x, lo, hi) -> None:
        """Save what backward needs: number bounds go on the node, not in saved tensors."""
        self.bounds = (lo, hi)
        self.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        if _native_act.first_order(grad, x):  # one pass on the arrays
            return _make(_native_act.clamp_backward(grad._data, x._data, lo, hi))
        # NOTE: the gradient passes where lo <= x <= hi, boundaries included (PyTorch's rule).
        if lo is None:
            inside = x <= hi
        elif hi is None:
            inside = x >= lo
        else:
            inside = (x >= lo) & (x <= hi)
        return grad.where(inside, 0.0)


def _number_bound(bound) -> bool:
    """Whether a clamp bound is absent or a number other than NaN (the kernel's case)."""
    return bound is None or (isinstance(bound, (int, float, np.number))
                             and not math.isnan(bound))


class ClampTensor(Clamp):
    """clamp with tensor bounds (either may be None): Clamp's forward, gradients for the
    bounds too."""

    _name = "ClampBackward0"
    _number_first = False

    def _keep(self, x, lo, hi) -> None:
        self.save_for_backward(x, lo, hi)

    @staticmethod
    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        gx = glo = ghi = None
        if lo is None:
            gx, ghi = grad.where(x <= hi, 0.0), grad.where(x > hi, 0.0)
        elif hi is None:
            gx, glo = grad.where(x >= lo, 0.0), grad.where(x < lo, 0.0)
        else:
            # With lo > hi the result is hi everywhere, as clamp = min(max(x, lo), hi).
            gx = grad.where((x >= lo) & (x <= hi), 0.0)
            glo = grad.where((x < lo) & (lo < hi), 0.0)
            ghi = grad.where((x > hi) | (hi < lo), 0.0)
        return gx, glo, ghi


ClampInplace = inplace_form(Clamp)
ClampTensorInplace = inplace_form(ClampTensor)


def _clamp_operands(op: str, input: Tensor, min, max, inplace: bool):  # noqa: A002
    if isinstance(input, Tensor) and input.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    _no_complex_bounds(op, input, min, max)
    if min is None and max is None:
        raise RuntimeError(f"torch.{op.rstrip('_')}: At least one of 'min' or 'max' must not "
                           "be None")
    for bound in (min, max):
        if not (bound is None or isinstance(bound, Tensor) or is_scalar(bound)):
            raise TypeError(f"{op}(): min and max must be Tensors or numbers, "
                            f"got {type(bound).__name__}")
    if inplace:
        lo = None if min is None else inplace_operand(op, input, min)
        hi = None if max is None else inplace_operand(op, input, max)
        check_inplace_shape(input, lo, hi)
        x = input
    else:
        check_broadcast(input, min, max)
        rt = result_type(input, min, max)
        x, lo, hi = (cast(v, rt, like=input) for v in (input, min, max))
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        # mixed number/tensor bounds: make both tensors
        lo = lo if lo is None or isinstance(lo, Tensor) else to_tensor(lo, x).to(x.dtype)
        hi = hi if hi is None or isinstance(hi, Tensor) else to_tensor(hi, x).to(x.dtype)
        return x, lo, hi, True
    return x, lo, hi, False


def _no_complex_bounds(op: str, input, *bounds) -> None:
    """PyTorch's errors for a complex bound of a real tensor (which has no order): for
    clamp and clip, a Python complex number does not convert to a float tensor's type,
    and makes an integer tensor's result complex (clamp_min and clamp_max say the latter
    for both); a complex tensor bound has no maximum."""
    for bound in bounds:
        if isinstance(bound, complex):
            if (op.rstrip("_") == "clamp" and isinstance(input, Tensor)
                    and input.dtype.is_floating_point):
                raise RuntimeError("value cannot be converted to type double without overflow")
            raise NotImplementedError("clamp is not supported for complex types")
        if isinstance(bound, Tensor) and bound.dtype.is_complex:
            raise NotImplementedError(f'"maximum_cpu" not implemented for '
                                      f"'{cpp_name(bound.dtype)}'")


def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Limit each element to [min, max]; either bound may be None, a number or a tensor."""
    x, lo, hi, tensors = _clamp_operands("clamp", input, min, max, False)
    return (ClampTensor if tensors else Clamp).apply(x, lo, hi)


def clamp_(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """In-place ``clamp``."""
    x, lo, hi, tensors = _clamp_operands("clamp_", input, min, max, True)
    return (ClampTensorInplace if tensors else ClampInplace).apply(x, lo, hi)


clip, clip_ = clamp, clamp_


def _one_sided(kind: str, bound):
    return f"Clamp{kind}Backward{1 if isinstance(bound, Tensor) else 0}"


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    """``clamp(input, min=min)``."""
    x, lo, hi, tensors = _clamp_operands("clamp_min", input, min, None, False)
    return (ClampTensor if tensors else Clamp).apply(x, lo, hi, node_name=_one_sided("Min", lo))


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)``."""
    x, lo, hi, tensors = _clamp_operands("clamp_max", input, None, max, False)
    return (ClampTensor if tensors else Clamp).apply(x, lo, hi, node_name=_one_sided("Max", hi))


def clamp_min_(input: Tensor, min) -> Tensor:  # noqa: A002
    """In-place ``clamp_min``."""
    x, lo, hi, tensors = _clamp_operands("clamp_min_", input, min, None, True)
    cls = ClampTensorInplace if tensors else ClampInplace
    return cls.apply(x, lo, hi, node_name=_one_sided("Min", lo))


def clamp_max_(input: Tensor, max) -> Tensor:  # noqa: A002
    """In-place ``clamp_max``."""
    x, lo, hi, tensors = _clamp_operands("clamp_max_", input, None, max, True)
    cls = ClampTensorInplace if tensors else ClampInplace
    return cls.apply(x, lo, hi, node_name=_one_sided("Max", hi))


class Where(Function):
    @staticmethod
    def forward(ctx, condition, x, y, np_dtype):
        ctx.save_for_backward(condition)
        out = _native_select.where_of(_xp(condition, x, y))(condition, x, y)
        return out if out.dtype == np_dtype else out.astype(np_dtype)

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        gx = grad.where(condition, 0.0) if ctx._edges[1][0] is not None else None
        gy = grad.where(~condition, 0.0) if ctx._edges[2][0] is not None else None
        return None, gx, gy


def where(condition: Tensor, input=None, other=None):
    """Elementwise ``input if condition else other`` (either may be a number).

    With only `condition`, the indices of its nonzero elements, one tensor per dimension.
    """
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not "
                        f"{type(condition).__name__}")
    if input is None and other is None:
        xp = xp_of(condition._data)
        return tuple(_make(i.astype(np.int64)) for i in xp.nonzero(condition._data))
    if condition.dtype is dtypes.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated "
                      "and will be removed in a future version. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        condition = condition.to(dtypes.bool)
    elif condition.dtype is not dtypes.bool:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype.name.capitalize()}")
    for v in (input, other):
        if not (isinstance(v, Tensor) or is_scalar(v)):
            raise TypeError(f"where(): expected a Tensor or a number, got {type(v).__name__}")
    check_same_device("where", condition, input, other)
    check_broadcast(condition, input, other)
    rt = result_type(input, other)
    return Where.apply(condition, cast(input, rt, like=condition), cast(other, rt, like=condition),
                       rt.np_dtype)


class NanToNum(Function):
    @staticmethod
    def forward(ctx, x, nan=0.0, posinf=None, neginf=None):
        if x.dtype.kind not in "fc" and x.dtype.name != "bfloat16":
            return x.copy()
        ctx.save_for_backward(x)
        return xp_of(x).nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.where(x.isfinite(), 0.0)


NanToNumInplace = inplace_form(NanToNum)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """Replace nan, +inf and -inf (by default with 0 and the dtype's largest/lowest value)."""
    return NanToNum.apply(input, nan, posinf, neginf)


def nan_to_num_(input: Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> Tensor:
    """In-place ``nan_to_num``."""
    return NanToNumInplace.apply(input, nan, posinf, neginf)


def tensor_where(input: Tensor, condition: Tensor, other) -> Tensor:
    """The ``Tensor.where`` method: ``where(condition, input, other)``."""
    return where(condition, input, other)
