"""Op table entries for ember/ops/loss.py and ember/ops/loss_margin.py.

Integer targets travel as nested lists (the generic tests turn only NumPy arrays into
tensors, in the dtype under test); each op wraps them into an int64 tensor.  Losses
without a NumPy reference here (ref=None) are compared with PyTorch in
tests/compat/test_nn_parity_activation_loss_norm.py.
"""

import numpy as np
import scipy.special

import ember
import ember.nn.functional as F
from tests.ops.opinfo import OpInfo, Sample


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _pair(shape=(3, 4), low=-2.0, high=2.0, low2=None, high2=None):
    low2 = low if low2 is None else low2
    high2 = high if high2 is None else high2

    def samples(rng):
        return [Sample((rng.uniform(low, high, shape), rng.uniform(low2, high2, shape)),
                       {"reduction": r}) for r in ("mean", "none", "sum")]
    return samples


def _l1_ref(x, y, reduction="mean"):
    return _reduce(np.abs(x - y), reduction)


def _mse_ref(x, y, reduction="mean"):
    return _reduce((x - y) ** 2, reduction)


def _smooth_l1_ref(x, y, reduction="mean", beta=1.0):
    d = np.abs(x - y)
    return _reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def _huber_ref(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return _reduce(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


# --- cross entropy / nll ---------------------------------------------------------------

def _log_softmax(x, axis=1):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def _nll_ref(logp, target, weight=None, ignore_index=-100, reduction="mean",
             smoothing=0.0):
    """NLL over dim 1 of (N, C, ...) with label smoothing mixed in as PyTorch defines it."""
    t = np.asarray(target)
    if logp.ndim == 1:
        logp, t = logp[None], t.reshape(1)
    c = logp.shape[1]
    w = np.ones(c) if weight is None else np.asarray(weight, dtype=np.float64)
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    picked = np.take_along_axis(logp, safe[:, None], axis=1)[:, 0]
    wt = w[safe] * valid
    wshape = (1, c) + (1,) * (logp.ndim - 2)
    smooth = -(logp * w.reshape(wshape)).sum(axis=1) * valid
    loss = (1 - smoothing) * (-wt * picked) + smoothing / c * smooth
    if reduction == "none":
        return loss.reshape(np.shape(target))
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


def _ce_ref(x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    return _nll_ref(_log_softmax(x, 1 if x.ndim > 1 else 0), target, weight, ignore_index,
                    reduction, label_smoothing)


def _ce_probs_ref(x, p, reduction="mean", label_smoothing=0.0):
    c = x.shape[1]
    p = p * (1 - label_smoothing) + label_smoothing / c
    return _reduce(-(_log_softmax(x) * p).sum(1), reduction)


def _ce(x, t, **kw):
    weight = kw.pop("weight", None)
    return F.cross_entropy(x, ember.tensor(t), None if weight is None else
                           ember.tensor(weight, dtype=x.dtype), **kw)


def _nll(x, t, **kw):
    weight = kw.pop("weight", None)
    return F.nll_loss(x, ember.tensor(t), None if weight is None else
                      ember.tensor(weight, dtype=x.dtype), **kw)


W4 = [0.5, 1.0, 2.0, 1.5]


def _ce_samples(rng):
    x = lambda *s: rng.uniform(-3, 3, s)  # noqa: E731
    return [
        Sample((x(3, 4), [0, 3, 1]), {"reduction": "mean"}),
        Sample((x(3, 4), [0, 3, 1]), {"reduction": "none", "weight": W4}),
        Sample((x(3, 4), [0, -100, 2]), {"reduction": "sum", "label_smoothing": 0.2}),
        Sample((x(3, 4), [0, 2, 2]), {"weight": W4, "ignore_index": 2,
                                      "label_smoothing": 0.3}),
        Sample((x(2, 4, 3), [[0, 1, 3], [2, 2, 0]]), {"reduction": "none",
                                                      "label_smoothing": 0.1}),
        Sample((x(4), 2), {}),
        Sample((x(2, 4, 3), [[0, 1, 3], [2, 2, 0]]), {"weight": W4}),
        Sample((x(3, 4), [1, 1, 0]), {"reduction": "sum"}),
    ]


def _ce_probs_samples(rng):
    def probs(*s):
        p = rng.uniform(0.1, 1.0, s)
        return p / p.sum(axis=1, keepdims=True)
    return [Sample((rng.uniform(-3, 3, (3, 4)), probs(3, 4)), {"reduction": r,
                                                              "label_smoothing": s})
            for r, s in (("mean", 0.0), ("none", 0.2), ("sum", 0.0))]


def _nll_samples(rng):
    x = lambda *s: rng.uniform(-3, 0, s)  # noqa: E731
    return [
        Sample((x(3, 4), [0, 3, 1]), {}),
        Sample((x(3, 4), [0, -100, 1]), {"reduction": "none", "weight": W4}),
        Sample((x(2, 4, 3), [[0, 1, 3], [2, 2, 0]]), {"reduction": "sum", "weight": W4,
                                                      "ignore_index": 0}),
        Sample((x(2, 4, 3), [[0, 1, 3], [2, 2, 0]]), {"weight": W4, "ignore_index": 2}),
        Sample((x(4), 1), {}),
    ]


# --- binary ------------------------------------------------------------------------------

def _bce_ref(x, t, reduction="mean"):
    return _reduce(-(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log(1 - x),
                                                                            -100)), reduction)


def _bce_logits_ref(x, t, reduction="mean", pos_weight=None):
    pw = 1.0 if pos_weight is None else np.asarray(pos_weight)
    log_sig = -np.logaddexp(0, -x)
    return _reduce(-(pw * t * log_sig + (1 - t) * (log_sig - x)), reduction)


def _bce_logits(x, t, **kw):
    pw = kw.pop("pos_weight", None)
    return F.binary_cross_entropy_with_logits(
        x, t, pos_weight=None if pw is None else ember.tensor(pw, dtype=x.dtype), **kw)


def _bce_logits_samples(rng):
    return [Sample((rng.uniform(-3, 3, (3, 4)), rng.uniform(0, 1, (3, 4))), {"reduction": r})
            for r in ("mean", "none")] + [
        Sample((rng.uniform(-3, 3, (3, 4)), rng.uniform(0, 1, (3, 4))),
               {"reduction": "sum", "pos_weight": [1.0, 2.0, 0.5, 3.0]})]


# --- kl, poisson, gaussian ---------------------------------------------------------------

def _kl_ref(x, t, reduction="mean", log_target=False):
    loss = np.exp(t) * (t - x) if log_target else scipy.special.xlogy(t, t) - t * x
    if reduction == "batchmean":
        return loss.sum() / x.shape[0]
    return _reduce(loss, reduction)


def _kl_samples(rng):
    return [Sample((rng.uniform(-3, 0, (3, 4)), rng.uniform(0.1, 1, (3, 4))),
                   {"reduction": r}) for r in ("batchmean", "sum", "none")] + [
        Sample((rng.uniform(-3, 0, (3, 4)), rng.uniform(-3, 0, (3, 4))),
               {"reduction": "batchmean", "log_target": True})]


def _poisson_ref(x, t, log_input=True, full=False, eps=1e-8, reduction="mean"):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        safe = np.where(t > 1, t, 1.0)
        loss = loss + np.where(t > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe),
                               0)
    return _reduce(loss, reduction)


def _poisson_samples(rng):
    return [Sample((rng.uniform(-1, 1, (3, 4)), rng.uniform(0, 4, (3, 4))), {}),
            Sample((rng.uniform(0.5, 2, (3, 4)), rng.uniform(0, 4, (3, 4))),
                   {"log_input": False, "full": True, "reduction": "none"})]


def _gauss_ref(x, t, var, full=False, eps=1e-6, reduction="mean"):
    if var.shape != x.shape and var.shape == x.shape[:-1]:
        var = var[..., None]
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - t) ** 2 / var)
    if full:
        loss = loss + 0.5 * np.log(2 * np.pi)
    return _reduce(loss, reduction)


