"""Whole-function records (see `TracedFunction` in ``_trace.py``): embedding_bag, and
pack_padded_sequence / pad_packed_sequence around a recurrent layer.

embedding_bag cuts its bags on the host, so its records would bake the offsets in;
here each bag is a row of a (bags, n) membership mask built in the graph from the
offsets (``offsets[b] <= j < end of bag b``), and the bag's sum, mean or max is a
reduction of the looked-up rows under that mask.

A PackedSequence has no ONNX form: it stays in its padded (time-major) form with the
lengths beside it, noted by the pack record for the RNN/LSTM/GRU converter (which
feeds the lengths to the node's ``sequence_lens``) and for pad_packed_sequence, which
cuts the output to the longest length (or `total_length`) and writes `padding_value`
after each sequence's end.
"""

from __future__ import annotations

import numpy as np

from ...nn.utils import rnn as rnn_utils
from ...ops import embedding
from .._convert import Call, INT64_MAX
from .._trace import TracedFunction


class EmbeddingBagCall(TracedFunction):
    function = embedding.embedding_bag


class PackPaddedSequenceCall(TracedFunction):
    function = rnn_utils.pack_padded_sequence


class PadPackedSequenceCall(TracedFunction):
    function = rnn_utils.pad_packed_sequence


# ---------------------------------------------------------------------------
# embedding_bag


def _bag_reduce(c: Call, rows: str, member: str | None, weights: str | None, mode: str,
                dtype) -> str:
    """Reduce `rows` (bags or 1, n, D) over axis 1 for each bag; `member` (bags, n) tells
    which rows each bag holds (None: all of them), `weights` (bags or 1, n) scales them."""
    if mode == "max":
        if member is None:
            return c.reduce("ReduceMax", rows, [1], False)
        lowest = c.const(-np.inf, dtype)
        top = c.reduce("ReduceMax", c.op("Where", c.unsqueeze(member, [-1]), rows, lowest),
                       [1], False)
        filled = c.cast(c.reduce("ReduceMax", c.cast(member, np.int32), [1], True), np.bool_)
        return c.op("Where", filled, top, c.const(0, dtype))  # an empty bag gives zeros
    scale = None if member is None else c.cast(member, dtype)
    if weights is not None:
        scale = weights if scale is None else c.op("Mul", scale, weights)
    total = rows if scale is None else c.op("Mul", rows, c.unsqueeze(scale, [-1]))
    total = c.reduce("ReduceSum", total, [1], False)
    if mode == "sum":
        return total
    if member is None:
        return c.reduce("ReduceMean", rows, [1], False)
    count = c.reduce("ReduceSum", c.cast(member, dtype), [1], True)
    return c.op("Div", total, c.op("Max", count, c.const(1, dtype)))


def convert_embedding_bag(c: Call) -> None:
    (_, _, _, max_norm, _, _, mode, _, per_sample_weights, include_last_offset,
     padding_idx) = c.rec.args
    if max_norm is not None:
        c.fail("max_norm rescales rows of the weight in place as it looks them up, which a "
               "graph cannot do; renormalize the weight before exporting and drop max_norm")
    dtype = c.dtype(1)
    idx = c.input(0)
    rows = c.op("Gather", c.input(1), idx)
    weights = None
    if per_sample_weights is not None:
        weights = c.input(8)
        if c.dtype(8) != dtype:
            weights = c.cast(weights, dtype)
    keep = None
    if padding_idx is not None:
        pad = padding_idx + c.shape(1)[0] if padding_idx < 0 else padding_idx
        keep = c.op("Not", c.op("Equal", idx, c.const(pad, c.dtype(0))))
    if len(c.shape(0)) == 2:  # (bags, n): each row is a bag
        c.done(_bag_reduce(c, rows, keep, weights, mode, dtype))
        return
    offsets = c.input(2)
    if c.dtype(2) != np.int64:
        offsets = c.cast(offsets, np.int64)
    if include_last_offset:
        starts = c.slice(offsets, [0], [-1], [0])
        ends = c.slice(offsets, [1], [INT64_MAX], [0])
    else:
        starts = offsets
        ends = c.op("Concat", c.slice(offsets, [1], [INT64_MAX], [0]), c.op("Shape", idx),
                    axis=0)
    pos = c.unsqueeze(c.op("Range", c.const(np.int64(0)), c.squeeze(c.op("Shape", idx), [0]),
                           c.const(np.int64(1))), [0])
    member = c.op("And", c.op("LessOrEqual", c.unsqueeze(starts, [1]), pos),
                  c.op("Less", pos, c.unsqueeze(ends, [1])))
    if keep is not None:
        member = c.op("And", member, c.unsqueeze(keep, [0]))
    rows = c.unsqueeze(rows, [0])
    if weights is not None:
        weights = c.unsqueeze(weights, [0])
    c.done(_bag_reduce(c, rows, member, weights, mode, dtype))


