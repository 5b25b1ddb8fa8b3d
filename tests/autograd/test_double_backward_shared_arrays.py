"""Second-order gradients when two tensors hold the same array (ember/_core/function.py)."""

import numpy as np
import pytest

import ember
from ember.autograd import grad


def _second_order(a, b):
    ga, gb = grad((a * b).sum(), [a, b], create_graph=True)
    return grad(ga.sum(), [a, b], allow_unused=True)


@pytest.mark.parametrize("make", ["detach", "from_numpy"])
def test_a_saved_array_names_its_own_tensor(make):
    base = np.array([1.0, -2.0, 3.0])
    if make == "detach":
        x = ember.tensor(base)
        a, b = x.detach().requires_grad_(), x.detach().requires_grad_()
    else:
        a, b = ember.from_numpy(base).requires_grad_(), ember.from_numpy(base).requires_grad_()
    # d(a*b)/da = b, so d(sum b)/da is absent and d(sum b)/db = 1
    da, db = _second_order(a, b)
    assert da is None
    np.testing.assert_array_equal(db.numpy(), np.ones(3))
    assert np.shares_memory(a.detach().numpy(), b.detach().numpy())  # nothing was copied


def test_same_tensor_twice_still_counts_both_uses():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    (g,) = grad((x * x).sum(), [x], create_graph=True)  # 2x
    (h,) = grad(g.sum(), [x])
    np.testing.assert_array_equal(h.numpy(), [2.0, 2.0])
