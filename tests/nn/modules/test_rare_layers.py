"""PyTorch's rarer layers: FractionalMaxPool2d/3d, CrossMapLRN2d, LinearCrossEntropyLoss,
NLLLoss2d and Container (NumPy references; PyTorch parity where it is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck

fractional_max_pool2d, fractional_max_pool3d = F.fractional_max_pool2d, F.fractional_max_pool3d


def _windows_reference(x, u, out, k):
    """Fractional max pooling of one (H, W) plane by hand (samples u = (u_w, u_h))."""
    def starts(sample, size, n, kk):
        alpha = (size - kk) / (n - 1)
        s = [int((i + sample) * alpha) - int(sample * alpha) for i in range(n - 1)]
        return s + [size - kk]

    rows, cols = starts(u[1], x.shape[0], out[0], k[0]), starts(u[0], x.shape[1], out[1], k[1])
    return np.array([[x[r:r + k[0], c:c + k[1]].max() for c in cols] for r in rows])


def test_fractional_max_pool2d_matches_the_definition():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 11, 9))
    u = rng.random((2, 3, 2))
    y = fractional_max_pool2d(ember.tensor(x), (2, 3), output_size=(5, 4),
                              _random_samples=ember.tensor(u))
    for n in range(2):
        for c in range(3):
            np.testing.assert_allclose(y[n, c].numpy(),
                                       _windows_reference(x[n, c], u[n, c], (5, 4), (2, 3)))


def test_fractional_max_pool2d_indices_and_unbatched():
    x = ember.randn(3, 10, 10)
    out, idx = fractional_max_pool2d(x, 2, output_ratio=0.5, return_indices=True)
    assert out.shape == (3, 5, 5) and idx.dtype == ember.int64
    np.testing.assert_array_equal(out.numpy(),
                                  np.take_along_axis(x.numpy().reshape(3, -1),
                                                     idx.numpy().reshape(3, -1), 1)
                                  .reshape(3, 5, 5))


def test_fractional_max_pool_gradients():
    x = ember.randn(1, 2, 7, 6, dtype=ember.float64, requires_grad=True)
    u = ember.rand(1, 2, 2, dtype=ember.float64)
    assert gradcheck(lambda t: fractional_max_pool2d(t, 2, (3, 3), _random_samples=u), (x,))
    v = ember.randn(1, 1, 5, 5, 6, dtype=ember.float64, requires_grad=True)
    w = ember.rand(1, 1, 3, dtype=ember.float64)
    assert gradcheck(lambda t: fractional_max_pool3d(t, 2, (3, 3, 4), _random_samples=w),
                     (v,))


def test_fractional_max_pool_errors():
    with pytest.raises(ValueError, match="output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(3)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.FractionalMaxPool2d(3, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="pool height 3 too large"):
        fractional_max_pool2d(ember.randn(1, 1, 5, 5), 3, output_size=4)


def test_fractional_max_pool_module_draws_fresh_windows():
    x = ember.randn(1, 1, 9, 9)
    pool = nn.FractionalMaxPool2d(2, output_size=4)
    ember.manual_seed(0)
    first = pool(x)
    assert first.shape == (1, 1, 4, 4)
    ember.manual_seed(0)
    np.testing.assert_array_equal(first.numpy(), nn.FractionalMaxPool2d(2, 4)(x).numpy())
    samples = [pool(x).numpy() for _ in range(5)]
    assert any(not np.array_equal(samples[0], s) for s in samples[1:])


def test_cross_map_lrn2d_by_hand():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 3, 3))
    size, alpha, beta, k = 3, 0.3, 0.75, 2.0
    y = nn.CrossMapLRN2d(size, alpha, beta, k)(ember.tensor(x)).numpy()
    # channel c uses c-1..c+1 and (PyTorch's running sum) always channel 0
    for c in range(6):
        used = sorted({0} | set(range(max(0, c - 1), min(6, c + 2))))
        energy = (x[:, used] ** 2).sum(1)
        np.testing.assert_allclose(y[:, c], x[:, c] * (k + alpha / size * energy) ** -beta)
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        nn.CrossMapLRN2d(3)(ember.randn(2, 3, 4))


def test_linear_cross_entropy_is_linear_then_cross_entropy():
    ember.manual_seed(0)
    x, w, b = ember.randn(5, 4), ember.randn(3, 4), ember.randn(3)
    y = ember.tensor([0, 2, 1, 1, 0])
    expected = F.cross_entropy(F.linear(x, w, b), y)
    got = F.linear_cross_entropy(x, w, y, linear_bias=b)
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-6)
    loss = nn.LinearCrossEntropyLoss(4, 3, bias=True, label_smoothing=0.1)
    value = loss(x, y)
    value.backward()
    assert loss.linear.weight.grad.shape == (3, 4)
    with pytest.raises(RuntimeError, match="in_features"):
        F.linear_cross_entropy(x, ember.randn(3, 5), y)


def test_linear_cross_entropy_k_dimensional():
    loss = nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), reduction="none")
    x, y = ember.randn(5, 4), ember.randint(0, 3, (5, 2))
    logits = (x @ loss.linear.weight.T).reshape(5, 3, 2)
    np.testing.assert_allclose(loss(x, y).detach().numpy(),
                               F.cross_entropy(logits, y, reduction="none").detach().numpy(),
                               rtol=1e-5)


def test_deprecated_container_and_nll_loss_2d():
    with pytest.warns(FutureWarning):
        box = nn.Container(fc=nn.Linear(2, 2))
    assert isinstance(box.fc, nn.Linear)
    with pytest.warns(FutureWarning):
        criterion = nn.NLLLoss2d()
    logp = F.log_softmax(ember.randn(2, 3, 4, 4), 1)
    target = ember.randint(0, 3, (2, 4, 4))
    np.testing.assert_allclose(criterion(logp, target).item(),
                               F.nll_loss(logp, target).item())


def test_parity_with_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 11, 9)).astype(np.float32)
    u = rng.random((2, 3, 2)).astype(np.float32)
    theirs = torch.nn.functional.fractional_max_pool2d(
        torch.tensor(x), (2, 3), output_size=(5, 4), return_indices=True,
        _random_samples=torch.tensor(u))
    ours = fractional_max_pool2d(ember.tensor(x), (2, 3), output_size=(5, 4),
                                 return_indices=True, _random_samples=ember.tensor(u))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    x5 = rng.standard_normal((2, 3, 7, 8, 9)).astype(np.float32)
    u3 = rng.random((2, 3, 3)).astype(np.float32)
    theirs = torch.nn.functional.fractional_max_pool3d(
        torch.tensor(x5), (2, 3, 2), output_ratio=(0.5, 0.6, 0.7), return_indices=True,
        _random_samples=torch.tensor(u3))
    ours = fractional_max_pool3d(ember.tensor(x5), (2, 3, 2), output_ratio=(0.5, 0.6, 0.7),
                                 return_indices=True, _random_samples=ember.tensor(u3))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for size in (1, 2, 3, 4, 5):
        xc = rng.standard_normal((2, 7, 3, 3))
        np.testing.assert_allclose(
            nn.CrossMapLRN2d(size, 0.2, 0.6, 1.5)(ember.tensor(xc)).numpy(),
            torch.nn.CrossMapLRN2d(size, 0.2, 0.6, 1.5)(torch.tensor(xc)).numpy(), rtol=1e-12)
    theirs = torch.nn.LinearCrossEntropyLoss(4, 3, bias=True, label_smoothing=0.2)
    ours = nn.LinearCrossEntropyLoss(4, 3, bias=True, label_smoothing=0.2)
    ours.load_state_dict({k: ember.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    xs, ys = rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 3, 6)
    np.testing.assert_allclose(ours(ember.tensor(xs), ember.tensor(ys)).item(),
                               theirs(torch.tensor(xs), torch.tensor(ys)).item(), rtol=1e-5)
    assert repr(ours) == repr(theirs)
