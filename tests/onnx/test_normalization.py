"""Converters of normalization layers (eval mode, and batch statistics)."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.nn import functional as F
from tests.onnx._check import check_fn, op_types


def _randomized(module):
    for name in ("running_mean", "weight", "bias"):
        t = getattr(module, name, None)
        if t is not None:
            with ember.no_grad():
                t.copy_(ember.randn(*t.shape))
    if getattr(module, "running_var", None) is not None:
        module.running_var.copy_(ember.rand(*module.running_var.shape) + 0.5)
    return module.eval()


@pytest.mark.parametrize("module, shape", [
    (lambda: nn.BatchNorm1d(4), (3, 4)),
    (lambda: nn.BatchNorm1d(4, affine=False), (3, 4, 5)),
    (lambda: nn.BatchNorm2d(4), (3, 4, 5, 2)),
    (lambda: nn.BatchNorm3d(4), (3, 4, 2, 3, 2)),
])
def test_batch_norm_is_one_node(module, shape):
    proto = check_fn(_randomized(module()), ember.randn(*shape))
    assert op_types(proto) == {"BatchNormalization"}


def test_batch_norm_without_running_stats_uses_batch_statistics():
    bn = nn.BatchNorm2d(4, track_running_stats=False).eval()
    check_fn(bn, ember.randn(3, 4, 5, 2))


def test_functional_batch_norm_folds_to_scale_and_shift():
    mean, var = ember.randn(4), ember.rand(4) + 0.5
    weight, bias = ember.randn(4), ember.randn(4)
    proto = check_fn(lambda x: F.batch_norm(x, mean, var, weight, bias), ember.randn(3, 4, 5))
    assert op_types(proto) == {"Mul", "Add"}


def test_batch_norm_exported_in_training_mode():
    bn = nn.BatchNorm1d(4)
    proto = check_fn(bn, ember.randn(6, 4), batch=False,
                     training=ember.onnx.TrainingMode.TRAINING)
    assert "ReduceMean" in op_types(proto)
    assert bn.training


@pytest.mark.parametrize("opset, op", [(17, "LayerNormalization"), (13, "ReduceMean")])
def test_layer_norm(opset, op):
    ln = nn.LayerNorm((3, 4))
    with ember.no_grad():
        ln.weight.copy_(ember.randn(3, 4))
        ln.bias.copy_(ember.randn(3, 4))
    assert op in op_types(check_fn(ln, ember.randn(2, 5, 3, 4), opset=opset))


def test_layer_norm_without_affine():
    check_fn(nn.LayerNorm(4, elementwise_affine=False), ember.randn(2, 3, 4))


def test_group_norm():
    gn = nn.GroupNorm(2, 6)
    with ember.no_grad():
        gn.weight.copy_(ember.randn(6))
    check_fn(gn, ember.randn(3, 6, 4, 2))


def test_instance_norm():
    check_fn(_randomized(nn.InstanceNorm2d(3, affine=True)), ember.randn(2, 3, 4, 5))


@pytest.mark.parametrize("module", [lambda: nn.LocalResponseNorm(3), lambda: nn.RMSNorm(4)])
def test_composite_norms(module):
    check_fn(module(), ember.randn(2, 5, 3, 4))


def test_rms_norm_over_two_dims_with_a_weight():
    norm = nn.RMSNorm([3, 4], eps=1e-4)
    with ember.no_grad():
        norm.weight.copy_(ember.randn(3, 4))
    check_fn(norm, ember.randn(2, 5, 3, 4))


def test_normalize():
    check_fn(lambda x: F.normalize(x, dim=1), ember.randn(3, 4))
    x = ember.randn(2, 3, 4)
    x[1, :, 2] = 0   # (a zero vector: divided by eps)
    check_fn(lambda x: F.normalize(x, dim=1, eps=1e-6), x)
