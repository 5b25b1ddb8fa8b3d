"""Parameter and Buffer."""

import copy
import pickle

import pytest

import ember
from ember import nn


def test_parameter_basics():
    t = ember.ones(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, ember.Tensor) and type(p) is nn.Parameter
    assert p.requires_grad and p.is_leaf and p.shape == (2, 3)
    with ember.no_grad():
        t.add_(1.0)
    assert p.tolist() == [[2.0] * 3] * 2  # shares memory with the data it wraps
    assert nn.Parameter(t, requires_grad=False).requires_grad is False
    empty = nn.Parameter()
    assert empty.shape == (0,) and empty.requires_grad


def test_parameter_ops_give_tensors():
    p = nn.Parameter(ember.ones(2))
    assert type(p * 2) is ember.Tensor
    assert type(p.detach()) is ember.Tensor and type(p.data) is ember.Tensor
    assert p * 2 is not p


def test_parameter_repr():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    q = nn.Parameter(ember.tensor([1, 2]), requires_grad=False)
    assert repr(q) == "Parameter containing:\ntensor([1, 2])"


def test_parameter_repr_matches_torch():
    torch = pytest.importorskip("torch")
    for values in ([1.0, 2.5], [[0.25, -1.0]]):
        ours = repr(nn.Parameter(ember.tensor(values)))
        theirs = repr(torch.nn.Parameter(torch.tensor(values)))
        assert ours == theirs


def test_parameter_integer_requires_grad_fails():
    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        nn.Parameter(ember.tensor([1, 2]))


def test_parameter_copy_and_pickle_keep_class():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    p.grad = ember.ones(2)
    c = copy.deepcopy(p)
    assert type(c) is nn.Parameter and c.requires_grad and c.tolist() == [1.0, 2.0]
    assert c.grad is None  # like PyTorch, deepcopy copies the values only
    with ember.no_grad():
        c.mul_(3.0)
    assert p.tolist() == [1.0, 2.0]
    back = pickle.loads(pickle.dumps(p))
    assert type(back) is nn.Parameter and back.requires_grad and back.tolist() == [1.0, 2.0]
    frozen = pickle.loads(pickle.dumps(nn.Parameter(ember.ones(1), requires_grad=False)))
    assert frozen.requires_grad is False


def test_buffer_marker():
    t = ember.ones(2)
    b = nn.Buffer(t)
    assert type(b) is ember.Tensor and isinstance(b, nn.Buffer)
    assert b.persistent is True and not b.requires_grad
    assert nn.Buffer(t, persistent=False).persistent is False
    assert not isinstance(t, nn.Buffer) and not isinstance(3, nn.Buffer)
    assert nn.Buffer().shape == (0,)
