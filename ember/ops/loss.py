"""Losses, part 1: regression (l1, smooth_l1, huber), classification (cross_entropy, nll,
binary cross entropy with and without logits, kl_div) and likelihood losses (poisson_nll,
gaussian_nll).  Margin losses, triplet losses and CTC are in ``loss_margin.py``.

Every loss takes ``reduction`` ('none', 'mean' or 'sum'; the legacy ``size_average`` /
``reduce`` pair is mapped onto it with PyTorch's warning).  Cross entropy with class
indices is one fused `Function` (log-softmax and the pick of the target class), whose
backward is ``softmax - target distribution``: stable for any logits.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np

from .._core.function import Function, _new_object, record_node
from .._core.grad_mode import PROCESS, STATE, is_grad_enabled
from .._core.tensor import Tensor, _make, size_str
from . import _kernels
from . import _native_rows
from ._autocast import float32_inputs
from ._util import check_same_device, xp_of
from .activation import Softmax, log_softmax
from .arithmetic import check_broadcast, unsupported
from .elementwise_special import where, xlogy
from .loss_pointwise import (BinaryCrossEntropy, BinaryCrossEntropyWithLogits, HuberLoss,
                             SmoothL1Loss, reduced)

REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average, reduce, emit_warning: bool = True) -> str:
    """The ``reduction`` string meant by the deprecated ``size_average``/``reduce`` pair."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if emit_warning:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=4)
    return reduction


def resolve_reduction(size_average, reduce, reduction: str) -> str:
    """`reduction`, or the legacy pair when given; ValueError for an unknown string."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """The mean or the sum of `loss`, or `loss` itself for 'none'."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss




def check_tensor(op: str, name: str, value) -> None:
    """TypeError naming the op and the argument unless `value` is a Tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


def constant_arg(op: str, name: str, value) -> None:
    """PyTorch's error for a weight argument that requires grad (these losses have no
    gradient for their class weights)."""
    if isinstance(value, Tensor) and value.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{op}' is not differentiable with respect to argument "
                           f"'{name}'. This input cannot have requires_grad True.")


def warn_size(input: Tensor, target: Tensor) -> None:
    """PyTorch's warning for targets that broadcast against the input (RuntimeError when they
    cannot broadcast)."""
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({size_str(target.shape)}) that is different to the "
                      f"input size ({size_str(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=3)
        check_broadcast(input, target)


def same_float_dtype(input, target) -> bool:
    """Whether `input` and `target` are tensors of one floating dtype: a regression loss
    then runs as one node (ops/loss_pointwise.py); other pairs take the composition of
    ops, which promotes their dtypes."""
    return (isinstance(input, Tensor) and isinstance(target, Tensor)
            and input.dtype is target.dtype and input.dtype.is_floating_point)


def _weighted(loss: Tensor, weight, reduction: str, input: Tensor) -> Tensor:
    """Apply an elementwise `weight`; its 'mean' divides by the sum of the weights."""
    if weight is None:
        return reduce_loss(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction)


# ---------------------------------------------------------------------------
# regression


@float32_inputs  # (autocast: losses run in float32)
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|input - target|`` (with an optional elementwise `weight`)."""
    check_tensor("l1_loss", "input", input)
    check_tensor("l1_loss", "target", target)
    reduction = resolve_reduction(size_average, reduce, reduction)
    warn_size(input, target)
    return _weighted((input - target).abs(), weight, reduction, input)