def _gauss_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    v = lambda *s: rng.uniform(0.5, 2, s)  # noqa: E731
    return [Sample((u(3, 4), u(3, 4), v(3, 4)), {}),
            Sample((u(3, 4), u(3, 4), v(3)), {"full": True, "reduction": "sum"}),
            Sample((u(3, 4), u(3, 4), v(3, 1)), {"reduction": "none"})]


OPS = [
    OpInfo("mse_loss", F.mse_loss, _mse_ref, _pair()),
    OpInfo("l1_loss", F.l1_loss, _l1_ref, _pair()),
    OpInfo("smooth_l1_loss", lambda x, y, **kw: F.smooth_l1_loss(x, y, beta=0.7, **kw),
           lambda x, y, **kw: _smooth_l1_ref(x, y, beta=0.7, **kw), _pair()),
    OpInfo("huber_loss", lambda x, y, **kw: F.huber_loss(x, y, delta=0.6, **kw),
           lambda x, y, **kw: _huber_ref(x, y, delta=0.6, **kw), _pair()),
    OpInfo("cross_entropy", _ce, _ce_ref, _ce_samples),
    OpInfo("cross_entropy_probs", F.cross_entropy, _ce_probs_ref, _ce_probs_samples),
    OpInfo("nll_loss", _nll, _nll_ref, _nll_samples),
    OpInfo("binary_cross_entropy", F.binary_cross_entropy, _bce_ref, _pair(low=0.05, high=0.95,
                                                                         low2=0.0, high2=1.0)),
    OpInfo("binary_cross_entropy_with_logits", _bce_logits, _bce_logits_ref,
           _bce_logits_samples),
    OpInfo("kl_div", F.kl_div, _kl_ref, _kl_samples),
    OpInfo("poisson_nll_loss", F.poisson_nll_loss, _poisson_ref, _poisson_samples),
    OpInfo("gaussian_nll_loss", F.gaussian_nll_loss, _gauss_ref, _gauss_samples),
]


