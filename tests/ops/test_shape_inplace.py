"""unsqueeze_, squeeze_, t_, transpose_ (swapdims_, swapaxes_), resize_, resize_as_."""

import numpy as np
import pytest

import ember


def test_in_place_views_keep_memory_and_values():
    x = ember.arange(6.0).reshape(2, 3)
    row = x[0]
    assert x.t_() is x and x.shape == (3, 2) and x.stride() == (1, 3)
    x[1, 0] = 10.0  # the old x[0, 1]
    assert row.tolist() == [0.0, 10.0, 2.0]  # a view taken before still shares the memory
    assert x.unsqueeze_(0).shape == (1, 3, 2) and x.squeeze_().shape == (3, 2)
    assert x.transpose_(0, 1).shape == (2, 3) and x.swapdims_(0, 1).shape == (3, 2)
    assert x.swapaxes_(1, 0).shape == (2, 3)
    assert ember.ones(2, 1, 1).squeeze_(1).shape == (2, 1)


def test_gradients_flow_through_in_place_views_of_graph_tensors():
    w = ember.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = w * 2
    y.t_()
    assert y.grad_fn.name() == "TBackward1" and y.shape == (3, 2)
    (y * ember.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 5.0]])).sum().backward()
    assert w.grad.tolist() == [[2.0, 0.0, 0.0], [0.0, 0.0, 10.0]]
    z = w * 1
    z.unsqueeze_(0)
    assert z.grad_fn.name() == "UnsqueezeBackward1"
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.unsqueeze_(0)
    with ember.no_grad():
        w.unsqueeze_(0)  # no graph: allowed
    assert w.shape == (1, 2, 3)


def test_resize_keeps_the_first_values():
    x = ember.arange(6.0)
    view = x.view(2, 3)
    x.resize_(4)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and view.shape == (2, 3)
    x.resize_(2, 3)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]
    x.resize_as_(ember.ones(3, 1))
    assert x.shape == (3, 1)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.ones(2, requires_grad=True).resize_(3)
