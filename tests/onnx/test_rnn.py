"""Converters of recurrent layers (module-level LSTM/GRU/RNN nodes) and cells."""

from __future__ import annotations

import pytest

import ember
from ember import nn
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


def test_packed_sequence_is_refused():
    from ember.nn.utils.rnn import pack_padded_sequence

    layer = nn.LSTM(5, 6)

    def fn(x):
        return layer(pack_padded_sequence(x, [4, 2, 1]))[1][0]

    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="PackedSequence"):
        check(fn, ember.randn(4, 3, 5))
