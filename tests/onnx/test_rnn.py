"""Converters of recurrent layers (module-level LSTM/GRU/RNN nodes) and cells."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from tests.onnx._check import check, op_types

LAYERS = {
    "lstm": lambda: nn.LSTM(5, 6),
    "lstm_2_layers_batch_first": lambda: nn.LSTM(5, 6, num_layers=2, batch_first=True),
    "lstm_bidirectional": lambda: nn.LSTM(5, 6, num_layers=2, bidirectional=True),
    "lstm_no_bias": lambda: nn.LSTM(5, 6, bias=False),
    "gru": lambda: nn.GRU(5, 6, num_layers=2),
    "gru_bidirectional": lambda: nn.GRU(5, 6, bidirectional=True, batch_first=True),
    "rnn_tanh": lambda: nn.RNN(5, 6, num_layers=2),
    "rnn_relu_bidirectional": lambda: nn.RNN(5, 6, nonlinearity="relu", bidirectional=True),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer(name):
    layer = LAYERS[name]()
    kind = name.split("_")[0].upper()
    proto = check(layer, ember.randn(4, 3, 5), others=[ember.randn(2, 6, 5),
                                                       ember.randn(7, 1, 5)],
                  input_names=["x"], dynamic_axes={"x": [0, 1]})
    assert kind in op_types(proto)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_layer_with_initial_state(kind):
    layer = getattr(nn, kind)(5, 6, num_layers=2, batch_first=True)
    x = ember.randn(3, 4, 5)
    h = ember.randn(2, 3, 6)
    state = (h, ember.randn(2, 3, 6)) if kind == "LSTM" else h

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x, h, c=None):
            return self.layer(x, (h, c) if kind == "LSTM" else h)

    args = (x,) + (state if kind == "LSTM" else (state,))
    names = ["x", "h", "c"][:len(args)]
    axes = {"x": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"}}
    grown = (ember.randn(5, 4, 5),) + tuple(ember.randn(2, 5, 6) for _ in args[1:])
    check(Model(), args, others=[grown], input_names=names,
          dynamic_axes={n: axes[n] for n in names})


def test_unbatched_input():
    check(nn.LSTM(5, 6, num_layers=2), ember.randn(4, 5), input_names=["x"])


def test_cells():
    class Cells(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTMCell(5, 6)
            self.gru = nn.GRUCell(6, 4)
            self.rnn = nn.RNNCell(4, 3, nonlinearity="relu")

        def forward(self, x, h, c):
            h, c = self.lstm(x, (h, c))
            return self.rnn(self.gru(h)), c

    args = (ember.randn(3, 5), ember.randn(3, 6), ember.randn(3, 6))
    check(Cells(), args, others=[(ember.randn(6, 5), ember.randn(6, 6), ember.randn(6, 6))],
          input_names=["x", "h", "c"], dynamic_axes={n: {0: "batch"} for n in "xhc"})


@pytest.mark.parametrize("name", ["lstm", "lstm_bidirectional", "gru_bidirectional",
                                  "rnn_relu_bidirectional"])
def test_packed_sequence(name):
    """pack_padded_sequence -> layer -> pad_packed_sequence inside forward: the lengths
    (a graph input) become the node's sequence_lens."""
    layer = LAYERS[name]()

    def fn(x, lengths):
        packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, state = layer(packed)
        padded, out_lengths = pad_packed_sequence(out, padding_value=-1.0)
        return padded, state, out_lengths

    proto = check(fn, (ember.randn(5, 3, 5), ember.tensor([5, 2, 4])),
                  others=[(ember.randn(5, 4, 5), ember.tensor([1, 3, 5, 2]))],
                  input_names=["x", "lengths"],
                  dynamic_axes={"x": {1: "batch"}, "lengths": {0: "batch"}})
    assert name.split("_")[0].upper() in op_types(proto)


def test_packed_sequence_batch_first_with_total_length_and_state():
    layer = nn.GRU(5, 6, num_layers=2, batch_first=True)

    def fn(x, h, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = layer(packed, h)
        return pad_packed_sequence(out, batch_first=True, total_length=6)[0], h

    check(fn, (ember.randn(3, 4, 5), ember.randn(2, 3, 6), ember.tensor([2, 4, 3])),
          input_names=["x", "h", "lengths"])


def test_packed_data_used_directly_is_refused():
    layer = nn.Linear(5, 2)

    def fn(x):
        return layer(pack_padded_sequence(x, [4, 2, 1]).data)

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="pack_padded_sequence"):
        check(fn, ember.randn(4, 3, 5))


@pytest.mark.parametrize("options", [{}, {"num_layers": 2, "bidirectional": True},
                                     {"batch_first": True, "bias": False}])
def test_lstm_with_projections(options):
    """proj_size: unrolled over the (static) steps; the batch size stays dynamic."""
    layer = nn.LSTM(5, 6, proj_size=3, **options)
    batch = 0 if options.get("batch_first") else 1
    x = ember.randn(4, 3, 5)
    other = ember.randn(4, 6, 5) if batch == 1 else ember.randn(6, 3, 5)
    check(layer, x, others=[other], input_names=["x"], dynamic_axes={"x": {batch: "batch"}})


def test_lstm_with_projections_and_state():
    layer = nn.LSTM(5, 6, proj_size=2, num_layers=2)
    args = (ember.randn(3, 4, 5), ember.randn(2, 4, 2), ember.randn(2, 4, 6))
    check(lambda x, h, c: layer(x, (h, c)), args, input_names=["x", "h", "c"])


def test_lstm_with_projections_on_a_packed_sequence():
    layer = nn.LSTM(5, 6, proj_size=3, bidirectional=True)

    def fn(x, lengths):
        out, state = layer(pack_padded_sequence(x, lengths, enforce_sorted=False))
        return pad_packed_sequence(out)[0], state

    check(fn, (ember.randn(4, 3, 5), ember.tensor([2, 4, 1])),
          others=[(ember.randn(4, 5, 5), ember.tensor([4, 1, 3, 3, 2]))],
          input_names=["x", "lengths"], dynamic_axes={"x": {1: "batch"}, "lengths": {0: "batch"}})


def test_lstm_with_projections_and_dynamic_length_is_refused():
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="proj_size"):
        check(nn.LSTM(5, 6, proj_size=3), ember.randn(4, 2, 5), input_names=["x"],
              dynamic_axes={"x": [0, 1]})
