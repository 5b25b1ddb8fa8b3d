"""Op table entries for ember/ao/quantization/fake_quantize_ops.py.

Fake quantization is a staircase whose gradient is, by definition, the straight-through
estimator rather than its derivative, so these entries check the forward pass only
(grad_order=0); tests/ao/test_fake_quantize.py checks the gradients by hand.  The samples
sit away from rounding boundaries (k * scale + small offsets) so that float32 and float64
inputs round the same way.
"""

import numpy as np

import ember
from tests.ops.opinfo import OpInfo, Sample

_SCALE = 0.25
_SCALES = np.array([0.25, 0.5, 0.125])
_ZPS = np.array([3, 0, 10])


def _on_grid(rng, shape, scale):
    steps = rng.integers(-40, 60, size=shape)
    return np.asarray((steps + rng.uniform(-0.3, 0.3, size=shape)) * scale)


def _per_tensor_samples(rng):
    return [Sample((_on_grid(rng, s, _SCALE),)) for s in ((3, 4), (7,), ())]


def _per_channel_samples(rng):
    scales = _SCALES.reshape(1, 3, 1)
    return [Sample((_on_grid(rng, (2, 3, 4), scales),))]


def _per_tensor(x):
    return ember.fake_quantize_per_tensor_affine(x, _SCALE, 5, 0, 40)


def _per_tensor_ref(x):
    return (np.clip(np.rint(x / _SCALE) + 5, 0, 40) - 5) * _SCALE


def _per_channel(x):
    return ember.fake_quantize_per_channel_affine(
        x, ember.tensor(_SCALES, dtype=ember.float32), ember.tensor(_ZPS, dtype=ember.int32),
        1, -8, 20)


def _per_channel_ref(x):
    s, z = _SCALES.reshape(1, 3, 1), _ZPS.reshape(1, 3, 1)
    return (np.clip(np.rint(x / s) + z, -8, 20) - z) * s


OPS = [
    OpInfo("fake_quantize_per_tensor_affine", _per_tensor, _per_tensor_ref,
           _per_tensor_samples, grad_order=0),
    OpInfo("fake_quantize_per_channel_affine", _per_channel, _per_channel_ref,
           _per_channel_samples, grad_order=0),
]
