"""nn.utils.spectral_norm, the hook-based form: weight_orig / sigma with power iteration
in training mode, PyTorch's state_dict keys, remove_spectral_norm."""

import numpy as np
import pytest

import ember
from ember import nn

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

_W = np.arange(54, dtype=np.float32).reshape(3, 2, 3, 3) / 50 - 0.5
_X = np.linspace(-1, 1, 100, dtype=np.float32).reshape(2, 2, 5, 5)


def _normalized_conv(lib):
    conv = lib.nn.Conv2d(2, 3, 3)
    with lib.no_grad():
        conv.weight.copy_(lib.tensor(_W))
        conv.bias.zero_()
    lib.nn.utils.spectral_norm(conv)
    with lib.no_grad():
        conv.weight_u.copy_(lib.tensor([0.6, 0.8, 0.0]))
        conv.weight_v.copy_(lib.tensor(np.full(18, 18 ** -0.5, np.float32)))
    return conv


def test_weight_is_divided_by_the_power_iteration_estimate_of_sigma():
    conv = _normalized_conv(ember)
    assert sorted(conv.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    conv(ember.tensor(_X))
    # one step from the set vectors: v = normalize(W^T u), u = normalize(W v)
    w = _W.reshape(3, -1)
    v = w.T @ [0.6, 0.8, 0.0]
    v /= np.linalg.norm(v)
    u = w @ v
    u /= np.linalg.norm(u)
    np.testing.assert_allclose(conv.weight_u.numpy(), u, rtol=1e-5)
    np.testing.assert_allclose(conv.weight.detach().numpy(), _W / (u @ w @ v), rtol=1e-5)
    # many steps converge to the largest singular value
    conv.train()
    for _ in range(30):
        conv(ember.tensor(_X))
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(conv.weight.detach().numpy(), _W / sigma, rtol=1e-4)
    u_before = conv.weight_u.numpy().copy()
    conv.eval()
    conv(ember.tensor(_X))
    np.testing.assert_array_equal(conv.weight_u.numpy(), u_before)  # no iteration in eval


def test_gradients_reach_weight_orig_and_remove_restores_one_parameter():
    conv = _normalized_conv(ember)
    conv(ember.tensor(_X)).sum().backward()
    assert conv.weight_orig.grad.shape == (3, 2, 3, 3)
    expected = conv.weight.detach().numpy()
    conv.eval()
    nn.utils.remove_spectral_norm(conv)
    assert sorted(conv.state_dict()) == ["bias", "weight"]
    assert isinstance(conv.weight, nn.Parameter)
    np.testing.assert_allclose(conv.weight.detach().numpy(), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(conv)


def test_dim_defaults_and_errors():
    deconv = nn.utils.spectral_norm(nn.ConvTranspose2d(4, 2, 3))
    assert deconv.weight_u.shape == (2,) and deconv.weight_v.shape == (36,)
    linear = nn.utils.spectral_norm(nn.Linear(5, 3))
    assert linear.weight_u.shape == (3,) and linear.weight_v.shape == (5,)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(linear)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_pytorch():
    results = []
    for lib in (ember, torch):
        conv = _normalized_conv(lib)
        x = lib.tensor(_X)
        first = conv(x)
        first.sum().backward()
        second = conv(x)
        conv.eval()
        third = conv(x)
        results.append([t.detach().numpy() for t in (first, second, third, conv.weight_orig.grad,
                                                      conv.weight_u, conv.weight_v)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
