"""The engine seen from outside: backward/grad, accumulation, higher order, leaves,
detach/clone/.data, in-place rules and PyTorch's error messages."""

import gc
import re
import warnings
import weakref

import numpy as np
import pytest

import ember
from ember import autograd

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def leaf(values, dtype=ember.float32):
    return ember.tensor(values, dtype=dtype, requires_grad=True)


# --- backward and .grad ---------------------------------------------------------------------


def test_backward_scalar_and_accumulation():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    assert x.grad.requires_grad is False and x.grad.grad_fn is None
    (x * x).sum().backward()  # a new graph: gradients add up in .grad
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    x.grad = None
    (3 * x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_backward_with_explicit_gradient():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(ember.tensor([1.0, 0.5, 2.0]))
    assert x.grad.tolist() == [2.0, 2.0, 12.0]  # 2x * g


def test_backward_keyword_arguments_and_autograd_backward():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    autograd.backward([(a * b).sum(), (a * a).sum()], grad_tensors=[ember.tensor(1.0),
                                                                     ember.tensor(2.0)])
    assert a.grad.tolist() == [3.0 + 4 * 1.0, 4.0 + 4 * 2.0]  # b + 2 * 2a
    assert b.grad.tolist() == [1.0, 2.0]
    c = leaf([2.0])
    (c * c).sum().backward(gradient=None, retain_graph=False, create_graph=False, inputs=[c])
    assert c.grad.tolist() == [4.0]


def test_backward_needs_scalar_or_gradient():
    y = leaf([1.0, 2.0, 3.0]) * 2
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar "
                                           "outputs$"):
        y.backward()


def test_a_gradient_of_another_dtype_is_cast_before_backward_runs():
    # as in PyTorch: a float32 gradient of a float64 output runs float64 formulas (not
    # float32 ones cast at the end), and a float64 gradient of a float32 output float32
    g32 = np.array([0.1, 0.7], dtype=np.float32)
    x = ember.tensor([1.0 / 3.0, 2.0 / 3.0], dtype=ember.float64, requires_grad=True)
    (gx,) = autograd.grad(x * 3, x, ember.tensor(g32))
    assert gx.dtype == ember.float64
    np.testing.assert_array_equal(gx.numpy(), g32.astype(np.float64) * 3)
    x.grad = None
    (x * 3).backward(ember.tensor(g32))
    np.testing.assert_array_equal(x.grad.numpy(), g32.astype(np.float64) * 3)
    y = ember.tensor([1.0 / 3.0, 2.0 / 3.0], requires_grad=True)
    (gy,) = autograd.grad(y * 3, y, ember.tensor(g32.astype(np.float64)))
    assert gy.dtype == ember.float32
    np.testing.assert_array_equal(gy.numpy(), (g32 * np.float32(3)))
    # with create_graph the cast is recorded: the gradient is differentiable in it
    go = ember.tensor(g32, requires_grad=True)
    (gx,) = autograd.grad(x * x, x, go, create_graph=True)
    (ggo,) = autograd.grad(gx.sum(), go)
    assert ggo.dtype == ember.float32
    np.testing.assert_allclose(ggo.numpy(), 2 * x.detach().numpy(), rtol=1e-7)


def test_gradient_shape_mismatch_message():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    expected = ("Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] "
                "has a shape of torch.Size([3]).")
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        y.backward(ember.ones(2))
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        autograd.grad(y, x, ember.ones(2))


def test_backward_twice_needs_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time "
                                           r"\(or directly access saved tensors after they have "
                                           r"already been freed\)"):
        y.backward()


def test_backward_of_tensor_without_grad_fn():
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad and does "
                                           "not have a grad_fn$"):
        ember.ones(2).sum().backward()
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="^element 1 of tensors does not require grad"):
        autograd.grad([x.sum(), ember.ones(1).sum()], [x])


def test_backward_inputs_restricts_accumulation():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a * b).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 4.0]
    assert b.grad is None
    with pytest.raises(RuntimeError, match=re.escape(
            "`inputs` argument to `backward()` cannot be empty.")):
        (a * b).sum().backward(inputs=[])


