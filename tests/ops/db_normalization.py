"""Op table entries for ember/ops/normalization.py.

Running statistics travel as lists (made into fresh tensors on every call, since
batch_norm updates them in place); weights and biases are differentiable inputs.
"""

import numpy as np

import ember
import ember.nn.functional as F
from tests.ops.opinfo import OpInfo, Sample


def _standardize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def _channel(v, ndim):
    return np.asarray(v).reshape((-1,) + (1,) * (ndim - 2))


def _batch_norm(x, w=None, b=None, *, training=True, running=None, eps=1e-5):
    rm = rv = None
    if running is not None:
        rm = ember.tensor(running[0], dtype=x.dtype)
        rv = ember.tensor(running[1], dtype=x.dtype)
    return F.batch_norm(x, rm, rv, w, b, training=training, eps=eps)


def _batch_norm_ref(x, w=None, b=None, *, training=True, running=None, eps=1e-5):
    if training:
        y = _standardize(x, (0,) + tuple(range(2, x.ndim)), eps)
    else:
        y = (x - _channel(running[0], x.ndim)) / np.sqrt(_channel(running[1], x.ndim) + eps)
    if w is not None:
        y = y * _channel(w, x.ndim)
    if b is not None:
        y = y + _channel(b, x.ndim)
    return y


def _batch_norm_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    v = lambda *s: rng.uniform(0.5, 1.5, s)  # noqa: E731
    return [
        Sample((u(4, 3, 2, 2), v(3), u(3)), {}),
        Sample((u(3, 2),), {"eps": 1e-3}),
        Sample((u(3, 2, 4), v(2)), {"running": ([0.1, -0.2], [1.5, 0.7])}),
        Sample((u(3, 2, 4), v(2), u(2)), {"training": False,
                                          "running": ([0.1, -0.2], [1.5, 0.7])}),
    ]


def _layer_norm_ref(x, shape, w=None, b=None, eps=1e-5):
    y = _standardize(x, tuple(range(x.ndim - len(shape), x.ndim)), eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _layer_norm_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    return [Sample((u(3, 4), (4,), u(4), u(4))),
            Sample((u(2, 3, 2), (3, 2), u(3, 2)), {"eps": 1e-3}),
            Sample((u(5), (5,)))]


def _group_norm_ref(x, groups, w=None, b=None, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    y = _standardize(g, (2,), eps).reshape(x.shape)
    if w is not None:
        y = y * _channel(w, x.ndim)
    if b is not None:
        y = y + _channel(b, x.ndim)
    return y


def _group_norm_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    return [Sample((u(2, 4, 3), 2, u(4), u(4))), Sample((u(3, 6), 3)),
            Sample((u(2, 4, 2, 2), 4, u(4)))]


def _instance_norm(x, w=None, b=None, **kw):
    return F.instance_norm(x, None, None, w, b, **kw)


def _instance_norm_ref(x, w=None, b=None, eps=1e-5):
    y = _standardize(x, tuple(range(2, x.ndim)), eps)
    if w is not None:
        y = y * _channel(w, x.ndim)
    if b is not None:
        y = y + _channel(b, x.ndim)
    return y


def _instance_norm_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    return [Sample((u(2, 3, 4), u(3), u(3))), Sample((u(2, 2, 2, 3),))]


def _rms_norm_ref(x, shape, w=None, eps=None):
    eps = np.finfo(x.dtype).eps if eps is None else eps
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def _rms_norm_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    return [Sample((u(3, 4), (4,), u(4))), Sample((u(2, 3, 2), (3, 2)), {"eps": 1e-3})]


def _lrn_ref(x, size, alpha=1e-4, beta=0.75, k=1.0):
    c = x.shape[1]
    sq = np.pad(x * x, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = sum(sq[:, i:i + c] for i in range(size))
    return x / (k + alpha / size * window) ** beta


def _lrn_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    return [Sample((u(2, 5, 3), 3), {"alpha": 0.5, "beta": 0.6, "k": 1.5}),
            Sample((u(1, 4, 2, 2), 2), {"alpha": 0.3})]


def _normalize_ref(x, p=2.0, dim=1, eps=1e-12):
    norm = (np.abs(x) ** p).sum(axis=dim, keepdims=True) ** (1 / p)
    return x / np.maximum(norm, eps)


def _normalize_samples(rng):
    u = lambda *s: rng.uniform(-2, 2, s)  # noqa: E731
    return [Sample((u(3, 4),), {}), Sample((u(2, 3, 2),), {"p": 3.0, "dim": -1})]


OPS = [
    OpInfo("batch_norm", _batch_norm, _batch_norm_ref, _batch_norm_samples),
    OpInfo("layer_norm", F.layer_norm, _layer_norm_ref, _layer_norm_samples),
    OpInfo("group_norm", F.group_norm, _group_norm_ref, _group_norm_samples),
    OpInfo("instance_norm", _instance_norm, _instance_norm_ref, _instance_norm_samples),
    OpInfo("rms_norm", F.rms_norm, _rms_norm_ref, _rms_norm_samples, atol=1e-4),
    OpInfo("local_response_norm", F.local_response_norm, _lrn_ref, _lrn_samples),
    OpInfo("normalize", F.normalize, _normalize_ref, _normalize_samples),
]
