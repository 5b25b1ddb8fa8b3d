"""Recurrent layers: RNN (tanh/relu), LSTM (with optional projections), GRU, and their
one-step cells RNNCell, LSTMCell, GRUCell.

Parameters carry PyTorch's names, shapes and order (``weight_ih_l0``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``, ``weight_hr_l0``, then the ``_reverse`` direction, then
the next layer), so state dicts load either way, and all start uniform in
[-1/sqrt(hidden_size), 1/sqrt(hidden_size)].

Each layer direction projects the whole input sequence with one matmul, then runs its
time loop in one Function (``ember/ops/rnn.py``).  Inputs are (T, B, features), (B, T,
features) with ``batch_first``, (T, features) unbatched, or a PackedSequence.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ...ops import rnn as rnn_ops
from ...ops.creation import empty, zeros
from ...ops.joining import cat, stack
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module
from .utils import _changed_options

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _display_name(mode: str) -> str:
    return "RNN" if mode.startswith("RNN") else mode


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters, argument checks and the layer loop.

    Args:
        mode: 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU'.
        input_size: features of the input.
        hidden_size: features of the hidden state.
        num_layers: stacked recurrent layers (the next one reads the previous one's output).
        bias: whether the layers have ``bias_ih``/``bias_hh``.
        batch_first: inputs and outputs are (B, T, features) instead of (T, B, features).
        dropout: dropout on the outputs of every layer but the last (in training).
        bidirectional: each layer also runs backwards in time; outputs are concatenated.
        proj_size: LSTM only: project the hidden state to this size (``weight_hr``).
    """

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        _check_sizes(mode, hidden_size, num_layers, dropout, proj_size)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning,
                          stacklevel=3)
        gate_size = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [(f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                          (f"weight_hh_l{layer}{suffix}", (gate_size, real_hidden))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{suffix}", (gate_size,)),
                               (f"bias_hh_l{layer}{suffix}", (gate_size,))]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                names = [name for name, _ in shapes]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters, one list per layer and direction."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Does nothing: ember keeps no fused weight buffer (PyTorch's is a cuDNN detail)."""

    def reset_parameters(self) -> None:
        """Draw every parameter uniform in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)]."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + _changed_options(self, {
            "proj_size": 0, "num_layers": 1, "bias": True, "batch_first": False, "dropout": 0,
            "bidirectional": False})

    # -- forward -----------------------------------------------------------------------

    def forward(self, input, hx=None):
        name = _display_name(self.mode)
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        if packed:
            flat, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = tuple(int(b) for b in batch_sizes_t.tolist())
            batch, batched = batch_sizes[0], True
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "instead")
            batched = input.dim() == 3
            seq = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                seq = seq.transpose(0, 1)
            steps, batch = seq.shape[0], seq.shape[1]
            batch_sizes = (batch,) * steps
            flat = seq.reshape(steps * batch, seq.shape[2])
            sorted_indices = unsorted_indices = None
        self.check_input(flat, None)
        h0, c0 = self._initial_state(hx, flat, batch, batched, is_lstm, sorted_indices)
        out, h_n, c_n = self._layers(flat, batch_sizes, h0, c0)
        if packed:
            output = PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices)
            h_n = self.permute_hidden(h_n, unsorted_indices)
            c_n = None if c_n is None else self.permute_hidden(c_n, unsorted_indices)
        else:
            output = out.reshape(len(batch_sizes), batch, out.shape[1])
            if self.batch_first and batched:
                output = output.transpose(0, 1)
            if not batched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                c_n = None if c_n is None else c_n.squeeze(1)
        return output, ((h_n, c_n) if is_lstm else h_n)

    # PyTorch's public checking helpers (subclasses and user code call them) -----------

    def check_input(self, input, batch_sizes) -> None:
        """Dtype, rank and feature-size checks of the input (flat data when packed)."""
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise ValueError(f"{_display_name(self.mode)} input dtype ({input.dtype}) does not "
                             f"match weight dtype ({weight.dtype}). Convert input: "
                             f"input.to({weight.dtype}), or convert model: "
                             f"model.to({input.dtype})")
        expected_dim = 2 if batch_sizes is not None else 3
        if batch_sizes is not None and input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple:
        """(num_layers * directions, batch, hidden or proj size) for this input."""
        if batch_sizes is not None:
            batch = int(batch_sizes[0])
        else:
            batch = input.shape[0] if self.batch_first else input.shape[1]
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * (2 if self.bidirectional else 1), batch, real_hidden)

    def check_hidden_size(self, hx, expected_hidden_size,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """RuntimeError (with `msg`) when hx is not of the expected shape."""
        if tuple(hx.shape) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        """All argument checks of forward, for a 3-D (or packed) input."""
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        if self.mode == "LSTM":
            self.check_hidden_size(hidden[0], expected, "Expected hidden[0] size {}, got {}")
            cell = expected[:2] + (self.hidden_size,)
            self.check_hidden_size(hidden[1], cell, "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(hidden, expected)

    def permute_hidden(self, hx, permutation):
        """hx with its batch dimension reordered (None permutation: unchanged)."""
        if permutation is None:
            return hx
        if isinstance(hx, tuple):
            return tuple(h.index_select(1, permutation) for h in hx)
        return hx.index_select(1, permutation)

    def _initial_state(self, hx, flat, batch: int, batched: bool, is_lstm: bool,
                       sorted_indices):
        layers = self.num_layers * (2 if self.bidirectional else 1)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            h0 = zeros((layers, batch, real_hidden), dtype=flat.dtype, device=flat.device)
            c0 = zeros((layers, batch, self.hidden_size), dtype=flat.dtype,
                       device=flat.device) if is_lstm else None
            return h0, c0
        if is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
            h0, c0 = hx
            want = 3 if batched else 2
            if h0.dim() != want or c0.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
        else:
            h0, c0 = hx, None
            want = 3 if batched else 2
            if h0.dim() != want:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                                   f"{h0.dim()}-D tensor")
        if not batched:
            h0 = h0.unsqueeze(1)
            c0 = None if c0 is None else c0.unsqueeze(1)
        if sorted_indices is not None:
            h0 = self.permute_hidden(h0, sorted_indices)
            c0 = None if c0 is None else self.permute_hidden(c0, sorted_indices)
        expected = (layers, batch, real_hidden)
        if is_lstm:
            self.check_hidden_size(h0, expected, "Expected hidden[0] size {}, got {}")
            self.check_hidden_size(c0, (layers, batch, self.hidden_size),
                                   "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(h0, expected)
        for state in (h0, c0):
            if state is not None and state.dtype != flat.dtype:
                raise RuntimeError(f"{_display_name(self.mode)}: the hidden state's dtype "
                                   f"({state.dtype}) does not match the input's ({flat.dtype})")
        return h0, c0

    def _layers(self, flat, batch_sizes: tuple, h0, c0):
        """Run every layer and direction over the flat sequence: (output, h_n, c_n)."""
        directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        layer_input = flat
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                weights = [getattr(self, name) for name in self._all_weights[k]]
                out, h, c = self._direction(layer_input, weights, batch_sizes, h0[k],
                                            None if c0 is None else c0[k], direction == 1)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            layer_input = outs[0] if directions == 1 else cat(outs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, stack(h_n), (None if c0 is None else stack(c_n))

    def _direction(self, x, weights: list, batch_sizes: tuple, h0, c0, reverse: bool):
        w_ih, w_hh = weights[0], weights[1]
        b_ih, b_hh = (weights[2], weights[3]) if self.bias else (None, None)
        w_hr = weights[-1] if self.proj_size > 0 else None
        params = {"batch_sizes": batch_sizes, "reverse": reverse}
        if self.mode == "GRU":
            xw = F.linear(x, w_ih, b_ih)
            out, h = rnn_ops.GRUSequence.apply(xw, h0, w_hh, b_hh, **params)
            return out, h, None
        xw = F.linear(x, w_ih, None if b_ih is None else b_ih + b_hh)
        if self.mode == "LSTM":
            return rnn_ops.LSTMSequence.apply(xw, h0, c0, w_hh, w_hr, **params)
        nonlinearity = "tanh" if self.mode == "RNN_TANH" else "relu"
        out, h = rnn_ops.RNNSequence.apply(xw, h0, w_hh, nonlinearity=nonlinearity, **params)
        return out, h, None


def _check_sizes(mode: str, hidden_size, num_layers, dropout, proj_size) -> None:
    if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
            or not 0 <= dropout <= 1):
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    for name, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable "
                         "projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")
    if proj_size and mode != "LSTM":
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class RNN(RNNBase):
    """A multi-layer Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``
    (or relu with ``nonlinearity='relu'``).

    ``forward(input, h_0=None)`` returns (output, h_n): output holds the last layer's
    hidden state at every step, h_n (num_layers * directions, B, hidden_size) the final
    state of every layer.  See RNNBase for the arguments.

    >>> rnn = RNN(10, 20, 2)
    >>> out, h_n = rnn(ember.randn(5, 3, 10))
    >>> out.shape, h_n.shape
    (ember.Size([5, 3, 20]), ember.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """A multi-layer long short-term memory RNN.

    Per step: gates ``i, f, g, o = x W_ih^T + b_ih + h W_hh^T + b_hh`` (sigmoid, sigmoid,
    tanh, sigmoid), ``c' = f * c + i * g``, ``h' = o * tanh(c')`` (then ``h' W_hr^T`` with
    `proj_size`).  ``forward(input, (h_0, c_0)=None)`` returns (output, (h_n, c_n)).

    >>> lstm = LSTM(10, 20, 2)
    >>> out, (h_n, c_n) = lstm(ember.randn(5, 3, 10))
    >>> out.shape, c_n.shape
    (ember.Size([5, 3, 20]), ember.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """A multi-layer gated recurrent unit RNN.

    Per step: ``r = sigmoid(x W_ir^T + b_ir + h W_hr^T + b_hr)``, ``z`` likewise,
    ``n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))``, ``h' = (1 - z) * n + z * h``.
    ``forward(input, h_0=None)`` returns (output, h_n).
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ----------------------------------------------------------------------
# cells


