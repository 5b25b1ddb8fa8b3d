"""LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm and InstanceNorm1d/2d/3d layers."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.testing import assert_close


def _x(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


REPRS = [
    (nn.LayerNorm(3), "LayerNorm((3,), eps=1e-05, elementwise_affine=True, bias=True)"),
    (nn.LayerNorm((3, 4), elementwise_affine=False, bias=False),
     "LayerNorm((3, 4), eps=1e-05, elementwise_affine=False, bias=False)"),
    (nn.LayerNorm(3, bias=False), "LayerNorm((3,), eps=1e-05, elementwise_affine=True, "
                                  "bias=False)"),
    (nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"),
    (nn.InstanceNorm2d(3), "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, "
                           "bias=False, track_running_stats=False)"),
    (nn.RMSNorm([3, 4], eps=1e-3), "RMSNorm((3, 4), eps=0.001, elementwise_affine=True)"),
    (nn.RMSNorm(3, elementwise_affine=False), "RMSNorm((3,), eps=None, elementwise_affine=False)"),
    (nn.LocalResponseNorm(2), "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"),
]


@pytest.mark.parametrize("module,text", REPRS, ids=[t for _, t in REPRS])
def test_repr_matches_pytorch(module, text):
    assert repr(module) == text


def test_layer_norm_params_and_forward():
    m = nn.LayerNorm([2, 3])
    assert m.normalized_shape == (2, 3)
    assert_close(m.weight, np.ones((2, 3), dtype=np.float32))
    assert_close(m.bias, np.zeros((2, 3), dtype=np.float32))
    x = _x(4, 2, 3).requires_grad_()
    assert_close(m(x), F.layer_norm(x, (2, 3), m.weight, m.bias))
    m(x).pow(2).sum().backward()
    assert m.weight.grad.shape == (2, 3) and x.grad.shape == x.shape
    assert list(nn.LayerNorm(3, elementwise_affine=False).state_dict()) == []
    assert list(nn.LayerNorm(3, bias=False).state_dict()) == ["weight"]


def test_group_norm():
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups "
                       r"\(4\)"):
        nn.GroupNorm(4, 6)
    m = nn.GroupNorm(2, 4)
    x = _x(3, 4, 5)
    y = m(x).reshape(3, 2, 10)
    assert_close(y.mean(2), np.zeros((3, 2)), atol=1e-5)
    assert list(nn.GroupNorm(2, 4, bias=False).state_dict()) == ["weight"]
    assert list(nn.GroupNorm(2, 4, affine=False).parameters()) == []


def test_rms_norm_and_local_response_norm():
    m = nn.RMSNorm(4)
    x = _x(3, 4)
    assert_close(m(x), F.rms_norm(x, (4,), m.weight))
    lrn = nn.LocalResponseNorm(3, alpha=0.5)
    x3 = _x(2, 5, 4)
    assert_close(lrn(x3), F.local_response_norm(x3, 3, alpha=0.5))


def test_instance_norm_layers():
    x = _x(2, 3, 5)
    m = nn.InstanceNorm1d(3)
    assert list(m.state_dict()) == [] and m.running_mean is None
    y = m(x)
    assert_close(y.mean(2), np.zeros((2, 3)), atol=1e-5)
    assert_close(m(x[0]), y[0], atol=1e-6)  # unbatched input
    t = nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    assert list(t.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    x4 = _x(2, 3, 2, 2)
    t(x4)
    assert t.running_mean.abs().sum().item() > 0
    assert t.num_batches_tracked.item() == 0  # instance norm does not count batches
    t.eval()
    stats = t.running_mean.clone()
    t(x4)
    assert_close(t.running_mean, stats)
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(_x(2, 3))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match "
                       r"num_features \(4\), but got: 3."):
        nn.InstanceNorm1d(4, affine=True)(_x(1, 3, 3))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(4)(_x(1, 3, 3))
    assert nn.InstanceNorm3d(2)(_x(2, 2, 2, 2, 2)).shape == (2, 2, 2, 2, 2)


def test_instance_norm_old_checkpoint_with_untracked_stats():
    m = nn.InstanceNorm1d(2)
    state = {"running_mean": ember.zeros(2), "running_var": ember.ones(2)}
    with pytest.raises(RuntimeError, match="Unexpected running stats buffer"):
        m.load_state_dict(state)
