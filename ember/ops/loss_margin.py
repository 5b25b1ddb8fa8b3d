"""Losses, part 2: margin losses (margin_ranking, hinge_embedding, cosine_embedding,
multi_margin, multilabel_margin, soft margins), triplet losses and CTC.

All are compositions of ember ops, so their gradients (and second gradients) come from
the ops they are built of.  CTC runs the forward (alpha) recursion in log space, one
vectorized step over the batch per time step; its gradient is autograd's backward
through that recursion.
"""

from __future__ import annotations

import numpy as np

from .._core.tensor import Tensor, _make, size_str
from ._autocast import float32_inputs
from ._util import xp_of
from .activation import LogSigmoid
from .creation import arange
from .elementwise_special import where
from .joining import cat, stack
from .loss import REDUCTIONS, check_tensor, constant_arg, reduce_loss, resolve_reduction
from .reduction_stats import logsumexp


@float32_inputs  # (autocast: losses run in float32)
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: target 1 asks input1 to rank higher."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {size_str(input1.shape)}, "
                           f"input2: {size_str(input2.shape)}, target: {size_str(target.shape)} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return reduce_loss(loss, reduction)




@float32_inputs  # (autocast: losses run in float32)
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where target is -1."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    margin_term = where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_term = where(target != -1, input, 0.0)
    return reduce_loss(margin_term + self_term, reduction)


@float32_inputs  # (autocast: losses run in float32)
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))`` (targets are 1 or -1)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    return reduce_loss(-LogSigmoid.apply(target * input), reduction)


@float32_inputs  # (autocast: losses run in float32)
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where -1."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dim() == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if target.dim() == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    dim = input1.dim() - 1
    eps = 1e-12
    dot = (input1 * input2).sum(dim)
    sq1 = (input1 * input1).sum(dim) + eps
    sq2 = (input2 * input2).sum(dim) + eps
    cos = dot / (sq1 * sq2).sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0),
                                                    0.0)
    return reduce_loss(loss, reduction)


@float32_inputs  # (autocast: losses run in float32)
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{j != y} max(0, margin - x[y] + x[j])^p / C`` per sample
    (`weight` (C,) scales the terms of each target class)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input.unsqueeze(0) if input.dim() <= 1 else input
    if x.dim() != 2:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    n, c = x.shape
    t = target.reshape(-1)
    if t.numel() != n:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to "
                           "the number of input samples (batch size). Expected target size "
                           f"[{n}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    constant_arg("multi_margin_loss", "weight", weight)
    tgt = t._data
    if bool(((tgt < 0) | (tgt >= c)).any()):
        raise RuntimeError("target out of range")
    # (what the targets select, as ops on the target tensor: ember.compile replays them on
    # each call's targets, where arrays computed from them here would be frozen)
    idx = t.long().unsqueeze(1)
    picked = x.gather(1, idx)
    # (relu, not clamp_min: no gradient where a term is exactly 0, as PyTorch's kernel)
    terms = (margin - picked + x).relu()
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.reshape(-1)[idx[:, 0]].unsqueeze(1)
    classes = arange(c, device=x.device).unsqueeze(0)
    not_target = (classes != idx).to(x.dtype)
    loss = (terms * not_target).sum(1) / c
    if input.dim() <= 1:
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)


