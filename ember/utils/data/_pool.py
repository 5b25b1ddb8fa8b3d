"""The main process's side of the DataLoader workers: start them, hand out tasks, collect
results, notice a dead or stuck worker, and clean everything up.

Each worker has its own task queue (a ``multiprocessing.Queue``: its feeder thread means
handing out a task never blocks, whatever the size of the keys) and its own result pipe
(one writer per pipe: a worker killed mid-message cannot wedge a lock the others need).
The main process waits on every result pipe and every worker's process sentinel at once,
so a death is seen the moment it happens rather than after a time-out.
"""

from __future__ import annotations

import atexit
import collections
import functools
import itertools
import multiprocessing.connection
import os
import signal
import tempfile
import time
import weakref

from . import _shared_memory
from ._worker import WorkerSpec, worker_loop

_pool_ids = itertools.count()
_live_pools: weakref.WeakSet = weakref.WeakSet()


def _exit_status(exitcode) -> str:
    if exitcode is None:
        return "an unknown status"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        text = f"was killed by signal {name} ({-exitcode})"
        if -exitcode == getattr(signal, "SIGKILL", 9):
            text += (" (a SIGKILL often comes from the kernel's out-of-memory killer: "
                     "check the memory of the dataset and batches)")
        return text
    return f"exited with exit code {exitcode}"


def _segment_freed(pool_ref, wid: int, name: str) -> None:
    # NOTE: this can run inside any allocation (a collected cycle), even inside a
    # Queue.put holding the queue's lock: only append to a deque here, the pool passes
    # the names on to the worker at its next safe point.
    pool = pool_ref()
    if pool is not None:
        pool.released.append((wid, name))