def test_backward_inputs_non_leaf_gets_grad_and_retains_it():
    x = leaf([1.0, 2.0])
    h = x * 3
    (h * h).sum().backward(inputs=[h])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a retained non-leaf grad gives no warning
        assert h.grad.tolist() == [6.0, 12.0]
    assert h.retains_grad and x.grad is None
    h2 = x * 3
    h2.retain_grad()
    (h2 * h2).sum().backward(inputs=[h2])  # counted once, not twice
    assert h2.grad.tolist() == [6.0, 12.0]


# --- autograd.grad ----------------------------------------------------------------------------


def test_grad_returns_tuple_and_leaves_dot_grad_alone():
    x = leaf([1.0, 2.0])
    y = (x * x * x).sum()
    (g,) = autograd.grad(y, x)
    assert g.tolist() == [3.0, 12.0]  # 3x^2
    assert x.grad is None
    assert g.requires_grad is False
    gs = autograd.grad((x * 2).sum(), [x])
    assert isinstance(gs, tuple) and len(gs) == 1 and gs[0].tolist() == [2.0, 2.0]


def test_grad_with_grad_outputs_and_several_outputs():
    x = leaf([1.0, 2.0])
    y1, y2 = x * x, x * 3
    (g,) = autograd.grad([y1, y2], [x], [ember.tensor([1.0, 1.0]), ember.tensor([2.0, 0.0])])
    assert g.tolist() == [2.0 + 6.0, 4.0 + 0.0]


def test_grad_unused_input():
    x, z = leaf([1.0]), leaf([5.0])
    y = (x * 2).sum()
    msg = ("The differentiated Tensor at index 1 appears to not have been used in the graph. "
           "Set allow_unused=True if this is the desired behavior.")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gx.tolist() == [2.0] and gz is None
    gx, gz = autograd.grad(y, [x, z], materialize_grads=True, retain_graph=True)
    assert gz.tolist() == [0.0] and gz.dtype is ember.float32
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                                         "materialize_grads=True"):
        autograd.grad(y, [x, z], allow_unused=False, materialize_grads=True)


def test_grad_input_errors():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require "
                                           "grad$"):
        autograd.grad((x * 2).sum(), [ember.ones(1)])
    with pytest.raises(RuntimeError, match=re.escape(
            "`inputs` argument to `grad()` cannot be empty.")):
        autograd.grad((x * 2).sum(), [])


def test_grad_wrt_intermediate():
    x = leaf([2.0])
    h = x * 3
    y = (h * h).sum()
    (gh,) = autograd.grad(y, h, retain_graph=True)
    assert gh.tolist() == [12.0]  # 2h
    (gx,) = autograd.grad(y, x)
    assert gx.tolist() == [36.0]  # 18x


# --- higher order ---------------------------------------------------------------------------


def test_third_order_derivative_of_x4():
    x = leaf(2.0)
    y = x * x * x * x
    (g1,) = autograd.grad(y, x, create_graph=True)
    assert g1.item() == 32.0 and g1.requires_grad  # 4x^3
    (g2,) = autograd.grad(g1, x, create_graph=True)
    assert g2.item() == 48.0  # 12x^2
    (g3,) = autograd.grad(g2, x, create_graph=True)
    assert g3.item() == 48.0  # 24x
    (g4,) = autograd.grad(g3, x)
    assert g4.item() == 24.0


def test_third_order_derivative_with_pow():
    x = leaf(1.5, ember.float64)
    y = x ** 4
    g1 = autograd.grad(y, x, create_graph=True)[0]
    g2 = autograd.grad(g1, x, create_graph=True)[0]
    g3 = autograd.grad(g2, x)[0]
    assert g1.item() == pytest.approx(4 * 1.5 ** 3)
    assert g2.item() == pytest.approx(12 * 1.5 ** 2)
    assert g3.item() == pytest.approx(24 * 1.5)