@float32_inputs  # (autocast: losses run in float32)
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: for each target class j (listed in `target`, ended by -1) and
    each non-target class k, ``max(0, 1 - (x[j] - x[k]))``; summed and divided by C."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x = input.unsqueeze(0) if input.dim() <= 1 else input
    tg = target.unsqueeze(0) if target.dim() <= 1 else target
    if tuple(tg.shape) != tuple(x.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    n, c = x.shape
    tgt = tg._data
    xp = xp_of(tgt)
    if bool(((xp.cumsum(tgt < 0, axis=1) == 0) & (tgt >= c)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    # (as ops on the target tensor, as in multi_margin_loss)
    # a target list ends at its first -1; each listed class counts once per listing
    tl = tg.long()
    listed = (tl < 0).long().cumsum(1) == 0
    classes = arange(c, device=x.device).reshape(1, 1, c)
    hits = (tl.unsqueeze(2) == classes) & listed.unsqueeze(2)
    counts = hits.sum(1).to(x.dtype)
    is_target = counts > 0
    # hinge[n, j, k] = max(0, 1 - x[n, j] + x[n, k])
    hinge = (1 - x.unsqueeze(2) + x.unsqueeze(1)).relu()   # (as multi_margin_loss)
    pair = counts.unsqueeze(2) * (~is_target).unsqueeze(1).to(x.dtype)
    loss = (hinge * pair).sum((1, 2)) / c
    if input.dim() <= 1:
        loss = loss.reshape(())
    return reduce_loss(loss, reduction)


@float32_inputs  # (autocast: losses run in float32)
def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """Multi-label one-versus-all logistic loss, averaged over the classes (last dim)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    loss = -(target * LogSigmoid.apply(input) + (1 - target) * LogSigmoid.apply(-input))
    if weight is not None:
        loss = loss * weight
    c = input.shape[-1] if input.dim() else 1
    loss = loss.sum(input.dim() - 1) / c if input.dim() else loss
    return reduce_loss(loss, reduction)


# ---------------------------------------------------------------------------
# triplet losses


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """p-norm of ``x1 - x2 + eps`` over the last dim (eps keeps the gradient finite at 0)."""
    diff = x1 - x2 + eps
    dim = max(diff.dim() - 1, 0)
    return diff.norm(p, dim, keepdim=keepdim)


def _check_triplet_dims(anchor, positive, negative) -> None:
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {p}D, "
                           f"and negative {n}D inputs")


@float32_inputs  # (autocast: losses run in float32)
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with the p-norm
    distance; `swap` uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    _check_triplet_dims(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return reduce_loss((margin + d_pos - d_neg).clamp_min(0), reduction)


@float32_inputs  # (autocast: losses run in float32)
def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """Triplet loss with any `distance_function(x, y)` (default: ``pairwise_distance``)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    return reduce_loss((margin + d_pos - d_neg).clamp_min(0), reduction)


# ---------------------------------------------------------------------------
# CTC

# NOTE: log(0) is stood in for by a large finite negative number: logsumexp over
# entries that are all -inf would give nan gradients.  Paths that stay at this value are
# impossible alignments (infinite loss).
_LOG_ZERO = -1e30


def _lengths(value, name: str, n: int):
    if isinstance(value, Tensor):
        arr = np.asarray(value.cpu()._data)
    else:
        arr = np.asarray(value)
    arr = arr.astype(np.int64).reshape(-1)
    if arr.size != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return arr


@float32_inputs  # (autocast: losses run in float32)
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss.

    `log_probs` (T, N, C) (or (T, C)) are log-probabilities over C classes including
    `blank`; `targets` are (N, S) padded or the concatenated 1-D label sequences, with
    lengths `target_lengths`; `input_lengths` are the valid time steps per sample.  The
    loss is ``-log`` of the total probability of all alignments.  'mean' divides each loss
    by its target length, then averages over the batch.  Impossible alignments give inf
    (0 with `zero_infinity`, and no gradient).
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    check_tensor("ctc_loss", "log_probs", log_probs)
    check_tensor("ctc_loss", "targets", targets)
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    tg = targets.unsqueeze(0) if unbatched and targets.dim() == 1 else targets
    t_max, n, c = lp.shape
    if blank < 0 or blank >= c:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths(input_lengths, "input_lengths", n)
    tg_len = _lengths(target_lengths, "target_lengths", n)
    if in_len.size and in_len.max() > t_max:
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value "
                           f"{int(in_len.max())} (while checking arguments for ctc_loss)")
    labels = _label_rows(tg, tg_len, n)
    s_ext = 2 * labels.shape[1] + 1
    xp = xp_of(lp._data)
    ext = np.full((n, s_ext), blank, dtype=np.int64)
    ext[:, 1::2] = labels
    # a label can be reached from two steps back unless it is blank or repeats that label
    skip = np.zeros((n, s_ext), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    work = lp if lp.dtype.name in ("float32", "float64") else lp.float()
    index = _make(xp.asarray(np.broadcast_to(ext[None], (t_max, n, s_ext)).copy()))
    emit = work.gather(2, index).clamp_min(_LOG_ZERO)  # (T, N, S')
    dtype = work._data.dtype
    first = np.full((n, s_ext), _LOG_ZERO, dtype=dtype)
    first[:, :2] = 0
    alpha = emit[0] + _make(xp.asarray(first))
    neg = _make(xp.full((n, 1), _LOG_ZERO, dtype=dtype))
    neg2 = _make(xp.full((n, 2), _LOG_ZERO, dtype=dtype))
    skip_t = _make(xp.asarray(skip))
    for t in range(1, t_max):
        prev1 = cat([neg, alpha], 1)[:, :s_ext]
        prev2 = where(skip_t, cat([neg2, alpha], 1)[:, :s_ext], _LOG_ZERO)
        step = logsumexp(stack([alpha, prev1, prev2]), 0) + emit[t]
        active = _make(xp.asarray((t < in_len)[:, None]))
        alpha = where(active, step, alpha)
    last = 2 * tg_len  # index of the final blank; the final label sits just before it
    ends = np.stack([last, np.maximum(last - 1, 0)], 1)
    final = alpha.gather(1, _make(xp.asarray(ends)))
    final = where(_make(xp.asarray(np.stack([np.ones(n, bool), tg_len > 0], 1))), final,
                  _LOG_ZERO)
    loss = -logsumexp(final, 1)
    impossible = _make((loss._data > -_LOG_ZERO / 2) | xp.asarray((in_len == 0) & (tg_len > 0)))
    loss = where(impossible, 0.0 if zero_infinity else float("inf"), loss)
    # no frames and no labels: the empty alignment, with probability 1
    loss = where(_make(xp.asarray((in_len == 0) & (tg_len == 0))), 0.0, loss)
    if work is not lp:
        loss = loss.to(lp.dtype)
    if reduction == "mean":
        div = _make(xp.asarray(np.maximum(tg_len, 1).astype(loss._data.dtype)))
        return (loss / div).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.reshape(()) if unbatched else loss


def _label_rows(tg: Tensor, tg_len, n: int) -> np.ndarray:
    """The targets as an (N, max length) array of labels (padding: 0)."""
    data = np.asarray(tg.cpu()._data).astype(np.int64)
    width = int(tg_len.max()) if tg_len.size else 0
    rows = np.zeros((n, width), dtype=np.int64)
    if data.ndim == 1:
        if data.size != int(tg_len.sum()):
            raise RuntimeError(f"Expected tensor to have size {int(tg_len.sum())} at dimension 0, "
                               f"but got size {data.size} for argument #2 'targets' (while "
                               "checking arguments for ctc_loss)")
        offsets = np.concatenate([[0], np.cumsum(tg_len)])
        for i in range(n):
            rows[i, :tg_len[i]] = data[offsets[i]:offsets[i + 1]]
        return rows
    if width > data.shape[1]:
        raise RuntimeError(f"Expected tensor to have size at least {width} at dimension 1, but "
                           f"got size {data.shape[1]} for argument #2 'targets' (while checking "
                           "arguments for ctc_loss)")
    rows[:, :width] = data[:, :width]
    return rows
