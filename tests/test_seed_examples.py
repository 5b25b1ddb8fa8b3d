"""The autograd examples of the seed documents, run with ``import ember as torch``, with the
values and printed results the documents show (and hand-derived numbers where they show none)."""

import pytest

import ember as torch
import ember.nn.functional as F
from ember import autograd
from ember.autograd import Variable


def test_grad_of_a_quadratic():
    # y = a w^2 + b w + c, dy/dw = 2 a w + b = 10 at w = 4
    a = torch.tensor(1.)
    b = torch.tensor(2.)
    c = torch.tensor(3.)
    w = torch.tensor(4., requires_grad=True)
    y = a * w**2 + b * w + c
    w_grad = autograd.grad(y, [w])
    assert isinstance(w_grad, tuple) and len(w_grad) == 1
    assert w_grad[0].item() == 10.0
    assert repr(w_grad) == "(tensor(10.),)"
    assert y.item() == 27.0 and w.grad is None


def test_mse_loss_grad_needs_requires_grad():
    x = torch.ones(1)
    w = torch.full([1], 2)
    assert w.dtype is torch.int64
    mse = F.mse_loss(torch.ones(1), x * w)
    assert repr(mse) == "tensor(1.)"
    with pytest.raises(RuntimeError, match="^element 0 of tensors does not require grad and does "
                                           "not have a grad_fn$"):
        autograd.grad(mse, [w])
    with pytest.raises(RuntimeError, match="^only Tensors of floating point"):
        w.requires_grad_()  # an integer tensor cannot require grad

    w = torch.full([1], 2.)
    w.requires_grad_()
    mse = F.mse_loss(torch.ones(1), x * w)  # recomputed: the graph now reaches w
    grads = autograd.grad(mse, [w])
    assert grads[0].tolist() == [2.0]  # d/dw (1 - x w)^2 = -2 x (1 - x w) = 2
    assert repr(grads) == "(tensor([2.]),)"


def test_chain_rule_through_two_layers():
    x = torch.tensor(1.5, requires_grad=True)
    w1 = torch.tensor(2., requires_grad=True)
    b1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(3., requires_grad=True)
    b2 = torch.tensor(-1., requires_grad=True)
    y1 = x * w1 + b1  # 3.5
    y2 = y1 * w2 + b2  # 9.5
    dy2_dy1 = autograd.grad(y2, [y1], retain_graph=True)[0]
    dy1_dw1 = autograd.grad(y1, [w1], retain_graph=True)[0]
    dy2_dw1 = autograd.grad(y2, [w1], retain_graph=True)[0]
    assert (y1.item(), y2.item()) == (3.5, 9.5)
    assert dy2_dy1.item() == 3.0  # w2
    assert dy1_dw1.item() == 1.5  # x
    assert dy2_dw1.item() == 4.5  # w2 * x
    assert (dy2_dy1 * dy1_dw1).item() == dy2_dw1.item()


def test_clone_detach_data_no_grad_table():
    x = torch.tensor([1., 2.], requires_grad=True)
    h = x * 2

    # clone: new memory, stays in the graph
    c = h.clone()
    assert c.data_ptr() != h.data_ptr()
    assert c.requires_grad and c.grad_fn is not None
    # detach: shared memory, out of the graph
    d = h.detach()
    assert d.data_ptr() == h.data_ptr()
    assert not d.requires_grad and d.grad_fn is None
    # .data: shared memory, out of the graph
    e = h.data
    assert e.data_ptr() == h.data_ptr()
    assert not e.requires_grad and e.grad_fn is None
    # made under no_grad: not in the graph
    with torch.no_grad():
        f = x * 2
    assert not f.requires_grad and f.grad_fn is None and f.is_leaf

    (c * 3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_inplace_change_through_detach_is_caught():
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x * x  # saves x
    x.detach().mul_(0)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation "
                                           "has been modified by an inplace operation"):
        y.sum().backward()


def test_inplace_change_through_data_is_not_caught():
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x * x  # saves x
    x.data.mul_(10)  # invisible to autograd
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 40.0]  # 2x with the new x, silently


def test_variable_is_a_tensor():
    x_data = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).float()
    y_data = torch.tensor([0, 1])
    x_var, y_var = Variable(x_data), Variable(y_data)
    assert isinstance(x_var, torch.Tensor) and isinstance(x_var, Variable)
    assert isinstance(torch.ones(1), Variable)
    assert x_var.dtype is torch.float32 and y_var.dtype is torch.int64
    assert x_var.tolist() == [[1.0, 2.0], [3.0, 4.0]] and y_var.tolist() == [0, 1]
    assert x_var.data_ptr() == x_data.data_ptr()
    w = Variable(torch.ones(2), requires_grad=True)
    assert w.requires_grad and w.is_leaf
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0, 2.0])


@pytest.mark.skipif(not hasattr(torch, "rand"), reason="ember.rand is not available yet")
def test_rand_graph_example():
    N, D = 3, 4
    x = torch.rand((N, D), requires_grad=True)
    y = torch.rand((N, D), requires_grad=True)
    z = torch.rand((N, D), requires_grad=True)
    a = x * y
    b = a + z
    c = torch.sum(b)
    c.backward()
    assert x.grad.tolist() == y.tolist()
    assert y.grad.tolist() == x.tolist()
    assert z.grad.tolist() == [[1.0] * D] * N
    assert c.grad_fn.name() == "SumBackward0"
    assert x.data.shape == (N, D) and x.grad_fn is None and b.grad_fn.name() == "AddBackward0"