class RNNCellBase(Module):
    """What the cells share: weight_ih (chunks*H, I), weight_hh (chunks*H, H), biases."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(empty((gates, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((gates, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(gates, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(gates, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Draw every parameter uniform in [-1/sqrt(hidden_size), 1/sqrt(hidden_size)]."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, name: str):
        """(input as 2-D, hx as 2-D or None, whether the input was batched)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        for h in (hx if isinstance(hx, (tuple, list)) else (hx,)):
            if h is not None and h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.dim()}D "
                                 "instead")
        batched = input.dim() == 2
        if batched:
            return input, hx, True
        if isinstance(hx, (tuple, list)):
            hx = tuple(h.unsqueeze(0) for h in hx)
        elif hx is not None:
            hx = hx.unsqueeze(0)
        return input.unsqueeze(0), hx, False

    def _zeros(self, input):
        return zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)

    def _step(self, cell, input, hx, name: str, states: int = 1):
        """One step of `cell` with this module's weights; hx defaults to zeros (a tuple of
        `states` of them for LSTM's (h, c)), and an unbatched input gives unbatched results."""
        input, hx, batched = self._batched(input, hx, name)
        if hx is None:
            hx = self._zeros(input) if states == 1 else tuple(self._zeros(input)
                                                               for _ in range(states))
        out = cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if states == 1:
            return out if batched else out.squeeze(0)
        return tuple(out) if batched else tuple(o.squeeze(0) for o in out)


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu).

    ``forward(input, hx=None)``: input (B, input_size) or (input_size,); hx defaults to
    zeros.  Returns h' of the shape of hx.
    """

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity == "tanh":
            cell = rnn_ops.rnn_tanh_cell
        elif self.nonlinearity == "relu":
            cell = rnn_ops.rnn_relu_cell
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step(cell, input, hx, "RNNCell")


class _GatedCell(RNNCellBase):
    """LSTMCell and GRUCell: PyTorch's constructor, with `_gates` chunks of weights."""

    _gates = 0

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=self._gates, device=device,
                         dtype=dtype)


class LSTMCell(_GatedCell):
    """One LSTM step.  ``forward(input, (h, c)=None)`` returns (h', c')."""

    _gates = 4

    def forward(self, input, hx=None):
        return self._step(rnn_ops.lstm_cell, input, hx, "LSTMCell", states=2)


class GRUCell(_GatedCell):
    """One GRU step.  ``forward(input, hx=None)`` returns h'."""

    _gates = 3

    def forward(self, input, hx=None):
        return self._step(rnn_ops.gru_cell, input, hx, "GRUCell")
