"""swa_utils: AveragedModel (SWA and EMA), SWALR and update_bn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.optim import swa_utils

WEIGHTS = [np.arange(6, dtype=np.float32).reshape(2, 3) / (k + 1) for k in range(5)]


def set_linear(layer, k, lib):
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(WEIGHTS[k]))
        layer.bias.copy_(lib.tensor(np.full(2, float(k), np.float32)))


class RunningMean(nn.Module):
    """A tiny batch-norm-like layer: it tracks the mean of its inputs in a buffer."""

    def __init__(self, n: int, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("running_mean", ember.zeros(n))
        self.register_buffer("num_batches_tracked", ember.tensor(0))

    def reset_running_stats(self):
        self.running_mean.mul_(0)
        self.num_batches_tracked.mul_(0)

    def forward(self, x):
        if self.training:
            with ember.no_grad():
                self.num_batches_tracked.add_(1)
                n = int(self.num_batches_tracked.item())
                factor = 1.0 / n if self.momentum is None else self.momentum
                mean = x.sum(0) / x.shape[0]
                self.running_mean.mul_(1 - factor).add_(mean * factor)
        return x - self.running_mean


def test_swa_average_of_parameters():
    model = nn.Linear(3, 2)
    swa = swa_utils.AveragedModel(model)
    for k in range(5):
        set_linear(model, k, ember)
        swa.update_parameters(model)
    assert int(swa.n_averaged.item()) == 5
    np.testing.assert_allclose(swa.module.weight.detach().numpy(), np.mean(WEIGHTS, axis=0),
                               rtol=1e-6)
    np.testing.assert_allclose(swa.module.bias.detach().numpy(), [2.0, 2.0], rtol=1e-6)
    x = ember.ones(1, 3)
    np.testing.assert_allclose(swa(x).detach().numpy(), swa.module(x).detach().numpy())
    assert swa.module is not model


@pytest.mark.parametrize("kind", ["multi", "single"])
def test_ema(kind):
    model = nn.Linear(3, 2)
    fn = (swa_utils.get_ema_multi_avg_fn(0.9) if kind == "multi"
          else swa_utils.get_ema_avg_fn(0.9))
    swa = (swa_utils.AveragedModel(model, multi_avg_fn=fn) if kind == "multi"
           else swa_utils.AveragedModel(model, avg_fn=fn))
    expected = None
    for k in range(5):
        set_linear(model, k, ember)
        swa.update_parameters(model)
        expected = WEIGHTS[k] if expected is None else 0.9 * expected + 0.1 * WEIGHTS[k]
    np.testing.assert_allclose(swa.module.weight.detach().numpy(), expected, rtol=1e-6)


def test_buffers_copied_or_averaged():
    model = nn.Sequential(nn.Linear(2, 2), RunningMean(2))
    plain = swa_utils.AveragedModel(model)
    with_buffers = swa_utils.AveragedModel(model, use_buffers=True)
    means = []
    for k in range(3):
        model(ember.tensor(np.full((4, 2), float(k + 1), np.float32)))
        means.append(model[1].running_mean.detach().numpy().copy())
        plain.update_parameters(model)
        with_buffers.update_parameters(model)
    np.testing.assert_allclose(plain.module[1].running_mean.detach().numpy(), means[-1])
    np.testing.assert_allclose(with_buffers.module[1].running_mean.detach().numpy(),
                               np.mean(means, axis=0), rtol=1e-6)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="Invalid decay value 1.5 provided"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(nn.Linear(1, 1), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


def test_update_bn_recomputes_running_statistics():
    layer = RunningMean(2)
    model = nn.Sequential(nn.Identity(), layer)
    model.eval()
    batches = [ember.tensor(np.full((3, 2), v, np.float32)) for v in (1.0, 2.0, 6.0)]
    loader = [(b, 0) for b in batches]
    swa_utils.update_bn(loader, model)
    np.testing.assert_allclose(layer.running_mean.detach().numpy(), [3.0, 3.0], rtol=1e-6)
    assert layer.momentum == 0.1 and not model.training
    swa_utils.update_bn(loader, nn.Linear(2, 2))  # no batch norm: nothing happens


def test_matches_pytorch_averaged_model_and_swalr():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (ember, torch):
        model = lib.nn.Linear(3, 2)
        swa = lib.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.75))
        plain = lib.optim.swa_utils.AveragedModel(model)
        opt = lib.optim.SGD(model.parameters(), lr=0.5)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=4)
        lrs = []
        for k in range(5):
            set_linear(model, k, lib)
            swa.update_parameters(model)
            plain.update_parameters(model)
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        results.append((swa.module.weight.detach().numpy().copy(),
                        plain.module.weight.detach().numpy().copy(), lrs))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)
    assert results[0][2] == results[1][2]


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 3])
def test_swalr_matches_pytorch(strategy, anneal_epochs):
    torch = pytest.importorskip("torch")
    sequences = []
    for lib in (ember, torch):
        p = lib.tensor([1.0], requires_grad=True)
        opt = lib.optim.SGD([{"params": [p]}, {"params": [lib.tensor([2.0], requires_grad=True)],
                                               "lr": 0.3}], lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.01, 0.2], anneal_epochs=anneal_epochs,
                                          anneal_strategy=strategy)
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(8):
                opt.step()
                sched.step()
                seq.append(sched.get_last_lr())
        sequences.append(seq)
    assert sequences[0] == sequences[1]


def test_swalr_state_dict():
    p = ember.tensor([1.0], requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)
    sched = swa_utils.SWALR(opt, swa_lr=0.01, anneal_strategy="linear")
    state = sched.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == "linear"
    fresh = swa_utils.SWALR(ember.optim.SGD([p], lr=0.1), swa_lr=0.01)
    fresh.load_state_dict(state)
    assert fresh.anneal_func is swa_utils.SWALR._linear_anneal
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(opt, swa_lr=0.01, anneal_strategy="step")
