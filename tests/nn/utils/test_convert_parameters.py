"""parameters_to_vector and vector_to_parameters."""

import pytest

import ember
from ember import nn
from ember.nn.utils import parameters_to_vector, vector_to_parameters


def test_roundtrip():
    a = nn.Parameter(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
    b = nn.Parameter(ember.tensor([5.0]))
    vec = parameters_to_vector([a, b])
    assert vec.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    vector_to_parameters(ember.tensor([9.0, 8.0, 7.0, 6.0, 5.0]), [a, b])
    assert a.tolist() == [[9.0, 8.0], [7.0, 6.0]] and b.tolist() == [5.0]
    assert isinstance(a, nn.Parameter) and a.shape == (2, 2)
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        vector_to_parameters([1.0], [a])


def test_vector_is_differentiable():
    a = nn.Parameter(ember.tensor([1.0, 2.0]))
    vec = parameters_to_vector([a])
    (vec * ember.tensor([3.0, 4.0])).sum().backward()
    assert a.grad.tolist() == [3.0, 4.0]
