"""BatchNorm1d/2d/3d: train/eval switching, running statistics and their buffers,
momentum (incl. the cumulative average), options, errors, printing."""

from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.testing import assert_close


def _x(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).normal(size=shape).astype(np.float32))


def test_defaults_buffers_and_state_dict():
    m = nn.BatchNorm2d(3)
    assert_close(m.weight, np.ones(3, dtype=np.float32))
    assert_close(m.bias, np.zeros(3, dtype=np.float32))
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    assert m.num_batches_tracked.dtype is ember.int64 and m.num_batches_tracked.item() == 0
    assert [n for n, _ in m.named_buffers()] == ["running_mean", "running_var",
                                                 "num_batches_tracked"]
    assert not m.running_mean.requires_grad
    d = m.double()
    assert d.running_mean.dtype is ember.float64 and d.num_batches_tracked.dtype is ember.int64


def test_training_updates_running_stats_and_eval_uses_them():
    m = nn.BatchNorm2d(3, momentum=0.5)
    x = _x(4, 3, 2, 2)
    y = m(x)
    data = x.numpy()
    assert_close(y.mean((0, 2, 3)), np.zeros(3), atol=1e-5)
    assert_close(m.running_mean, 0.5 * data.mean(axis=(0, 2, 3)), rtol=1e-5)
    assert_close(m.running_var, 0.5 + 0.5 * data.var(axis=(0, 2, 3), ddof=1), rtol=1e-5)
    assert m.num_batches_tracked.item() == 1
    m.eval()
    stats = m.running_mean.clone(), m.running_var.clone()
    out = m(x)
    expected = (data - stats[0].numpy()[:, None, None]) / np.sqrt(
        stats[1].numpy()[:, None, None] + 1e-5)
    assert_close(out, expected, rtol=1e-5, atol=1e-6)
    assert m.num_batches_tracked.item() == 1
    assert_close(m.running_mean, stats[0])
    assert m(_x(1, 3, 2, 2)).shape == (1, 3, 2, 2)  # batch of one is fine in eval mode


def test_momentum_none_is_the_cumulative_average():
    m = nn.BatchNorm1d(2, momentum=None)
    batches = [_x(5, 2, seed=s) for s in range(3)]
    for b in batches:
        m(b)
    means = np.stack([b.numpy().mean(0) for b in batches])
    assert_close(m.running_mean, means.mean(0), rtol=1e-5, atol=1e-6)
    assert m.num_batches_tracked.item() == 3
    assert repr(m) == ("BatchNorm1d(2, eps=1e-05, momentum=None, affine=True, bias=True, "
                       "track_running_stats=True)")


def test_without_running_stats_and_affine():
    m = nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert list(m.parameters()) == [] and m.state_dict() == OrderedDict()
    assert m.running_mean is None and m.num_batches_tracked is None
    x = _x(4, 3)
    m.eval()  # no running statistics: batch statistics even in eval mode
    assert_close(m(x).mean(0), np.zeros(3), atol=1e-5)
    assert repr(m) == ("BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                       "track_running_stats=False)")
    nb = nn.BatchNorm2d(3, bias=False)
    assert nb.bias is None and list(nb.state_dict())[:2] == ["weight", "running_mean"]


def test_training_without_tracking_leaves_buffers_alone():
    m = nn.BatchNorm1d(3)
    m.track_running_stats = False
    m(_x(4, 3))
    assert m.num_batches_tracked.item() == 0
    assert_close(m.running_mean, np.zeros(3, dtype=np.float32))


@pytest.mark.parametrize("cls,bad,msg", [
    (nn.BatchNorm1d, (2, 3, 4, 4), "expected 2D or 3D input (got 4D input)"),
    (nn.BatchNorm2d, (2, 3, 4), "expected 4D input (got 3D input)"),
    (nn.BatchNorm3d, (2, 3, 4, 4), "expected 5D input (got 4D input)"),
])
def test_wrong_rank_raises_value_error(cls, bad, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        cls(3)(ember.zeros(*bad))


def test_single_value_per_channel_in_training_raises():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(4)(_x(1, 4))


def test_gradients_flow_to_input_and_parameters():
    m = nn.BatchNorm3d(2)
    x = _x(2, 2, 2, 2, 2).requires_grad_()
    (m(x) * _x(2, 2, 2, 2, 2, seed=1)).sum().backward()
    assert x.grad.shape == x.shape and m.weight.grad.shape == (2,) and m.bias.grad.shape == (2,)
    assert abs(float(x.grad.sum().item())) < 1e-4  # batch norm output is shift invariant


def test_load_state_dict_without_num_batches_tracked():
    src = nn.BatchNorm1d(2)
    src(_x(4, 2))
    state = src.state_dict()
    del state["num_batches_tracked"]
    state._metadata[""] = {"version": 1}
    dst = nn.BatchNorm1d(2)
    dst.load_state_dict(state)
    assert dst.num_batches_tracked.item() == 0
    assert_close(dst.running_mean, src.running_mean)
    full = src.state_dict()
    dst.load_state_dict(full)
    assert dst.num_batches_tracked.item() == 1
    with pytest.raises(RuntimeError, match="Missing key"):
        nn.BatchNorm1d(2).load_state_dict({"weight": ember.ones(2), "bias": ember.zeros(2)})


def test_reset_and_dtype_device_arguments():
    m = nn.BatchNorm1d(2, dtype=ember.float64)
    assert m.weight.dtype is ember.float64 and m.running_var.dtype is ember.float64
    m(_x(3, 2).double())
    m.reset_running_stats()
    assert m.num_batches_tracked.item() == 0
    assert_close(m.running_var, np.ones(2))
