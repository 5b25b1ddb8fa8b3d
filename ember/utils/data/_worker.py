"""What runs in a DataLoader worker process, and the seeding both kinds of process share.

Reproducibility by construction: right before each ``dataset[key]`` call, in a worker or
in the main process alike, Python's `random`, NumPy's global generator and ember's
default generator are seeded from (the loader's base seed for the epoch, the epoch, the
sample's position in the epoch, the key).  A sample's random transforms therefore do not
depend on which process loads it or on what that process loaded before, so 0, 1 or 4
workers give the same batches, no two samples share a stream (the position tells
repeated keys apart), and a resumed epoch reproduces the batches it skipped.  In the main
process the three streams are saved before a batch and restored after it, so the training
loop's own random numbers do not depend on the loader either.

An iterable dataset has no keys: each worker's streams are seeded once per epoch from
(base seed, epoch, worker id); without workers the main process keeps the dataset's
streams apart from its own by swapping them in around every batch.
"""

from __future__ import annotations

import faulthandler
import hashlib
import multiprocessing
import os
import pickle
import queue
import random
import signal
import traceback

import numpy as np

from ... import random as ember_random
from . import _shared_memory

_M64 = (1 << 64) - 1
_BATCH_TAG = 0x6261746368         # seeds a __getitems__ batch (no single key)
_ITER_TAG = 0x69746572            # seeds an iterable dataset's worker stream
_POLL_S = 1.0                     # how often an idle worker checks that its parent lives

