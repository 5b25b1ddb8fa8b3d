"""Tests of ember/utils/data/sampler.py and distributed.py: orders, statistics, seeding,
errors, and resuming mid-epoch from a state_dict."""

import math

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler, RandomSampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler,
)
from ember.utils.data.distributed import DistributedSampler


def test_sequential_sampler():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_sampler_is_a_permutation_fixed_by_the_generator():
    g = ember.Generator().manual_seed(0)
    s = RandomSampler(range(50), generator=g)
    first, second = list(s), list(s)
    assert sorted(first) == list(range(50)) and sorted(second) == list(range(50))
    assert first != second                      # a new order every epoch
    g.manual_seed(0)
    assert list(s) == first                      # the generator fixes the orders
    ember.manual_seed(5)                         # without a generator: ember's default one
    a = list(RandomSampler(range(30)))
    ember.manual_seed(5)
    assert list(RandomSampler(range(30))) == a


def test_random_sampler_num_samples_and_replacement():
    g = ember.Generator().manual_seed(1)
    s = RandomSampler(range(4), num_samples=10, generator=g)
    order = list(s)
    assert len(s) == 10 and len(order) == 10
    assert sorted(order[:4]) == [0, 1, 2, 3] and sorted(order[4:8]) == [0, 1, 2, 3]
    draws = np.array(list(RandomSampler(range(5), replacement=True, num_samples=20000,
                                        generator=g)))
    counts = np.bincount(draws, minlength=5)
    assert np.all(np.abs(counts / 20000 - 0.2) < 0.02)          # uniform
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)


def test_random_sampler_permutation_statistics():
    # each key lands in each position about equally often
    g = ember.Generator().manual_seed(2)
    s = RandomSampler(range(4), generator=g)
    counts = np.zeros((4, 4))
    for _ in range(4000):
        for pos, key in enumerate(s):
            counts[key, pos] += 1
    assert np.all(np.abs(counts / 4000 - 0.25) < 0.04)


def test_subset_random_sampler():
    g = ember.Generator().manual_seed(0)
    s = SubsetRandomSampler([10, 20, 30, 40], generator=g)
    assert sorted(s) == [10, 20, 30, 40] and len(s) == 4


def test_weighted_random_sampler_statistics_and_errors():
    g = ember.Generator().manual_seed(0)
    w = [1.0, 3.0, 0.0, 6.0]
    draws = np.array(list(WeightedRandomSampler(w, 20000, generator=g)))
    freq = np.bincount(draws, minlength=4) / 20000
    assert np.allclose(freq, [0.1, 0.3, 0.0, 0.6], atol=0.015)
    no_repeat = list(WeightedRandomSampler(ember.tensor(w), 3, replacement=False, generator=g))
    assert sorted(no_repeat) == [0, 1, 3]
    with pytest.raises(RuntimeError, match="without replacement"):
        WeightedRandomSampler(w, 4, replacement=False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler(w, 0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler(w, 2, replacement=0)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 2)


def test_batch_sampler():
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3
    assert len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 1, 0)


@pytest.mark.parametrize("make", [
    lambda g: RandomSampler(range(20), generator=g),
    lambda g: RandomSampler(range(5), replacement=True, num_samples=17, generator=g),
    lambda g: SubsetRandomSampler(list(range(3, 20)), generator=g),
    lambda g: WeightedRandomSampler([1.0] * 10, 15, generator=g),
    lambda g: SequentialSampler(range(9)),
])
def test_sampler_resumes_mid_epoch(make):
    s = make(ember.Generator().manual_seed(4))
    it = iter(s)
    head = [next(it) for _ in range(5)]
    state = s.state_dict()
    tail = list(it)
    fresh = make(ember.Generator().manual_seed(99))   # another generator: the state decides
    fresh.load_state_dict(state)
    assert list(fresh) == tail
    assert len(head) + len(tail) == len(s)


def test_batch_sampler_resumes_through_its_sampler():
    g = ember.Generator().manual_seed(0)
    bs = BatchSampler(RandomSampler(range(10), generator=g), 3, False)
    it = iter(bs)
    next(it)
    state = bs.state_dict()
    rest = list(it)
    other = BatchSampler(RandomSampler(range(10)), 3, False)
    other.load_state_dict(state)
    assert list(other) == rest


def test_distributed_sampler_partitions_the_dataset():
    n, replicas = 10, 3
    parts = [list(DistributedSampler(range(n), replicas, r, shuffle=False))
             for r in range(replicas)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]   # padded by wrapping around
    assert all(len(DistributedSampler(range(n), replicas, r)) == 4 for r in range(replicas))
    dropped = [list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=True))
               for r in range(replicas)]
    assert dropped == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    # shuffled: the replicas together cover every key, and agree on the order
    shuffled = [list(DistributedSampler(range(12), 4, r, seed=3)) for r in range(4)]
    assert sorted(sum(shuffled, [])) == list(range(12))


def test_distributed_sampler_epochs_and_seed():
    s = DistributedSampler(range(20), 2, 0, seed=1)
    e0 = list(s)
    assert list(s) == e0                 # same epoch, same order
    s.set_epoch(1)
    e1 = list(s)
    assert e1 != e0
    assert list(DistributedSampler(range(20), 2, 0, seed=2)) != e0
    it = iter(s)
    next(it), next(it)
    state = s.state_dict()
    rest = list(it)
    t = DistributedSampler(range(20), 2, 0, seed=1)
    t.load_state_dict(state)
    assert t.epoch == 1 and list(t) == rest


def test_distributed_sampler_errors():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval"):
        DistributedSampler(range(4), num_replicas=3, rank=3)
    # without num_replicas/rank it needs a process group: none here
    with pytest.raises((RuntimeError, ValueError)):
        DistributedSampler(range(4))


def test_distributed_sampler_small_dataset_padding():
    parts = [list(DistributedSampler(range(2), 5, r, shuffle=False)) for r in range(5)]
    assert parts == [[0], [1], [0], [1], [0]]
    assert math.ceil(2 / 5) == len(parts[0])
