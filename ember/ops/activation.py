"""Activation functions: softmax and log_softmax, the smooth activations (gelu, silu, mish,
softplus, logsigmoid, elu/selu/celu) and the piecewise linear ones (leaky_relu, hardtanh,
threshold, hardsigmoid, hardswish, softshrink, hardshrink), plus the compositions (glu,
prelu, rrelu, softsign, tanhshrink, softmin).

Each op that needs a stable or fused kernel is a `Function`: the forward computes on
arrays, the backward is written with ember ops, so it can be differentiated again.  The
public functions have the signatures of ``torch.nn.functional`` (``inplace=`` where
PyTorch has it); the ``*_`` forms write into their input.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor, _make
from . import _kernels
from . import _native_activation as _native_act
from . import _native_glu
from . import _native_smooth
from . import _native_rows
from . import _native_select
from ._direct import direct_unary
from ._inplace import named
from ._util import wrap_dim, xp_of
from .arithmetic import inplace_form, unsupported
from .elementwise import relu as _relu
from .elementwise import relu_ as _relu_
from .elementwise import tanh as _tanh
from .elementwise_special import _erf64, sigmoid
from .elementwise_special import _sigmoid as _sigmoid_new  # (a new array)
from .joining import cat as _cat
from .elementwise_special import where as _where
from ..random import _generator_for

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_C = 0.044715


def _require_float(kernel: str, input: Tensor) -> None:
    """PyTorch's error for an integer tensor given to a float-only activation."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{kernel}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise unsupported(kernel, input.dtype)


# ---------------------------------------------------------------------------
# softmax and log_softmax


def _as_2d(x):
    """0-dim arrays are treated as one-element vectors by the softmax kernels."""
    return x.reshape(1) if x.ndim == 0 else x


def _last_dim_rows(z, dim):
    """`z` as a 2-D array of rows when (log-)softmax runs over its last, contiguous dim and
    the row kernels of _kernels.py take it; else None."""
    if dim not in (-1, z.ndim - 1) or type(z) is not np.ndarray or not z.flags.c_contiguous:
        return None
    rows = z.reshape(-1, z.shape[-1]) if z.size else z
    return rows if _kernels.rowwise_fast(rows) else None


def _softmax_forward(ctx, x, dim, log: bool):
    """softmax (or log-softmax) of `x` over `dim`, saved for backward."""
    ctx.dim = dim
    y = _softmax_arrays(x, dim, log)
    ctx.save_for_backward(y)
    return y


def _softmax_arrays(x, dim, log: bool):
    """softmax (or log-softmax) of the array `x` over `dim`: the numba row kernels, the
    NumPy row kernels, or the formula, whichever takes the array."""
    xp = xp_of(x)
    z = _as_2d(x)
    rows = _last_dim_rows(z, dim)
    if z.size == 0:
        y = z.copy()
    elif rows is not None and _native_rows.supports(rows):
        y = _native_rows.softmax(rows, log=log)
    elif rows is not None:
        y = _kernels.log_softmax_rows(rows) if log else _kernels.softmax_rows(rows)
    elif _inner_view(z, dim) is not None:
        y = _native_rows.softmax_inner(_inner_view(z, dim), log=log)
    else:
        # NOTE: shifting by the max keeps exp() from overflowing (inputs of 1e4 are fine).
        y = z - z.max(axis=dim, keepdims=True)
        if log:
            y -= xp.log(_kernels.sum_last(xp.exp(y), dim))  # in place
        else:
            xp.exp(y, out=y)  # in place: one result array in all
            y /= _kernels.sum_last(y, dim)
    return y.reshape(x.shape)


def _softmax_backward(ctx, grad, log: bool):
    """The gradient of (log-)softmax: on arrays for first order (numba kernels or NumPy,
    in place), with differentiable tensor formulas under create_graph."""
    (y,) = ctx.saved_tensors
    if y.dim() == 0:
        return grad * 0.0
    if is_grad_enabled():
        if log:
            return grad - y.exp() * grad.sum(ctx.dim, keepdim=True)
        return y * (grad - (grad * y).sum(ctx.dim, keepdim=True))
    g, yd = grad._data, y._data
    native = _native_backward(g, yd, ctx.dim, log=log)
    if native is not None:
        return native
    xp = xp_of(g)
    if log:
        out = xp.exp(yd)
        out *= _kernels.sum_last(g, ctx.dim)
        xp.subtract(g, out, out=out)
    else:
        out = g * yd
        xp.subtract(g, _kernels.sum_last(out, ctx.dim), out=out)
        out *= yd
    return _make(out)


