"""spawn / start_processes: run ``fn(i, *args)`` in `nprocs` processes, report failures."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import traceback


class ProcessException(Exception):  # noqa: N818 - PyTorch's names
    """A started process failed; `error_index` is its index, `pid` its process id."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A started process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A started process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _run(fn, index: int, args: tuple, errors) -> None:
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent is shutting everyone down
    except Exception:
        errors.put(traceback.format_exc())
        raise SystemExit(1) from None


class ProcessContext:
    """The processes `start_processes` started; `join` waits for them."""

    def __init__(self, processes: list, error_queues: list):
        self.processes = processes
        self.error_queues = error_queues
        self._sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids, in index order."""
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds for the processes; True when all have exited.

        The first failure terminates the others and is raised here: the child's traceback
        as `ProcessRaisedException`, an exit code or signal as `ProcessExitedException`.
        """
        if not self._sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self._sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self._sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            return not self._sentinels
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        self._sentinels.clear()
        self._raise_failure(failed)

    def _raise_failure(self, index: int):
        process = self.processes[index]
        queue = self.error_queues[index]
        if not queue.empty():
            raise ProcessRaisedException(
                f"\n\n-- Process {index} terminated with the following error:\n{queue.get()}",
                index, process.pid)
        code = process.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(
                f"process {index} terminated with signal {name}", index, process.pid, code,
                name)
        raise ProcessExitedException(
            f"process {index} terminated with exit code {code}", index, process.pid, code)


def start_processes(fn, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"):
    """Start `nprocs` processes running ``fn(i, *args)``; wait for them when `join`,
    else return their `ProcessContext`."""
    context = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for index in range(nprocs):
        errors = context.SimpleQueue()
        process = context.Process(target=_run, args=(fn, index, args, errors), daemon=daemon)
        process.start()
        processes.append(process)
        queues.append(errors)
    process_context = ProcessContext(processes, queues)
    if not join:
        return process_context
    while not process_context.join():
        pass
    return None


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """`start_processes` with the "spawn" start method (as ``torch.multiprocessing.spawn``)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
