"""Losses computed element by element and reduced, each as one node: the elementwise
loss and its reduction in a single `Function`, as PyTorch records ``MseLossBackward0``,
``SmoothL1LossBackward0``, ``HuberLossBackward0``, ``BinaryCrossEntropyBackward0`` and
``BinaryCrossEntropyWithLogitsBackward0`` (a printed loss shows
``grad_fn=<MseLossBackward0>``, not the ``MeanBackward0`` of a composition of ops).

Each node's forward computes the loss on the arrays and reduces it ('none', 'mean' or
'sum', `reduced`); its backward is written with ember ops, so gradients of every order
follow.  For the regression losses it is ``slope(input - target) * grad`` for the input
and its negative for the target; inputs of different shapes broadcast, and the engine
sums each gradient back to its input's shape.  Class weights (binary cross entropy's
``weight``, ``pos_weight``) are keyword parameters, not inputs of the graph: PyTorch
gives them no gradient either.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from .._core.function import Function
from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Tensor, _make
from . import _native_pointwise_loss as _native_loss
from ._native_select import where_of
from ._util import xp_of
from .activation import _softplus_array, logsigmoid
from .elementwise_special import sigmoid, where

__all__ = ["MseLoss", "SmoothL1Loss", "HuberLoss", "BinaryCrossEntropy",
           "BinaryCrossEntropyWithLogits"]


def reduced(ctx, xp, loss, reduction: str, total: float):
    """`loss` per element, or its sum, or its sum over `total` ('mean'; over a total of 0:
    nan, quietly, as in PyTorch); keeps on `ctx` the factor of each element's gradient
    (None for 'none', inf for a mean over nothing)."""
    ctx.factor = gradient_factor(reduction, total)
    if ctx.factor is None:
        return loss
    # (a nonzero total has no division warnings to silence: errstate costs ~1 us)
    quiet = np.errstate(invalid="ignore", divide="ignore") if total == 0 else \
        contextlib.nullcontext()
    with quiet:
        return xp.asarray(loss.sum() / (total if reduction == "mean" else 1.0))


def gradient_factor(reduction: str, total: float) -> float | None:
    """What each element's gradient is scaled by under `reduction` of `total` elements
    (or summed weights): None for 'none', 1 for 'sum', 1 / total for 'mean' (inf over
    nothing)."""
    if reduction == "none":
        return None
    return 1.0 if reduction == "sum" else math.inf if total == 0 else 1.0 / total


def per_element(ctx, grad: Tensor) -> Tensor:
    """The gradient reaching each element of a loss that `reduced` reduced."""
    return grad if ctx.factor is None or ctx.factor == 1.0 else grad * ctx.factor


class PointwiseLoss(Function):
    """Base of the losses below: `elementwise` gives the loss of each element from the
    arrays ``d = input - target``; `slope` its derivative in d, as ember ops on the
    tensor d.  Keyword parameters (beta, delta) reach both."""

    @staticmethod
    def forward(ctx, x, t, *, reduction: str, **params):
        cls = type(ctx)
        ctx.save_for_backward(x, t)
        ctx.params = params
        loss = cls.elementwise(xp_of(x), x - t, **params)
        return reduced(ctx, xp_of(x), loss, reduction, loss.size)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        g = type(ctx).scaled_slope(x - t, per_element(ctx, grad), **ctx.params)
        need_x, need_t = ctx.needs_input_grad
        return (g if need_x else None), (-g if need_t else None)

    @staticmethod
    def elementwise(xp, d, **params):
        raise NotImplementedError

    @staticmethod
    def slope(d, **params):
        raise NotImplementedError

    @classmethod
    def scaled_slope(cls, d, grad, **params):
        """``slope(d) * grad``, grad reaching each element (0-d for a reduced loss)."""
        return cls.slope(d, **params) * grad


class KernelReducedLoss(PointwiseLoss):
    """A `PointwiseLoss` whose reduced forward, on NumPy float arrays of one shape and
    dtype, is one kernel pass for the summed loss (`kernel_sum`), and whose first-order
    backward one for the slope times ``grad / n`` (`kernel_slope`;
    ops/_native_pointwise_loss.py).  Other cases take `PointwiseLoss`'s NumPy path."""

    _fresh_grads = True  # (g and -g, new arrays on either path: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, t, *, reduction: str, **params):
        if reduction == "none" or not _native_loss.takes(x, t):
            return PointwiseLoss.forward(ctx, x, t, reduction=reduction, **params)
        ctx.save_for_backward(x, t)
        ctx.params = params
        ctx.factor = gradient_factor(reduction, x.size)
        return np.asarray(type(ctx).kernel_sum(x, t, **params) * ctx.factor, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        if (not STATE.enabled and PROCESS.observer is None and ctx.factor is not None
                and _native_loss.takes(x._data, t._data) and type(grad._data) is np.ndarray):
            g = _make(type(ctx).kernel_slope(x._data, t._data, grad._data * ctx.factor,
                                             **ctx.params))
            need_x, need_t = ctx.needs_input_grad
            return (g if need_x else None), (-g if need_t else None)
        return PointwiseLoss.backward(ctx, grad)

    @staticmethod
    def kernel_sum(x, t, **params) -> float:
        raise NotImplementedError

    @staticmethod
    def kernel_slope(x, t, factor, **params):
        raise NotImplementedError


class MseLoss(KernelReducedLoss):
    """``d ** 2``."""

    _name = "MseLossBackward0"

    @staticmethod
    def kernel_sum(x, t):
        return _native_loss.squared_distance_sum(x, t)

    @staticmethod
    def kernel_slope(x, t, factor):
        # the NumPy path's d * (grad * factor * 2), in one pass
        return _native_loss.scaled_difference(x, t, factor * 2)

    @staticmethod
    def elementwise(xp, d):
        return d * d

    @staticmethod
    def slope(d):
        return d * 2

    @classmethod
    def scaled_slope(cls, d, grad):
        return d * (grad * 2)  # (the factor on the small gradient: one pass over d)


class _HuberKernels(KernelReducedLoss):
    """Huber and smooth L1 share their kernels (`_native_loss.huber_sum` and
    `huber_slope`, told `_kind`); the loss' one keyword parameter is their edge."""

    _kind = ""

    @classmethod
    def kernel_sum(cls, x, t, **edge):
        (value,) = edge.values()
        return _native_loss.huber_sum(x, t, cls._kind, value)

    @classmethod
    def kernel_slope(cls, x, t, factor, **edge):
        (value,) = edge.values()
        return _native_loss.huber_slope(x, t, cls._kind, value, factor)


class SmoothL1Loss(_HuberKernels):
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (beta > 0)."""

    _name = "SmoothL1LossBackward0"
    _kind = "smooth_l1"

    @staticmethod
    def elementwise(xp, d, beta):
        a = xp.abs(d)
        return where_of(xp)(a < beta, (0.5 / beta) * d * d, a - 0.5 * beta).astype(
            d.dtype, copy=False)

    @staticmethod
    def slope(d, beta):
        return where(d.abs() >= beta, d.sign(), d / beta)  # (NaN: d / beta, NaN)


class HuberLoss(_HuberKernels):
    """``0.5 d^2`` where ``|d| < delta``, else ``delta * (|d| - delta / 2)`` (delta > 0)."""

    _name = "HuberLossBackward0"
    _kind = "huber"

    @staticmethod
    def elementwise(xp, d, delta):
        a = xp.abs(d)
        return where_of(xp)(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta)).astype(
            d.dtype, copy=False)

    @staticmethod
    def slope(d, delta):
        return where(d.abs() >= delta, d.sign() * delta, d)  # (NaN: d, NaN)


def _weighted_reduced(ctx, xp, loss, weight, reduction: str):
    """A binary cross entropy's elementwise `loss`, times its class `weight` (an array or
    None), reduced (`reduced`); keeps the element count on `ctx` for backward."""
    if weight is not None:
        loss = loss * weight
    return reduced(ctx, xp, loss, reduction, loss.size)


def _weighted_inputs(ctx, grad: Tensor) -> tuple:
    """(input, target, the gradient reaching each element times its class weight) for a
    binary cross entropy's backward."""
    x, t = ctx.saved_tensors
    grad = per_element(ctx, grad)
    if ctx.weight is not None:
        grad = grad * _make(ctx.weight)
    return x, t, grad