class Softmax(Function):
    """softmax over `dim`; with ``_log`` (LogSoftmax) its logarithm."""

    _log = False
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, dim):
        return _softmax_forward(ctx, x, dim, log=ctx._log)

    @staticmethod
    def backward(ctx, grad):
        return _softmax_backward(ctx, grad, log=ctx._log)


class LogSoftmax(Softmax):
    _log = True


def _inner_view(z, dim):
    """`z` viewed as (outer, C, inner) for a (log-)softmax over its dim `dim` (not the
    last), when the numba kernels take it (C-contiguous float32/float64, large); else
    None."""
    if (type(z) is not np.ndarray or z.size < _native_rows.MIN_SIZE
            or not z.flags.c_contiguous or dim in (-1, z.ndim - 1)):
        return None
    view = z.reshape(math.prod(z.shape[:dim]), z.shape[dim], -1)
    return view if _native_rows.supports(view, ndim=3) else None


def _native_backward(g, y, dim, log: bool):
    """The first-order (log-)softmax gradient by the numba kernels, when they take the
    arrays (C-contiguous, one dtype, large); else None."""
    if type(g) is not np.ndarray or g.shape != y.shape or y.ndim == 0:
        return None
    if dim in (-1, y.ndim - 1):
        rows, grows = y.reshape(-1, y.shape[-1]), g.reshape(-1, y.shape[-1])
        if not _native_rows.supports(rows, grows):
            return None
        return _make(_native_rows.softmax_backward(grows, rows, log).reshape(y.shape))
    inner, ginner = _inner_view(y, dim), _inner_view(g, dim)
    if inner is None or ginner is None or inner.dtype != ginner.dtype:
        return None
    return _make(_native_rows.softmax_inner_backward(ginner, inner, log).reshape(y.shape))


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(name: str, kernel: str, input: Tensor, dim, stacklevel: int, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if dim is None:
        dim = _softmax_dim(name, input.dim(), stacklevel + 1)
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    _require_float(kernel, input)
    return input, wrap_dim(dim, input.dim(), name)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """``exp(x) / exp(x).sum(dim)``: the entries along `dim` become positive and sum to 1.

    `dtype` casts the input first (e.g. to float64 for accuracy).  Computed with the max
    subtracted, so large inputs do not overflow.

    >>> softmax(ember.tensor([1., 2., 3.]), dim=0)
    tensor([0.0900, 0.2447, 0.6652])
    """
    input, dim = _softmax_input("softmax", "softmax_lastdim_kernel_impl", input, dim,
                                _stacklevel, dtype)
    out = direct_unary(lambda xp, x: _softmax_arrays(x, dim, False), input)
    return Softmax.apply(input, dim) if out is None else out


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    """``log(softmax(x, dim))``, computed directly (stable for large and small inputs)."""
    input, dim = _softmax_input("log_softmax", "log_softmax_lastdim_kernel_impl", input, dim,
                                _stacklevel, dtype)
    out = direct_unary(lambda xp, x: _softmax_arrays(x, dim, True), input)
    return LogSoftmax.apply(input, dim) if out is None else out


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype=None) -> Tensor:
    """``softmax(-x, dim)``: the smallest entries get the largest weights."""
    input, dim = _softmax_input("softmin", "softmax_lastdim_kernel_impl", input, dim,
                                _stacklevel, dtype)
    return Softmax.apply(-input, dim)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A differentiable sample of a categorical distribution: ``softmax((logits + g) / tau)``
    with Gumbel(0, 1) noise g.  With `hard`, the one-hot of the largest entry, whose
    gradient is the soft sample's (the straight-through estimator).  (`eps` is unused, as
    in PyTorch.)"""
    gumbels = -logits.new_empty(tuple(logits.shape)).exponential_().log()
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = logits.new_zeros(tuple(logits.shape)).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft


def softmax_fn(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``torch.softmax(input, dim, dtype=None)`` and ``Tensor.softmax``."""
    return softmax(input, dim, dtype=dtype)