_worker_info = None


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` and its copy of
    the ``dataset``.  Read-only."""

    _frozen = False

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)
        self._keys = tuple(kwargs)
        self._frozen = True

    def __setattr__(self, key, value):
        if self._frozen:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, value)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._keys)
        return f"{type(self).__name__}({fields})"


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its `WorkerInfo`; in the main process, None.

    Use it in an `IterableDataset`'s ``__iter__`` to give each worker its own shard, or in
    ``worker_init_fn`` to configure the worker's copy of the dataset.
    """
    return _worker_info


# ---------------------------------------------------------------------------
# seeding


def _mix64(z: int) -> int:
    """A 64-bit finalizer (SplitMix64's): every input bit moves about half the output."""
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _key_word(key) -> int:
    if isinstance(key, (int, np.integer)):
        return int(key) & _M64
    # NOTE: not hash(): string hashes differ between processes (PYTHONHASHSEED).
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def sample_seed(base_seed: int, epoch: int, ordinal: int, key) -> int:
    """The 64-bit seed of one sample: a hash of its epoch's seed, the epoch, its position
    in the epoch and its key."""
    h = _mix64(base_seed & _M64)
    for word in (epoch & _M64, ordinal & _M64, _key_word(key)):
        h = _mix64(h ^ word)
    return h


def _ember_bits(gen):
    """The PCG64 bit generator behind ember's CPU generator, when it has that form."""
    inner = getattr(gen, "_np", None)
    if isinstance(inner, np.random.Generator) and isinstance(inner.bit_generator,
                                                             np.random.PCG64):
        return inner.bit_generator
    return None


def seed_streams(seed: int) -> None:
    """Seed Python's `random`, NumPy's global generator and ember's default generator."""
    random.seed(seed)
    np.random.seed(np.array([seed & 0xFFFFFFFF, seed >> 32], dtype=np.uint32))
    gen = ember_random.default_generator
    bits = _ember_bits(gen)
    if bits is None:
        gen.manual_seed(seed)
        return
    # NOTE: setting PCG64's state directly costs ~4 us against ~25 us for manual_seed
    # (SeedSequence), which matters once per sample; both give independent streams.
    bits.state = {"bit_generator": "PCG64",
                  "state": {"state": (_mix64(seed ^ 0x5851F42D) << 64) | _mix64(seed),
                            "inc": (_mix64(seed ^ 0x14057B7E) << 64) | _mix64(~seed & _M64) | 1},
                  "has_uint32": 0, "uinteger": 0}
    gen._seed = seed


def capture_streams():
    """The three global streams' states (restore them with `restore_streams`)."""
    gen = ember_random.default_generator
    bits = _ember_bits(gen)
    ember_state = (gen._seed, bits.state) if bits is not None else gen.get_state()
    return random.getstate(), np.random.get_state(), ember_state


def restore_streams(state) -> None:
    """Put back the states returned by `capture_streams`."""
    py_state, np_state, ember_state = state
    random.setstate(py_state)
    np.random.set_state(np_state)
    gen = ember_random.default_generator
    bits = _ember_bits(gen)
    if bits is not None and isinstance(ember_state, tuple):
        gen._seed, bits.state = ember_state
    else:
        gen.set_state(ember_state)


# ---------------------------------------------------------------------------
# fetching one batch (the same code in the main process and in workers)


class MapFetcher:
    """Loads the samples of a list of keys (or one key when not batching) and collates."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, reseed: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.reseed = reseed
        self.batched = auto_collation and callable(getattr(dataset, "__getitems__", None))
        self.stage, self.current = None, None   # what was being done, for error messages

    def fetch(self, keys, base_seed: int, epoch: int, ordinal: int):
        dataset, reseed = self.dataset, self.reseed
        if not self.auto_collation:
            self.stage, self.current = "__getitem__", keys
            if reseed:
                seed_streams(sample_seed(base_seed, epoch, ordinal, keys))
            sample = dataset[keys]
        elif self.batched:
            self.stage, self.current = "__getitems__", keys
            if reseed:
                seed_streams(sample_seed(base_seed, epoch, ordinal, _BATCH_TAG))
            sample = dataset.__getitems__(keys)
        else:
            self.stage = "__getitem__"
            sample = []
            for i, key in enumerate(keys):
                self.current = key
                if reseed:
                    seed_streams(sample_seed(base_seed, epoch, ordinal + i, key))
                sample.append(dataset[key])
        self.stage, self.current = "collate_fn", None
        out = self.collate_fn(sample)
        self.stage = None
        return out


class IterableFetcher:
    """Pulls samples from an iterable dataset's iterator (a batch at a time when batching)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool,
                 batch_size):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.batch_size = batch_size
        self.iterator = None
        self.done = True
        self.stage, self.current = None, None

    def start(self) -> None:
        self.stage = "__iter__"
        self.iterator = iter(self.dataset)
        self.done = False
        self.stage = None

    def fetch(self):
        if self.done:
            raise StopIteration
        self.stage = "__next__"
        if not self.auto_collation:
            try:
                sample = next(self.iterator)
            except StopIteration:
                self.done = True
                raise
        else:
            sample = []
            while len(sample) < self.batch_size:
                try:
                    sample.append(next(self.iterator))
                except StopIteration:
                    self.done = True
                    break
            if not sample or (self.drop_last and len(sample) < self.batch_size):
                self.done = True
                raise StopIteration
        self.stage = "collate_fn"
        out = self.collate_fn(sample)
        self.stage = None
        return out


def iterable_seed(base_seed: int, epoch: int, worker_id: int) -> int:
    """The seed of a worker's streams for one epoch of an iterable dataset."""
    return sample_seed(base_seed, epoch, worker_id, _ITER_TAG)


def describe_error(exc: BaseException, stage, key) -> dict:
    """A picklable account of an exception raised while loading data."""
    exc_type = type(exc)
    try:
        pickle.loads(pickle.dumps(exc_type))
    except Exception:  # a class that cannot be found by name in the main process
        exc_type = None
    key_text = None if key is None else repr(key)
    if key_text is not None and len(key_text) > 200:
        key_text = key_text[:200] + "..."
    return {"type": exc_type, "type_name": type(exc).__qualname__,
            "traceback": "".join(traceback.format_exception(exc)), "stage": stage,
            "key": key_text}


# ---------------------------------------------------------------------------
# the worker process


class WorkerSpec:
    """Everything a worker process is started with (pickled once with 'spawn')."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def _parent_alive(parent_pid: int) -> bool:
    parent = multiprocessing.parent_process()
    if parent is not None:
        return parent.is_alive()
    return os.getppid() == parent_pid


def worker_loop(spec: WorkerSpec, task_queue, conn) -> None:
    """Serve tasks from `task_queue` until told to stop (None) or the parent is gone.

    Messages in: ("epoch", epoch_id, base_seed, epoch), and ("task", epoch_id, task_idx,
    keys, ordinal, names of segments the main process has finished with).  Messages out,
    on `conn`: ("ready", None, None) once, then ("data" | "error" | "exhausted", epoch_id,
    task_idx) with the batch, the error's description, or nothing.
    """
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    dump_file = None
    if spec.dump_path is not None and hasattr(signal, "SIGUSR1"):
        dump_file = open(spec.dump_path, "w")  # kept open for the process's life
        faulthandler.register(signal.SIGUSR1, file=dump_file, all_threads=True)
    sender = _shared_memory.Sender(conn, f"{spec.shm_prefix}{spec.worker_id:x}_", spec.use_shm)
    try:
        sender.send(("ready", None, None), None)   # from now on a stack dump can be asked for
    except OSError:
        return                                     # the main process is already gone
    seed = (spec.base_seed + spec.worker_id) & _M64
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)
    ember_random.manual_seed(seed)
    _worker_info = WorkerInfo(id=spec.worker_id, num_workers=spec.num_workers, seed=seed,
                              dataset=spec.dataset)
    setup_error = None
    try:
        if spec.worker_init_fn is not None:
            spec.worker_init_fn(spec.worker_id)
        if spec.iterable:
            fetcher = IterableFetcher(spec.dataset, spec.auto_collation, spec.collate_fn,
                                      spec.drop_last, spec.batch_size)
        else:
            fetcher = MapFetcher(spec.dataset, spec.auto_collation, spec.collate_fn,
                                 spec.reseed)
    except Exception as exc:
        setup_error = describe_error(exc, "worker_init_fn", None)
    epoch_error = None
    base_seed, epoch = spec.base_seed, 0
    try:
        while True:
            try:
                msg = task_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if not _parent_alive(spec.parent_pid):
                    break
                continue
            if msg is None:
                break
            if msg[0] == "epoch":
                _, _, base_seed, epoch = msg
                epoch_error = None
                if spec.iterable and setup_error is None:
                    if spec.reseed:
                        seed_streams(iterable_seed(base_seed, epoch, spec.worker_id))
                    try:
                        fetcher.start()
                    except Exception as exc:
                        epoch_error = describe_error(exc, "__iter__", None)
                continue
            _, epoch_id, task_idx, keys, ordinal, reusable = msg
            for name in reusable:
                sender.release(name)
            error = setup_error or epoch_error
            if error is None:
                try:
                    if spec.iterable:
                        batch = fetcher.fetch()
                    else:
                        batch = fetcher.fetch(keys, base_seed, epoch, ordinal)
                except StopIteration:
                    sender.send(("exhausted", epoch_id, task_idx), None)
                    continue
                except Exception as exc:
                    error = describe_error(exc, fetcher.stage, fetcher.current)
            if error is None:
                try:
                    sender.send(("data", epoch_id, task_idx), batch)
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    raise
                except Exception as exc:  # e.g. a batch that cannot be pickled
                    error = describe_error(exc, "sending the batch", None)
                finally:
                    batch = None
            sender.send(("error", epoch_id, task_idx), error)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass  # the main process stopped listening: nothing left to do
    finally:
        if dump_file is not None:
            faulthandler.unregister(signal.SIGUSR1)
            dump_file.close()
        sender.close()
        conn.close()