class BinaryCrossEntropy(Function):
    """``-w (t log x + (1 - t) log(1 - x))`` with each log clamped at -100, reduced; `weight`
    (an array broadcasting to x, or None) scales each element."""

    _name = "BinaryCrossEntropyBackward0"

    @staticmethod
    def forward(ctx, x, t, *, weight, reduction: str):
        xp = xp_of(x)
        ctx.save_for_backward(x, t)
        ctx.weight = weight
        with np.errstate(divide="ignore"):
            log_x = xp.maximum(xp.log(x), -100)
            log_1mx = xp.maximum(xp.log(1 - x), -100)
        loss = (-(t * log_x + (1 - t) * log_1mx)).astype(x.dtype, copy=False)
        return _weighted_reduced(ctx, xp, loss, weight, reduction)

    @staticmethod
    def backward(ctx, grad):
        x, t, grad = _weighted_inputs(ctx, grad)
        gx = gt = None
        if ctx.needs_input_grad[0]:
            # NOTE: PyTorch's denominator floor: the gradient stays finite at x = 0 or 1.
            gx = grad * (x - t) / ((1 - x) * x).clamp_min(1e-12)
        if ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore"):
                gt = grad * ((1 - x).log().clamp_min(-100) - x.log().clamp_min(-100))
        return gx, gt


