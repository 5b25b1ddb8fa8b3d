"""Converters of advanced indexing: ``x[idx]``, ``x[mask]``, ``x[idx] = v`` and index_put
(ScatterND), with index tensors and boolean masks."""

from __future__ import annotations

import pytest

import ember
from tests.onnx._check import check, check_fn, op_types


def _set(key_fn, value_fn):
    """``x[key] = value`` on a copy of x (an in-place index_put on a graph tensor)."""
    def fn(x):
        y = x * 1
        y[key_fn(y)] = value_fn(y)
        return y
    return fn


PUTS = {
    "rows": _set(lambda y: ember.tensor([0, 2]), lambda y: ember.tensor(5.0)),
    "rows_negative": _set(lambda y: ember.tensor([-1, 0]), lambda y: y[:2] * 3),
    "dim1": _set(lambda y: (slice(None), ember.tensor([3, 1])), lambda y: -y[:, :2]),
    "dim1_broadcast_value": _set(lambda y: (slice(None), ember.tensor([1])),
                                 lambda y: ember.tensor([7.0, 8.0, 9.0, 1.0, 2.0, 3.0])),
    "two_arrays": _set(lambda y: (ember.tensor([0, 1]), slice(None), ember.tensor([2, 5])),
                       lambda y: ember.tensor(0.0)),
    "mask": _set(lambda y: y > 0, lambda y: ember.tensor(0.0)),
    "mask_values": _set(lambda y: y < 0, lambda y: y[y < 0] * 10),
    "mask_rows": _set(lambda y: y[:, 0, 0] > 0, lambda y: ember.tensor(-1.0)),
    "mask_inner_dims": _set(lambda y: (slice(None), y[0] > 0), lambda y: ember.tensor(3.0)),
    "index_put": lambda x: x.index_put((ember.tensor([1, 0]),), x[:2] + 1),
    "index_put_accumulate": lambda x: x.index_put(
        (ember.tensor([1, 1, 0]), ember.tensor([2, 2, 0])), ember.tensor(1.0), accumulate=True),
    "index_put_mask": lambda x: ember.index_put(x, (x > 0.5,), ember.tensor(0.5)),
}


@pytest.mark.parametrize("name", sorted(PUTS))
def test_index_put(name):
    proto = check_fn(PUTS[name], ember.randn(3, 4, 6))
    assert "ScatterND" in op_types(proto)


def test_put_with_input_indices_and_values():
    """Indices and values given as graph inputs (not constants)."""
    def fn(x, i, v):
        y = x.clone()
        y[i] = v
        return y
    check(fn, (ember.randn(5, 3), ember.tensor([4, -5]), ember.randn(2, 3)),
          others=[(ember.randn(7, 3), ember.tensor([0, 6]), ember.randn(2, 3))],
          input_names=["x", "i", "v"], dynamic_axes={"x": {0: "n"}})


GETS = {
    "mask": lambda x: x[x > 0], "mask_rows": lambda x: x[x[:, 0, 0] > 0],
    "mask_inner": lambda x: x[:, x[0, :, 0] > 0], "input_mask": None,
    "two_arrays_apart": lambda x: x[ember.tensor([0, 1]), :, ember.tensor([2, 5])],
    "arrays_inner": lambda x: x[:, ember.tensor([0, 3]), ember.tensor([1, 1])],
}


@pytest.mark.parametrize("name", sorted(k for k, v in GETS.items() if v is not None))
def test_index(name):
    check_fn(GETS[name], ember.randn(3, 4, 6))


def test_index_with_an_input_mask():
    check(lambda x, m: x[m] * 2, (ember.randn(4, 3), ember.tensor([True, False, True, True])),
          others=[(ember.randn(6, 3), ember.tensor([False, True, True, False, True, True]))],
          input_names=["x", "m"], dynamic_axes={"x": {0: "n"}, "m": {0: "n"}})


def test_mask_from_outside_the_trace_is_refused():
    def fn(x):
        y = x.clone()
        y[ember.from_numpy(x.detach().numpy() > 0)] = 0.0
        return y
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="boolean mask"):
        check_fn(fn, ember.randn(3, 4))


def test_accumulate_needs_opset_16():
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="opset 16"):
        check_fn(PUTS["index_put_accumulate"], ember.randn(3, 4, 6), opset=15)


def test_mask_whose_positions_repeat_in_the_check_trace():
    """All three rows selected in the trace, and (by the values) the first three of the
    check trace's four (its input: the rows grown to four, the values rolled by one): the
    positions match, yet they come from a mask and must stay NonZero(mask) in the graph,
    not a constant."""
    x = ember.randn(3, 4, 6)
    x[:, 0, 0] = x[:, 0, 0].abs() + 0.1          # the trace: every row
    x[0, 3, 5], x[1, 3, 5], x[2, 3, 5] = 1.0, 1.0, -1.0   # the check trace: rows 0-2 of 4
    proto = check_fn(lambda x: x[x[:, 0, 0] > 0], x)
    assert "NonZero" in op_types(proto)