def test_backward_create_graph_makes_grad_differentiable():
    x = leaf(3.0)
    (x * x * x).backward(create_graph=True)
    assert x.grad.item() == 27.0 and x.grad.requires_grad
    (gg,) = autograd.grad(x.grad, x)
    assert gg.item() == 18.0  # 6x


def test_mixed_second_derivative():
    x, y = leaf(2.0), leaf(5.0)
    f = x * x * y
    (fx,) = autograd.grad(f, x, create_graph=True)  # 2xy = 20
    assert fx.item() == 20.0
    fxy, fxx = autograd.grad(fx, [y, x])
    assert fxy.item() == 4.0 and fxx.item() == 10.0  # 2x, 2y


# --- graph structure ------------------------------------------------------------------------


def test_shared_subexpressions_and_broadcasting():
    x = leaf([1.0, 2.0])
    y = x * x
    (y + y).sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]
    a = leaf([[1.0], [2.0], [3.0]])
    b = leaf([1.0, 2.0, 3.0, 4.0])
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and a.grad.tolist() == [[10.0], [10.0], [10.0]]
    assert b.grad.tolist() == [6.0, 6.0, 6.0, 6.0]


def test_grad_dtype_follows_leaf():
    x = leaf([1.0, 2.0], ember.float64)
    (x * 2).sum().backward()
    assert x.grad.dtype is ember.float64


def test_is_leaf_rules():
    x = leaf([1.0])
    c = ember.ones(1)
    assert x.is_leaf and c.is_leaf
    assert not (x * 2).is_leaf
    assert (c * 2).is_leaf and (c * 2).grad_fn is None
    with ember.no_grad():
        assert (x * 2).is_leaf and not (x * 2).requires_grad
    assert x.detach().is_leaf


def test_requires_grad_flags():
    x = ember.ones(2)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad
    with pytest.raises(RuntimeError, match="^only Tensors of floating point"):
        ember.ones(2, dtype=ember.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="^only Tensors of floating point"):
        ember.tensor([1, 2], requires_grad=True)
    y = x * 2
    y.requires_grad_(True)  # allowed: it already requires grad
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf "
                                           "variables"):
        y.requires_grad_(False)


def test_retain_grad():
    x = leaf([1.0, 2.0])
    y = x * 3
    assert not y.retains_grad
    y.retain_grad()
    y.retain_grad()  # a second call changes nothing
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]  # 2y
    assert x.grad.tolist() == [18.0, 36.0]
    x.retain_grad()  # on a leaf: no effect
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           "requires_grad=False"):
        ember.ones(1).retain_grad()


def test_non_leaf_grad_access_warns():
    x = leaf([1.0])
    y = x * 2
    with pytest.warns(UserWarning, match="The .grad attribute of a Tensor that is not a leaf "
                                         "Tensor is being accessed"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None  # leaves: no warning
        y.retain_grad()
        assert y.grad is None


# --- detach, clone, .data -------------------------------------------------------------------


def test_detach_shares_memory_and_leaves_graph():
    x = leaf([1.0, 2.0])
    h = x * 1
    d = h.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    assert d.data_ptr() == h.data_ptr()
    d.add_(10)  # seen through the original (same memory)
    assert h.tolist() == [11.0, 12.0]


def test_detach_inplace_is_caught_at_backward():
    a = leaf([1.0, 2.0, 3.0])
    y = (a * a).sum()  # saves a
    a.detach().add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [torch.FloatTensor [3]] is at version 1; expected version 0 "
            "instead.")):
        y.backward()


def test_version_error_names_the_node():
    x = leaf([1.0, 2.0])
    h = x * 1
    y = h * h
    h.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "[torch.FloatTensor [2]], which is output 0 of Add, is at version 1; expected "
            "version 0 instead. Hint: enable anomaly detection")):
        y.sum().backward()


def test_detach_inplace():
    x = leaf([1.0])
    y = x * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad
    v = (x * 2).view(1)
    msg = "Can't detach views in-place. Use detach() instead."
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        v.detach_()


