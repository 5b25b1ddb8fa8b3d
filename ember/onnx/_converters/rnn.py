"""Recurrent layers: nn.LSTM / nn.GRU / nn.RNN as ONNX LSTM / GRU / RNN nodes (one per
layer), and the time-loop ops themselves (cells, functional use) as one node each.

Gate order differs: PyTorch's LSTM weights stack the gates as (input, forget, cell,
output), ONNX's as (input, output, forget, cell); PyTorch's GRU as (reset, update,
new), ONNX's as (update, reset, hidden).  The weight blocks are reordered in the
graph (Split + Concat of the parameters, folded into constants at export).  The GRU
node uses ``linear_before_reset=1``, which is PyTorch's formula.
"""

from __future__ import annotations

import numpy as np

from ...nn.modules import rnn as rnn_modules
from ...ops import rnn as rnn_ops
from .._convert import Call
from .._trace import Source

# ONNX gate k is PyTorch gate ORDER[kind][k]
ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}


def _kind(mode: str) -> str:
    return "RNN" if mode.startswith("RNN") else mode


def _reorder(c: Call, w: str, kind: str, hidden: int) -> str:
    """The gate blocks (along dim 0) of a PyTorch weight or bias in ONNX's order."""
    order = ORDER[kind]
    if len(order) == 1:
        return w
    parts = c.op("Split", w, c.ints([hidden] * len(order)), axis=0, outputs=len(order))
    return c.op("Concat", *[parts[k] for k in order], axis=0)


def _attrs(kind: str, hidden: int, direction: str, relu: bool, directions: int) -> dict:
    attrs = dict(hidden_size=int(hidden), direction=direction)
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    if kind == "RNN":
        attrs["activations"] = ["Relu" if relu else "Tanh"] * directions
    return attrs


def _trim(inputs: list) -> list:
    while inputs and inputs[-1] == "":
        inputs.pop()
    return inputs


# ---------------------------------------------------------------------------
# nn.LSTM / nn.GRU / nn.RNN


def _accepts_rnn(module, args, kwargs) -> bool:
    from ..._core.tensor import Tensor

    if not args or not isinstance(args[0], Tensor) or args[0].dim() not in (2, 3):
        return False  # a PackedSequence: the flat op-level trace, which refuses it
    if module.proj_size or set(kwargs) - {"hx"} or len(args) + len(kwargs) > 2:
        return False
    return not (module.training and module.dropout and module.num_layers > 1)


def _initial_states(c: Call) -> list:
    """The ONNX names of (h0[, c0]) given to the module, or []."""
    src = c.rec.sources[1] if c.n_args() > 1 else c.rec.param_sources.get("hx")
    if src is None:
        return []
    sources = src if isinstance(src, list) else [src]
    return [c.source_input(s) for s in sources if isinstance(s, Source)]


def convert_rnn_module(c: Call) -> None:
    m = c.module
    kind = _kind(m.mode)
    hidden, layers = m.hidden_size, m.num_layers
    directions = 2 if m.bidirectional else 1
    batched = c.arg(0).dim() == 3
    x = c.input(0)
    if not batched:
        x = c.unsqueeze(x, [1])
    elif m.batch_first:
        x = c.transpose(x, (1, 0, 2))
    states = _initial_states(c)
    if not batched:
        states = [c.unsqueeze(s, [1]) for s in states]
    finals = [[] for _ in range(2 if kind == "LSTM" else 1)]
    for layer in range(layers):
        w, r, b = [], [], []
        for d in range(directions):
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            w.append(c.unsqueeze(_reorder(c, c.tensor(getattr(m, "weight_ih" + suffix)),
                                          kind, hidden), [0]))
            r.append(c.unsqueeze(_reorder(c, c.tensor(getattr(m, "weight_hh" + suffix)),
                                          kind, hidden), [0]))
            if m.bias:
                b_ih = _reorder(c, c.tensor(getattr(m, "bias_ih" + suffix)), kind, hidden)
                b_hh = _reorder(c, c.tensor(getattr(m, "bias_hh" + suffix)), kind, hidden)
                b.append(c.unsqueeze(c.op("Concat", b_ih, b_hh, axis=0), [0]))
        join = (lambda parts: parts[0] if directions == 1 else  # noqa: E731
                c.op("Concat", *parts, axis=0))
        inputs = [x, join(w), join(r), join(b) if b else "", ""]
        for s in states:
            inputs.append(c.slice(s, [layer * directions], [(layer + 1) * directions], [0]))
        direction = "bidirectional" if directions == 2 else "forward"
        outs = c.op(kind, *_trim(inputs), outputs=len(finals) + 1,
                    **_attrs(kind, hidden, direction, m.mode == "RNN_RELU", directions))
        y = outs[0]  # (T, directions, B, H)
        if directions == 1:
            x = c.squeeze(y, [1])
        else:
            x = c.reshape(c.transpose(y, (0, 2, 1, 3)), [0, 0, -1])
        for k, final in enumerate(outs[1:]):
            finals[k].append(final)
    out = x
    if not batched:
        out = c.squeeze(out, [1])
    elif m.batch_first:
        out = c.transpose(out, (1, 0, 2))
    results = [out]
    for parts in finals:
        state = parts[0] if layers == 1 else c.op("Concat", *parts, axis=0)
        results.append(state if batched else c.squeeze(state, [1]))
    c.done(*results)


