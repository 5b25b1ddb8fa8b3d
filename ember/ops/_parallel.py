"""The fused kernels' blocks shared between the calling thread and one worker thread
(opt-in: ``EMBER_PARALLEL_KERNELS=1``).

NumPy releases the GIL inside its loops, so two threads can run two blocks of a large
kernel at once.  `for_blocks` runs ``fn(i)`` over the blocks of the fused kernels of
``_kernels.py``, handing them out one at a time to whichever thread asks first; the caller
only waits for blocks the worker has actually started, so when the second core is busy
the caller does the blocks itself instead of waiting for a worker that does not run.

NOTE: why it is off by default.  On its own, with the second core idle, a 1M-element
GELU backward takes 1.9 ms on two threads instead of 2.9 ms (crossover ~128K elements).
But after every matrix product OpenBLAS keeps its worker threads spinning for a while
(up to ~0.1 s, OPENBLAS_THREAD_TIMEOUT), and these kernels mostly follow one (the linear
layer before GELU, layer norm, the loss): measured inside the GPT and LSTM benchmark
steps, the kernels took 5-15% longer shared than alone.

The thread count follows ember's (BLAS's) thread count, so ``set_num_threads(1)`` keeps
everything on one thread.  The worker is a daemon thread, started on first use and
dropped in a forked child.
"""

from __future__ import annotations

import os
import queue
import threading

# Below this many elements a kernel runs on the calling thread alone.  Measured on the
# fused GELU kernels with the second core idle: at 64K elements the hand-off costs
# about what the second thread saves; at 128K the kernel takes 70% of its serial time,
# from 256K 60-65%.
MIN_ELEMENTS = 1 << 17

_ENABLED = os.environ.get("EMBER_PARALLEL_KERNELS", "") not in ("", "0")
_tasks = None  # the worker's queue, once started
_local = threading.local()


def _threads() -> int:
    from .._threads import get_num_threads

    return min(2, get_num_threads())


class _Job:
    """The blocks of one kernel call, handed out one by one."""

    def __init__(self, fn, count: int):
        self.fn, self.count = fn, count
        self.next = 0
        self.running = 0
        self.lock = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()
        self.error = None

    def _claim(self):
        with self.lock:
            if self.next >= self.count or self.error is not None:
                return None
            i = self.next
            self.next += 1
            self.running += 1
            self.idle.clear()
            return i

    def _finish(self) -> None:
        with self.lock:
            self.running -= 1
            if self.running == 0:
                self.idle.set()

    def work(self) -> None:
        while True:
            i = self._claim()
            if i is None:
                return
            try:
                self.fn(i)
            except BaseException as exc:  # re-raised on the calling thread
                self.error = exc
            finally:
                self._finish()


def _worker_loop(tasks: queue.SimpleQueue) -> None:
    _local.in_worker = True
    while True:
        tasks.get().work()


def _worker() -> queue.SimpleQueue:
    global _tasks
    if _tasks is None:
        tasks = queue.SimpleQueue()
        threading.Thread(target=_worker_loop, args=(tasks,), name="ember-kernels",
                         daemon=True).start()
        _tasks = tasks
    return _tasks


def _forget_worker() -> None:
    global _tasks
    _tasks = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker)


def parallel(count: int, size: int, min_elements: int = MIN_ELEMENTS) -> bool:
    """Whether a kernel of `count` blocks over `size` elements in all is shared."""
    if not _ENABLED or size < min_elements or count < 2:
        return False
    if getattr(_local, "in_worker", False):
        return False
    return _threads() > 1


def for_blocks(fn, count: int, size: int, min_elements: int = MIN_ELEMENTS) -> None:
    """Call ``fn(i)`` for i in range(count), on the calling thread and, for large kernels
    (`parallel`), on the worker too.  The calls must touch disjoint data (and keep their
    work arrays to themselves); an exception in any is raised here."""
    if not parallel(count, size, min_elements):
        for i in range(count):
            fn(i)
        return
    _share(fn, count)


def _share(fn, count: int) -> None:
    job = _Job(fn, count)
    _worker().put(job)
    job.work()
    job.idle.wait()  # only for blocks the worker has started
    if job.error is not None:
        raise job.error
