"""Converters of shape ops, slicing and indexing, also with dynamic dims."""

from __future__ import annotations

import pytest

import ember
from tests.onnx._check import check, check_fn, op_types

SHAPE_OPS = {
    "view": lambda x: x.view(x.size(0), -1), "reshape": lambda x: x.reshape(-1, 6),
    "view_two_dynamic": lambda x: x.view(x.size(0) * x.size(1), 2, 3),
    "flatten": lambda x: x.flatten(1), "flatten_all": lambda x: x.flatten(),
    "unflatten": lambda x: x.unflatten(-1, (2, 3)), "squeeze": lambda x: x[:, :1].squeeze(1),
    "unsqueeze": lambda x: x.unsqueeze(1), "permute": lambda x: x.permute(2, 0, 1),
    "transpose": lambda x: x.transpose(0, 2), "mT": lambda x: x.mT,
    "t": lambda x: x[0].t(), "expand": lambda x: x[:, :, :1].expand(-1, 4, 6),
    "expand_new_dim": lambda x: x[:1, 0].expand(3, 2, 6),
    "expand_as": lambda x: x[:, :1].expand_as(x), "repeat": lambda x: x.repeat(1, 2, 1),
    "repeat_more_dims": lambda x: x[0].repeat(2, 1, 1), "slice": lambda x: x[:, 1:3, ::2],
    "select_last": lambda x: x[..., -1], "index_none": lambda x: x[:, None, 0],
    "select_first": lambda x: x[0], "narrow": lambda x: x.narrow(2, 1, 3),
    "chunk": lambda x: x.chunk(3, dim=-1), "split_sizes": lambda x: x.split([1, 3], dim=1),
    "unbind": lambda x: x.unbind(1), "cat": lambda x: ember.cat([x, x * 2], dim=1),
    "stack": lambda x: ember.stack([x, -x], dim=0), "flip": lambda x: x.flip((0, 2)),
    "roll": lambda x: x.roll(2, dims=-1), "roll_two": lambda x: x.roll((1, -2), (1, 2)),
    "tril": lambda x: x.tril(), "triu": lambda x: x.triu(1),
    "contiguous": lambda x: x.transpose(1, 2).contiguous().view(x.size(0), -1),
    "movedim": lambda x: x.movedim(0, -1), "index_tensor": lambda x: x[:, ember.tensor(
        [2, 0, 2])], "index_select": lambda x: x.index_select(2, ember.tensor([5, 1])),
    "gather": lambda x: x.gather(2, ember.zeros(x.shape, dtype=ember.int64)[:, :, :2] + 1),
    "masked_fill": lambda x: x.masked_fill(x > 0, -1.0),
    "masked_fill_tensor": lambda x: x.masked_fill(x < 0, ember.tensor(2.0)),
    "drop_last_step": lambda x: x[:, :x.size(1) - 1],
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op(name):
    check_fn(SHAPE_OPS[name], ember.randn(3, 4, 6))


@pytest.mark.parametrize("fn, target", [
    (lambda x: x.view(x.size(0), -1), [0, 24]),
    (lambda x: x.reshape(-1, 6), [-1, 6]),
    (lambda x: x.flatten(0, 1), [-1, 6]),
])
def test_reshape_targets_with_dynamic_batch(fn, target):
    """The traced batch size never appears in a Reshape: 0 copies it, -1 infers it."""
    from onnx import numpy_helper

    proto = check_fn(fn, ember.randn(3, 4, 6))
    values = {i.name: numpy_helper.to_array(i).tolist() for i in proto.graph.initializer}
    reshape = [n for n in proto.graph.node if n.op_type == "Reshape"][0]
    assert values[reshape.input[1]] == target


def test_dynamic_sequence_dim():
    """Two dynamic dims: sizes built from Shape, slice bounds counted from the end."""
    x = ember.randn(3, 5, 4)
    others = [ember.randn(2, 7, 4), ember.randn(4, 2, 4)]
    check(lambda x: (x.reshape(x.size(0) * x.size(1), 4).reshape(x.size(0), x.size(1), 2, 2),
                     x[:, 1:] - x[:, :-1], x[:, -1]),
          x, others=others, input_names=["x"], dynamic_axes={"x": [0, 1]})


def test_tensors_made_in_forward_follow_the_dynamic_dims():
    def fn(x):
        h = ember.zeros(x.size(0), 4)
        steps = ember.arange(x.size(1)).float()
        return x.sum(1) + h, x * steps.unsqueeze(0).unsqueeze(-1)
    check(fn, ember.randn(2, 3, 4), others=[ember.randn(5, 6, 4)], input_names=["x"],
          dynamic_axes={"x": {0: "batch", 1: "time"}})


def test_flat_roll_of_a_fixed_shape():
    check_fn(lambda x: x.roll(3), ember.randn(3, 4), batch=False)


@pytest.mark.parametrize("fn", [
    lambda x: x.scatter(1, ember.tensor([[0, 2], [1, 1], [3, 0]]), -1.0),
    lambda x: x.scatter(1, ember.tensor([[0], [1], [3]]), x[:, 2:] * 10),
    lambda x: x.scatter_add(1, ember.tensor([[0, 0], [1, 1], [3, 0]]), x[:, :2]),
])
def test_scatter(fn):
    check_fn(fn, ember.randn(3, 4), batch=False)


def test_slice_bound_from_another_tensor():
    """A positional-encoding table cut to the input's (dynamic) length."""
    table = ember.randn(1, 10, 4)
    check(lambda x: x + table[:, :x.size(1)], ember.randn(2, 5, 4),
          others=[ember.randn(3, 8, 4), ember.randn(1, 1, 4)], input_names=["x"],
          dynamic_axes={"x": {0: "batch", 1: "length"}})


def test_index_with_two_tensors():
    check_fn(lambda x: x[ember.tensor([0, 2]), ember.tensor([1, 1])], ember.randn(3, 4, 2),
             batch=False)


def test_index_with_input_indices():
    proto = check_fn(lambda x, i: x[i], ember.randn(5, 3), ember.tensor([4, 0, 2, 2]))
    assert op_types(proto) == {"Gather"}


def test_split_into_equal_parts():
    proto = check_fn(lambda x: ember.split(x, 2, dim=2), ember.randn(2, 3, 6))
    assert op_types(proto) == {"Split"}
