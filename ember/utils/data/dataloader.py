"""`DataLoader`: batches from a dataset, in the main process or in worker processes.

The pieces are PyTorch's: a sampler picks keys, a batch sampler groups them, a fetcher
loads the samples and `collate_fn` stacks them; with ``num_workers > 0`` worker processes
(``_worker.py``, managed by ``_pool.py``) do the fetching and send batches back through
shared memory or a pipe (``_shared_memory.py``).

Beyond PyTorch:

- the same seed gives the same batches whatever `num_workers` is, random transforms in
  ``__getitem__`` included (see ``_worker.py`` for how; ``seed_per_sample=False`` turns
  the per-sample seeding off for datasets that draw no random numbers);
- ``state_dict()`` / ``load_state_dict()`` save and restore the position within an epoch:
  the next ``iter()`` yields exactly the batches that were left;
- a worker's exception names the key it failed on, a dead worker is reported at once with
  its exit status, and a time-out shows the stuck worker's stack.
"""

from __future__ import annotations

import math
import multiprocessing
import time
import warnings
import weakref

from . import _shared_memory
from ._pool import WorkerPool
from ._worker import (
    IterableFetcher, MapFetcher, capture_streams, iterable_seed, restore_streams, seed_streams,
)
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, draw_seed
from ... import cuda

_FROZEN = ("dataset", "batch_size", "batch_sampler", "sampler", "drop_last",
           "persistent_workers")


class _InfiniteConstantSampler(Sampler):
    """The sampler of an iterable dataset: None forever (the dataset picks its samples)."""

    def __iter__(self):
        while True:
            yield None


def _cuda_available() -> bool:
    return cuda.is_available()


def _mp_context(spec):
    if spec is None:
        methods = multiprocessing.get_all_start_methods()
        return multiprocessing.get_context("fork" if "fork" in methods else None)
    if isinstance(spec, str):
        methods = multiprocessing.get_all_start_methods()
        if spec not in methods:
            raise ValueError("multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got multiprocessing_context={spec!r}")
        return multiprocessing.get_context(spec)
    if not isinstance(spec, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        "string specifying the start method, but got "
                        f"multiprocessing_context={spec}")
    return spec


