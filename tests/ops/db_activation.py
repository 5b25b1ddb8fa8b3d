"""Op table entries for ember/ops/activation.py and ember/ops/dropout.py."""

import numpy as np
import scipy.special

import ember
import ember.nn.functional as F
from tests.ops.opinfo import OpInfo, Sample, unary_samples


def _softmax_ref(x, dim=-1):
    z = np.atleast_1d(x)
    e = np.exp(z - z.max(axis=dim, keepdims=True))
    return (e / e.sum(axis=dim, keepdims=True)).reshape(np.shape(x))


def _log_softmax_ref(x, dim=-1):
    z = np.atleast_1d(x)
    s = z - z.max(axis=dim, keepdims=True)
    return (s - np.log(np.exp(s).sum(axis=dim, keepdims=True))).reshape(np.shape(x))


def _sigmoid(x):
    return scipy.special.expit(x)


def _softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.logaddexp(0, x * beta) / beta)


def _elu_ref(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return np.where(x > 0, scale * x, scale * alpha * np.expm1(np.minimum(x, 0) * input_scale))


def _gelu_tanh_ref(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _glu_ref(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a * _sigmoid(b)


def _prelu_ref(x, w):
    slope = w.reshape((-1,) + (1,) * (x.ndim - 2)) if x.ndim >= 2 and w.size > 1 else w
    return np.where(x > 0, x, slope * x)


def _samples_softmax(rng):
    return [Sample((rng.uniform(-3, 3, (3, 4)),), {"dim": 1}),
            Sample((rng.uniform(-3, 3, (2, 3, 2)),), {"dim": 0}),
            Sample((rng.uniform(-3, 3, (5,)),), {"dim": -1}),
            Sample((np.asarray(rng.uniform(-3, 3)),), {"dim": 0})]


def _samples_glu(rng):
    return [Sample((rng.uniform(-2, 2, (3, 4)),), {"dim": -1}),
            Sample((rng.uniform(-2, 2, (2, 3, 2)),), {"dim": 0})]


def _samples_prelu(rng):
    return [Sample((rng.uniform(-2, 2, (2, 3, 2)), rng.uniform(0.1, 0.5, (3,)))),
            Sample((rng.uniform(-2, 2, (3, 4)), rng.uniform(0.1, 0.5, (1,)))),
            Sample((rng.uniform(-2, 2, (5,)), rng.uniform(0.1, 0.5, (1,))))]


SOFT = unary_samples(-3.0, 3.0)

OPS = [
    OpInfo("softmax", F.softmax, _softmax_ref, _samples_softmax),
    OpInfo("log_softmax", F.log_softmax, _log_softmax_ref, _samples_softmax),
    OpInfo("softmin", F.softmin, lambda x, dim: _softmax_ref(-x, dim), _samples_softmax),
    OpInfo("softmax_dtype", lambda x: ember.softmax(x, -1, dtype=ember.float64),
           _softmax_ref, unary_samples(-3, 3, shapes=((3, 4),))),
    OpInfo("gelu", F.gelu, lambda x: x * scipy.special.ndtr(x), SOFT),
    OpInfo("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), _gelu_tanh_ref, SOFT),
    OpInfo("silu", F.silu, lambda x: x * _sigmoid(x), SOFT),
    OpInfo("mish", F.mish, lambda x: x * np.tanh(np.logaddexp(0, x)), SOFT),
    OpInfo("softplus", F.softplus, _softplus_ref, SOFT),
    OpInfo("softplus_beta_threshold", lambda x: F.softplus(x, beta=2.0, threshold=3.0),
           lambda x: _softplus_ref(x, 2.0, 3.0), SOFT),
    OpInfo("logsigmoid", F.logsigmoid, lambda x: -np.logaddexp(0, -x), SOFT),
    OpInfo("elu", lambda x: F.elu(x, 0.7), lambda x: _elu_ref(x, 0.7), SOFT),
    OpInfo("selu", F.selu, lambda x: _elu_ref(x, 1.6732632423543772, 1.0507009873554805),
           SOFT),
    OpInfo("celu", lambda x: F.celu(x, 0.5), lambda x: _elu_ref(x, 0.5, 1.0, 2.0), SOFT),
    OpInfo("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
           SOFT),
    OpInfo("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.2), lambda x: np.clip(x, -0.5, 1.2),
           SOFT),
    OpInfo("relu6", F.relu6, lambda x: np.clip(x, 0, 6), unary_samples(-3, 9)),
    OpInfo("threshold", lambda x: F.threshold(x, 0.3, -2.0),
           lambda x: np.where(x > 0.3, x, -2.0), SOFT),
    OpInfo("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x / 6 + 0.5, 0, 1),
           unary_samples(-5, 5)),
    OpInfo("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
           unary_samples(-5, 5)),
    OpInfo("softshrink", lambda x: F.softshrink(x, 0.6),
           lambda x: np.where(x > 0.6, x - 0.6, np.where(x < -0.6, x + 0.6, 0)), SOFT),
    OpInfo("hardshrink", lambda x: F.hardshrink(x, 0.6),
           lambda x: np.where(np.abs(x) > 0.6, x, 0), SOFT),
    OpInfo("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), SOFT),
    OpInfo("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), SOFT),
    OpInfo("glu", F.glu, _glu_ref, _samples_glu),
    OpInfo("prelu", F.prelu, _prelu_ref, _samples_prelu),
    OpInfo("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3, training=False),
           lambda x: np.where(x > 0, x, 0.2 * x), SOFT),
]


def _seeded(fn):
    """Dropout with a fixed seed: the same mask on every call (gradcheck re-evaluates)."""
    def op(x, **kwargs):
        ember.manual_seed(7)
        return fn(x, **kwargs)
    return op


def _dropout_samples(shape):
    def samples(rng):
        return [Sample((rng.uniform(-2, 2, shape),))]
    return samples


OPS += [
    OpInfo("rrelu_train", _seeded(lambda x: F.rrelu(x, 0.1, 0.3, training=True)), None, SOFT),
    OpInfo("dropout", _seeded(lambda x: F.dropout(x, 0.4)), None, _dropout_samples((3, 4))),
    OpInfo("dropout2d", _seeded(lambda x: F.dropout2d(x, 0.4)), None,
           _dropout_samples((2, 3, 2, 2))),
    OpInfo("alpha_dropout", _seeded(lambda x: F.alpha_dropout(x, 0.3, training=True)), None,
           _dropout_samples((3, 4))),
    OpInfo("feature_alpha_dropout",
           _seeded(lambda x: F.feature_alpha_dropout(x, 0.3, training=True)), None,
           _dropout_samples((2, 3, 2))),
]