@float32_inputs  # (autocast: losses run in float32)
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (d = input - target)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    warn_size(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return reduce_loss((input - target).abs(), reduction)
    if same_float_dtype(input, target):
        return SmoothL1Loss.apply(input, target, reduction=reduction, beta=beta)
    diff = input - target
    absd = diff.abs()
    loss = where(absd < beta, 0.5 * diff * diff / beta, absd - 0.5 * beta)
    return reduce_loss(loss, reduction)


@float32_inputs  # (autocast: losses run in float32)
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta * (|d| - delta / 2)``."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    warn_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is None and same_float_dtype(input, target):
        return HuberLoss.apply(input, target, reduction=reduction, delta=delta)
    diff = input - target
    absd = diff.abs()
    loss = where(absd < delta, 0.5 * diff * diff, delta * (absd - 0.5 * delta))
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return reduce_loss(loss, reduction)


# ---------------------------------------------------------------------------
# cross entropy and negative log likelihood with class indices


class _ClassIndexLoss(Function):
    """Base of CrossEntropy and NllLoss, ops of (x, weight, target): their reduced forms
    share `_reduced` and `_per_sample`; `backward` runs the subclass's `_backward` (x's
    gradient) without NumPy's warnings for a mean over zero total weight (see
    `_quiet_nan`).

    The target goes in as an argument and its values are read in `forward`
    (`_target_arrays`), not before the call: ``ember.compile`` then replays the op on
    each call's target, where arrays computed from it outside the op would be frozen
    into the graph."""

    _name = "NllLossBackward0"

    @classmethod
    def backward(cls, ctx, grad):
        with _quiet_nan(ctx):
            return cls._backward(ctx, grad), None, None


class CrossEntropy(_ClassIndexLoss):
    """Per-sample ``-(1-s) w[t] logp[t] - (s/C) sum_c w_c logp_c`` over class dim 1
    (0 where the target is ignored), where ``logp = log_softmax(x, 1)`` and s is the label
    smoothing.  Backward: ``grad * (a * softmax(x) - q)`` with q the weighted target
    distribution and a its total.

    With `reduction` 'sum' or 'mean' the loss is reduced here (one node instead of three;
    'mean' divides by `total`, the summed weight of the non-ignored targets)."""

    @staticmethod
    def forward(ctx, x, weight, target, *, ignore_index, smoothing, reduction="none"):
        xp = xp_of(x)
        c = x.shape[1]
        target, picked_weight, valid = _target_arrays(target, weight, c, ignore_index,
                                                      x.dtype)
        total = float(picked_weight.sum()) if reduction == "mean" else 1.0
        ctx.native = None
        if _native_rows.supports(x) and (weight is None or weight.dtype == x.dtype):
            loss = _native_cross_entropy(ctx, x, weight, target, picked_weight, valid,
                                         smoothing)
            ctx.save_for_backward(x, weight)
            return reduced(ctx, xp, loss, reduction, total).astype(x.dtype, copy=False)
        if _kernels.rowwise_fast(x):
            logp = _kernels.log_softmax_rows(x)
        else:
            shifted = x - x.max(axis=1, keepdims=True)
            logp = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
        picked = xp.take_along_axis(logp, target[:, None], axis=1)[:, 0]
        loss = -(1 - smoothing) * picked_weight * picked
        bshape = (1, c) + (1,) * (x.ndim - 2)
        if smoothing > 0:
            wc = 1.0 if weight is None else weight.reshape(bshape)
            smooth = -(logp * wc).sum(axis=1) * valid
            loss = loss + (smoothing / c) * smooth
        ctx.target, ctx.picked_weight, ctx.valid = target, picked_weight, valid
        ctx.smoothing, ctx.bshape = smoothing, bshape
        ctx.logp = logp  # for the first-order backward (it saves recomputing the softmax)
        ctx.save_for_backward(x, weight)
        return reduced(ctx, xp, loss, reduction, total).astype(x.dtype, copy=False)

    @staticmethod
    def _backward(ctx, grad):
        x, weight = ctx.saved_tensors
        xp = xp_of(x._data)
        c = x.shape[1]
        s = ctx.smoothing
        dtype = x._data.dtype
        if not is_grad_enabled() and ctx.native is not None:  # first order, fused kernel
            if ctx.factor == math.inf:
                g = _per_sample(ctx, grad, x.dim())._data
            else:  # (each sample's gradient scaled on the arrays, not by tensor ops)
                g = grad._data if ctx.factor is None else grad._data * ctx.factor
            # (a writable copy: a read-only view of g would give the kernel a second build)
            g = np.array(np.broadcast_to(g, x.shape[:1]), dtype)
            return _make(_native_rows.cross_entropy_backward(g, x._data, *ctx.native))
        grad = _per_sample(ctx, grad, x.dim())
        if not is_grad_enabled() and s == 0:
            return _cross_entropy_grad(ctx, grad._data, dtype)
        onehot = (xp.arange(c).reshape(ctx.bshape) == ctx.target[:, None]).astype(dtype)
        q = onehot * ((1 - s) * ctx.picked_weight[:, None]).astype(dtype)
        a = (1 - s) * ctx.picked_weight
        if s > 0:
            valid = ctx.valid[:, None].astype(dtype)
            w = xp.ones(ctx.bshape, dtype) if weight is None else weight._data.reshape(ctx.bshape)
            q = q + (s / c) * w * valid
            a = a + (s / c) * w.sum() * ctx.valid
        p = Softmax.apply(x, 1)
        g = grad.unsqueeze(1)
        return g * (p * _make(a[:, None].astype(dtype)) - _make(q.astype(dtype)))


class UsualCrossEntropy(CrossEntropy):
    """CrossEntropy of the usual batch as `_usual_cross_entropy` records it: its
    first-order backward scales the gradient its forward kernel computed; a recorded
    backward (``create_graph``) gets what CrossEntropy's formulas read filled in first."""

    @staticmethod
    def _backward(ctx, grad):
        # (read first: it raises on a second backward through a freed graph, and where
        # the logits were written in place since, as CrossEntropy's does)
        x, _ = ctx.saved_tensors
        if is_grad_enabled():
            c = x.shape[1]
            ctx.target, ctx.picked_weight, ctx.valid = _target_arrays(
                ctx.target, None, c, -100, x._data.dtype)   # (no index ignored)
            ctx.smoothing, ctx.bshape, ctx.logp, ctx.native = 0.0, (1, c), None, None
            return CrossEntropy._backward(ctx, grad)
        gradient = ctx.gradient
        # (each sample's factor rounded as CrossEntropy's)
        return _make(gradient * gradient.dtype.type(grad._data * ctx.factor))


# A batch of up to this many logits may take `_usual_cross_entropy` (larger ones take
# CrossEntropy's kernels, cut over the threads).
USUAL_MAX = 1 << 16


def _usual_cross_entropy(input: Tensor, target: Tensor, ignore_index: int,
                         reduction: str) -> Tensor | None:
    """The usual small batch's cross-entropy, 'mean' or 'sum', in one kernel call on the
    calling thread, recorded without `Function.apply`'s general steps: (N, C) logits of a
    NumPy float array, N int64 class indices all in range, none ignored, no class weights
    or smoothing (the caller checks those two), nothing observing the ops.  None for
    anything else, which the general path takes (and for a target out of range, which
    it reports).

    NOTE: the MLP benchmark's 128 x 10 loss took ~105 us of its training step through the
    general path (22 us alone: 94 Python calls, four reductions, checks of the targets,
    per-sample weights), the interpreter's data being out of the core's caches after the
    step's products."""
    x, t = input._data, target._data
    if (type(x) is not np.ndarray or type(t) is not np.ndarray or x.ndim != 2 or t.ndim != 1
            or t.dtype != np.int64 or t.shape[0] != x.shape[0] or x.size > USUAL_MAX
            or reduction == "none" or 0 <= ignore_index < x.shape[1]
            or PROCESS.observer is not None or not _native_rows.supports(x)):
        return None
    total, gradient, bad = _native_rows.class_loss_sum(x, t)
    if bad >= 0:
        return None
    result = _make(np.asarray(total / x.shape[0] if reduction == "mean" else total, x.dtype))
    if input._requires_grad and STATE.enabled:
        ctx = _new_object(UsualCrossEntropy)
        ctx._to_save = (x, None)  # (as CrossEntropy saves: x and the weight)
        # (the targets copied: later in-place writes to them do not reach a recorded
        # backward)
        ctx.factor = 1.0 / x.shape[0] if reduction == "mean" else 1.0
        ctx.gradient, ctx.target = gradient, t.copy()
        record_node(ctx, (input, None, target), (x, None, t), (result,))
    return result


def _native_cross_entropy(ctx, x, weight, target, picked_weight, valid, smoothing):
    """CrossEntropy's per-sample loss by the fused numba kernel (log-softmax and the pick
    of the target in one pass over each row); keeps on `ctx` what its backward needs:
    each row's max and log-normalizer instead of the log-probabilities."""
    dtype, c = x.dtype, x.shape[1]
    if smoothing == 0 and picked_weight.dtype == dtype:  # (the usual loss: no array math)
        coef_t, coef_u = picked_weight, np.zeros(picked_weight.shape, dtype)
    else:
        coef_t = ((1 - smoothing) * picked_weight).astype(dtype)
        coef_u = ((smoothing / c) * valid).astype(dtype)
    w = np.ones(c, dtype) if weight is None else np.ascontiguousarray(weight.reshape(-1))
    loss, norm = _native_rows.cross_entropy(x, target, coef_t, coef_u, w)
    ctx.target, ctx.picked_weight, ctx.valid = target, picked_weight, valid
    ctx.smoothing, ctx.bshape, ctx.logp = smoothing, (1, c), None
    ctx.native = (norm, target, coef_t, coef_u, w)
    return loss


def _cross_entropy_grad(ctx, g, dtype):
    """CrossEntropy's gradient without label smoothing, for first-order backward:
    ``g * (w_t * softmax(x) - w_t * onehot(t))`` on arrays, in place, from the saved
    log-probabilities (one exp instead of a softmax, no dense one-hot)."""
    xp = xp_of(g)
    scale = (ctx.picked_weight * g).astype(dtype, copy=False)[:, None]  # w_t * g per sample
    if _kernels.rowwise_fast(ctx.logp) and ctx.logp.dtype == dtype:
        out = _kernels.exp_scaled_rows(ctx.logp, scale)
    else:
        out = xp.exp(ctx.logp)
        out *= scale
    index = ctx.target[:, None]
    picked = xp.take_along_axis(out, index, axis=1)
    xp.put_along_axis(out, index, picked - scale, axis=1)
    return _make(out.astype(dtype, copy=False))


class NllLoss(_ClassIndexLoss):
    """Per-sample ``-w[t] x[t]`` over class dim 1 (0 where the target is ignored), reduced
    here for 'sum' and 'mean' (divided by `total`, the summed weight of the targets).
    Its gradient ``-w[t] grad`` at the target class, 0 elsewhere, is linear in grad."""

    @staticmethod
    def forward(ctx, x, weight, target, *, ignore_index, reduction):
        xp = xp_of(x)
        target, picked_weight, valid = _target_arrays(target, weight, x.shape[1],
                                                      ignore_index, x.dtype)
        total = float(picked_weight.sum()) if reduction == "mean" else 1.0
        picked = xp.take_along_axis(x, target[:, None], axis=1)[:, 0]
        loss = -(picked_weight * picked)
        ctx.target, ctx.picked_weight, ctx.valid = target, picked_weight, valid
        ctx.shape = x.shape
        return reduced(ctx, xp, loss, reduction, total).astype(x.dtype, copy=False)

    @staticmethod
    def _backward(ctx, grad):
        grad = _per_sample(ctx, grad, len(ctx.shape))
        dtype = grad._data.dtype
        xp = xp_of(grad._data)
        if not is_grad_enabled():  # first order: one scatter on arrays
            out = xp.zeros(ctx.shape, dtype)
            scale = -(ctx.picked_weight * grad._data).astype(dtype, copy=False)
            scale = xp.broadcast_to(scale, ctx.target.shape)
            xp.put_along_axis(out, ctx.target[:, None], scale[:, None], axis=1)
            return _make(out)
        bshape = (1, ctx.shape[1]) + (1,) * (len(ctx.shape) - 2)
        onehot = xp.arange(ctx.shape[1]).reshape(bshape) == ctx.target[:, None]
        picked = grad.unsqueeze(1) * _make(-ctx.picked_weight[:, None].astype(dtype))
        return where(_make(onehot), picked, _make(xp.zeros((), dtype)))  # (nan stays put)


def _quiet_nan(ctx):
    """No NumPy warnings for the inf * 0 of a mean over zero total weight (PyTorch gives
    its nan quietly); a no-op context otherwise."""
    return np.errstate(invalid="ignore") if ctx.factor == math.inf else contextlib.nullcontext()


def _per_sample(ctx, grad: Tensor, ndim: int) -> Tensor:
    """The gradient of each sample's loss from a reduced loss's `grad` (broadcastable).

    NOTE: a mean whose targets weigh 0 in all (nan loss) divides by 0 as PyTorch does:
    the targets' gradients are nan, while ignored targets, which PyTorch skips, get 0
    (so a batch with every target ignored has a zero gradient)."""
    if ctx.factor is None:
        return grad
    if ctx.factor == math.inf:
        xp = xp_of(grad._data)
        factor = xp.where(ctx.valid, xp.inf, 0.0).astype(grad._data.dtype)
        return grad.reshape((1,) * (ndim - 1)) * _make(factor)
    grad = grad * ctx.factor if ctx.factor != 1.0 else grad
    return grad.reshape((1,) * (ndim - 1))


def _class_target(op: str, input: Tensor, target: Tensor, weight) -> tuple:
    """Checks of class-index targets that read no values (dtype, shapes, device, the
    weight's size); returns (x as (N, C, ...), the target as (N, ...), the shape of the
    unreduced loss).  The values are checked by the op (`_target_arrays`)."""
    if _usual_shapes(input, target, weight):
        return input, target, tuple(target.shape)
    if target.dtype.name not in ("int64", "uint8"):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_dtype_word(target)}")
    nd = input.dim()
    if nd == 0:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if nd == 1:
        if target.dim() != 0:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        x, t = input.unsqueeze(0), target.reshape(1)
    else:
        if target.dim() == 0 or target.shape[0] != input.shape[0]:
            got = target.shape[0] if target.dim() else 1
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                             f"batch_size ({got}).")
        if nd == 2 and target.dim() != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        expected = (input.shape[0],) + tuple(input.shape[2:])
        if tuple(target.shape) != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got "
                               f"{list(target.shape)}")
        x, t = input, target
    c = x.shape[1]
    check_same_device(op, input, target, weight)
    if weight is not None and weight.numel() != c:
        if nd <= 2:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or "
                               f"no classes but got weight tensor of shape: {list(weight.shape)}")
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    return x, t, tuple(target.shape)