# ---------------------------------------------------------------------------
# the time-loop ops (cells, and layers the module converter declines)


def _permutation(kind: str, hidden: int, dtype) -> np.ndarray:
    """W for ONNX when the input is already projected: picks the gates in ONNX's order."""
    order = ORDER[kind]
    n = hidden * len(order)
    w = np.zeros((1, n, n), dtype=dtype)
    for k, src in enumerate(order):
        w[0, k * hidden:(k + 1) * hidden, src * hidden:(src + 1) * hidden] = np.eye(hidden)
    return w


def _sequence(c: Call, kind: str, hidden: int, states: list, bias: str = "",
              relu: bool = False) -> None:
    sizes, sizes2 = tuple(c.param("batch_sizes")), tuple(c.param2("batch_sizes"))
    if len(set(sizes)) > 1:
        c.fail("sequences of different lengths (a PackedSequence) cannot be exported")
    steps, batch = len(sizes), sizes[0]
    steps2, batch2 = len(sizes2), sizes2[0]
    width = hidden * len(ORDER[kind])
    spec = [steps if steps == steps2 else -1, batch, width]
    if batch != batch2:
        spec[1] = -1 if steps == steps2 else None
    xw = c.input(0)
    if None in spec:
        shape = c.op("Concat", c.ints([-1]), c.dim_value(batch, batch2), c.ints([width]),
                     axis=0)
        x = c.op("Reshape", xw, shape)
    else:
        x = c.reshape(xw, spec)
    w = c.const(_permutation(kind, hidden, c.dtype(0)))
    r = c.unsqueeze(_reorder(c, c.input(3 if kind == "LSTM" else 2), kind, hidden), [0])
    inputs = [x, w, r, bias, ""] + [c.unsqueeze(s, [0]) for s in states]
    direction = "reverse" if c.param("reverse") else "forward"
    outs = c.op(kind, *inputs, outputs=len(states) + 1,
                **_attrs(kind, hidden, direction, relu, 1))
    y = c.reshape(c.squeeze(outs[0], [1]), [-1, hidden])
    c.done(y, *[c.squeeze(h, [0]) for h in outs[1:]])


def convert_lstm_sequence(c: Call) -> None:
    if c.arg(4) is not None:
        c.fail("LSTM projections (proj_size) have no ONNX equivalent")
    hidden = c.shape(2)[1]
    _sequence(c, "LSTM", hidden, [c.input(1), c.input(2)])


def convert_gru_sequence(c: Call) -> None:
    hidden = c.shape(1)[1]
    bias = ""
    if c.arg(3) is not None:
        zeros = c.const(np.zeros(3 * hidden), c.dtype(0))
        bias = c.unsqueeze(c.op("Concat", zeros, _reorder(c, c.input(3), "GRU", hidden),
                                axis=0), [0])
    _sequence(c, "GRU", hidden, [c.input(1)], bias)


def convert_rnn_sequence(c: Call) -> None:
    hidden = c.shape(1)[1]
    _sequence(c, "RNN", hidden, [c.input(1)], relu=c.param("nonlinearity") == "relu")


for _convert in (convert_lstm_sequence, convert_gru_sequence, convert_rnn_sequence):
    _convert.dynamic = True

CONVERTERS = {
    rnn_ops.LSTMSequence: convert_lstm_sequence,
    rnn_ops.GRUSequence: convert_gru_sequence,
    rnn_ops.RNNSequence: convert_rnn_sequence,
}

MODULE_CONVERTERS = {
    cls: (_accepts_rnn, convert_rnn_module)
    for cls in (rnn_modules.LSTM, rnn_modules.GRU, rnn_modules.RNN)
}
