"""Tests of ember/utils/data/dataset.py: the dataset classes and random_split."""

import numpy as np
import pytest

import ember
from ember.utils.data import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i * i


class Count(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def test_base_classes_need_subclassing():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())


def test_tensor_dataset():
    x, y = ember.arange(12).reshape(4, 3), ember.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6, 7, 8] and yi.item() == 0
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.zeros(3))


def test_stack_dataset_tuple_and_dict():
    a, b = Squares(5), TensorDataset(ember.arange(5))
    assert StackDataset(a, b)[3][0] == 9
    item = StackDataset(sq=a, t=b)[4]
    assert item["sq"] == 16 and item["t"][0].item() == 4
    assert len(StackDataset(a, b)) == 5
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset(a, t=b)
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, Squares(4))


def test_concat_dataset_indexing_and_add():
    ds = ConcatDataset([Squares(3), Squares(2), Squares(4)])
    assert len(ds) == 9 and ds.cumulative_sizes == [3, 5, 9]
    assert [ds[i] for i in range(9)] == [0, 1, 4, 0, 1, 0, 1, 4, 9]
    assert ds[-1] == 9 and ds[-9] == 0
    with pytest.raises(ValueError, match="absolute value of index"):
        ds[-10]
    assert len(Squares(2) + Squares(3)) == 5
    with pytest.raises(AssertionError, match="empty"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="IterableDataset"):
        ConcatDataset([Count(0, 2)])


def test_chain_dataset():
    ds = ChainDataset([Count(0, 3), Count(10, 12)])
    assert list(ds) == [0, 1, 2, 10, 11] and len(ds) == 5
    assert list(Count(0, 2) + Count(5, 6)) == [0, 1, 5]
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_subset():
    sub = Subset(Squares(10), [9, 2, 5])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 4, 25]
    assert getattr(sub, "__getitems__", None) is None      # Squares loads one by one

    class Batched(Squares):
        def __getitems__(self, keys):
            return [("batch", k) for k in keys]

    assert Subset(Batched(10), [9, 2, 5]).__getitems__([0, 2]) == [("batch", 9), ("batch", 5)]


def test_random_split_lengths_and_fractions():
    g = ember.Generator().manual_seed(3)
    a, b, c = random_split(Squares(10), [5, 3, 2], generator=g)
    assert (len(a), len(b), len(c)) == (5, 3, 2)
    assert sorted(a.indices + b.indices + c.indices) == list(range(10))
    # fractions: floor each, the remainder dealt round-robin
    parts = random_split(range(11), [0.5, 0.3, 0.2], generator=g)
    assert [len(p) for p in parts] == [6, 3, 2]
    assert [len(p) for p in random_split(range(10), [0.34, 0.33, 0.33])] == [4, 3, 3]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [5, 4])
    with pytest.warns(UserWarning, match="Length of split at index [12] is 0"):
        random_split(range(3), [0.9, 0.05, 0.05], generator=g)


def test_random_split_is_fixed_by_the_seed():
    def split():
        return [s.indices for s in random_split(range(20), [0.5, 0.5])]

    ember.manual_seed(7)
    first = split()
    ember.manual_seed(7)
    assert split() == first
    g1, g2 = ember.Generator().manual_seed(1), ember.Generator().manual_seed(1)
    assert ([s.indices for s in random_split(range(9), [4, 5], generator=g1)]
            == [s.indices for s in random_split(range(9), [4, 5], generator=g2)])
    assert np.unique(first[0] + first[1]).size == 20
