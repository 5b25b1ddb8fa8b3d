"""Fake quantization: forward values and straight-through gradients by hand and against
PyTorch, and the FakeQuantize module."""

import numpy as np
import pytest

import ember
from ember.ao import quantization as Q

try:
    import torch
    from torch.ao import quantization as TQ
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def test_per_tensor_values_and_ste_gradient_by_hand():
    # scale 0.5, zero point 2, range [0, 6]: representable values -1.0 .. 2.0
    x = ember.tensor([-3.0, -1.1, -0.2, 0.3, 0.74, 1.9, 2.2, 9.0], requires_grad=True)
    y = ember.fake_quantize_per_tensor_affine(x, 0.5, 2, 0, 6)
    assert y.tolist() == [-1.0, -1.0, 0.0, 0.5, 0.5, 2.0, 2.0, 2.0]
    assert y.grad_fn.name() == "FakeQuantizePerTensorAffineCachemaskBackward0"
    y.backward(ember.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]))
    # round(x / 0.5) + 2 = [-4, 0, 2, 3, 3, 6, 6, 20]: inside [0, 6] passes, else 0
    assert x.grad.tolist() == [0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0.0]


def test_per_channel_ste_gradient_by_hand():
    x = ember.tensor([[0.4, 5.0], [-0.4, -5.0]], requires_grad=True)
    y = ember.fake_quantize_per_channel_affine(x, ember.tensor([0.5, 1.0]),
                                               ember.tensor([0, 1], dtype=ember.int32),
                                               0, -2, 2)
    assert y.tolist() == [[0.5, 1.0], [-0.0, -3.0]]
    y.sum().backward()
    # round: [[1, 10], [0 + 1, -5 + 1]]: only the in-range entries pass
    assert x.grad.tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_gradient_is_differentiable_again():
    x = ember.tensor([0.3, 9.0], dtype=ember.float64, requires_grad=True)
    y = ember.fake_quantize_per_tensor_affine(x, 0.5, 0, 0, 6)
    (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
    assert g.tolist() == [1.0, 0.0]


def test_errors():
    with pytest.raises(RuntimeError, match="zero_point"):
        ember.fake_quantize_per_tensor_affine(ember.randn(3), 0.1, 300, 0, 255)
    with pytest.raises(RuntimeError, match="floating-point"):
        ember.fake_quantize_per_tensor_affine(ember.arange(3), 0.1, 0, 0, 255)


@needs_torch
@pytest.mark.parametrize("scale", [0.1, 0.03, 1 / 3, 0.2, 0.0123456789])
@pytest.mark.parametrize("qrange", [(0, 255), (0, 127), (-128, 127), (-8, 7)])
def test_per_tensor_matches_torch(scale, qrange):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(20000) * 15).astype(np.float32)
    x[:2000] = np.round(x[:2000] * 10) / 10
    zp = (qrange[0] + qrange[1]) // 3
    tx = torch.from_numpy(x).requires_grad_()
    expected = torch.fake_quantize_per_tensor_affine(tx, scale, zp, *qrange)
    expected.sum().backward()
    ex = ember.tensor(x, requires_grad=True)
    actual = ember.fake_quantize_per_tensor_affine(ex, scale, zp, *qrange)
    actual.sum().backward()
    np.testing.assert_array_equal(actual.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


@needs_torch
@pytest.mark.parametrize("axis", [0, 1])
def test_per_channel_matches_torch(axis):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((6, 6, 500)) * 15).astype(np.float32)
    x[..., :100] = np.round(x[..., :100] * 10) / 10
    scales = np.array([0.1, 0.03, 1 / 3, 0.2, 0.0123456789, 0.5], np.float32)
    zps = np.array([0, 3, 100, 17, 255, 128], np.int32)
    tx = torch.from_numpy(x).requires_grad_()
    expected = torch.fake_quantize_per_channel_affine(tx, torch.from_numpy(scales),
                                                      torch.from_numpy(zps), axis, 0, 255)
    expected.sum().backward()
    ex = ember.tensor(x, requires_grad=True)
    actual = ember.fake_quantize_per_channel_affine(ex, ember.tensor(scales),
                                                    ember.tensor(zps), axis, 0, 255)
    actual.sum().backward()
    np.testing.assert_array_equal(actual.detach().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


def test_fake_quantize_module_switches():
    fq = Q.FakeQuantize()
    assert (fq.quant_min, fq.quant_max) == (0, 255)
    x = ember.tensor([-1.0, 0.0, 0.33, 2.0], requires_grad=True)
    y = fq(x)
    scale, zp = fq.scale.item(), fq.zero_point.item()
    assert scale == np.float32(3.0) / np.float32(255)
    assert y.tolist() == ember.fake_quantize_per_tensor_affine(x, scale, zp, 0, 255).tolist()
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 1.0]
    fq.disable_fake_quant()
    assert fq(x) is x
    fq.disable_observer()
    fq.enable_fake_quant()
    fq(ember.tensor([100.0]))
    assert fq.scale.item() == scale  # frozen
    model = ember.nn.Sequential(Q.FakeQuantize(), ember.nn.ReLU())
    model.apply(Q.disable_fake_quant)
    assert model[0].fake_quant_enabled.item() == 0


@needs_torch
@pytest.mark.parametrize("backend", ["x86", "fbgemm"])
def test_qat_fake_quantize_matches_torch(backend):
    """Several steps of the default QAT activation and weight fake-quantizers, against
    PyTorch's (unfused) FakeQuantize with the same observers and arguments.  (PyTorch's
    default QAT qconfig uses its fused module, whose symmetric weight scale divides by 127
    instead of 127.5: ember follows the unfused FakeQuantize.)"""
    ours = Q.get_default_qat_qconfig(backend)
    activation = TQ.FakeQuantize.with_args(observer=TQ.MovingAverageMinMaxObserver,
                                           quant_min=0, quant_max=255, reduce_range=True)
    weight = TQ.FakeQuantize.with_args(observer=TQ.MovingAveragePerChannelMinMaxObserver,
                                       quant_min=-128, quant_max=127, dtype=torch.qint8,
                                       qscheme=torch.per_channel_symmetric)
    rng = np.random.default_rng(3)
    for make, tmake, shape in ((ours.activation, activation, (8, 30)),
                               (ours.weight, weight, (6, 30))):
        fq, tfq = make(), tmake()
        for step in range(5):
            x = (rng.standard_normal(shape) * (step + 1)).astype(np.float32)
            ex = ember.tensor(x, requires_grad=True)
            tx = torch.from_numpy(x).requires_grad_()
            y, ty = fq(ex), tfq(tx)
            np.testing.assert_array_equal(fq.scale.numpy(), tfq.scale.numpy())
            np.testing.assert_array_equal(fq.zero_point.numpy(), tfq.zero_point.numpy())
            np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
            y.sum().backward()
            ty.sum().backward()
            np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