def log_softmax_fn(input: Tensor, dim: int, dtype=None) -> Tensor:
    """``torch.log_softmax(input, dim, dtype=None)`` and ``Tensor.log_softmax``."""
    return log_softmax(input, dim, dtype=dtype)


# ---------------------------------------------------------------------------
# smooth activations


def _erf(xp, x):
    out = _erf64(xp, x.astype(np.float64))
    return out if x.dtype == np.float64 else out.astype(x.dtype)


class Gelu(Function):
    """Exact or tanh-approximated GELU.  When its gradient will be needed (`keep_cdf`),
    the float32 kernel keeps ``2 Phi(x)`` for the backward, which then computes only the
    density (GELU's backward costs half as much; the array goes with the graph)."""

    _reuses_grad = True  # (see Node._reuses_grad)

    @staticmethod
    def forward(ctx, x, approximate="none", keep_cdf=False):
        ctx.approximate = approximate
        ctx.cdf2 = None
        ctx.save_for_backward(x)
        xp = xp_of(x)
        if _native_act.supports(x):  # one fused pass; its backward recomputes the CDF
            return _native_act.forward("gelu_tanh" if approximate == "tanh" else "gelu", x)
        if approximate == "tanh":
            inner = _SQRT_2_OVER_PI * (x + _GELU_C * x * x * x)
            return (0.5 * x * (1 + xp.tanh(inner))).astype(x.dtype, copy=False)
        if _fast_f32(x):
            out = _kernels.gelu_f32(x.astype(np.float32, copy=False), keep_cdf)
            if keep_cdf:
                out, ctx.cdf2 = out
            return out.astype(x.dtype, copy=False)
        return (0.5 * x * (1 + _erf(xp, x * (1 / math.sqrt(2.0))))).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            if not is_grad_enabled() and _native_act.supports(grad._data, x._data):
                return _make(_native_act.backward("gelu_tanh", grad._data, x._data,
                                                  overwrite=ctx._owns_grad))
            t = (_SQRT_2_OVER_PI * (x + _GELU_C * x * x * x)).tanh()
            dinner = _SQRT_2_OVER_PI * (1 + 3 * _GELU_C * x * x)
            return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner)
        if ctx._owns_grad and _native_act.supports(grad._data, x._data):
            return _make(_native_act.backward("gelu", grad._data, x._data, overwrite=True))
        return GeluBackward.apply(grad, x, cdf2=ctx.cdf2)

    def _release(self) -> None:
        super()._release()
        self.cdf2 = None


def _fast_f32(x) -> bool:
    """float32 (and 16-bit floats, computed in float32) NumPy arrays take the fused kernels
    of _kernels.py; float64 keeps the float64-accurate erf."""
    return type(x) is np.ndarray and x.dtype.itemsize <= 4 and x.dtype.kind != "c"


class GeluBackward(Function):
    """``grad * (Phi(x) + x phi(x))``, exact GELU's gradient, as one op: one fused pass
    over float32 data instead of ~10 tensor ops; its own backward serves double backward."""

    _name = "GeluBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, x, cdf2=None):
        ctx.save_for_backward(grad, x)
        if _native_act.supports(grad, x):
            return _native_act.backward("gelu", grad, x)
        if _fast_f32(x):
            f32 = np.float32
            g, x32 = grad.astype(f32, copy=False), x.astype(f32, copy=False)
            out = _kernels.gelu_backward_f32(g, x32, cdf2)
            return out.astype(x.dtype, copy=False)
        xp = xp_of(x)
        cdf = 0.5 * (1 + _erf(xp, x * (1 / math.sqrt(2.0))))
        pdf = _INV_SQRT_2PI * xp.exp(-0.5 * x * x)
        return (grad * (cdf + x * pdf)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, gg):
        grad, x = ctx.saved_tensors
        g_grad = GeluBackward.apply(gg, x) if ctx._edges[0][0] is not None else None
        g_x = None
        if ctx._edges[1][0] is not None:  # d/dx (Phi + x phi) = phi (2 - x^2)
            g_x = gg * grad * (_INV_SQRT_2PI * (-0.5 * x * x).exp()) * (2 - x * x)
        return g_grad, g_x


