"""nn.functional.mse_loss: reductions, legacy arguments, broadcasting warning, gradients."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def test_values_and_reductions():
    a = ember.tensor([1.0, 2.0, 3.0])
    b = ember.tensor([0.0, 0.0, 1.0])
    assert F.mse_loss(a, b).item() == 3.0  # (1 + 4 + 4) / 3
    assert F.mse_loss(a, b, reduction="sum").item() == 9.0
    assert F.mse_loss(a, b, reduction="none").tolist() == [1.0, 4.0, 4.0]
    w = ember.tensor([1.0, 0.0, 2.0])
    assert F.mse_loss(a, b, weight=w, reduction="sum").item() == 9.0
    assert F.mse_loss(a, b, weight=w).item() == pytest.approx(3.0)  # 9 / weight.sum()
    w = ember.tensor([1.0, 0.5, 0.5])  # the weighted mean divides by weight.sum(), as PyTorch
    assert F.mse_loss(a, b, weight=w).item() == pytest.approx((1 + 2 + 2) / 2.0)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(a, b, weight=ember.ones(1))
    with pytest.raises(ValueError, match="^foo is not a valid value for reduction$"):
        F.mse_loss(a, b, reduction="foo")


def test_legacy_arguments_warn():
    a, b = ember.tensor([1.0, 2.0]), ember.tensor([0.0, 0.0])
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, "
                                         "please use reduction='sum' instead."):
        assert F.mse_loss(a, b, size_average=False).item() == 5.0
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.mse_loss(a, b, reduce=False).tolist() == [1.0, 4.0]


def test_broadcasting_warns_and_integer_inputs_fail():
    with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[3, 1\]\)\) that "
                                         r"is different to the input size"):
        F.mse_loss(ember.ones(3), ember.zeros(3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(ember.ones(3), ember.zeros(3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.mse_loss(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))
    assert F.mse_loss(ember.ones(2), ember.ones(2, dtype=ember.int64) * 2).item() == 1.0


def test_gradients():
    x = ember.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    y = ember.tensor(np.array([1.0, 1.0, 1.0]), requires_grad=True)
    F.mse_loss(x, y).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (x.detach().numpy() - 1.0) / 3)
    for reduction in ("mean", "sum", "none"):
        def loss(a, b, reduction=reduction):
            return F.mse_loss(a, b, reduction=reduction)

        assert gradcheck(loss, (x, y))
        assert gradgradcheck(loss, (x, y))


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_torch():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    for reduction in ("mean", "sum", "none"):
        mine = F.mse_loss(ember.tensor(a), ember.tensor(b), reduction=reduction)
        theirs = torch.nn.functional.mse_loss(torch.tensor(a), torch.tensor(b),
                                              reduction=reduction)
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)