def _usual_shapes(input: Tensor, target: Tensor, weight) -> bool:
    """Whether `_class_target`'s checks pass at a glance: (N, C) logits of a NumPy float
    array, N int64 targets, no weight.  (A 128x10 batch: ~7 us of checks otherwise,
    three times that inside a training step.)"""
    x, t = input._data, target._data
    return (weight is None and type(x) is np.ndarray and type(t) is np.ndarray
            and x.ndim == 2 and t.ndim == 1 and t.dtype == np.int64 and x.dtype.kind == "f"
            and t.shape[0] == x.shape[0])


def _target_arrays(target, weight, classes: int, ignore_index: int, dtype) -> tuple:
    """(the targets as int64 indices, 0 where ignored; each sample's weight, 0 where
    ignored; the mask of samples not ignored) from the target array, in the op's
    forward; an IndexError names a target that is no class index.  (A copy of the
    targets: later in-place writes to the target do not reach the backward.)"""
    xp = xp_of(target)
    tgt = target.astype(np.int64)
    if weight is None and _all_classes(tgt, classes, ignore_index):
        # the usual batch: every target a class, none ignored (2 passes instead of 8)
        return tgt, xp.ones(tgt.shape, dtype), xp.ones(tgt.shape, bool)
    valid = tgt != ignore_index
    bad = valid & ((tgt < 0) | (tgt >= classes))
    if bad.any():
        raise IndexError(f"Target {int(tgt[bad].reshape(-1)[0])} is out of bounds.")
    safe = xp.where(valid, tgt, 0)
    if weight is None:
        picked = valid.astype(dtype)
    else:
        picked = (weight.reshape(-1)[safe] * valid).astype(dtype)
    return safe, picked, valid


