"""Variable-length sequences for recurrent layers: padding and packing.

A batch of sequences of different lengths can be *padded* to one (T, B, *) tensor, or
*packed* into a `PackedSequence`: the rows of time step 0 of every sequence, then those
of step 1 of the sequences that are that long, and so on, with ``batch_sizes[t]`` saying
how many sequences reach step t.  Packing needs the sequences sorted by decreasing
length; ``sorted_indices`` remembers the sorting (``unsorted_indices`` undoes it), so
callers can pass them in any order.  RNN, LSTM and GRU accept a PackedSequence and
return one, skipping the padding entirely.

All the functions here are differentiable in the sequence values.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..._core.tensor import Tensor, _make
from ...ops._util import xp_of
from ...ops.creation import full
from ...ops.index_dim import index_select
from ...ops.joining import cat, stack
from ..._core import dtype

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence_",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    data = permutation._data
    inverse = data.copy()
    inverse[data] = xp_of(data).arange(data.shape[0])
    return _make(inverse)


class PackedSequence(_PackedSequenceBase):
    """A packed batch of variable-length sequences (a namedtuple of four tensors).

    ``data`` (sum of lengths, *) holds the rows time step by time step; ``batch_sizes``
    (an int64 CPU tensor) how many sequences are active at each step; ``sorted_indices``
    the batch order by decreasing length (None when the input was already sorted) and
    ``unsorted_indices`` its inverse.  Build one with ``pack_padded_sequence`` or
    ``pack_sequence`` rather than by hand.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes))
            data, batch_sizes = data[0], data[1]
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """The sequence with its data converted (the index tensors follow the device)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = self.sorted_indices, self.unsorted_indices
        if sorted_indices is not None:
            sorted_indices = sorted_indices.to(device=data.device)
            unsorted_indices = unsorted_indices.to(device=data.device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self.to(*(args or ("cuda",)), **kwargs)

    def cpu(self, *args, **kwargs) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype=_dtypes().float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=_dtypes().float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=_dtypes().float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=_dtypes().int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=_dtypes().int32)

    def pin_memory(self) -> PackedSequence:
        return self

    def is_pinned(self) -> bool:
        return False

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _dtypes():
    return dtype


def _lengths_array(lengths, op: str) -> np.ndarray:
    if isinstance(lengths, Tensor):
        return lengths.cpu_array().astype(np.int64)
    return np.asarray([int(v) for v in lengths], dtype=np.int64)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with `batch_first`) of sequences of the
    given `lengths` into a PackedSequence.

    With `enforce_sorted` (default) the lengths must be in decreasing order; otherwise
    the batch is sorted here and the PackedSequence remembers the order.
    """
    lens = _lengths_array(lengths, "pack_padded_sequence")
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability.")
        order = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if lens.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={batch})")
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lens.size and lens.max() > steps:
        raise RuntimeError(f"pack_padded_sequence: a length ({int(lens.max())}) is larger than "
                           f"the padded sequence length ({steps})")
    sorted_indices = None
    if order is not None:
        sorted_indices = _make(np.ascontiguousarray(order))
        input = index_select(input, 1, sorted_indices.to(device=input.device))
    batch_sizes = np.array([int((lens > t).sum()) for t in range(int(lens.max(initial=0)))],
                           dtype=np.int64)
    rows = np.concatenate([t * batch + np.arange(b) for t, b in enumerate(batch_sizes)]) if (
        batch_sizes.size) else np.zeros(0, dtype=np.int64)
    flat = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    data = index_select(flat, 0, _make(rows).to(device=input.device))
    if sorted_indices is not None:
        sorted_indices = sorted_indices.to(device=input.device)
    return PackedSequence(data, _make(batch_sizes), sorted_indices)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Undo ``pack_padded_sequence``: returns (padded, lengths).

    `padded` is (T, B, *) (or (B, T, *)) in the original batch order with
    `padding_value` after each sequence's end, T being the longest length or
    `total_length`; `lengths` is an int64 tensor.
    """
    data, batch_sizes = sequence.data, sequence.batch_sizes.cpu_array().astype(np.int64)
    steps = batch_sizes.size
    batch = int(batch_sizes[0]) if steps else 0
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    rows = data.shape[0]
    # Each padded position reads its row of data, or the extra padding row at the end.
    lookup = np.full((steps, batch), rows, dtype=np.int64)
    start = 0
    for t, b in enumerate(batch_sizes):
        lookup[t, :b] = np.arange(start, start + b)
        start += b
    pad_row = full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
                   device=data.device)
    padded = index_select(cat([data, pad_row]), 0,
                          _make(lookup.reshape(-1)).to(device=data.device))
    padded = padded.reshape((steps, batch) + tuple(data.shape[1:]))
    lengths = np.array([int((batch_sizes > b).sum()) for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = index_select(padded, 1, unsorted)
        lengths = lengths[unsorted.cpu_array()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, _make(lengths)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes (L_i, *) into one (T, B, *) (or (B, T, *)) tensor, T being
    the longest L_i, filling with `padding_value` on the right (or the left)."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    padded = []
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: all sequences must have the same trailing "
                               f"shape, got {list(s.shape[1:])} and {list(trailing)}")
        missing = longest - s.shape[0]
        if missing:
            fill = full((missing,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, fill] if padding_side == "right" else [fill, s])
        padded.append(s)
    return stack(padded, 1 if not batch_first else 0)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False):
    """The list of sequences of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = _lengths_array(lengths, "unpad_sequence")
    return [padded_sequences[i, :int(n)] for i, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) (by decreasing length, unless not `enforce_sorted`)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
