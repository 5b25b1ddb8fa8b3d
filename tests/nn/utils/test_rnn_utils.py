"""nn.utils.rnn: pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
unpack_sequence, unpad_sequence and PackedSequence."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.nn.utils.rnn import (
    PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence, pad_packed_sequence,
    pad_sequence, unpack_sequence, unpad_sequence,
)
from ember.testing import assert_close

RNG = np.random.default_rng(0)
PADDED = RNG.standard_normal((4, 3, 2))  # (T, B, features)


def _expected_packed(padded, lengths):
    rows = [padded[t, b] for t in range(padded.shape[0]) for b in range(padded.shape[1])
            if lengths[b] > t]
    return np.stack(rows)


def test_pack_padded_sequence_sorted():
    packed = pack_padded_sequence(ember.tensor(PADDED), [4, 3, 1])
    assert isinstance(packed, tuple) and isinstance(packed, PackedSequence)
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.batch_sizes.tolist() == [3, 2, 2, 1]
    assert packed.batch_sizes.dtype is ember.int64
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    assert_close(packed.data, _expected_packed(PADDED, [4, 3, 1]))


def test_pack_padded_sequence_unsorted_and_batch_first():
    x = ember.tensor(PADDED.transpose(1, 0, 2))
    packed = pack_padded_sequence(x, ember.tensor([2, 4, 3]), batch_first=True,
                                  enforce_sorted=False)
    assert packed.sorted_indices.tolist() == [1, 2, 0]
    assert packed.unsorted_indices.tolist() == [2, 0, 1]
    order = [1, 2, 0]
    assert_close(packed.data, _expected_packed(PADDED[:, order], [4, 3, 2]))
    ties = pack_padded_sequence(ember.tensor(PADDED), [2, 2, 4], enforce_sorted=False)
    assert ties.sorted_indices.tolist() == [2, 0, 1]  # a stable sort, as PyTorch's


@pytest.mark.parametrize("lengths, message", [
    ([4, 2, 3], "must be sorted in decreasing order"),
    ([4, 2], "Expected `len\\(lengths\\)` to be equal to batch_size, but got 2 \\(batch_size=3\\)"),
    ([4, 0, 0], "Length of all samples has to be greater than 0"),
    ([5, 2, 1], "larger than the padded sequence length"),
])
def test_pack_padded_sequence_errors(lengths, message):
    with pytest.raises(RuntimeError, match=message):
        pack_padded_sequence(ember.tensor(PADDED), lengths)


def test_pad_packed_sequence_round_trip():
    packed = pack_padded_sequence(ember.tensor(PADDED), [2, 4, 3], enforce_sorted=False)
    padded, lengths = pad_packed_sequence(packed, padding_value=-1.0)
    assert lengths.tolist() == [2, 4, 3] and lengths.dtype is ember.int64
    expected = PADDED.copy()
    expected[2:, 0] = -1
    expected[3:, 2] = -1
    assert_close(padded, expected)
    longer, _ = pad_packed_sequence(packed, batch_first=True, total_length=6)
    assert longer.shape == (3, 6, 2)
    with pytest.raises(ValueError, match="total_length=2 and max sequence length being 4"):
        pad_packed_sequence(packed, total_length=2)


def test_packing_is_differentiable():
    x = ember.tensor(PADDED, requires_grad=True)

    def round_trip(x):
        packed = pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False)
        return pad_packed_sequence(packed, batch_first=True)[0]
    assert gradcheck(round_trip, (x,))
    round_trip(x).sum().backward()
    mask = np.zeros_like(PADDED)
    for b, n in enumerate([2, 4, 3]):
        mask[:n, b] = 1
    assert_close(x.grad, mask)


def test_pad_sequence():
    seqs = [RNG.standard_normal((n, 2)) for n in (2, 5, 3)]
    out = pad_sequence([ember.tensor(s) for s in seqs])
    assert out.shape == (5, 3, 2)
    for b, s in enumerate(seqs):
        assert_close(out[:len(s), b], s)
        assert_close(out[len(s):, b], np.zeros((5 - len(s), 2)))
    first = pad_sequence([ember.tensor(s) for s in seqs], batch_first=True, padding_value=7.0,
                         padding_side="left")
    assert first.shape == (3, 5, 2)
    assert_close(first[0, 3:], seqs[0])
    assert_close(first[0, :3], np.full((3, 2), 7.0))
    with pytest.raises(ValueError, match="padding_side"):
        pad_sequence([ember.ones(2)], padding_side="middle")


def test_pack_and_unpack_sequence():
    seqs = [ember.tensor(RNG.standard_normal((n, 2))) for n in (2, 5, 3)]
    packed = pack_sequence(seqs, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1, 1]
    back = unpack_sequence(packed)
    for a, b in zip(back, seqs):
        assert_close(a, b)
    with pytest.raises(RuntimeError, match="decreasing order"):
        pack_sequence(seqs)
    padded = pad_sequence(seqs)
    for a, b in zip(unpad_sequence(padded, ember.tensor([2, 5, 3])), seqs):
        assert_close(a, b)


def test_packed_sequence_conversions():
    packed = pack_sequence([ember.ones(3, 2), ember.ones(1, 2)], enforce_sorted=False)
    assert packed.to(ember.float64).data.dtype is ember.float64
    assert packed.double().data.dtype is ember.float64
    assert packed.to(ember.float32) is packed
    assert not packed.is_cuda and not packed.is_pinned()
    rebuilt = PackedSequence(packed.data, packed.batch_sizes, packed.sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == packed.unsorted_indices.tolist()
    assert invert_permutation(ember.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert invert_permutation(None) is None