class BinaryCrossEntropyWithLogits(Function):
    """``w ((1 - t) x - (1 + (p - 1) t) log sigmoid(x))``, the binary cross entropy of
    ``sigmoid(x)`` without overflow, reduced; `weight` and `pos_weight` (p, broadcast along
    the last dim: one per class) are arrays or None."""

    _name = "BinaryCrossEntropyWithLogitsBackward0"

    @staticmethod
    def forward(ctx, x, t, *, weight, pos_weight, reduction: str):
        xp = xp_of(x)
        ctx.save_for_backward(x, t)
        ctx.weight, ctx.pos_weight = weight, pos_weight
        # log sigmoid(x) = -softplus(-x) (see activation.LogSigmoid)
        log_sig = (0 - _softplus_array(xp, -x)).astype(x.dtype, copy=False)
        if pos_weight is None:
            loss = (1 - t) * x - log_sig
        else:
            loss = (1 - t) * x - (1 + (pos_weight - 1) * t) * log_sig
        return _weighted_reduced(ctx, xp, loss.astype(x.dtype, copy=False), weight, reduction)

    @staticmethod
    def backward(ctx, grad):
        x, t, grad = _weighted_inputs(ctx, grad)
        p = None if ctx.pos_weight is None else _make(ctx.pos_weight)
        gx = gt = None
        if ctx.needs_input_grad[0]:
            # d/dx: sigmoid(x) - t, or (1 - t) - (1 + (p - 1) t) (1 - sigmoid(x))
            s = sigmoid(x)
            gx = (s - t if p is None else (1 - t) - (1 + (p - 1) * t) * (1 - s)) * grad
        if ctx.needs_input_grad[1]:
            # d/dt: -x, or -x - (p - 1) log sigmoid(x)
            gt = (-x if p is None else -x - (p - 1) * logsigmoid(x)) * grad
        return gx, gt