def _all_classes(targets, classes: int, ignore_index: int) -> bool:
    """Whether every one of the (non-empty) `targets` is a class index, none ignored."""
    return (targets.size > 0 and not 0 <= ignore_index < classes
            and 0 <= int(targets.min()) and int(targets.max()) < classes)


def _dtype_word(t: Tensor) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "float32": "Float", "float64": "Double", "float16": "Half"}.get(
        t.dtype.name, t.dtype.name)


@float32_inputs  # (autocast: losses run in float32)
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between the softmax of `input` logits (class dim 1) and `target`.

    `target` holds class indices (shape of input without dim 1; entries equal to
    `ignore_index` are skipped) or, with input's shape and a float dtype, class
    probabilities.  `weight` (C,) weighs the classes; `label_smoothing` s mixes the target
    with the uniform distribution: ``(1 - s) * target + s / C``.  'mean' divides by the
    total weight of the non-ignored targets (index targets).
    """
    check_tensor("cross_entropy", "input", input)
    check_tensor("cross_entropy", "target", target)
    reduction = resolve_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")
    if weight is None and label_smoothing == 0.0:
        usual = _usual_cross_entropy(input, target, ignore_index, reduction)
        if usual is not None:
            return usual
    if target.dtype.is_floating_point and tuple(target.shape) == tuple(input.shape):
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction,
                                    label_smoothing)
    if not input.dtype.is_floating_point:
        raise unsupported("log_softmax_lastdim_kernel_impl", input.dtype)
    constant_arg("nll_loss_forward", "weight", weight)
    x, t, shape = _class_target("cross_entropy", input, target, weight)
    loss = CrossEntropy.apply(x, weight, t, ignore_index=ignore_index,
                              smoothing=label_smoothing, reduction=reduction)
    if reduction == "none" and tuple(loss.shape) != shape:
        return loss.reshape(shape)
    return loss


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, smoothing):
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    nd = input.dim()
    c = input.shape[1] if nd > 1 else input.shape[0]
    cdim = 1 if nd > 1 else 0
    logp = log_softmax(input, cdim)
    if smoothing > 0:
        target = target * (1 - smoothing) + smoothing / c
    terms = logp * target
    if weight is not None:
        if weight.numel() != c:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or "
                               f"no classes but got weight tensor of shape: {list(weight.shape)}")
        terms = terms * weight.reshape((c,) + (1,) * (nd - cdim - 1))
    loss = -terms.sum(cdim)
    return reduce_loss(loss, reduction)


@float32_inputs  # (autocast: losses run in float32)
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood: ``-weight[t] * input[n, t]`` for log-probabilities `input`
    (N, C, ...) and class indices `target` (N, ...); 'mean' divides by the total weight."""
    check_tensor("nll_loss", "input", input)
    check_tensor("nll_loss", "target", target)
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t, shape = _class_target("nll_loss", input, target, weight)
    constant_arg("nll_loss_forward", "weight", weight)
    loss = NllLoss.apply(x, weight, t, ignore_index=ignore_index, reduction=reduction)
    if reduction == "none" and tuple(loss.shape) != shape:
        return loss.reshape(shape)
    return loss


