"""Work: the handle of a communication in flight, and the one waiting loop with a deadline.

Every collective starts a non-blocking operation (MPI's ``Iallreduce``, ``Isend``...) and
wraps it in a `Work`.  ``wait()`` polls the operation until it completes or the group's
timeout passes, so that a peer that died or hangs turns into a `DistBackendError` naming
it instead of a process stuck forever in a blocking call.  A blocking collective is
simply ``start(...).wait()``.

NOTE: MPI progresses a non-blocking operation only while some MPI call runs (MPICH has no
progress thread by default).  The loop therefore spins on the backend's test call, but
after the first ~10 microseconds it calls ``sched_yield`` between rounds of tests, as MPI's
own waits do: when ranks share a core (more ranks than cores, or a busy machine), a pure
spin would hold the core for a whole scheduler time slice while the peer it waits for
cannot run.  On an idle core the yield returns at once.  After a second it sleeps a
millisecond between tests (a long wait is for a slow peer, not for the network).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

from ._backend import DistBackendError

_SPIN_S = 10e-6  # pure spinning: the wait of a small message ends at full speed
_YIELD_S = 1.0  # then sched_yield between rounds of tests; after this, sleep 1 ms


def seconds(timeout) -> float | None:
    """A timeout given as timedelta, seconds or None, in seconds."""
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


def poll_until(test, timeout_s: float | None) -> bool:
    """Call `test()` until it returns True (-> True) or `timeout_s` passes (-> False)."""
    if test():
        return True
    start = time.monotonic()
    deadline = float("inf") if timeout_s is None else start + timeout_s
    spin_end = start + _SPIN_S
    yield_end = start + _YIELD_S
    while True:
        for _ in range(16):  # check the clock every few tests only
            if test():
                return True
        now = time.monotonic()
        if now >= deadline:
            return test()
        if now > yield_end:
            time.sleep(0.001)
        elif now > spin_end:
            os.sched_yield()


class Work:
    """A started communication: ``wait()`` for it, or ask ``is_completed()``.

    `poll` returns True once the backend operation is done; `finish` then runs once (copy
    results back, divide for AVG...).  `on_timeout(waited_s)` builds the error raised when
    ``wait`` runs out of time.  `result` is what ``result()`` returns (the output tensors).
    """

    def __init__(self, poll, *, finish=None, result=None, timeout: float | None = None,
                 on_timeout=None, label: str = "operation", value=None):
        self._poll = poll
        self._finish = finish
        self._result = result if result is not None else []
        self._timeout = timeout
        self._on_timeout = on_timeout
        self._label = label
        self._done = False
        self._error = None
        self.value = value  # backend-specific outcome (e.g. the sender of a recv)

    def __repr__(self) -> str:
        state = "completed" if self._done else "in flight"
        return f"<Work {self._label}: {state}>"

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def is_completed(self) -> bool:
        """True once the operation finished (never blocks)."""
        if self._error is not None:
            raise self._error
        if not self._done and self._poll():
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        """Block until the operation finished; raises `DistBackendError` after the timeout
        (the group's unless `timeout` is given, as a timedelta or in seconds)."""
        if self._error is not None:
            raise self._error
        if self._done:
            return True
        limit = self._timeout if timeout is None else seconds(timeout)
        started = time.monotonic()
        if not poll_until(self._poll, limit):
            waited = time.monotonic() - started
            self._error = (self._on_timeout(waited) if self._on_timeout is not None else
                           DistBackendError(f"{self._label} timed out after {waited:.1f} s"))
            raise self._error
        self._complete()
        return True

    def is_success(self) -> bool:
        """True when the operation completed without error."""
        return self._done and self._error is None

    def exception(self):
        """The error that ended the operation, or None."""
        return self._error

    def result(self) -> list:
        """The output tensors of the operation (after ``wait``)."""
        return self._result

    def synchronize(self) -> None:
        """Same as ``wait`` (PyTorch's name for waiting on the device)."""
        self.wait()

    def get_future(self) -> Future:
        """A `Future` completed by this work, whose value is ``result()``."""
        return Future(self)


class Future:
    """A minimal ``torch.futures.Future``: ``wait()``/``value()``/``done()``/``then()``."""

    def __init__(self, work: Work, fn=None, parent=None):
        self._work = work
        self._fn = fn
        self._parent = parent
        self._value = None
        self._has_value = False

    def done(self) -> bool:
        return self._work.is_completed()

    def wait(self):
        """Wait for the work and return the future's value."""
        if not self._has_value:
            self._work.wait()
            self._value = self._work.result() if self._fn is None else self._fn(self._parent)
            self._has_value = True
        return self._value

    def value(self):
        return self.wait()

    def then(self, callback) -> Future:
        """A future whose value is ``callback(this_future)``, computed when waited on."""
        return Future(self._work, callback, self)


def completed_work(result=None, value=None) -> Work:
    """A Work that is already done (for operations that needed no communication)."""
    work = Work(lambda: True, result=result, value=value, label="no-op")
    work._done = True
    return work