# ---------------------------------------------------------------------------
# packed sequences


def convert_pack_padded_sequence(c: Call) -> None:
    """Emits nothing itself: notes the padded input (time-major) and the lengths."""
    x = c.input(0)
    batch_first = bool(c.arg(2))
    rank = len(c.shape(0))
    if batch_first:
        x = c.transpose(x, [1, 0] + list(range(2, rank)))
    if c.is_tensor(1):
        lengths = c.input(1)
        if c.dtype(1) != np.int64:
            lengths = c.cast(lengths, np.int64)
    else:
        lengths = c.const(np.array([int(n) for n in c.arg(1)], dtype=np.int64))
    time = 1 if batch_first else 0
    c.ex.notes[("unbound", c.rec.index)] = PACKED_DATA
    c.ex.notes[("packed", c.rec.index)] = {
        "x": x, "lengths": lengths, "seq_lens": c.cast(lengths, np.int32),
        "steps": (c.shape(0)[time], c.shape2(0)[time])}


PACKED_DATA = ("the rows of a PackedSequence have no ONNX form: pass it to an RNN/LSTM/GRU "
               "or to pad_packed_sequence (pack_padded_sequence -> layer -> "
               "pad_packed_sequence is exported with the lengths as the node's sequence_lens)")


def packed_note(c: Call, position: int = 0) -> dict:
    """The note of the PackedSequence given as argument `position` (its data must come
    from pack_padded_sequence or a recurrent layer run on one inside the export)."""
    sources = c.rec.sources[position]
    src = sources[0] if isinstance(sources, list) else None
    note = None
    if src is not None and src.kind == "op":
        note = c.ex.notes.get(("packed", src.ref[0]))
    if note is None:
        c.fail("a PackedSequence is only exported when it is made by pack_padded_sequence "
               "inside the exported forward and read by an RNN/LSTM/GRU or "
               "pad_packed_sequence (its data rows have no ONNX form)")
    return note


def convert_pad_packed_sequence(c: Call) -> None:
    note = packed_note(c)
    batch_first, padding_value, total_length = c.arg(1), c.arg(2), c.arg(3)
    y, lengths = note["x"], note["lengths"]
    rank = len(c.out_shape(0))
    if total_length is not None:
        pads = [0] * rank + [int(total_length)] + [0] * (rank - 1)
        y = c.op("Pad", y, c.ints(pads), mode="constant")
        y = c.slice(y, [0], [int(total_length)], [0])
    else:
        longest = c.reduce("ReduceMax", lengths, [0], True)
        y = c.op("Slice", y, c.ints([0]), longest, c.ints([0]))
    steps = c.op("Range", c.const(np.int64(0)),
                 c.op("Gather", c.op("Shape", y), c.const(np.int64(0)), axis=0),
                 c.const(np.int64(1)))
    valid = c.op("Less", c.unsqueeze(steps, [1]), c.unsqueeze(lengths, [0]))
    if rank > 2:
        valid = c.unsqueeze(valid, list(range(2, rank)))
    y = c.op("Where", valid, y, c.const(padding_value, c.out_dtype(0)))
    if batch_first:
        y = c.transpose(y, [1, 0] + list(range(2, rank)))
    c.done(y, c.op("Identity", lengths))


CONVERTERS = {
    EmbeddingBagCall: convert_embedding_bag,
    PackPaddedSequenceCall: convert_pack_padded_sequence,
    PadPackedSequenceCall: convert_pad_packed_sequence,
}

# the functions the tracer watches: code object -> marker
FUNCTIONS = {marker.function.__code__: marker for marker in CONVERTERS}
