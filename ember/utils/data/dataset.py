"""Datasets: the map-style `Dataset` (``len`` and ``dataset[i]``) and the `IterableDataset`
(a stream), and the small combinators built on them: tensors side by side, subsets,
concatenation, chaining, stacking, and `random_split`.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Sequence

from ..._core.tensor import Tensor
from ...ops.sampling import randperm
from ...random import default_generator


class Dataset:
    """A map from keys (usually ``0 .. len-1``) to samples.

    Subclasses write ``__getitem__`` and, for the default samplers, ``__len__``.  They may
    also write ``__getitems__(indices)`` to load a whole batch at once; the DataLoader
    then calls it instead of ``__getitem__`` once per index.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream of samples: subclasses write ``__iter__``.

    With several DataLoader workers each worker iterates its own copy of the dataset;
    use ``get_worker_info()`` inside ``__iter__`` to give each worker its own shard,
    or every sample is seen once per worker.
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of several tensors of the same first dimension:
    ``dataset[i] == (t0[i], t1[i], ...)``."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].size(0)
        if any(t.size(0) != n for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Several datasets of the same length side by side.

    ``StackDataset(a, b)[i] == (a[i], b[i])``; with keywords,
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``.
    """

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- "
                             "(via ``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets = args if args else kwargs
        parts = args if args else tuple(kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: d[index] for key, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence) -> list:
        """Running totals of the datasets' lengths."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other (chained lazily)."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of `dataset` at the given `indices`, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    @property
    def __getitems__(self):
        # Only when the wrapped dataset loads batches itself: otherwise the DataLoader
        # loads (and seeds) sample by sample, as it would for the wrapped dataset.
        inner = getattr(self.dataset, "__getitems__", None)
        if not callable(inner):
            raise AttributeError("__getitems__")
        return lambda indices: inner([self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def _lengths_from_fractions(fractions, n: int) -> list:
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(int(math.floor(n * frac)))
    # the remainder goes one by one to the splits, round-robin
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                          "dataset.", stacklevel=3)
    return lengths


def random_split(dataset: Dataset, lengths: Sequence, generator=default_generator) -> list:
    """Split `dataset` at random into non-overlapping `Subset`s of the given lengths.

    `lengths` are either counts that add up to ``len(dataset)`` or fractions that add up
    to 1 (each split gets ``floor(n * fraction)`` samples, the remainder is dealt out
    round-robin).  The permutation is drawn from `generator` (ember's default one unless
    given), so ``ember.manual_seed`` or a seeded generator fixes the split.

    >>> a, b = random_split(range(10), [0.7, 0.3], generator=ember.Generator().manual_seed(0))
    >>> len(a), len(b)
    (7, 3)
    """
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(lengths, n)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(sum(lengths), generator=generator).tolist()
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start:start + length]))
        start += length
    return subsets


__all__ = [
    "ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset", "Subset",
    "TensorDataset", "random_split",
]
