"""`DistributedSampler`: each of `num_replicas` processes sees its own share of a dataset.

Every replica builds the same epoch order from ``seed + epoch`` (so all agree without
talking), pads it (or cuts it, with `drop_last`) to a multiple of `num_replicas`, and
takes every `num_replicas`-th key from position `rank`.  With `num_replicas` and `rank`
given it needs no process group.
"""

from __future__ import annotations

import math

import numpy as np

from ... import distributed as dist
from .sampler import Sampler, _Tracked


def _process_group_size_and_rank(num_replicas, rank):
    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    if num_replicas is None:
        num_replicas = dist.get_world_size()
    if rank is None:
        rank = dist.get_rank()
    return num_replicas, rank


class DistributedSampler(Sampler):
    """The keys of `dataset` that belong to replica `rank` of `num_replicas`.

    Call ``set_epoch(epoch)`` before each epoch when `shuffle` is on, or every epoch
    repeats the same order.  Without `drop_last` the order is padded by repeating its
    first keys so every replica gets ``ceil(len / num_replicas)`` keys; with it, the tail
    that does not divide evenly is dropped.

    >>> s = DistributedSampler(range(10), num_replicas=3, rank=0, shuffle=False)
    >>> list(s)
    [0, 3, 6, 9]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            num_replicas, rank = _process_group_size_and_rank(num_replicas, rank)
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed
        self._yielded = 0
        self._pending_skip = 0

    def _order(self) -> list:
        n = len(self.dataset)
        if self.shuffle:
            rng = np.random.Generator(np.random.PCG64([self.seed % 2 ** 64, self.epoch]))
            order = rng.permutation(n).tolist()
        else:
            order = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(order)
            if pad <= len(order):
                order += order[:pad]
            else:
                order += (order * math.ceil(pad / len(order)))[:pad]
        else:
            order = order[:self.total_size]
        return order[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        start, self._pending_skip = self._pending_skip, 0
        return _Tracked(self, self._order(), start)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that seeds the next order (call it before every epoch)."""
        self.epoch = epoch

    def state_dict(self) -> dict:
        """The epoch and how many keys of it were handed out."""
        return {"epoch": self.epoch, "yielded": self._yielded}

    def load_state_dict(self, state: dict) -> None:
        """Make the next ``iter()`` resume the saved epoch at the saved position."""
        self.epoch = state["epoch"]
        self._pending_skip = int(state.get("yielded", 0))


__all__ = ["DistributedSampler"]
