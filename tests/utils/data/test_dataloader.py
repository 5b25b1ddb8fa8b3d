"""Tests of ember/utils/data/dataloader.py: batching, arguments, workers, iterable datasets,
reproducibility whatever the number of workers, and resuming mid-epoch."""

import multiprocessing
import os
import random

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler, DataLoader, Dataset, IterableDataset, RandomSampler, SequentialSampler,
    TensorDataset, get_worker_info,
)
from ember.utils.data import _shared_memory


class Augmented(Dataset):
    """Every sample draws from NumPy's global generator, Python's random and ember's."""

    def __init__(self, n=24):
        self.data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        x = self.data[i] + np.random.rand(3).astype(np.float32)
        x = x * np.float32(random.uniform(0.5, 1.5))
        return ember.from_numpy(x) + ember.rand(3), i


class Shards(IterableDataset):
    """range(n), split between workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, self.n, step):
            yield i, random.random()


class Pids(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return os.getpid()


class Big(Dataset):
    """Samples large enough that a batch travels through shared memory."""

    def __init__(self, n=4):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full((256, 256), i, dtype=np.float32)


def record_worker(worker_id):
    info = get_worker_info()
    info.dataset.init_calls = (worker_id, info.id, info.num_workers)


class InitReport(Dataset):
    init_calls = None

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return (self.init_calls, info.seed if info else None)


def as_plain(batches):
    return [(b[0].numpy().copy(), b[1].tolist()) for b in batches]


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x[0], y[0]) and x[1] == y[1]
                                    for x, y in zip(a, b))


def no_children_left():
    return multiprocessing.active_children() == []


# -- batching and arguments ----------------------------------------------------


def test_batches_len_and_drop_last():
    ds = TensorDataset(ember.arange(10), ember.arange(10) * 10)
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7],
                                                                    [8, 9]]
    assert batches[1][1].tolist() == [40, 50, 60, 70]
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert len(list(DataLoader(ds, batch_size=4, drop_last=True))) == 2
    shuffled = list(DataLoader(ds, batch_size=3, shuffle=True))
    assert sorted(sum((b[0].tolist() for b in shuffled), [])) == list(range(10))


def test_unbatched_sampler_and_batch_sampler():
    ds = TensorDataset(ember.arange(5))
    single = list(DataLoader(ds, batch_size=None))
    assert len(single) == 5 and single[2][0].item() == 2 and single[2][0].dim() == 0
    picked = list(DataLoader(ds, sampler=[4, 0], batch_size=1))
    assert [b[0].tolist() for b in picked] == [[4], [0]]
    custom = DataLoader(ds, batch_sampler=[[0, 1], [4]])
    assert [b[0].tolist() for b in custom] == [[0, 1], [4]]
    assert DataLoader(ds, batch_size=None, collate_fn=lambda s: "x").__iter__().__next__() == "x"


def test_argument_errors():
    ds = TensorDataset(ember.arange(4))
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
        (dict(num_workers=1, multiprocessing_context="nope"), "valid start method"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            DataLoader(ds, **kwargs)
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Shards(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Shards(3), sampler=[0])
    loader = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
        loader.batch_size = 3
    assert isinstance(loader.batch_sampler, BatchSampler)
    assert isinstance(loader.sampler, SequentialSampler)
    assert isinstance(DataLoader(ds, shuffle=True).sampler, RandomSampler)


def test_pin_memory_is_accepted_and_warns_without_a_gpu():
    loader = DataLoader(TensorDataset(ember.arange(4)), batch_size=2, pin_memory=True)
    if ember.cuda.is_available():
        batches = list(loader)
    else:
        with pytest.warns(UserWarning, match="no accelerator is found"):
            batches = list(loader)
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3]]


# -- workers -------------------------------------------------------------------


def test_workers_give_the_same_batches_as_the_main_process():
    def run(workers, seed=0, **kwargs):
        ember.manual_seed(seed)
        loader = DataLoader(Augmented(), batch_size=5, shuffle=True, num_workers=workers,
                            **kwargs)
        return as_plain(loader)

    main = run(0)
    assert same(main, run(2))
    assert same(main, run(1, prefetch_factor=1))
    assert not same(main, run(0, seed=1))
    g = ember.Generator().manual_seed(3)
    with_gen = as_plain(DataLoader(Augmented(), batch_size=5, shuffle=True, generator=g))
    g.manual_seed(3)
    assert same(with_gen, as_plain(DataLoader(Augmented(), batch_size=5, shuffle=True,
                                              num_workers=2, generator=g)))
    assert no_children_left()


def test_repeated_keys_get_their_own_random_streams():
    ember.manual_seed(0)
    sampler = [3, 3, 3, 3]
    xs = [b[0] for b in DataLoader(Augmented(), sampler=sampler, batch_size=None)]
    assert len({tuple(x.tolist()) for x in xs}) == 4


def test_the_loader_leaves_the_main_process_streams_alone():
    def draws_after(workers):
        ember.manual_seed(0)
        np.random.seed(0)
        random.seed(0)
        for _ in DataLoader(Augmented(8), batch_size=4, num_workers=workers):
            pass
        return ember.rand(2).tolist(), np.random.rand(2).tolist(), random.random()

    assert draws_after(0) == draws_after(2)


def test_seed_per_sample_off_draws_from_the_global_streams():
    np.random.seed(0)
    random.seed(0)
    ember.manual_seed(0)
    plain = as_plain(DataLoader(Augmented(6), batch_size=3, seed_per_sample=False))
    np.random.seed(0)
    random.seed(0)
    ember.manual_seed(0)
    DataLoader(Augmented(6)).__iter__()      # the epoch's seed draw, as above
    expected = [Augmented(6)[i][0].numpy() for i in range(6)]
    assert np.array_equal(np.concatenate([b[0] for b in plain]), np.stack(expected))


def test_iterable_dataset_sharding_across_workers():
    ember.manual_seed(0)
    loader = DataLoader(Shards(10), batch_size=2, num_workers=2)
    keys = sorted(sum((b[0].tolist() for b in loader), []))
    assert keys == list(range(10))
    assert len(loader) == 5
    one = [b[0].tolist() for b in DataLoader(Shards(5), batch_size=2)]
    assert one == [[0, 1], [2, 3], [4]]
    ember.manual_seed(0)
    a = [b[1].tolist() for b in DataLoader(Shards(6), batch_size=3)]
    ember.manual_seed(0)
    b = [b[1].tolist() for b in DataLoader(Shards(6), batch_size=3, num_workers=1)]
    assert a == b                   # 0 workers behaves as one worker, random draws included
    assert get_worker_info() is None
    assert no_children_left()


def test_worker_init_fn_and_worker_info():
    ember.manual_seed(0)
    out = list(DataLoader(InitReport(), batch_size=None, num_workers=2,
                          worker_init_fn=record_worker))
    calls = {tuple(o[0]) for o in out}
    assert calls == {(0, 0, 2), (1, 1, 2)}
    seeds = {o[1] for o in out}
    assert len(seeds) == 2          # base seed + worker id


def test_persistent_workers_survive_epochs():
    loader = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
    first = {p for b in loader for p in b.tolist()}
    assert len(multiprocessing.active_children()) == 2
    second = {p for b in loader for p in b.tolist()}
    assert first == second and os.getpid() not in first
    del loader
    assert no_children_left()


def test_in_order_false_delivers_every_batch():
    loader = DataLoader(TensorDataset(ember.arange(12)), batch_size=3, num_workers=2,
                        in_order=False)
    assert sorted(sum((b[0].tolist() for b in loader), [])) == list(range(12))


def test_large_batches_travel_through_shared_memory():
    batch = next(iter(DataLoader(Big(), batch_size=2, num_workers=1)))
    assert batch.shape == (2, 256, 256) and batch[1].sum().item() == 256 * 256
    base = batch.numpy().base
    while base is not None and not isinstance(base, memoryview):
        base = getattr(base, "base", None)
    assert isinstance(base, memoryview) and type(base.obj).__name__ == "mmap"
    batch.add_(1)                    # the batch is writable
    small = next(iter(DataLoader(TensorDataset(ember.arange(4)), batch_size=2, num_workers=1)))
    assert small[0].tolist() == [0, 1]
    del batch
    assert _shared_memory.leftovers(f"ember_dl_{os.getpid():x}_") == []


def test_shared_memory_segments_are_recycled_only_when_free():
    prefix = f"ember_dl_{os.getpid():x}_"
    loader = DataLoader(Big(32), batch_size=2, num_workers=1, persistent_workers=True)
    seen = set()
    for i, batch in enumerate(loader):           # each batch dropped before the next
        assert batch[:, 0, 0].tolist() == [2.0 * i, 2.0 * i + 1]
        seen.update(_shared_memory.leftovers(prefix))
    assert len(seen) <= 6                        # 16 batches through a handful of segments
    kept = list(loader)                          # batches kept alive: never overwritten
    assert [b[:, 0, 0].tolist() for b in kept] == [[2.0 * i, 2.0 * i + 1] for i in range(16)]
    assert all(b.sum().item() == 256 * 256 * (4 * i + 1) for i, b in enumerate(kept))
    del loader
    assert _shared_memory.leftovers(prefix) == []
    assert kept[5][0, 0, 0].item() == 10.0       # still readable once the names are gone


def test_spawn_start_method():
    ember.manual_seed(0)
    main = as_plain(DataLoader(Augmented(6), batch_size=3, shuffle=True))
    ember.manual_seed(0)
    spawned = as_plain(DataLoader(Augmented(6), batch_size=3, shuffle=True, num_workers=1,
                                  multiprocessing_context="spawn"))
    assert same(main, spawned)
    assert no_children_left()


# -- resuming ----------------------------------------------------------------


@pytest.mark.parametrize("before,after", [(0, 0), (2, 2), (2, 0)])
def test_resume_mid_epoch(before, after):
    ember.manual_seed(11)
    loader = DataLoader(Augmented(), batch_size=4, shuffle=True, num_workers=before)
    it = iter(loader)
    head = [next(it) for _ in range(2)]
    state = loader.state_dict()
    rest = as_plain(it)
    assert len(head) + len(rest) == len(loader)
    ember.manual_seed(12345)          # the state, not the global seed, decides
    resumed = DataLoader(Augmented(), batch_size=4, shuffle=True, num_workers=after)
    resumed.load_state_dict(state)
    assert same(as_plain(resumed), rest)
    next_epoch = list(resumed)         # afterwards, a normal full epoch
    assert len(next_epoch) == len(loader)


def test_resume_with_a_generator_continues_the_following_epochs():
    g = ember.Generator().manual_seed(1)
    loader = DataLoader(Augmented(12), batch_size=4, shuffle=True, generator=g)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    rest, following = as_plain(it), as_plain(loader)
    g2 = ember.Generator().manual_seed(777)
    again = DataLoader(Augmented(12), batch_size=4, shuffle=True, generator=g2)
    again.load_state_dict(state)
    assert same(as_plain(again), rest) and same(as_plain(again), following)


def test_resume_iterable_dataset():
    ember.manual_seed(0)
    loader = DataLoader(Shards(9), batch_size=2)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    rest = [b[1].tolist() for b in it]
    again = DataLoader(Shards(9), batch_size=2)
    again.load_state_dict(state)
    assert [b[1].tolist() for b in again] == rest


def test_state_dict_between_epochs():
    loader = DataLoader(TensorDataset(ember.arange(4)), batch_size=2)
    list(loader)
    state = loader.state_dict()
    assert state["base_seed"] is None and state["epoch"] == 1
