"""Large NumPy kernels split over two threads.

NumPy's elementwise loops run on one core, but they release the GIL while they run: a
kernel that works through an array in independent parts can give half of them to a
second thread.  `split` does that for the fused kernels of ``_kernels.py`` and a few
optimizer updates, and only for large arrays (the hand-off costs ~20-50 us).

The thread count follows ember's (BLAS's) thread count, so ``set_num_threads(1)`` and
``OPENBLAS_NUM_THREADS=1`` keep everything on one thread; ``EMBER_NO_PARALLEL=1`` turns
the splitting off.  The worker is one daemon thread, started on first use and dropped in
a forked child.
"""

from __future__ import annotations

import os
import queue
import threading

# Below this many elements a kernel runs on the calling thread alone.  Measured on the
# fused GELU and cross-entropy kernels (2 cores): at 64K elements the hand-off costs
# about what the second thread saves; from 256K the split kernel takes ~55-60% of the
# serial time.
MIN_ELEMENTS = 1 << 17

_DISABLED = os.environ.get("EMBER_NO_PARALLEL", "") not in ("", "0")
_worker = None  # (thread, task queue), started on first use
_local = threading.local()


def _threads() -> int:
    from .._threads import get_num_threads

    return min(2, get_num_threads())


def _run(tasks: queue.SimpleQueue) -> None:
    _local.in_worker = True
    while True:
        fn, args, done = tasks.get()
        try:
            done.result = fn(*args)
        except BaseException as exc:  # re-raised on the calling thread
            done.error = exc
        done.set()


class _Done(threading.Event):
    result = None
    error = None


def _get_worker() -> queue.SimpleQueue:
    global _worker
    if _worker is None:
        tasks = queue.SimpleQueue()
        thread = threading.Thread(target=_run, args=(tasks,), name="ember-kernels",
                                  daemon=True)
        thread.start()
        _worker = (thread, tasks)
    return _worker[1]


def _forget_worker() -> None:
    global _worker
    _worker = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker)


def parts(n: int, min_elements: int = MIN_ELEMENTS, size: int | None = None) -> int:
    """How many threads a kernel over `n` independent items (of `size` elements in all,
    default `n`) should use: 2 when large enough and allowed, else 1."""
    if _DISABLED or (n if size is None else size) < min_elements or n < 2:
        return 1
    if getattr(_local, "in_worker", False):
        return 1
    return _threads()


def split(fn, n: int, min_elements: int = MIN_ELEMENTS, size: int | None = None) -> None:
    """Call ``fn(start, stop)`` over [0, n): in two halves on two threads when `parts` says
    so, else once.  The calls must touch disjoint data; an exception in either is raised."""
    if parts(n, min_elements, size) < 2:
        fn(0, n)
        return
    half = n // 2
    done = _Done()
    _get_worker().put((fn, (half, n), done))
    try:
        fn(0, half)
    finally:
        done.wait()
    if done.error is not None:
        raise done.error