class DataLoader:
    """Iterate over `dataset` in batches.

    Args mirror PyTorch's: `batch_size` (None: no batching, samples one by one through
    `default_convert`), `shuffle` (a `RandomSampler` drawing from `generator`), `sampler`
    or `batch_sampler` (custom orders), `drop_last`, `collate_fn` (default
    `default_collate`), `num_workers` (worker processes; 0 loads in the main process),
    `prefetch_factor` (batches in flight per worker, default 2), `persistent_workers`
    (keep workers between epochs), `worker_init_fn(worker_id)`, `timeout` (seconds to wait
    for one batch; 0 waits for ever), `multiprocessing_context` ('fork' by default where
    available, or 'spawn', 'forkserver', or a context), `generator` (source of the epoch
    seeds; ember's default generator if None).  `pin_memory` is accepted and pins nothing
    (without a GPU it warns, as PyTorch does).  `seed_per_sample` (ember only, default True) seeds
    `random`, NumPy and ember before every sample from the epoch's seed and the sample, so
    batches do not depend on `num_workers`.

    >>> loader = DataLoader(TensorDataset(ember.arange(10)), batch_size=4)
    >>> [b[0].tolist() for b in loader]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True,
                 seed_per_sample: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process "
                             "loading (num_workers > 0), but got num_workers=0")

        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value, unset in (("shuffle", shuffle, shuffle in (False, None)),
                                       ("sampler", sampler, sampler is None),
                                       ("batch_sampler", batch_sampler, batch_sampler is None)):
                if not unset:
                    raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                     f"{name} option, but got {name}={value}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.seed_per_sample = seed_per_sample
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)
        self._mp_context = _mp_context(multiprocessing_context) if num_workers else None
        self.multiprocessing_context = self._mp_context if multiprocessing_context else None
        self._iterable = iterable
        self._use_shm = _shared_memory.available()
        self._pool = None            # the persistent workers' pool
        self._epochs_started = 0
        self._pending_resume = None
        self._current_iter = None    # weakref to the latest iterator
        self._initialized = True

    def __setattr__(self, name, value):
        if name in _FROZEN and getattr(self, "_initialized", False):
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.pin_memory and not _cuda_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", UserWarning, stacklevel=2)
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                rounding = math.floor if self.drop_last else math.ceil
                length = rounding(length / self.batch_size)
            return length
        return len(self._index_sampler)

    # -- saving and restoring the position ------------------------------

    def state_dict(self) -> dict:
        """The loader's position: mid-epoch while an iterator is part way through, else
        the start of the next epoch.  Restore it with `load_state_dict`."""
        it = self._current_iter() if self._current_iter is not None else None
        if it is not None and not it._exhausted:
            return it.state_dict()
        return {"epoch": self._epochs_started, "base_seed": None, "batches_yielded": 0,
                "sampler": None, "generator": self._generator_state()}

    def load_state_dict(self, state: dict) -> None:
        """Make the next ``iter()`` continue from a saved position: mid-epoch, it yields
        exactly the batches that were still to come."""
        self._epochs_started = int(state["epoch"])
        if state.get("generator") is not None and self.generator is not None:
            self.generator.set_state(state["generator"])
        self._pending_resume = state if state.get("base_seed") is not None else None

    def _generator_state(self):
        return self.generator.get_state() if self.generator is not None else None

    def __del__(self):
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.shutdown(grace=0.0)


class _BaseIter:
    """One epoch: its seed, its keys and how many batches it has handed out."""

    def __init__(self, loader: DataLoader):
        self._loader = loader
        self._exhausted = False
        resume, loader._pending_resume = loader._pending_resume, None
        sampler = loader._index_sampler
        if resume is not None:
            self._epoch, self._base_seed = int(resume["epoch"]), int(resume["base_seed"])
            skip = int(resume["batches_yielded"])
            if resume.get("sampler") is not None and hasattr(sampler, "load_state_dict"):
                sampler.load_state_dict(resume["sampler"])
        else:
            self._epoch, skip = loader._epochs_started, 0
            self._base_seed = draw_seed(loader.generator)
        loader._epochs_started = self._epoch + 1
        self._sampler_iter = None if loader._iterable else iter(sampler)
        snapshot = getattr(sampler, "state_dict", None)
        self._sampler_state = snapshot() if callable(snapshot) and not loader._iterable else None
        self._generator = loader._generator_state()
        self._ordinal = 0            # position in the epoch of the next sample
        self._yielded = skip
        self._to_discard = 0
        if loader._iterable:
            self._to_discard = skip  # an iterable dataset can only be fast-forwarded
        else:
            for _ in range(skip):    # skipping keys costs no loading
                self._advance(next(self._sampler_iter))
        loader._current_iter = weakref.ref(self)

    def _advance(self, keys) -> int:
        """The ordinal of `keys`' first sample; moves the epoch's position past them."""
        ordinal = self._ordinal
        self._ordinal += len(keys) if self._loader._auto_collation else 1
        return ordinal

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        if self._exhausted:
            raise StopIteration
        try:
            while self._to_discard:
                self._next_data()
                self._to_discard -= 1
            data = self._next_data()
        except StopIteration:
            self._exhausted = True
            self._finish()
            raise
        except BaseException:
            self._exhausted = True
            self._abort()
            raise
        self._yielded += 1
        return data

    def state_dict(self) -> dict:
        """Where this epoch stands (see `DataLoader.state_dict`)."""
        return {"epoch": self._epoch, "base_seed": self._base_seed,
                "batches_yielded": self._yielded, "sampler": self._sampler_state,
                "generator": self._generator}

    def _finish(self) -> None:
        pass

    def _abort(self) -> None:
        pass


class _SingleProcessIter(_BaseIter):
    """Loads every batch in the main process."""

    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        reseed = loader.seed_per_sample
        if loader._iterable:
            self._fetcher = IterableFetcher(loader.dataset, loader._auto_collation,
                                            loader.collate_fn, loader.drop_last,
                                            loader.batch_size)
            self._streams = None
            if reseed:  # the dataset's streams live apart from the training loop's
                own = capture_streams()
                try:
                    seed_streams(iterable_seed(self._base_seed, self._epoch, 0))
                    self._fetcher.start()
                finally:
                    self._streams = capture_streams()
                    restore_streams(own)
            else:
                self._fetcher.start()
        else:
            self._fetcher = MapFetcher(loader.dataset, loader._auto_collation,
                                       loader.collate_fn, reseed)

    def _next_data(self):
        fetcher, reseed = self._fetcher, self._loader.seed_per_sample
        own = capture_streams() if reseed else None
        try:
            if self._loader._iterable:
                if own is not None:
                    restore_streams(self._streams)
                try:
                    return fetcher.fetch()
                finally:
                    if own is not None:
                        self._streams = capture_streams()
            keys = next(self._sampler_iter)
            if self._loader._auto_collation:
                keys = list(keys)
            return fetcher.fetch(keys, self._base_seed, self._epoch, self._advance(keys))
        except StopIteration:
            raise
        except Exception as exc:
            if fetcher.stage is not None and hasattr(exc, "add_note"):
                where = "" if fetcher.current is None else f" while loading index {fetcher.current}"
                exc.add_note(f"(raised in the DataLoader's main process, in the dataset's "
                             f"{fetcher.stage}{where})")
            raise
        finally:
            if own is not None:
                restore_streams(own)


def _worker_error(info: dict, wid: int) -> BaseException:
    """The exception to raise in the main process for a worker's failure."""
    where = f" while loading index {info['key']}" if info["key"] is not None else ""
    stage = f" (in {info['stage']})" if info["stage"] else ""
    message = (f"Caught {info['type_name']} in DataLoader worker process {wid}{where}{stage}."
               f"\nOriginal {info['traceback']}")
    exc_type = info["type"]
    if exc_type is not None and issubclass(exc_type, Exception):
        try:
            return exc_type(message)
        except Exception:
            pass
    return RuntimeError(message)