def _linear_ce(x, w, t, **kw):
    bias = kw.pop("bias", None)
    return F.linear_cross_entropy(x, w, ember.tensor(t), linear_bias=bias, **kw)


def _linear_ce_ref(x, w, t, bias=None, **kw):
    logits = np.tensordot(x, w, axes=([x.ndim - 1], [w.ndim - 1]))
    return _ce_ref(logits if bias is None else logits + bias.numpy(), np.asarray(t), **kw)


def _linear_ce_samples(rng):
    x = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    return [
        Sample((x(3, 4), x(5, 4), [0, 4, 1]), {}),
        Sample((x(3, 4), x(5, 4), [0, 4, 1]), {"reduction": "none", "label_smoothing": 0.2,
                                               "bias": ember.tensor(x(5))}),
        Sample((x(3, 4), x(5, 2, 4), [[0, 1], [4, 4], [2, 3]]), {"reduction": "sum"}),
        Sample((x(4), x(5, 4), 2), {}),
    ]


OPS.append(OpInfo("linear_cross_entropy", _linear_ce, _linear_ce_ref, _linear_ce_samples))


# --- margin, triplet, ctc ------------------------------------------------------------------

def _signs(n, rng):
    return np.where(rng.uniform(size=n) > 0.5, 1.0, -1.0)


def _margin_ranking_samples(rng):
    s = list(_signs(4, rng))
    return [Sample((rng.uniform(-2, 2, 4), rng.uniform(-2, 2, 4), s), {"reduction": r})
            for r in ("mean", "none")]


def _margin_ranking(x1, x2, t, **kw):
    return F.margin_ranking_loss(x1, x2, ember.tensor(t, dtype=x1.dtype), margin=0.3, **kw)


