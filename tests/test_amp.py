"""ember.amp: GradScaler's loss scaling, unscaling, skipped steps and scale schedule;
autocast's disabled form (the enabled one: tests/test_autocast.py)."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def _setup(lib, **scaler_options):
    model = lib.nn.Linear(3, 1)
    with lib.no_grad():
        model.weight.copy_(lib.tensor([[0.5, -1.0, 2.0]]))
        model.bias.fill_(0.25)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    return model, opt, lib.amp.GradScaler("cpu", **scaler_options)


def _train(lib, steps=5, poison=(2,)):
    """Scaled steps on fixed data; at the `poison` steps the loss is made inf."""
    model, opt, scaler = _setup(lib, init_scale=16.0, growth_interval=2)
    x = lib.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3) / 10)
    history = []
    for step in range(steps):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        if step in poison:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), model.weight.detach().numpy().copy()))
    return history


def test_scaled_gradients_are_unscaled_before_the_step():
    model, opt, scaler = _setup(ember, init_scale=8.0)
    loss = model(ember.ones(1, 3)).sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == pytest.approx(8 * loss.item())
    scaled.backward()
    assert model.weight.grad.tolist() == [[8.0, 8.0, 8.0]]
    scaler.unscale_(opt)
    assert model.weight.grad.tolist() == [[1.0, 1.0, 1.0]]
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)  # does not unscale twice
    assert model.weight.detach().tolist()[0] == pytest.approx([0.4, -1.1, 1.9])
    with pytest.raises(RuntimeError, match="already been called since the last update"):
        scaler.step(opt)
    scaler.update()
    assert scaler.state_dict() == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                   "growth_interval": 2000, "_growth_tracker": 1}


def test_an_inf_gradient_skips_the_step_and_backs_off_and_clean_steps_grow_the_scale():
    history = _train(ember)
    scales = [s for s, _ in history]
    assert scales == [16.0, 32.0, 16.0, 16.0, 32.0]
    np.testing.assert_array_equal(history[2][1], history[1][1])  # skipped
    assert not np.array_equal(history[3][1], history[2][1])


def test_scale_of_nested_outputs_state_dict_round_trip_and_disabled_scaler():
    _, _, scaler = _setup(ember, init_scale=4.0)
    out = scaler.scale([ember.ones(1), (ember.ones(2),)])
    assert out[0].tolist() == [4.0] and out[1][0].tolist() == [4.0, 4.0]
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 4.0
    off = ember.amp.GradScaler("cpu", enabled=False)
    loss = ember.ones(())
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(ValueError, match="growth factor"):
        ember.amp.GradScaler("cpu", growth_factor=1.0)


def test_cuda_scaler_without_a_gpu_disables_itself():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        scaler = ember.cuda.amp.GradScaler()
    assert not scaler.is_enabled()
    assert ember.GradScaler is ember.amp.GradScaler


def test_autocast_disabled_form_and_argument_checks():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.autocast("cpu", enabled=False):
            y = nn.Linear(2, 2)(ember.ones(1, 2))
        with ember.amp.autocast("cuda", enabled=False):
            pass
    assert y.dtype is ember.float32 and not ember.is_autocast_enabled()
    decorated = ember.autocast("cpu", enabled=False)(lambda v: v * 2)
    assert decorated(3) == 6
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        with ember.autocast("cpu", dtype=ember.float64):
            assert not ember.is_autocast_enabled("cpu")
    if not ember.cuda.is_available():  # CUDA autocast without CUDA: disabled, as in PyTorch
        with pytest.warns(UserWarning, match="Disabling autocast"):
            with ember.autocast("cuda", dtype=ember.float16):
                z = nn.Linear(2, 2)(ember.ones(1, 2))
        assert z.dtype is ember.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        ember.autocast("tpu", enabled=False)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_scaled_training_matches_pytorch():
    ours, theirs = _train(ember), _train(torch)
    for (s1, w1), (s2, w2) in zip(ours, theirs):
        assert s1 == s2
        np.testing.assert_allclose(w1, w2, rtol=1e-6)
