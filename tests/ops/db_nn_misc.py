"""Op table entries for ember/ops/embedding.py, ember/ops/attention.py and the recurrent cells
of ember/ops/rnn.py (the index arguments are fixed inside each entry)."""

import math

import numpy as np

import ember
import ember.nn.functional as F
from tests.ops.opinfo import OpInfo, Sample

_IDX = np.array([[0, 2, 0, 4], [3, 2, 1, 3]])
_FLAT = np.array([0, 2, 0, 4, 3, 2, 1, 3])
_OFFSETS = np.array([0, 3, 3, 5])


def _table(rng):
    return [Sample((rng.uniform(-2, 2, size=(5, 3)),))]


def _embedding(w):
    return F.embedding(ember.tensor(_IDX), w)


def _bag(mode):
    def op(w):
        return F.embedding_bag(ember.tensor(_FLAT), w, ember.tensor(_OFFSETS), mode=mode)

    def ref(w):
        bounds = list(_OFFSETS) + [len(_FLAT)]
        reduce = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
        return np.stack([reduce(w[_FLAT[a:b]], axis=0) if b > a else np.zeros(w.shape[1])
                         for a, b in zip(bounds[:-1], bounds[1:])])
    return op, ref


def _attention_ref(q, k, v, mask=None, is_causal=False):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    if is_causal:   # (row i keeps keys j <= i)
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


def _attention_samples(rng):
    u = lambda *s: rng.uniform(-1, 1, size=s)  # noqa: E731
    # (the first two also go through gradgradcheck: a causal one, ops/masked_softmax.py)
    return [Sample((u(2, 3, 2), u(2, 4, 2), u(2, 4, 3)), {"is_causal": True}),
            Sample((u(2, 3, 2), u(2, 4, 2), u(2, 4, 3))),
            Sample((u(1, 2, 3, 2), u(1, 2, 3, 2), u(1, 2, 3, 2), u(3, 3))),
            Sample((u(2, 4, 2), u(2, 3, 2), u(2, 3, 3)), {"is_causal": True})]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _cell_samples(chunks):
    def samples(rng):
        u = lambda *s: rng.uniform(-1, 1, size=s)  # noqa: E731
        return [Sample((u(2, 3), u(2, 2), u(chunks * 2, 3), u(chunks * 2, 2), u(chunks * 2),
                        u(chunks * 2)))]
    return samples


def _rnn_tanh_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    return np.tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)


def _gru_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    xr, xz, xn = np.split(x @ w_ih.T + b_ih, 3, axis=1)
    hr, hz, hn = np.split(h @ w_hh.T + b_hh, 3, axis=1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def _lstm_c_ref(x, h, w_ih, w_hh, b_ih, b_hh):
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
    return _sigmoid(f) * h + _sigmoid(i) * np.tanh(g)  # c = h here (see the op below)


OPS = [
    OpInfo("nn.functional.embedding", _embedding, lambda w: w[_IDX], _table),
    *[OpInfo(f"nn.functional.embedding_bag_{mode}", *_bag(mode), _table)
      for mode in ("sum", "mean", "max")],
    OpInfo("nn.functional.scaled_dot_product_attention", F.scaled_dot_product_attention,
           _attention_ref, _attention_samples),
    OpInfo("rnn_tanh_cell", ember.rnn_tanh_cell, _rnn_tanh_ref, _cell_samples(1)),
    OpInfo("gru_cell", ember.gru_cell, _gru_ref, _cell_samples(3)),
    OpInfo("lstm_cell", lambda x, h, *w: ember.lstm_cell(x, (h, h), *w)[1], _lstm_c_ref,
           _cell_samples(4)),
]