def _margin_ranking_ref(x1, x2, t, reduction="mean"):
    return _reduce(np.maximum(0, -np.asarray(t) * (x1 - x2) + 0.3), reduction)


def _hinge(x, t, **kw):
    return F.hinge_embedding_loss(x, ember.tensor(t, dtype=x.dtype), margin=0.8, **kw)


def _hinge_ref(x, t, reduction="mean"):
    t = np.asarray(t)
    return _reduce(np.where(t == 1, x, 0) + np.where(t == -1, np.maximum(0, 0.8 - x), 0),
                   reduction)


def _sign_samples(rng):
    return [Sample((rng.uniform(-2, 2, (3, 4)), _signs((3, 4), rng).tolist()),
                   {"reduction": r}) for r in ("mean", "none", "sum")]


def _soft_margin(x, t, **kw):
    return F.soft_margin_loss(x, ember.tensor(t, dtype=x.dtype), **kw)


def _soft_margin_ref(x, t, reduction="mean"):
    return _reduce(np.logaddexp(0, -np.asarray(t) * x), reduction)


def _cosine(x1, x2, t, **kw):
    return F.cosine_embedding_loss(x1, x2, ember.tensor(t, dtype=x1.dtype), margin=0.2, **kw)


def _cosine_ref(x1, x2, t, reduction="mean"):
    t = np.asarray(t)
    cos = (x1 * x2).sum(-1) / np.sqrt(((x1 ** 2).sum(-1) + 1e-12) * ((x2 ** 2).sum(-1) + 1e-12))
    return _reduce(np.where(t == 1, 1 - cos, 0) + np.where(t == -1, np.maximum(0, cos - 0.2), 0),
                   reduction)


def _cosine_samples(rng):
    return [Sample((rng.uniform(-2, 2, (4, 3)), rng.uniform(-2, 2, (4, 3)), [1., -1., -1., 1.]),
                   {"reduction": r}) for r in ("mean", "none")]


def _multi_margin(x, t, **kw):
    weight = kw.pop("weight", None)
    return F.multi_margin_loss(x, ember.tensor(t), weight=None if weight is None else
                               ember.tensor(weight, dtype=x.dtype), margin=0.9, **kw)


def _multi_margin_ref(x, t, p=1, weight=None, reduction="mean"):
    t = np.asarray(t)
    n, c = x.shape
    picked = x[np.arange(n), t][:, None]
    terms = np.maximum(0, 0.9 - picked + x) ** p
    if weight is not None:
        terms = terms * np.asarray(weight)[t][:, None]
    terms[np.arange(n), t] = 0
    return _reduce(terms.sum(1) / c, reduction)


def _multi_margin_samples(rng):
    return [Sample((rng.uniform(-1, 1, (3, 4)), [0, 3, 1]), {}),
            Sample((rng.uniform(-1, 1, (3, 4)), [2, 0, 0]), {"p": 2, "weight": W4,
                                                             "reduction": "none"})]


def _multilabel(x, t, **kw):
    return F.multilabel_margin_loss(x, ember.tensor(t), **kw)


def _multilabel_samples(rng):
    return [Sample((rng.uniform(-1, 1, (3, 4)), [[0, 3, -1, 1], [2, -1, 0, 0], [1, 2, 3, 0]]),
                   {"reduction": r}) for r in ("mean", "none")]


def _multilabel_soft(x, t, **kw):
    weight = kw.pop("weight", None)
    w = None if weight is None else ember.tensor(weight, dtype=x.dtype)
    return F.multilabel_soft_margin_loss(x, ember.tensor(t, dtype=x.dtype), weight=w, **kw)


def _multilabel_soft_ref(x, t, weight=None, reduction="mean"):
    t = np.asarray(t)
    loss = t * np.logaddexp(0, -x) + (1 - t) * np.logaddexp(0, x)
    if weight is not None:
        loss = loss * np.asarray(weight)
    return _reduce(loss.mean(-1), reduction)


