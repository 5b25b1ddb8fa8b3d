"""The same code path on every device: ops, backward and moves between devices.

Runs on the CPU always and on CUDA where CuPy sees a GPU (the `device` fixture)."""

import numpy as np

import ember


def test_ops_and_backward_on_device(device):
    x = ember.tensor([[0.5, -1.0], [2.0, 0.25]], device=device, requires_grad=True)
    w = ember.tensor([1.5, -0.5], device=device, requires_grad=True)
    y = (x * w).tanh().sum()
    y.backward()
    assert x.grad.device.type == device and w.grad.device.type == device
    xc = x.detach().cpu_array()
    wc = w.detach().cpu_array()
    t = np.tanh(xc * wc)
    np.testing.assert_allclose(x.grad.cpu().numpy(), (1 - t * t) * wc, rtol=1e-6)
    np.testing.assert_allclose(w.grad.cpu().numpy(), ((1 - t * t) * xc).sum(0), rtol=1e-6)


def test_to_device_is_differentiable(device):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x.to(device) * 3).sum()
    y.backward()
    assert x.grad.device.type == "cpu"
    assert x.grad.tolist() == [3.0, 3.0]


def test_factories_on_device(device):
    z = ember.zeros(2, 3, device=device)
    assert z.device.type == device
    assert ember.ones_like(z).device.type == device
    assert (z + 1).sum().item() == 6.0
