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
from ...nn.utils.rnn import PackedSequence
from ...ops import rnn as rnn_ops
from .._convert import Call
from .._trace import Source, flatten_tensors
from .functions import PACKED_DATA, packed_note
from ..._core.tensor import Tensor

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
    if not args or set(kwargs) - {"hx"} or len(args) + len(kwargs) > 2:
        return False
    packed = isinstance(args[0], PackedSequence)
    if not packed and (not isinstance(args[0], Tensor) or args[0].dim() not in (2, 3)):
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
    directions = 2 if m.bidirectional else 1
    packed = isinstance(c.arg(0), PackedSequence)
    note = packed_note(c) if packed else None
    batched = packed or c.arg(0).dim() == 3
    if packed:
        x = note["x"]
    else:
        x = c.input(0)
        if not batched:
            x = c.unsqueeze(x, [1])
        elif m.batch_first:
            x = c.transpose(x, (1, 0, 2))
    states = _initial_states(c)
    if not batched:
        states = [c.unsqueeze(s, [1]) for s in states]
    finals = [[] for _ in range(2 if kind == "LSTM" else 1)]
    for layer in range(m.num_layers):
        part = [c.slice(s, [layer * directions], [(layer + 1) * directions], [0])
                for s in states]
        if m.proj_size:
            x, outs = _projected_lstm_layer(c, x, layer, part, note)
        else:
            x, outs = _layer_node(c, kind, x, layer, part, note)
        for k, final in enumerate(outs):
            finals[k].append(final)
    states = []
    for parts in finals:
        state = parts[0] if len(parts) == 1 else c.op("Concat", *parts, axis=0)
        states.append(state if batched else c.squeeze(state, [1]))
    if packed:  # the output stays padded, noted for pad_packed_sequence
        c.ex.notes[("packed", c.rec.index)] = dict(note, x=x)
        c.ex.notes[("unbound", c.rec.index)] = PACKED_DATA
        c.done(*[None] * len(flatten_tensors(c.arg(0))), *states)
        return
    out = x
    if not batched:
        out = c.squeeze(out, [1])
    elif m.batch_first:
        out = c.transpose(out, (1, 0, 2))
    c.done(out, *states)


def _layer_node(c: Call, kind: str, x: str, layer: int, states: list, note) -> tuple:
    """One layer as one ONNX LSTM/GRU/RNN node: (output (T, B, directions * H), [h_n,
    c_n] (directions, B, H))."""
    m = c.module
    hidden = m.hidden_size
    directions = 2 if m.bidirectional else 1
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
    seq_lens = note["seq_lens"] if note is not None else ""
    inputs = [x, join(w), join(r), join(b) if b else "", seq_lens] + states
    direction = "bidirectional" if directions == 2 else "forward"
    outs = c.op(kind, *_trim(inputs), outputs=(3 if kind == "LSTM" else 2),
                **_attrs(kind, hidden, direction, m.mode == "RNN_RELU", directions))
    y = outs[0]  # (T, directions, B, H)
    if directions == 1:
        y = c.squeeze(y, [1])
    else:
        y = c.reshape(c.transpose(y, (0, 2, 1, 3)), [0, 0, -1])
    return y, outs[1:]


# ---------------------------------------------------------------------------
# LSTM with projections: unrolled over the (static) time steps


def _projected_lstm_layer(c: Call, x: str, layer: int, states: list, note) -> tuple:
    """One layer of an LSTM with ``proj_size``, written step by step (ONNX's LSTM has no
    projection): (output (T, B, directions * P), [h_n, c_n])."""
    m = c.module
    if note is not None:
        steps, steps2 = note["steps"]
    else:
        time = 1 if m.batch_first and c.arg(0).dim() == 3 else 0
        steps, steps2 = c.shape(0)[time], c.shape2(0)[time]
    if steps != steps2:
        c.fail("an LSTM with proj_size is unrolled over its time steps (ONNX's LSTM node has "
               "no projection), so the sequence length cannot be a dynamic dim")
    directions = 2 if m.bidirectional else 1
    ys, hs, cs = [], [], []
    for d in range(directions):
        suffix = f"_l{layer}" + ("_reverse" if d else "")
        w_ih, w_hh, w_hr = (c.transpose(c.tensor(getattr(m, name + suffix)), [1, 0])
                            for name in ("weight_ih", "weight_hh", "weight_hr"))
        xw = c.op("MatMul", x, w_ih)
        if m.bias:
            bias = c.op("Add", c.tensor(getattr(m, "bias_ih" + suffix)),
                        c.tensor(getattr(m, "bias_hh" + suffix)))
            xw = c.op("Add", xw, bias)
        if states:
            h, cell = (c.squeeze(c.slice(s, [d], [d + 1], [0]), [0]) for s in states)
        else:
            h, cell = (_zeros(c, x, n) for n in (m.proj_size, m.hidden_size))
        order = range(steps - 1, -1, -1) if d else range(steps)
        out = {}
        for t in order:
            valid = None
            if note is not None:  # a step past a sequence's end keeps its state
                valid = c.unsqueeze(c.op("Less", c.const(np.int64(t)), note["lengths"]), [1])
            h, cell, out[t] = _projected_step(
                c, c.op("Gather", xw, c.const(np.int64(t)), axis=0), h, cell, w_hh, w_hr,
                valid)
        ys.append(c.op("Concat", *[c.unsqueeze(out[t], [0]) for t in range(steps)], axis=0))
        hs.append(c.unsqueeze(h, [0]))
        cs.append(c.unsqueeze(cell, [0]))
    join = (lambda parts, axis: parts[0] if directions == 1 else  # noqa: E731
            c.op("Concat", *parts, axis=axis))
    return join(ys, -1), [join(hs, 0), join(cs, 0)]


def _zeros(c: Call, x: str, size: int) -> str:
    """Zeros (B, size), B being dim 1 of `x` (it may be dynamic)."""
    batch = c.slice(c.op("Shape", x), [1], [2], [0])
    shape = c.op("Concat", batch, c.ints([size]), axis=0)
    return c.op("Expand", c.const(np.zeros((1, size), dtype=c.out_dtype(0))), shape)


def _projected_step(c: Call, xw: str, h: str, cell: str, w_hh: str, w_hr: str, valid):
    """One LSTM step in PyTorch's gate order (input, forget, cell, output), then the
    projection; with `valid` (B, 1), rows past their sequence's end keep their state and
    output zeros.  Returns (h, c, output)."""
    gates = c.op("Add", xw, c.op("MatMul", h, w_hh))
    i, f, g, o = c.op("Split", gates, c.ints([c.module.hidden_size] * 4), axis=1, outputs=4)
    new_cell = c.op("Add", c.op("Mul", c.op("Sigmoid", f), cell),
                    c.op("Mul", c.op("Sigmoid", i), c.op("Tanh", g)))
    new_h = c.op("MatMul", c.op("Mul", c.op("Sigmoid", o), c.op("Tanh", new_cell)), w_hr)
    if valid is None:
        return new_h, new_cell, new_h
    zero = c.const(np.zeros((), dtype=c.out_dtype(0)))
    return (c.op("Where", valid, new_h, h), c.op("Where", valid, new_cell, cell),
            c.op("Where", valid, new_h, zero))


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
