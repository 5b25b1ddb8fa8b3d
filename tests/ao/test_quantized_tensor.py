"""Quantized tensors: quantize_per_tensor / quantize_per_channel, their parameters, and that
arithmetic refuses."""

import pickle

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

_DTYPES = [("quint8", 0, 255), ("qint8", -128, 127), ("qint32", -2 ** 31, 2 ** 31 - 1)]


def _values(seed=0, n=20000):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 5).astype(np.float32)
    x[:2000] = np.round(x[:2000] * 10) / 10          # many exact .5 ties after scaling
    x[2000:2100] = rng.uniform(-1e4, 1e4, 100)        # far out of range
    return x


def test_hand_values_round_half_to_even_and_clamp():
    x = ember.tensor([0.25, 0.35, -0.05, 100.0, -100.0, 0.0])
    q = ember.quantize_per_tensor(x, 0.1, 10, ember.quint8)
    # 2.5 -> 12 (tie: 12.5 -> 12), 3.5 + 10 = 13.5 -> 14, -0.5 + 10 = 9.5 -> 10, clamped ends
    assert q.int_repr().tolist() == [12, 14, 10, 255, 0, 10]
    assert q.int_repr().dtype is ember.uint8
    assert q.dequantize().dtype is ember.float32
    np.testing.assert_allclose(q.dequantize().numpy(), [0.2, 0.4, 0.0, 24.5, -1.0, 0.0],
                               rtol=1e-6)


def test_metadata():
    x = ember.randn(2, 3)
    q = ember.quantize_per_tensor(x, 0.05, -3, ember.qint8)
    assert q.is_quantized and not x.is_quantized
    assert q.shape == (2, 3) and q.size() == (2, 3) and q.size(1) == 3
    assert q.dim() == 2 and q.numel() == 6 and q.dtype is ember.qint8
    assert q.q_scale() == 0.05 and q.q_zero_point() == -3
    assert q.qscheme() is ember.per_tensor_affine
    assert repr(ember.quint8) == "ember.quint8" and repr(ember.qscheme) != ""
    assert "quantization_scheme=ember.per_tensor_affine, scale=0.05, zero_point=-3" in repr(q)
    with pytest.raises(RuntimeError):
        q.q_per_channel_scales()
    assert x.dequantize() is x and ember.dequantize(x) is x
    assert ember.quint8 not in ember._core.dtype.ALL_DTYPES
    assert pickle.loads(pickle.dumps(ember.qint8)) is ember.qint8
    q2 = pickle.loads(pickle.dumps(q))
    assert q2.int_repr().tolist() == q.int_repr().tolist() and q2.q_scale() == 0.05


def test_per_channel_metadata():
    x = ember.randn(3, 4)
    q = ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3]), ember.tensor([0, 1, 2]),
                                   0, ember.quint8)
    assert q.qscheme() is ember.per_channel_affine and q.q_per_channel_axis() == 0
    assert q.q_per_channel_scales().dtype is ember.float64
    assert q.q_per_channel_zero_points().tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError):
        q.q_scale()
    with pytest.raises(RuntimeError, match="length of scales"):
        ember.quantize_per_channel(x, ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 0,
                                   ember.quint8)


@pytest.mark.parametrize("op", [
    lambda q: q + q, lambda q: q * 2, lambda q: 2 - q, lambda q: q @ q, lambda q: -q,
    lambda q: q < 1, lambda q: q.sum(), lambda q: q[0], lambda q: q.add(1),
    lambda q: np.asarray(q), lambda q: float(q),
])
def test_arithmetic_refuses(op):
    q = ember.quantize_per_tensor(ember.randn(2, 2), 0.1, 0, ember.qint8)
    with pytest.raises(NotImplementedError, match="not supported on quantized tensors"):
        op(q)


def test_bad_inputs():
    with pytest.raises(RuntimeError, match="Float Tensor"):
        ember.quantize_per_tensor(ember.randn(3, dtype=ember.float64), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="above upper bound"):
        ember.quantize_per_tensor(ember.randn(3), 0.1, 300, ember.quint8)
    with pytest.raises(RuntimeError, match="dtype"):
        ember.quantize_per_tensor(ember.randn(3), 0.1, 0, ember.float32)


@needs_torch
@pytest.mark.parametrize("name,lo,hi", _DTYPES)
@pytest.mark.parametrize("scale", [0.1, 0.03, 0.007, 1 / 3, 0.0123456789, 0.2, 2.5])
def test_per_tensor_matches_torch(name, lo, hi, scale):
    x = _values()
    for zp in (0, 3, 100, -7):
        zp = zp if name != "quint8" else abs(zp)
        expected = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp,
                                             getattr(torch, name))
        actual = ember.quantize_per_tensor(ember.tensor(x), scale, zp, getattr(ember, name))
        np.testing.assert_array_equal(actual.int_repr().numpy(), expected.int_repr().numpy())
        np.testing.assert_array_equal(actual.dequantize().numpy(),
                                      expected.dequantize().numpy())


@needs_torch
@pytest.mark.parametrize("name,lo,hi", _DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_per_channel_matches_torch(name, lo, hi, axis):
    x = _values(1, 8 * 2500).reshape(8, 2500)
    if axis == 1:
        x = np.ascontiguousarray(x.T[:, :8])
        x = np.repeat(x, 1, axis=0)
    channels = x.shape[axis]
    rng = np.random.default_rng(2)
    scales = rng.choice([0.1, 0.03, 1 / 3, 0.0123456789, 0.2, 0.007, 0.05, 2.5], channels)
    zps = rng.integers(0 if name == "quint8" else -50, 100, channels)
    expected = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales),
                                          torch.from_numpy(zps), axis, getattr(torch, name))
    actual = ember.quantize_per_channel(ember.tensor(x), ember.tensor(scales),
                                        ember.tensor(zps), axis, getattr(ember, name))
    np.testing.assert_array_equal(actual.int_repr().numpy(), expected.int_repr().numpy())
    np.testing.assert_array_equal(actual.dequantize().numpy(), expected.dequantize().numpy())
    np.testing.assert_array_equal(actual.q_per_channel_scales().numpy(),
                                  expected.q_per_channel_scales().numpy())


def test_float_ops_refuse_a_quantized_tensor_by_name():
    q = ember.quantize_per_tensor(ember.ones(3), 0.1, 0, ember.quint8)
    for op in (ember.tanh, ember.nn.Sigmoid(), ember.exp):
        with pytest.raises(NotImplementedError, match="not supported on quantized tensors"):
            op(q)
    with pytest.raises(TypeError, match="must be Tensor, not QuantizedTensor"):
        ember.nn.functional.softmax(q, 0)
