"""The engine's and Function.apply's fast paths keep the general paths' behaviour.

Gradients that reach one node from several edges are summed in place once the engine made
the sum itself; nothing the user or a hook holds may change.  A freed node still refuses a
second backward.
"""

import numpy as np
import pytest

import ember


def test_accumulated_gradient_is_the_full_sum():
    w = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = w
    for _ in range(5):
        y = y * w  # w gets a gradient from every step: summed in the engine's buffer
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 6 * np.array([1.0, 2.0, 3.0]) ** 5, rtol=1e-6)


def test_user_gradients_are_not_written_into():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * 3
    gy = ember.tensor([1.0, 1.0])
    gz = ember.tensor([1.0, 1.0])
    # y's buffer starts as the user's gy, then z's gradient is added (twice over two calls)
    ember.autograd.backward([y, z], [gy, gz], retain_graph=True)
    ember.autograd.backward([y, z], [gy, gz])
    assert gy.tolist() == [1.0, 1.0] and gz.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [16.0, 16.0]


def test_hook_sees_the_full_sum_and_keeps_it():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    seen = []
    h.register_hook(lambda g: seen.append(g))
    out = h * 2 + h * 3 + h * 4  # three gradients summed into h's buffer
    out.sum().backward()
    assert seen[0].tolist() == [9.0, 9.0]
    assert x.grad.tolist() == [9.0, 9.0]


def test_zero_dim_gradients_accumulate():
    s = ember.tensor(2.0, requires_grad=True)
    out = s * s + s * 3 + s
    out.backward()
    assert s.grad.item() == pytest.approx(8.0)
    assert s.grad.dim() == 0


def test_grad_of_a_non_leaf_used_several_times():
    a = ember.ones(3, requires_grad=True)
    b = a * 2
    c = b * b + b * 3 + b
    (gb,) = ember.autograd.grad(c.sum(), b)
    assert gb.tolist() == [8.0, 8.0, 8.0]


def test_second_backward_through_freed_graph_raises():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    assert not y.grad_fn.next_functions[0][0]._saved  # freed reads as "nothing saved"


def test_inplace_write_after_save_is_still_caught():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    b = a * a
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_transpose_and_relu_backward_on_arrays_match_the_recorded_forms():
    """t()'s and relu's backward skip Function.apply when nothing records; a recorded
    backward (create_graph) still goes through it, and both give the same gradients."""
    from ember.autograd import gradgradcheck

    w = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)
    x = ember.randn(4, 3, dtype=ember.float64)
    out = (x @ w.t()).relu() * ember.arange(20.0, dtype=ember.float64).reshape(4, 5)
    (gw,) = ember.autograd.grad(out.sum(), w)
    (gw2,) = ember.autograd.grad((x @ w.t()).relu().mul(
        ember.arange(20.0, dtype=ember.float64).reshape(4, 5)).sum(), w, create_graph=True)
    expected = ((x.numpy() @ w.detach().numpy().T > 0) * np.arange(20.0).reshape(4, 5)).T \
        @ x.numpy()
    np.testing.assert_allclose(gw.numpy(), expected)
    np.testing.assert_allclose(gw2.detach().numpy(), expected)
    assert gw2.requires_grad and not gw.requires_grad
    assert gradgradcheck(lambda a: (x @ a.t()).relu().pow(2).sum(), (w,))


def test_transpose_backward_on_arrays_never_hands_the_callers_gradient_to_a_leaf():
    g = ember.randn(2, 3)
    a = ember.randn(3, 2, requires_grad=True)
    a.t().backward(g)  # t()'s backward returns a view of g: the leaf must copy it
    np.testing.assert_array_equal(a.grad.numpy(), g.numpy().T)
    g.mul_(0)
    assert np.abs(a.grad.numpy()).sum() > 0
