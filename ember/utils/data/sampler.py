"""Samplers: the order in which a DataLoader visits a map-style dataset's keys.

The random samplers draw one 64-bit seed per epoch, from their `generator` or, without
one, from ember's default generator (so ``ember.manual_seed`` fixes every epoch's order),
and build the epoch's whole order from that seed with a private NumPy generator.  Their
position is therefore two numbers, the epoch's seed and how many keys were handed out:
``state_dict()`` returns them, and after ``load_state_dict(state)`` the next ``iter()``
replays the same epoch from where it stopped.  A DataLoader prefetches keys ahead of the
batches it has handed out, so to save a loader's position use the loader's own
``state_dict`` (which counts delivered batches), not its sampler's.
"""

from __future__ import annotations

import numpy as np

from ..._core.tensor import Tensor
from ...ops.sampling import randint
from ...ops.creation import as_tensor


def draw_seed(generator=None) -> int:
    """A fresh 63-bit seed drawn from `generator` (ember's default CPU generator if None)."""
    return int(randint(0, 2 ** 63 - 1, (), generator=generator).item())


class Sampler:
    """Base class: an iterable over dataset keys; subclasses write ``__iter__`` (and
    usually ``__len__``)."""

    def __init__(self, data_source=None) -> None:
        if data_source is not None:
            import warnings

            warnings.warn("`data_source` argument is not used and will be removed in the "
                          "future", UserWarning, stacklevel=2)

    def __iter__(self):
        raise NotImplementedError


class _Tracked:
    """Iterates a precomputed order, counting what was handed out on the sampler."""

    __slots__ = ("_owner", "_it")

    def __init__(self, owner, order: list, start: int):
        self._owner = owner
        owner._yielded = start
        self._it = iter(order[start:])

    def __iter__(self):
        return self

    def __next__(self):
        value = next(self._it)
        self._owner._yielded += 1
        return value


class _ResumableSampler(Sampler):
    """Shared machinery: per-epoch seed, position, state_dict/load_state_dict.

    Subclasses write ``_order(seed) -> list`` (seed is None for deterministic ones).
    """

    _random = True

    def _init_state(self) -> None:
        self._seed = None
        self._yielded = 0
        self._pending = None

    def __iter__(self):
        start = 0
        if self._pending is not None:
            self._seed, start = self._pending["seed"], self._pending["yielded"]
            self._pending = None
        elif self._random:
            self._seed = draw_seed(self.generator)
        return _Tracked(self, self._order(self._seed), start)

    def state_dict(self) -> dict:
        """The current epoch's seed and how many keys it has handed out."""
        return {"seed": self._seed, "yielded": self._yielded}

    def load_state_dict(self, state: dict) -> None:
        """Make the next ``iter()`` resume the epoch described by `state`."""
        if self._random and state.get("seed") is None:
            self._pending = None  # no epoch had started: the next one is a fresh one
            return
        self._pending = {"seed": state.get("seed"), "yielded": int(state.get("yielded", 0))}


class SequentialSampler(_ResumableSampler):
    """``0, 1, ..., len(data_source) - 1`` in order."""

    _random = False

    def __init__(self, data_source) -> None:
        self.data_source = data_source
        self.generator = None
        self._init_state()

    def _order(self, seed) -> list:
        return list(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


class RandomSampler(_ResumableSampler):
    """A random order of the dataset's keys.

    Without replacement each epoch is a permutation (several back to back when
    `num_samples` exceeds the dataset's length); with replacement `num_samples` keys are
    drawn uniformly and independently.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")
        self._init_state()

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _order(self, seed) -> list:
        n, rng = len(self.data_source), _rng(seed)
        if self.replacement:
            return rng.integers(0, n, size=self.num_samples).tolist()
        rounds, rest = divmod(self.num_samples, n)
        parts = [rng.permutation(n) for _ in range(rounds)]
        if rest:
            parts.append(rng.permutation(n)[:rest])
        return np.concatenate(parts).tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_ResumableSampler):
    """The given indices, in a random order each epoch (without replacement)."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator
        self._init_state()

    def _order(self, seed) -> list:
        perm = _rng(seed).permutation(len(self.indices))
        return [self.indices[i] for i in perm.tolist()]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_ResumableSampler):
    """`num_samples` keys in ``0 .. len(weights)-1``, key i drawn with probability
    proportional to ``weights[i]`` (weights need not sum to 1)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        array = weights.cpu_array() if isinstance(weights, Tensor) else np.asarray(weights)
        array = np.asarray(array, dtype=np.float64)
        if array.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(array.shape)}")
        if (array < 0).any() or not np.isfinite(array).all() or array.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (weights must be finite, "
                               "non-negative and not all zero)")
        if not replacement and num_samples > np.count_nonzero(array):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")

        self.weights = as_tensor(array)
        self._p = array / array.sum()
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator
        self._init_state()

    def _order(self, seed) -> list:
        return _rng(seed).choice(len(self._p), size=self.num_samples,
                                 replace=self.replacement, p=self._p).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the keys of `sampler` into lists of `batch_size` (the last one shorter
    unless `drop_last`)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                or batch_size <= 0):
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        # the wrapped sampler starts its epoch now (draws its seed), not at the first next()
        return self._batches(iter(self.sampler))

    def _batches(self, it):
        size = self.batch_size
        while True:
            batch = []
            for key in it:
                batch.append(key)
                if len(batch) == size:
                    break
            if len(batch) == size or (batch and not self.drop_last):
                yield batch
            if len(batch) < size:
                return

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size

    def state_dict(self) -> dict | None:
        """The wrapped sampler's state (None when it has none)."""
        inner = getattr(self.sampler, "state_dict", None)
        return {"sampler": inner()} if callable(inner) else None

    def load_state_dict(self, state: dict | None) -> None:
        """Resume the wrapped sampler (batches restart at its saved position)."""
        if state is not None and callable(getattr(self.sampler, "load_state_dict", None)):
            self.sampler.load_state_dict(state["sampler"])


__all__ = [
    "BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
    "WeightedRandomSampler",
]
