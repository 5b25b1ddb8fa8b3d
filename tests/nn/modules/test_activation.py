"""Activation layers: printing (as PyTorch prints them), options, train/eval behaviour,
PReLU's parameter."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.testing import assert_close

REPRS = [
    (nn.ReLU(), "ReLU()"),
    (nn.ReLU(True), "ReLU(inplace=True)"),
    (nn.ReLU6(), "ReLU6()"),
    (nn.ReLU6(True), "ReLU6(inplace=True)"),
    (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (nn.PReLU(), "PReLU(num_parameters=1)"),
    (nn.PReLU(3, 0.1), "PReLU(num_parameters=3)"),
    (nn.RReLU(), "RReLU(lower=0.125, upper=0.3333333333333333)"),
    (nn.RReLU(0.1, 0.3, True), "RReLU(lower=0.1, upper=0.3, inplace=True)"),
    (nn.ELU(), "ELU(alpha=1.0)"),
    (nn.ELU(0.5, True), "ELU(alpha=0.5, inplace=True)"),
    (nn.SELU(True), "SELU(inplace=True)"),
    (nn.CELU(), "CELU(alpha=1.0)"),
    (nn.GELU(), "GELU(approximate='none')"),
    (nn.GELU("tanh"), "GELU(approximate='tanh')"),
    (nn.SiLU(True), "SiLU(inplace=True)"),
    (nn.Mish(), "Mish()"),
    (nn.Mish(True), "Mish(inplace=True)"),
    (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (nn.Softplus(2, 10), "Softplus(beta=2, threshold=10)"),
    (nn.Softshrink(), "Softshrink(0.5)"),
    (nn.Hardshrink(0.3), "Hardshrink(0.3)"),
    (nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (nn.Hardtanh(-2, 2, True), "Hardtanh(min_val=-2, max_val=2, inplace=True)"),
    (nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (nn.Threshold(0.1, 20, True), "Threshold(threshold=0.1, value=20, inplace=True)"),
    (nn.Hardsigmoid(True), "Hardsigmoid()"),
    (nn.Hardswish(True), "Hardswish()"),
    (nn.LogSigmoid(), "LogSigmoid()"),
    (nn.Tanh(), "Tanh()"),
    (nn.Sigmoid(), "Sigmoid()"),
    (nn.Softsign(), "Softsign()"),
    (nn.Tanhshrink(), "Tanhshrink()"),
    (nn.GLU(), "GLU(dim=-1)"),
    (nn.Softmax(), "Softmax(dim=None)"),
    (nn.Softmax(1), "Softmax(dim=1)"),
    (nn.LogSoftmax(dim=0), "LogSoftmax(dim=0)"),
    (nn.Softmin(), "Softmin(dim=None)"),
    (nn.Softmax2d(), "Softmax2d()"),
]


@pytest.mark.parametrize("module,text", REPRS, ids=[t for _, t in REPRS])
def test_repr_matches_pytorch(module, text):
    assert repr(module) == text


def test_module_paths():
    assert nn.ReLU.__module__ == "ember.nn.modules.activation"
    assert ember.nn.modules.activation.GELU is nn.GELU


LAYERS = [
    (nn.ReLU(), F.relu), (nn.ReLU6(), F.relu6), (nn.LeakyReLU(0.3), lambda x: F.leaky_relu(x, 0.3)),
    (nn.ELU(0.5), lambda x: F.elu(x, 0.5)), (nn.SELU(), F.selu), (nn.CELU(0.7),
                                                                   lambda x: F.celu(x, 0.7)),
    (nn.GELU("tanh"), lambda x: F.gelu(x, approximate="tanh")), (nn.SiLU(), F.silu),
    (nn.Mish(), F.mish), (nn.Softplus(2.0, 5.0), lambda x: F.softplus(x, 2.0, 5.0)),
    (nn.Softshrink(0.3), lambda x: F.softshrink(x, 0.3)), (nn.Hardshrink(), F.hardshrink),
    (nn.Tanhshrink(), F.tanhshrink), (nn.Tanh(), ember.tanh), (nn.Sigmoid(), ember.sigmoid),
    (nn.Hardtanh(-0.5, 0.5), lambda x: F.hardtanh(x, -0.5, 0.5)), (nn.Hardsigmoid(),
                                                                   F.hardsigmoid),
    (nn.Hardswish(), F.hardswish), (nn.LogSigmoid(), F.logsigmoid), (nn.Softsign(), F.softsign),
    (nn.Threshold(0.2, -1.0), lambda x: F.threshold(x, 0.2, -1.0)),
    (nn.GLU(1), lambda x: F.glu(x, 1)), (nn.Softmax(1), lambda x: F.softmax(x, 1)),
    (nn.LogSoftmax(0), lambda x: F.log_softmax(x, 0)), (nn.Softmin(1), lambda x: F.softmin(x, 1)),
]


@pytest.mark.parametrize("module,fn", LAYERS, ids=[type(m).__name__ for m, _ in LAYERS])
def test_layer_calls_its_functional_form(module, fn):
    x = ember.randn(3, 4)
    assert_close(module(x), fn(x))
    assert list(module.parameters()) == []


def test_inplace_layers_write_into_their_input():
    x = ember.randn(3, 4)
    expected = F.elu(x)
    y = nn.ELU(inplace=True)(x)
    assert y is x and ember.allclose(x, expected)
    z = ember.randn(5)
    assert nn.ReLU(True)(z) is z and (z >= 0).all()


def test_prelu_parameter_init_and_gradient():
    m = nn.PReLU(3)
    assert m.weight.shape == (3,) and m.weight.requires_grad
    assert_close(m.weight, np.full(3, 0.25, dtype=np.float32))
    assert [k for k in m.state_dict()] == ["weight"]
    x = -ember.ones(2, 3, 4)
    m(x).sum().backward()
    assert_close(m.weight.grad, np.full(3, -8.0, dtype=np.float32))
    assert nn.PReLU(dtype=ember.float64).weight.dtype is ember.float64
    m.weight.data.fill_(0.5)
    m.reset_parameters()
    assert_close(m.weight, np.full(3, 0.25, dtype=np.float32))


def test_rrelu_train_and_eval():
    m = nn.RReLU(0.1, 0.3)
    x = -ember.ones(200)
    ember.manual_seed(0)
    train_out = m(x)
    assert train_out.unique().numel() > 100
    m.eval()
    assert_close(m(x), np.full(200, -0.2, dtype=np.float32))


def test_softmax_layers():
    x = ember.randn(2, 3, 4, 5)
    assert_close(nn.Softmax2d()(x), F.softmax(x, -3))
    assert_close(nn.Softmax2d()(x[0]), F.softmax(x[0], -3))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(ember.randn(3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        nn.Softmax()(ember.randn(2, 3))


def test_hardtanh_arguments():
    with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated"):
        m = nn.Hardtanh(min_value=-3.0)
    assert m.min_val == -3.0
    with pytest.raises(AssertionError, match=r"max_val \(0\) must be greater than min_val"):
        nn.Hardtanh(1, 0)
