"""Which rank of this host ended first: a thread that waits on the ranks while mpiexec runs.

When one rank dies without a report (killed by a signal, ``os._exit``), MPICH's mpiexec
kills the others and prints one "BAD TERMINATION" block.  The process it names is the
lowest rank whose exit was bad, so a rank it killed in its clean-up can be named instead of
the one that died first.  The launcher asks this watcher instead: it holds a pidfd for each
rank of this host and notes which became readable (the process ended) first.

Only Linux has pidfds (``os.pidfd_open``, Linux 5.3); elsewhere the watcher sees nothing
and the launcher falls back on mpiexec's own report.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from collections.abc import Callable

_SCAN_MS = 100  # how often to look for ranks that have not written their pid file yet


class ExitOrder:
    """Watch the ranks of this host named in the launcher's status folder, read through
    `statuses` (``rank -> {'pid', 'host', 'done', ...}``, run.py's `_statuses`).

    ``first`` is the rank that ended first without finishing its script (no ``done``
    status), once one has; None while none has, when several ended at the same moment,
    or where pidfds are missing.
    """

    def __init__(self, statuses: Callable[[], dict], local_ranks: int):
        self.first: int | None = None
        self._statuses = statuses
        self._local_ranks = local_ranks
        self._host = socket.gethostname()
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._watch, name="ember-exit-order",
                                        daemon=True)

    def start(self) -> ExitOrder:
        """Begin watching (a no-op where the OS has no pidfds)."""
        if hasattr(os, "pidfd_open") and hasattr(select, "poll"):
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching; ``first`` keeps what was seen."""
        os.write(self._wake_w, b"x")
        if self._thread.is_alive():
            self._thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _watch(self) -> None:
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        rank_of_fd: dict = {}
        finished: set = set()  # ranks that ended after their script finished normally
        try:
            while True:
                ended = self._open_new(poller, rank_of_fd, finished)
                if not ended:
                    all_known = len(rank_of_fd) + len(finished) >= self._local_ranks
                    ready = {fd for fd, _ in poller.poll(-1 if all_known else _SCAN_MS)}
                    if self._wake_r in ready:
                        return
                    if ready:
                        # Whatever else has ended by now ended at the same moment, as far
                        # as can be told: count it, so that a tie is not taken for an order.
                        ready |= {fd for fd, _ in poller.poll(0)}
                    for fd in ready & rank_of_fd.keys():
                        poller.unregister(fd)
                        os.close(fd)
                        ended.append(rank_of_fd.pop(fd))
                unfinished = sorted(r for r in ended if not self._finished(r))
                if unfinished:
                    self.first = unfinished[0] if len(unfinished) == 1 else None
                    return
                finished.update(ended)
        except OSError:  # the status folder went away: nothing more can be told
            pass
        finally:
            for fd in rank_of_fd:
                os.close(fd)

    def _open_new(self, poller, rank_of_fd: dict, finished: set) -> list:
        """Open a pidfd for each rank of this host that wrote its pid file since the last
        look; return the ranks that had already ended."""
        watched = set(rank_of_fd.values()) | finished
        ended = []
        for rank, status in self._statuses().items():
            if rank in watched or "pid" not in status or status["host"] != self._host:
                continue
            try:
                fd = os.pidfd_open(status["pid"])
            except ProcessLookupError:
                ended.append(rank)
                continue
            rank_of_fd[fd] = rank
            poller.register(fd, select.POLLIN)
        return ended

    def _finished(self, rank: int) -> bool:
        """True when `rank` ran its script to the end (it writes ``done`` before exiting)."""
        return "done" in self._statuses().get(rank, {})