def _multilabel_soft_samples(rng):
    t = [[1., 0., 0., 1.], [0., 1., 1., 1.], [0., 0., 0., 1.]]
    return [Sample((rng.uniform(-2, 2, (3, 4)), t), {}),
            Sample((rng.uniform(-2, 2, (3, 4)), t), {"weight": W4, "reduction": "none"})]


def _pdist(x, y, p=2.0, eps=1e-6):
    return (np.abs(x - y + eps) ** p).sum(-1) ** (1 / p)


def _triplet_ref(a, p_, n, reduction="mean", p=2.0, swap=False, margin=1.0):
    d_neg = _pdist(a, n, p)
    if swap:
        d_neg = np.minimum(d_neg, _pdist(p_, n, p))
    return _reduce(np.maximum(0, margin + _pdist(a, p_, p) - d_neg), reduction)


def _triplet_samples(rng):
    u = lambda: rng.uniform(-1, 1, (3, 4))  # noqa: E731
    return [Sample((u(), u(), u()), {}),
            Sample((u(), u(), u()), {"p": 1.5, "swap": True, "margin": 2.0,
                                     "reduction": "none"})]


def _triplet_distance_samples(rng):
    u = lambda: rng.uniform(-1, 1, (3, 4))  # noqa: E731
    return [Sample((u(), u(), u()), {}),
            Sample((u(), u(), u()), {"swap": True, "margin": 2.0, "reduction": "none"})]


def _triplet_distance(a, p, n, **kw):
    return F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda x, y: 1 - (x * y).sum(-1), **kw)


def _triplet_distance_ref(a, p, n, reduction="mean", swap=False, margin=1.0):
    def dist(x, y):
        return 1 - (x * y).sum(-1)
    d_neg = dist(a, n)
    if swap:
        d_neg = np.minimum(d_neg, dist(p, n))
    return _reduce(np.maximum(0, margin + dist(a, p) - d_neg), reduction)


def _ctc(lp, targets, input_lengths, target_lengths, **kw):
    return F.ctc_loss(F.log_softmax(lp, 2), ember.tensor(targets), input_lengths,
                      target_lengths, **kw)


def _ctc_samples(rng):
    return [Sample((rng.uniform(-1, 1, (4, 2, 3)), [[1, 2], [2, 0]], (4, 3), (2, 1)), {}),
            Sample((rng.uniform(-1, 1, (4, 2, 3)), [1, 1, 2], (4, 4), (2, 1)),
                   {"blank": 0, "reduction": "sum"}),
            Sample((rng.uniform(-1, 1, (3, 2, 3)), [[1, 1], [2, 1]], (3, 2), (2, 2)),
                   {"reduction": "none", "zero_infinity": True})]


OPS += [
    OpInfo("margin_ranking_loss", _margin_ranking, _margin_ranking_ref,
           _margin_ranking_samples),
    OpInfo("hinge_embedding_loss", _hinge, _hinge_ref, _sign_samples),
    OpInfo("soft_margin_loss", _soft_margin, _soft_margin_ref, _sign_samples),
    OpInfo("cosine_embedding_loss", _cosine, _cosine_ref, _cosine_samples),
    OpInfo("multi_margin_loss", _multi_margin, _multi_margin_ref, _multi_margin_samples),
    OpInfo("multilabel_margin_loss", _multilabel, None, _multilabel_samples),
    OpInfo("multilabel_soft_margin_loss", _multilabel_soft, _multilabel_soft_ref,
           _multilabel_soft_samples),
    OpInfo("triplet_margin_loss", F.triplet_margin_loss, _triplet_ref, _triplet_samples),
    OpInfo("triplet_margin_with_distance_loss", _triplet_distance, _triplet_distance_ref,
           _triplet_distance_samples),
    OpInfo("ctc_loss", _ctc, None, _ctc_samples),
]