class _MultiProcessIter(_BaseIter):
    """Hands keys to worker processes and delivers their batches in order."""

    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        pool = loader._pool
        if pool is None or pool.closed:
            pool = WorkerPool(loader, self._base_seed)
            if loader.persistent_workers:
                loader._pool = pool
        self._pool = pool
        self._owns_pool = not loader.persistent_workers
        self._epoch_id = pool.start_epoch(self._base_seed, self._epoch)
        n = loader.num_workers
        self._tasks = {}               # task index -> worker, for tasks not yet delivered
        self._buffer = {}              # task index -> (kind, payload) received early
        self._outstanding = [0] * n
        self._active = [True] * n      # iterable datasets: worker not yet exhausted
        self._next_worker = 0
        self._send_idx = 0
        self._keys_done = False
        for _ in range(loader.prefetch_factor * n):
            self._try_put()

    def _try_put(self) -> None:
        loader = self._loader
        n = loader.num_workers
        if loader._iterable:
            for step in range(n):     # round-robin over the workers still producing
                wid = (self._next_worker + step) % n
                if self._active[wid]:
                    self._next_worker = (wid + 1) % n
                    break
            else:
                return
            keys, ordinal = None, 0
        else:
            if self._keys_done:
                return
            try:
                keys = next(self._sampler_iter)
            except StopIteration:
                self._keys_done = True
                return
            if loader._auto_collation:
                keys = list(keys)
            ordinal = self._advance(keys)
            wid = min(range(n), key=lambda w: self._outstanding[w])
        self._pool.send_task(wid, self._send_idx, keys, ordinal)
        self._tasks[self._send_idx] = wid
        self._outstanding[wid] += 1
        self._send_idx += 1

    def _next_data(self):
        pool = self._pool
        if pool.closed or pool.epoch_id != self._epoch_id:
            raise StopIteration        # the workers moved on to a newer epoch
        deadline = None
        while True:
            if not self._tasks:
                raise StopIteration
            if self._loader.in_order or not self._buffer:
                idx = min(self._tasks)
            else:
                idx = min(self._buffer)
            if idx not in self._buffer:
                if deadline is None and self._loader.timeout:
                    deadline = time.monotonic() + self._loader.timeout
                self._collect(idx, deadline)
                continue
            kind, payload = self._buffer.pop(idx)
            wid = self._tasks.pop(idx)
            self._outstanding[wid] -= 1
            if kind == "exhausted":
                self._active[wid] = False
                self._try_put()
                continue
            self._try_put()
            if kind == "error":
                raise _worker_error(payload, wid)
            return payload

    def _collect(self, idx: int, deadline) -> None:
        pool = self._pool
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        events = pool.wait(timeout)
        if not events and deadline is not None and time.monotonic() >= deadline:
            wid = self._tasks[idx]
            stack = pool.dump_stack(wid)
            raise RuntimeError(
                f"DataLoader timed out after {self._loader.timeout} seconds waiting for batch "
                f"{idx} from worker {wid} (pid {pool.processes[wid].pid}). The worker's stack "
                f"at that moment:\n{stack}")
        for event in events:
            if event[0] == "dead":
                raise RuntimeError(pool.describe_death(event[1], event[2]))
            (kind, epoch_id, task_idx), payload, note = event[2]
            if note is not None and not pool.warned_fallback:
                pool.warned_fallback = True
                warnings.warn(f"DataLoader worker {event[1]}: shared memory is not usable "
                              f"({note}); batches travel through a pipe instead.",
                              RuntimeWarning, stacklevel=4)
            if epoch_id == self._epoch_id:
                self._buffer[task_idx] = (kind, payload)

    def _finish(self) -> None:
        if self._owns_pool:
            self._pool.shutdown(grace=5.0)   # the workers are idle: they exit at once

    def _abort(self) -> None:
        self._pool.shutdown(grace=0.1)
        if self._loader._pool is self._pool:
            self._loader._pool = None

    def __del__(self):
        pool = self.__dict__.get("_pool")
        if pool is not None and self._owns_pool:
            pool.shutdown(grace=0.1)
