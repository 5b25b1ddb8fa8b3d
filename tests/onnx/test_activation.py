"""Converters of activations (functional forms and modules)."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.nn import functional as F
from tests.onnx._check import check_fn, op_types

FUNCTIONS = {
    "relu": F.relu, "relu6": F.relu6, "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x, 0.7), "selu": F.selu, "celu": lambda x: F.celu(x, 1.5),
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "mish": F.mish, "softplus": F.softplus, "softplus_beta": lambda x: F.softplus(
        x * 10, beta=2, threshold=5), "softsign": F.softsign, "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish, "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.8),
    "threshold": lambda x: F.threshold(x, 0.1, -2.0), "softshrink": F.softshrink,
    "hardshrink": F.hardshrink, "tanhshrink": F.tanhshrink, "logsigmoid": F.logsigmoid,
    "softmax": lambda x: F.softmax(x, dim=1), "log_softmax": lambda x: F.log_softmax(x, 0),
    "softmin": lambda x: F.softmin(x, -1), "glu": F.glu, "sigmoid": ember.sigmoid,
    "tanh": ember.tanh, "rrelu_eval": lambda x: F.rrelu(x, training=False),
}

MODULES = {
    "ReLU_inplace": lambda: nn.ReLU(inplace=True), "PReLU": lambda: nn.PReLU(4, 0.1),
    "PReLU_single": nn.PReLU, "ELU_inplace": lambda: nn.ELU(inplace=True),
    "LeakyReLU": lambda: nn.LeakyReLU(0.3), "Hardswish": nn.Hardswish, "SiLU": nn.SiLU,
    "GELU": nn.GELU, "Softmax2d": nn.Softmax2d, "Mish": nn.Mish, "Softplus": nn.Softplus,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function(name):
    check_fn(FUNCTIONS[name], ember.randn(3, 4, 2) * 3)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module(name):
    module = MODULES[name]()
    check_fn(lambda x: module(x * 1), ember.randn(3, 4, 2) * 3)


@pytest.mark.parametrize("opset, op", [(17, "Erf"), (20, "Gelu")])
def test_gelu_by_opset(opset, op):
    assert op in op_types(check_fn(F.gelu, ember.randn(3, 4), opset=opset))


@pytest.mark.parametrize("opset, op", [(17, "Softplus"), (18, "Mish")])
def test_mish_by_opset(opset, op):
    assert op in op_types(check_fn(F.mish, ember.randn(3, 4), opset=opset))


@pytest.mark.parametrize("opset, op", [(13, "HardSigmoid"), (17, "HardSwish")])
def test_hardswish_by_opset(opset, op):
    assert op in op_types(check_fn(F.hardswish, ember.randn(3, 4) * 4, opset=opset))


def test_prelu_module_is_a_prelu_node():
    prelu = nn.PReLU(3, 0.2)
    with ember.no_grad():
        prelu.weight.copy_(ember.tensor([0.1, -0.5, 2.0]))
    assert op_types(check_fn(prelu, ember.randn(4, 3, 5))) == {"PRelu"}
    assert op_types(check_fn(nn.PReLU(), ember.randn(4, 3))) == {"PRelu"}


def test_native_ops_are_used():
    proto = check_fn(lambda x: (F.elu(x), F.selu(x), F.celu(x, 2.0), F.leaky_relu(x)),
                     ember.randn(3, 4))
    assert {"Elu", "Selu", "Celu", "LeakyRelu"} <= op_types(proto)