# ---------------------------------------------------------------------------
# binary cross entropy


@float32_inputs  # (autocast: losses run in float32)
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Binary cross entropy between probabilities `input` and `target` (same shape); the
    logs are clamped at -100, so probabilities of exactly 0 or 1 give finite losses."""
    check_tensor("binary_cross_entropy", "input", input)
    check_tensor("binary_cross_entropy", "target", target)
    reduction = resolve_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({size_str(target.shape)}) that is different to "
                         f"the input size ({size_str(input.shape)}) is deprecated. Please "
                         "ensure they have the same size.")
    constant_arg("binary_cross_entropy", "weight", weight)
    data = input._data
    if data.size and bool(((data < 0) | (data > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    return BinaryCrossEntropy.apply(input, target, weight=_array_of(weight, input),
                                    reduction=reduction)


@float32_inputs  # (autocast: losses run in float32)
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy on ``sigmoid(input)``, computed from the logits without overflow.

    `pos_weight` weighs the positive term (broadcast along the last dim: one per class).
    """
    check_tensor("binary_cross_entropy_with_logits", "input", input)
    check_tensor("binary_cross_entropy_with_logits", "target", target)
    reduction = resolve_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({size_str(target.shape)}) must be the same as input "
                         f"size ({size_str(input.shape)})")
    constant_arg("binary_cross_entropy_with_logits", "weight", weight)
    constant_arg("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    if target.dtype != input.dtype:
        target = target.to(input.dtype)
    return BinaryCrossEntropyWithLogits.apply(
        input, target, weight=_array_of(weight, input), pos_weight=_array_of(pos_weight, input),
        reduction=reduction)


def _array_of(weight, input: Tensor):
    """A class weight's array in the input's dtype (None stays None): binary cross
    entropy's nodes take weights as parameters, not inputs of the graph."""
    if weight is None:
        return None
    check_same_device("binary_cross_entropy", input, weight)
    return weight.detach().to(input.dtype)._data


# ---------------------------------------------------------------------------
# kl divergence, poisson and gaussian negative log likelihood


@float32_inputs  # (autocast: losses run in float32)
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target * (log target - input)`` for log-probabilities
    `input` (`target` in log space too with ``log_target=True``).

    ``reduction='batchmean'`` divides the sum by the batch size (the mathematical KL
    divergence); 'mean' divides by the number of elements (with a warning).
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.", UserWarning, stacklevel=2)
    if reduction not in REDUCTIONS + ("batchmean",):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() else total
    return reduce_loss(loss, reduction)


@float32_inputs  # (autocast: losses run in float32)
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Negative log likelihood of `target` under Poisson(rate): ``exp(input) - target *
    input`` when `input` is the log-rate (`log_input`), else ``input - target * log(input +
    eps)``.  `full` adds the Stirling term of ``log(target!)`` (for target > 1)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        safe = where(big, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(big, stirling, 0.0)
    return reduce_loss(loss, reduction)


@float32_inputs  # (autocast: losses run in float32)
def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of `target` under Normal(input, var):
    ``0.5 * (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` with `full`).

    `var` has input's shape, or one dim fewer / one broadcast dim (the same variance for
    a whole vector).  It is clamped at `eps` for stability; the clamp does not stop its
    gradient, as in PyTorch.
    """
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(tuple(input.shape), float(var))
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    # clamp the value only: the gradient passes straight through, as in PyTorch
    var = var + (var.detach().clamp_min(eps) - var.detach())
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction)
