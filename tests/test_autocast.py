"""autocast on the CPU: which ops run in the lower precision, which in float32, gradients,
nesting, and the same dtypes and values (to that precision) as PyTorch."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def test_products_run_in_the_autocast_dtype_and_losses_in_float32():
    x, layer = ember.randn(4, 8), nn.Linear(8, 3)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
        y = layer(x)
        assert y.dtype == ember.bfloat16 and layer.weight.dtype == ember.float32
        assert (x @ x.t()).dtype == ember.bfloat16
        assert ember.bmm(x.reshape(2, 2, 8), ember.ones(2, 8, 1)).dtype == ember.bfloat16
        assert ember.einsum("ij,kj->ik", x, x).dtype == ember.bfloat16
        image, kernel = ember.randn(1, 1, 5, 5), ember.randn(2, 1, 3, 3)
        assert F.conv2d(image, kernel).dtype == ember.bfloat16
        assert y.relu().dtype == ember.bfloat16  # other ops: their inputs' dtype
        assert F.cross_entropy(y, ember.tensor([0, 1, 2, 0])).dtype == ember.float32
        assert F.mse_loss(y, ember.zeros(4, 3)).dtype == ember.float32
        assert ember.cat([y, x[:, :3]]).dtype == ember.float32  # promotion, as usual
        assert (x.double() @ x.double().t()).dtype == ember.float64  # float64 stays
    assert not ember.is_autocast_enabled("cpu") and layer(x).dtype == ember.float32


def test_values_are_the_float32_results_rounded():
    a, b = ember.randn(5, 7), ember.randn(7, 3)
    with ember.autocast("cpu", dtype=ember.float16):
        product = a @ b
    expected = a.half().float().numpy() @ b.half().float().numpy()
    np.testing.assert_allclose(product.float().numpy(), expected, rtol=2e-3, atol=2e-3)


def test_gradients_reach_float32_parameters():
    layer = nn.Linear(8, 3)
    with ember.autocast("cpu"):
        loss = F.cross_entropy(layer(ember.randn(4, 8)), ember.tensor([0, 1, 2, 0]))
    loss.backward()
    assert layer.weight.grad.dtype == ember.float32 and layer.bias.grad.dtype == ember.float32
    assert float(layer.weight.grad.abs().sum()) > 0


def test_nesting_decorator_and_exit():
    layer = nn.Linear(2, 2)

    @ember.autocast("cpu", dtype=ember.float16)
    def half(v):
        return layer(v)

    with ember.autocast("cpu"):
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert layer(ember.ones(1, 2)).dtype == ember.float32
        assert half(ember.ones(1, 2)).dtype == ember.float16
        assert layer(ember.ones(1, 2)).dtype == ember.bfloat16
    with pytest.raises(ValueError):
        with ember.autocast("cpu"):
            raise ValueError("boom")
    assert not ember.is_autocast_enabled("cpu") and layer(ember.ones(1, 2)).dtype == ember.float32


def test_training_with_autocast_learns():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.randn(64, 4)
    y = (x[:, 0] > 0).long()
    for _ in range(60):
        with ember.autocast("cpu"):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float((model(x).argmax(1) == y).float().mean()) > 0.9


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_matches_pytorch(dtype):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((16, 8)).astype(np.float32) * 0.3
    kernel = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    image = rng.standard_normal((6, 1, 5, 5)).astype(np.float32)
    target = np.array([0, 1, 2, 3, 1, 0])
    results = []
    for lib in (ember, torch):
        w, k = lib.tensor(weight, requires_grad=True), lib.tensor(kernel, requires_grad=True)
        with lib.autocast("cpu", dtype=getattr(lib, dtype)):
            h = lib.nn.functional.linear(lib.tensor(x), w).relu()
            z = lib.nn.functional.conv2d(lib.tensor(image), k).flatten(1)[:, :16]
            logits = (h * z)[:, :4] @ lib.ones(4, 4)
            loss = (lib.nn.functional.cross_entropy(logits, lib.tensor(target))
                    + lib.nn.functional.mse_loss(h, lib.zeros(6, 16)))
        loss.backward()
        dtypes = [str(t.dtype).split(".")[1] for t in (h, z, logits, loss, w.grad, k.grad)]
        results.append((dtypes, loss.item(), w.grad.numpy(), k.grad.numpy()))
    (d1, l1, w1, k1), (d2, l2, w2, k2) = results
    assert d1 == d2
    assert l1 == pytest.approx(l2, rel=1e-3)
    np.testing.assert_allclose(w1, w2, atol=1e-2 * np.abs(w2).max())
    np.testing.assert_allclose(k1, k2, atol=1e-2 * np.abs(k2).max())