class WorkerPool:
    """`num_workers` processes running ``_worker.worker_loop`` for one DataLoader."""

    def __init__(self, loader, base_seed: int):
        ctx = loader._mp_context
        self.id = next(_pool_ids)
        self.shm_prefix = _shared_memory.pool_prefix(self.id)
        self.epoch_id = 0
        self.closed = False
        self.warned_fallback = False
        self.released = collections.deque()   # (worker, segment) freed by the main process
        self.receivers = []
        self.ready = []                         # per worker: can dump its stack
        self._reusable = []                     # per worker: segments to hand back
        self.processes, self.queues, self.conns, self.dump_paths = [], [], [], []
        _live_pools.add(self)
        try:
            for wid in range(loader.num_workers):
                self._start_one(ctx, loader, wid, base_seed)
        except BaseException:
            self.shutdown(grace=0.0)
            raise

    def _start_one(self, ctx, loader, wid: int, base_seed: int) -> None:
        task_queue = ctx.Queue()
        reader, writer = ctx.Pipe(duplex=False)
        fd, dump_path = tempfile.mkstemp(prefix=f"ember_dl_stack_{os.getpid()}_")
        os.close(fd)
        self.queues.append(task_queue)
        self.conns.append(reader)
        self._reusable.append([])
        self.ready.append(False)
        self.receivers.append(_shared_memory.Receiver(
            reader, functools.partial(_segment_freed, weakref.ref(self), wid)))
        self.dump_paths.append(dump_path)
        spec = WorkerSpec(
            dataset=loader.dataset, iterable=loader._iterable,
            auto_collation=loader._auto_collation,
            collate_fn=loader.collate_fn, drop_last=loader.drop_last,
            batch_size=loader.batch_size, reseed=loader.seed_per_sample,
            worker_init_fn=loader.worker_init_fn, worker_id=wid,
            num_workers=loader.num_workers, base_seed=base_seed, shm_prefix=self.shm_prefix,
            use_shm=loader._use_shm, dump_path=dump_path, parent_pid=os.getpid())
        process = ctx.Process(target=worker_loop, args=(spec, task_queue, writer), daemon=True,
                              name=f"ember DataLoader worker {wid}")
        process.start()
        # Only the worker may hold the writing end: then its death is also an EOF here, and
        # workers started later do not inherit it.
        writer.close()
        self.processes.append(process)

    # -- talking to workers ------------------------------------------------

    def start_epoch(self, base_seed: int, epoch: int) -> int:
        """Tell every worker a new epoch begins; returns its id (results carry it)."""
        self.epoch_id += 1
        for q in self.queues:
            q.put(("epoch", self.epoch_id, base_seed, epoch))
        return self.epoch_id

    def send_task(self, wid: int, task_idx: int, keys, ordinal: int) -> None:
        """Queue a task for worker `wid`, with the segments it may reuse now."""
        while self.released:
            owner, name = self.released.popleft()
            self._reusable[owner].append(name)
        reusable, self._reusable[wid] = self._reusable[wid], []
        self.queues[wid].put(("task", self.epoch_id, task_idx, keys, ordinal, reusable))

    def wait(self, timeout):
        """Events within `timeout` seconds (None: until one comes): ("msg", wid, message)
        for a result and ("dead", wid, exitcode) for a worker that is gone."""
        readers = {conn: wid for wid, conn in enumerate(self.conns) if not conn.closed}
        sentinels = {p.sentinel: wid for wid, p in enumerate(self.processes)}
        ready = multiprocessing.connection.wait(list(readers) + list(sentinels), timeout)
        events, dead = [], set()
        for obj in ready:
            if obj in readers:
                wid = readers[obj]
                try:
                    self._keep(events, wid, self.receivers[wid].receive())
                except (EOFError, OSError):
                    dead.add(wid)
            else:
                dead.add(sentinels[obj])
        for wid in sorted(dead):
            events.extend(self._drain(wid))
            process = self.processes[wid]
            process.join(timeout=1.0)
            events.append(("dead", wid, process.exitcode))
        return events

    def _keep(self, events: list, wid: int, message) -> None:
        if message[0][0] == "ready":
            self.ready[wid] = True
        else:
            events.append(("msg", wid, message))

    def _drain(self, wid: int) -> list:
        """Whatever a dead worker finished sending before it went."""
        events, conn = [], self.conns[wid]
        try:
            while not conn.closed and conn.poll(0):
                self._keep(events, wid, self.receivers[wid].receive())
        except (EOFError, OSError):
            pass
        return events

    def describe_death(self, wid: int, exitcode) -> str:
        pid = self.processes[wid].pid
        return (f"DataLoader worker {wid} (pid {pid}) {_exit_status(exitcode)}; "
                "its batches are lost.")

    def dump_stack(self, wid: int, wait_s: float = 2.0) -> str:
        """The worker's Python stack right now (faulthandler, triggered by SIGUSR1)."""
        if not hasattr(signal, "SIGUSR1"):
            return "(no stack: this platform has no SIGUSR1)"
        if not self.ready[wid]:
            return ("(no stack: the worker is still starting up; with the 'spawn' start "
                    "method, start-up counts against the timeout)")
        path = self.dump_paths[wid]
        try:
            os.kill(self.processes[wid].pid, signal.SIGUSR1)
        except OSError as exc:
            return f"(no stack: {exc})"
        deadline, last = time.monotonic() + wait_s, -1
        while time.monotonic() < deadline:
            size = os.path.getsize(path)
            if size and size == last:
                break
            last = size
            time.sleep(0.05)
        with open(path) as f:
            return f.read() or "(the worker wrote no stack in time)"

    # -- cleanup ------------------------------------------------------------

    def shutdown(self, grace: float = 0.25) -> None:
        """Stop every worker (politely for `grace` seconds, then by force), and remove
        their queues, pipes, stack files and any shared-memory segment left behind."""
        if self.closed:
            return
        self.closed = True
        for q in self.queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        # A worker blocked sending a batch gets a broken pipe and exits.
        for conn in self.conns:
            conn.close()
        for receiver in self.receivers:
            receiver.close()
        deadline = time.monotonic() + grace
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(2.0)
            if p.is_alive():
                p.kill()
                p.join()
        for q in self.queues:
            q.cancel_join_thread()
            q.close()
        _shared_memory.unlink_leftovers(self.shm_prefix)
        for path in self.dump_paths:
            try:
                os.unlink(path)
            except OSError:
                pass
        for p in self.processes:
            p.close()

    def __del__(self):
        self.shutdown(grace=0.0)


@atexit.register
def _shutdown_all() -> None:
    # Registered after multiprocessing's own exit hook, so it runs first: workers stop and
    # segments go before the interpreter tears down.
    for pool in list(_live_pools):
        pool.shutdown(grace=0.0)