def test_clone_is_new_memory_in_graph():
    x = leaf([1.0, 2.0])
    c = x.clone()
    assert c.data_ptr() != x.data_ptr()
    assert c.grad_fn.name() == "CloneBackward0" and not c.is_leaf
    (c * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_data_shares_memory_and_is_untracked():
    x = leaf([1.0, 2.0])
    d = x.data
    assert d.requires_grad is False and d.grad_fn is None
    assert d.data_ptr() == x.data_ptr()
    y = (x * x).sum()
    x.data.mul_(10)  # not caught: .data has its own version counter
    y.backward()
    assert x.grad.tolist() == [20.0, 40.0]  # the new values are used
    assert x.requires_grad  # still a leaf that requires grad
    x.data = ember.tensor([5.0, 6.0])
    assert x.tolist() == [5.0, 6.0] and x.requires_grad


def test_inplace_on_leaf_requiring_grad():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in "
                                           "an in-place operation.$"):
        x.add_(1)
    with ember.no_grad():
        x.add_(1)  # allowed without recording, as in an optimizer step
    assert x.tolist() == [2.0, 3.0] and x.requires_grad


def test_inplace_on_non_leaf_is_differentiated():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.mul_(x)  # y = 2x * x
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]  # 4x


# --- memory ---------------------------------------------------------------------------------


def test_graph_is_freed_by_reference_counting():
    gc.collect()
    gc.disable()
    try:
        x = leaf([1.0, 2.0])
        y = x * x
        z = (y * 3).sum()
        refs = [weakref.ref(y.grad_fn), weakref.ref(z.grad_fn), weakref.ref(y)]
        z.backward()
        del y, z
        assert all(r() is None for r in refs)
        assert x.grad.tolist() == [6.0, 12.0]
    finally:
        gc.enable()


def test_create_graph_grad_is_freed():
    gc.collect()
    gc.disable()
    try:
        x = leaf([1.0, 2.0])
        (g,) = autograd.grad((x * x * x).sum(), x, create_graph=True)
        ref = weakref.ref(g.grad_fn)
        del g
        assert ref() is None
    finally:
        gc.enable()


# --- PyTorch parity -------------------------------------------------------------------------


@needs_torch
def test_composite_gradients_match_torch():
    rng = np.random.default_rng(0)
    a_np, b_np = rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(0.5, 2.0, (4,))

    def f(lib, a, b):
        h = a * b + a / (b + 1)
        return ((h * h).sum(1) - (a - b).sum(1)).sum()

    ea, eb = ember.tensor(a_np, requires_grad=True), ember.tensor(b_np, requires_grad=True)
    ta, tb = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    f(ember, ea, eb).backward()
    f(torch, ta, tb).backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
    ga = autograd.grad(autograd.grad(f(ember, ea, eb), ea, create_graph=True)[0].sum(), eb)[0]
    gt = torch.autograd.grad(torch.autograd.grad(f(torch, ta, tb), ta, create_graph=True)[0]
                             .sum(), tb)[0]
    np.testing.assert_allclose(ga.numpy(), gt.numpy(), rtol=1e-12)


@needs_torch
def test_error_messages_match_torch():
    def message(lib, fn):
        with pytest.raises(RuntimeError) as info:
            fn(lib)
        return str(info.value)

    cases = [
        lambda lib: (lib.ones(3, requires_grad=True) * 2).backward(),
        lambda lib: lib.ones(2).sum().backward(),
        lambda lib: lib.ones(2, requires_grad=True).add_(1),
        lambda lib: lib.autograd.grad((lib.ones(1, requires_grad=True) * 2).sum(),
                                      [lib.ones(1)]),
        lambda lib: lib.autograd.grad((lib.ones(1, requires_grad=True) * 2).sum(),
                                      [lib.ones(1, requires_grad=True)]),
        lambda lib: (lib.ones(3, requires_grad=True) * 2).backward(lib.ones(2)),
    ]
    for fn in cases:
        assert message(ember, fn) == message(torch, fn)