def _softplus_array(xp, z):
    """``log(1 + exp(z))`` of an array, as ``max(z, 0) + log1p(exp(-|z|))``, which never
    overflows: for large float32 NumPy arrays in one kernel pass (_native_smooth)."""
    if z.dtype == np.float32 and _native_act.supports(z):
        return _native_smooth.softplus(z, 1.0, math.inf)
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


class Silu(Function):
    _reuses_grad = True  # (see Node._reuses_grad)

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if _native_act.supports(x):
            return _native_act.forward("silu", x)
        with np.errstate(all="ignore"):
            return x * _sigmoid_new(xp_of(x), x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if not is_grad_enabled() and _native_act.supports(grad._data, x._data):
            return _make(_native_act.backward("silu", grad._data, x._data,
                                              overwrite=ctx._owns_grad))
        s = sigmoid(x)
        return grad * (s * (1 + x * (1 - s)))


class Mish(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if _native_act.supports(x):
            return _native_smooth.mish(x)
        xp = xp_of(x)
        with np.errstate(all="ignore"):
            return (x * xp.tanh(_softplus_array(xp, x))).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if _native_act.first_order(grad, x):  # one pass on the arrays
            return _make(_native_smooth.mish_backward(grad._data, x._data))
        t = _tanh(Softplus.apply(x, 1.0, 20.0))
        return grad * (t + x * (1 - t * t) * sigmoid(x))


class Glu(Function):
    """``a * sigmoid(b)`` for the halves a, b of the input along `dim`.  Backward:
    ``cat(g * s, g * s * a * (1 - s))`` along `dim`, with s = sigmoid(b) computed again (as
    PyTorch's GluBackward0, it saves only the input)."""

    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, *, dim):
        ctx.dim = dim
        ctx.save_for_backward(x)
        if _native_glu.supports(x):
            return _native_glu.glu(x, dim)
        a, b = _halves(x, dim)
        out = _sigmoid_new(xp_of(x), b)
        out *= a
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dim = ctx.dim
        data, g = x._data, grad._data
        if not is_grad_enabled() and type(data) is type(g) is np.ndarray:
            # first order on the arrays, both halves written into one result
            if _native_glu.supports(data):
                return _make(_native_glu.glu_backward(g, data, dim))
            a, b = _halves(data, dim)
            s = _sigmoid_new(np, b)
            out = np.empty(data.shape, data.dtype)
            ga, gb = _halves(out, dim)
            np.multiply(g, s, out=ga)
            np.multiply(ga, a, out=gb)
            np.subtract(1, s, out=s)
            gb *= s
            return _make(out)
        a, b = x.split(x.shape[dim] // 2, dim)
        s = sigmoid(b)
        ga = grad * s
        return _cat([ga, ga * a * (1 - s)], dim)


def _halves(x, dim: int) -> tuple:
    """The two halves of array `x` along `dim` (views)."""
    half = x.shape[dim] // 2
    lead = (slice(None),) * dim
    return x[lead + (slice(0, half),)], x[lead + (slice(half, None),)]


class Softplus(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, beta, threshold):
        ctx.beta, ctx.threshold = beta, threshold
        ctx.save_for_backward(x)
        if _native_act.supports(x):
            return _native_smooth.softplus(x, beta, threshold)
        xp = xp_of(x)
        z = x * beta
        with np.errstate(all="ignore"):
            out = _native_select.where_of(xp)(z > threshold, x, _softplus_array(xp, z) / beta)
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if _native_act.first_order(grad, x):  # one pass on the arrays
            return _make(_native_smooth.softplus_backward(grad._data, x._data, ctx.beta,
                                                          ctx.threshold))
        z = x * ctx.beta
        return grad * sigmoid(z).masked_fill(z > ctx.threshold, 1.0)   # (nan: nan)


class LogSigmoid(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # log(sigmoid(x)) = -softplus(-x), in the form that never overflows.  NOTE: 0 - rather
        # than a plain minus, so that a large x gives +0.0 as in PyTorch, not -0.0.
        if x.dtype == np.float32 and _native_act.supports(x):   # (in one pass)
            return _native_smooth.logsigmoid32(x)
        return (0 - _softplus_array(xp_of(x), -x)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if _native_act.first_order(grad, x):  # sigmoid(-x) grad, one pass on the arrays
            return _make(_native_smooth.softplus_backward(grad._data, x._data, -1.0,
                                                          math.inf))
        return grad * sigmoid(-x)


class Elu(Function):
    """``scale * x`` for x > 0, ``scale * alpha * (exp(x * input_scale) - 1)`` otherwise."""

    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, alpha, scale, input_scale):
        ctx.params = (alpha, scale, input_scale)
        xp = xp_of(x)
        if _native_act.supports(x):
            y = _native_smooth.elu(x, alpha, scale, input_scale)
            ctx.save_for_backward(y if ctx._inplace else x)
            return y
        with np.errstate(all="ignore"):
            neg = (scale * alpha) * xp.expm1(xp.minimum(x, 0) * input_scale)
            y = _native_select.where_of(xp)(x > 0, x * scale, neg).astype(x.dtype, copy=False)
        # the in-place form saves its output (its input is overwritten), as PyTorch does
        ctx.save_for_backward(y if ctx._inplace else x)
        return y

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        alpha, scale, input_scale = ctx.params
        if ctx._inplace:
            if alpha < 0:
                raise RuntimeError(
                    "In-place elu backward calculation is triggered with a negative slope which "
                    "is not supported. This is caused by calling in-place forward function with "
                    "a negative slope, please call out-of-place version instead.")
            neg = input_scale * (s + scale * alpha)
            return grad * neg.where(s <= 0, scale)
        if _native_act.first_order(grad, s):  # one pass on the arrays
            return _make(_native_smooth.elu_backward(grad._data, s._data, alpha, scale,
                                                     input_scale))
        neg = (scale * alpha * input_scale) * (s * input_scale).exp()
        return grad * neg.where(~(s > 0), scale)   # (NaN: nan, as PyTorch's vectorized loop)


class Celu(Elu):
    pass


class LeakyRelu(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, negative_slope):
        ctx.slope = negative_slope
        if _native_act.supports(x):
            y = _native_act.leaky_relu(x, negative_slope, out=_native_act.inplace_out(ctx, x))
        else:
            y = xp_of(x).where(x > 0, x, x * negative_slope).astype(x.dtype, copy=False)
        ctx.save_for_backward(y if ctx._inplace else x)
        return y

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        if ctx._inplace and ctx.slope < 0:
            raise RuntimeError(
                "In-place leakyReLu backward calculation is triggered with a negative slope which "
                "is not supported. This is caused by calling in-place forward function with a "
                "negative slope, please call out-of-place version instead. File an issue at "
                "https://github.com/pytorch/pytorch if you do require supporting in-place "
                "leakRelu backward calculation with negative slope")
        if _native_act.first_order(grad, s):  # one pass on the arrays
            return _make(_native_act.leaky_relu_backward(grad._data, s._data, ctx.slope))
        return grad.where(s > 0, grad * ctx.slope)


class Hardtanh(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, min_val, max_val):
        ctx.bounds = (min_val, max_val)
        if _native_act.supports(x):
            y = _native_act.hardtanh(x, min_val, max_val, out=_native_act.inplace_out(ctx, x))
        else:
            y = xp_of(x).clip(x, min_val, max_val).astype(x.dtype, copy=False)
        # NOTE: min < y < max exactly where min < x < max, so the output serves both forms.
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        if _native_act.first_order(grad, y):  # one pass on the arrays
            return _make(_native_act.hardtanh_backward(grad._data, y._data, lo, hi))
        # NOTE: the gradient passes strictly inside the bounds; a NaN gets 0, as in
        # PyTorch's vectorized loop (its scalar loop, for a few trailing elements, passes it)
        return grad.where((y > lo) & (y < hi), 0.0)


class Threshold(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, threshold, value):
        ctx.threshold = threshold
        ctx.save_for_backward(x)
        # (PyTorch's test is ``x <= threshold``: a NaN is kept, and passes its gradient)
        out = _native_select.where_of(xp_of(x))(x <= threshold, value, x)
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.where(~(x <= ctx.threshold), 0.0)


class Hardsigmoid(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return xp_of(x).clip(x / 6 + 0.5, 0, 1).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (grad / 6).where((x > -3) & (x < 3), 0.0)


class Hardswish(Function):
    _reuses_grad = True  # (see Node._reuses_grad)

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if _native_act.supports(x):
            return _native_act.forward("hardswish", x)
        return (x * xp_of(x).clip(x + 3, 0, 6) / 6).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if _native_act.first_order(grad, x):  # one pass on the arrays
            return _make(_native_act.backward("hardswish", grad._data, x._data,
                                              overwrite=ctx._owns_grad))
        # PyTorch's rule: 0 up to -3, grad from 3 on, grad * (x / 3 + 1/2) in between
        # (NaN included)
        middle = grad * (x / 3 + 0.5)
        return grad.where(x >= 3, middle).where(~(x <= -3), 0.0)


class Softshrink(Function):
    _fresh_grads = True  # (each backward's gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, lambd):
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        xp = xp_of(x)
        # x - lambd above lambd, x + lambd below -lambd, 0 between; NaN stays NaN
        out = xp.where(xp.abs(x) <= lambd, 0, x - xp.sign(x) * lambd)
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad.where(x.abs() > ctx.lambd, 0.0)


class Hardshrink(Softshrink):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.save_for_backward(x)
        ctx.lambd = lambd
        xp = xp_of(x)
        return xp.where(xp.abs(x) <= lambd, 0, x).astype(x.dtype, copy=False)  # (NaN kept)


EluInplace = type("EluInplace", (Elu,), {"_inplace": True, "_name": "EluBackward1"})
CeluInplace = type("CeluInplace", (Elu,), {"_inplace": True, "_name": "CeluBackward1"})
LeakyReluInplace = type("LeakyReluInplace", (LeakyRelu,),
                        {"_inplace": True, "_name": "LeakyReluBackward1"})
HardtanhInplace = type("HardtanhInplace", (Hardtanh,),
                       {"_inplace": True, "_name": "HardtanhBackward1"})
ThresholdInplace = type("ThresholdInplace", (Threshold,),
                        {"_inplace": True, "_name": "ThresholdBackward1"})


# ---------------------------------------------------------------------------
# public functions


def _apply(cls, inplace_cls, inplace: bool, input: Tensor, *args):
    return (inplace_cls if inplace else cls).apply(input, *args)


def _float_activation(cls, name: str, kernel: str, doc: str):
    """The public ``name(input, inplace=False)`` of a float-only activation class without
    options; `kernel` names it in the error for integer input, as PyTorch does."""
    inplace_cls = inplace_form(cls)

    def activation(input: Tensor, inplace: bool = False) -> Tensor:
        _require_float(kernel, input)
        return _apply(cls, inplace_cls, inplace, input)

    return named(activation, name, doc, cls)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit ``x * Phi(x)`` (Phi: the standard normal CDF).

    ``approximate='tanh'`` uses ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.
    """
    _require_float("GeluKernelImpl", input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    keep_cdf = approximate == "none" and input._requires_grad and is_grad_enabled()
    return Gelu.apply(input, approximate, keep_cdf)


silu = _float_activation(Silu, "silu", "silu_cpu",
                        "Sigmoid linear unit (swish): ``x * sigmoid(x)``.")
mish = _float_activation(Mish, "mish", "mish_cpu", "``x * tanh(softplus(x))``.")


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``."""
    _require_float("softplus_cpu", input)
    return Softplus.apply(input, beta, threshold)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, computed without overflow or log(0) for large ``|x|``."""
    _require_float("log_sigmoid_cpu", input)
    return LogSigmoid.apply(input)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Exponential linear unit: ``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""
    _require_float("elu_cpu", input)
    return _apply(Elu, EluInplace, inplace, input, alpha, 1.0, 1.0)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``elu``."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled ELU with the constants of self-normalizing networks (alpha≈1.6733, scale≈1.0507)."""
    _require_float("elu_cpu", input)
    return _apply(Elu, EluInplace, inplace, input, SELU_ALPHA, SELU_SCALE, 1.0)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Continuously differentiable ELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _require_float("elu_cpu", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _apply(Celu, CeluInplace, inplace, input, alpha, 1.0, 1.0 / alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` (integer tensors stay integers)."""
    return _relu_(input) if inplace else _relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` for x > 0, ``negative_slope * x`` otherwise."""
    _require_float("leaky_relu_cpu", input)
    return _apply(LeakyRelu, LeakyReluInplace, inplace, input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``x`` clamped to [min_val, max_val] (gradient 0 outside the open interval)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if not isinstance(input, Tensor):
        raise TypeError(f"hardtanh(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype is dtypes.bool:
        raise unsupported("hardtanh", input.dtype)
    if not input.dtype.is_floating_point:
        min_val, max_val = int(min_val), int(max_val)
    return _apply(Hardtanh, HardtanhInplace, inplace, input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else `value`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"threshold(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return _apply(Threshold, ThresholdInplace, inplace, input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``."""
    return _apply(Threshold, ThresholdInplace, True, input, threshold, value)


hardsigmoid = _float_activation(Hardsigmoid, "hardsigmoid", "hardsigmoid_cpu",
                               "Piecewise linear sigmoid: ``clamp(x / 6 + 1/2, 0, 1)``.")
hardswish = _float_activation(Hardswish, "hardswish", "hardswish_cpu",
                             "``x * hardsigmoid(x)`` (MobileNetV3).")


def _check_lambd(op: str, input: Tensor, lambd: float) -> None:
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype "
                           f"{_dtype_word(input)}, but found {lambd:g}")


def _dtype_word(t: Tensor) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half",
            "bfloat16": "BFloat16"}.get(t.dtype.name, t.dtype.name)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above `lambd`, ``x + lambd`` below ``-lambd``, 0 in between."""
    _require_float("softshrink_cpu", input)
    _check_lambd("softshrink", input, lambd)
    return Softshrink.apply(input, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, 0 elsewhere."""
    _require_float("hardshrink_cpu", input)
    return Hardshrink.apply(input, lambd)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - _tanh(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: split `input` in halves ``a, b`` along `dim`; ``a * sigmoid(b)``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.dim(), "glu")
    size = input.shape[d]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    return Glu.apply(input, dim=d)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` for x > 0, ``weight * x`` otherwise.

    `weight` has one element, or one per channel (dim 1 of the input; inputs of fewer
    than 2 dims have a single channel).
    """
    channels = input.shape[1] if input.dim() >= 2 else 1
    n = weight.numel()
    if n != 1 and n != channels:
        raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {n} and channel size = {channels}.")
    if n == 1 or input.dim() < 2:
        slope = weight.reshape(())
    else:
        slope = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    return _where(input > 0, input, slope * input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training, each negative element gets a slope drawn uniformly
    from [lower, upper] (from ember's generator); in eval, the mean slope ``(lower+upper)/2``."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    _require_float("rrelu_with_noise", input)
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)

    noise = _rrelu_noise(input, lower, upper)
    if inplace:
        return input.mul_(noise)
    return input * noise


def _rrelu_noise(input: Tensor, lower: float, upper: float) -> Tensor:
    """rrelu's factors in training: 1 where `input` is non-negative, else a slope drawn
    from U(lower, upper).  Made from the input's values and the generator outside any op:
    ``ember.compile`` runs a call that reaches it eagerly (_compile/program.py)."""
    xp, src = _generator_for(input.device, None)._source()
    work = np.float64 if input.dtype is dtypes.float64 else np.float32
    u = src.uniform(tuple(input.shape), work)
    slopes = (lower + (upper - lower) * u).astype(input._data.dtype, copy=False)
    return _make(xp.where(input._data >= 0, 1, slopes).astype(input._data.dtype, copy=False))


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)
