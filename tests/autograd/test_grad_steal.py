"""A leaf keeps a gradient nobody else holds as its .grad (no copy), and copies otherwise."""

import numpy as np

import ember
from ember._core.accumulate import AccumulateGrad


def test_fresh_gradient_is_kept_without_copy(monkeypatch):
    kept = []
    real = AccumulateGrad.accumulate

    def spy(self, grad, create_graph, steal=False):
        kept.append(steal)
        return real(self, grad, create_graph, steal)

    monkeypatch.setattr(AccumulateGrad, "accumulate", spy)
    w = ember.randn(5, requires_grad=True)
    (w * 2).sum().backward()
    assert kept == [True]
    np.testing.assert_allclose(w.grad.numpy(), 2.0)


def test_linear_weight_gradient_is_kept_and_c_contiguous():
    lin = ember.nn.Linear(3, 4)
    lin(ember.randn(6, 3)).sum().backward()
    assert lin.weight.grad._data.flags.c_contiguous
    x = ember.randn(6, 3)
    expected = np.ones((6, 4), np.float32).T @ x.numpy()
    lin.weight.grad = None
    lin(x).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), expected, rtol=1e-6)


def test_user_gradient_is_copied():
    w = ember.randn(4, requires_grad=True)
    g = ember.ones(4)
    (w * 1).backward(g)
    assert not np.shares_memory(w.grad.numpy(), g.numpy())
    w.backward(g)  # straight into the leaf: the user's tensor itself arrives
    assert not np.shares_memory(w.grad.numpy(), g.numpy())


def test_gradient_stashed_by_a_hook_is_copied_and_not_mutated_later():
    w = ember.randn(3, requires_grad=True)
    stash = []
    w.register_hook(lambda g: stash.append(g))
    (w * 3).sum().backward()
    assert stash[0] is not w.grad
    before = stash[0].numpy().copy()
    (w * 3).sum().backward()  # accumulates into w.grad in place
    np.testing.assert_array_equal(stash[0].numpy(), before)
    np.testing.assert_allclose(w.grad.numpy(), 6.0)


def test_same_gradient_to_two_leaves_is_not_shared():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    (a + b).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    a.grad.add_(1)
    np.testing.assert_allclose(b.grad.numpy(), 1.0)


def test_broadcast_gradient_is_copied_into_a_writable_grad():
    w = ember.randn(2, 3, requires_grad=True)
    (w + 1).sum().backward()  # sum's backward hands out a read-only broadcast view
    assert w.grad._data.flags.writeable
    w.grad += 1
    np.testing.assert_allclose(w.grad.numpy(), 2.0)
