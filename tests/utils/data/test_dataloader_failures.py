"""Tests of the DataLoader's failure behaviour: a worker's exception (with its traceback
and key), a killed worker, a stuck worker (time-out with its stack), shared memory that
cannot be had, and cleanup (no processes, no /dev/shm segments) after exhaustion, deletion
and KeyboardInterrupt."""

import errno
import gc
import multiprocessing
import os
import select
import signal
import sys
import threading
import time

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, get_worker_info
from ember.utils.data import _shared_memory

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals needed")


class BadKeyError(ValueError):
    pass


class Failing(Dataset):
    """Raises for key 7."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 7:
            raise BadKeyError(f"cannot load sample {i}")
        return np.full(2, i)


class Killed(Dataset):
    """A worker kills itself (SIGKILL, as the OOM killer would) on key 5."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 5 and get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Stuck(Dataset):
    """Key 3 never finishes (in reasonable time)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            wait_forever_in_getitem()
        return i


def wait_forever_in_getitem():
    time.sleep(60)


class Slow(Dataset):
    """Large, slow samples: batches are in flight (and in shared memory) when stopped."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.02)
        return np.full((128, 128), i, dtype=np.float32)


def bad_collate(batch):
    raise TypeError("collate cannot cope")


def failing_init(worker_id):
    raise OSError(f"init of worker {worker_id} failed")


def my_segments():
    return _shared_memory.leftovers(f"{_shared_memory.NAME_PREFIX}{os.getpid():x}_")


def clean():
    gc.collect()
    return multiprocessing.active_children() == [] and my_segments() == []


def test_worker_exception_carries_type_traceback_and_key():
    loader = DataLoader(Failing(), batch_size=4, num_workers=2)
    with pytest.raises(BadKeyError) as info:
        list(loader)
    message = str(info.value)
    assert "Caught BadKeyError in DataLoader worker process" in message
    assert "while loading index 7" in message
    assert "Original Traceback (most recent call last)" in message
    assert "in __getitem__" in message and "cannot load sample 7" in message
    assert clean()


def test_main_process_exception_names_the_key():
    with pytest.raises(BadKeyError) as info:
        list(DataLoader(Failing(), batch_size=4))
    notes = getattr(info.value, "__notes__", [])
    assert any("while loading index 7" in n for n in notes) or not hasattr(info.value, "add_note")


def test_errors_in_collate_and_worker_init_fn():
    with pytest.raises(TypeError, match=r"(?s)in DataLoader worker process 0 \(in collate_fn\)"
                                        r".*collate cannot cope"):
        list(DataLoader(Failing(), batch_size=2, num_workers=1, collate_fn=bad_collate))
    with pytest.raises(OSError, match=r"(?s)worker_init_fn.*init of worker 0 failed"):
        list(DataLoader(Failing(), batch_size=2, num_workers=1, worker_init_fn=failing_init))
    assert clean()


def test_killed_worker_is_reported_not_waited_for():
    loader = DataLoader(Killed(), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \d \(pid \d+\) was killed by "
                                           r"signal SIGKILL \(9\)"):
        list(loader)
    assert time.monotonic() - start < 10
    assert clean()


def test_timeout_shows_the_stuck_workers_stack():
    loader = DataLoader(Stuck(), batch_size=2, num_workers=2, timeout=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 2 seconds") as info:
        list(loader)
    assert time.monotonic() - start < 10
    message = str(info.value)
    assert "wait_forever_in_getitem" in message and "__getitem__" in message
    assert clean()


def test_shared_memory_failure_falls_back_to_the_pipe(monkeypatch):
    def full(name, size):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_shared_memory, "_create_segment", full)   # inherited by fork
    loader = DataLoader(Slow(), batch_size=4, num_workers=1)
    with pytest.warns(RuntimeWarning, match="shared memory is not usable .*No space left"):
        batches = list(loader)
    assert len(batches) == 16 and batches[3][0, 0, 0].item() == 12.0
    assert clean()


def test_cleanup_after_exhaustion():
    loader = DataLoader(Slow(), batch_size=8, num_workers=2)
    for _ in loader:
        pass
    assert clean()


def test_cleanup_after_deleting_an_iterator_mid_epoch():
    loader = DataLoader(Slow(), batch_size=8, num_workers=2, prefetch_factor=3)
    it = iter(loader)
    first = next(it)
    assert len(multiprocessing.active_children()) == 2
    del it
    assert clean()
    assert first.shape == (8, 128, 128)       # still readable after the segments are gone
    persistent = DataLoader(Slow(), batch_size=8, num_workers=2, persistent_workers=True)
    next(iter(persistent))
    del persistent
    assert clean()


class Gated(Dataset):
    """Each fetch announces itself on a pipe, then blocks until the gate pipe is closed, so
    the main process is left waiting for a batch that cannot come.  (Plain pipes rather than
    multiprocessing Events: a worker terminated while waiting on an Event's condition would
    leave a later ``set()`` waiting for it forever.)"""

    def __init__(self):
        self.started_r, self.started_w = os.pipe()
        self.gate_r, self.gate_w = os.pipe()

    def __len__(self):
        return 64

    def __getitem__(self, i):
        os.write(self.started_w, b"s")
        select.select([self.gate_r], [], [], 30)  # bounded, should the test fail to interrupt
        return np.full((128, 128), i, dtype=np.float32)

    def close(self):
        for fd in (self.started_r, self.started_w, self.gate_r, self.gate_w):
            os.close(fd)


def main_thread_is_collecting() -> bool:
    """Whether the main thread is inside the loader's wait for worker results."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None:
        if frame.f_code.co_name == "_collect":
            return True
        frame = frame.f_back
    return False


def interrupt_when_waiting(dataset: Gated, outcome: dict) -> None:
    """Deliver SIGINT to the main thread once it is known to wait on the workers.

    Whatever happens, the gate opens in the end (a byte on its pipe), so that a missed
    interrupt fails the test at once instead of leaving the loader to wait 30 s for each
    of 64 samples."""
    try:
        if not select.select([dataset.started_r], [], [], 30)[0]:
            outcome["failure"] = "no worker started a fetch within 30 s"
            return
        deadline = time.monotonic() + 30
        while not main_thread_is_collecting():
            if time.monotonic() > deadline:
                outcome["failure"] = "the main thread never waited on the workers"
                return
            time.sleep(0.005)
        outcome["sent"] = True
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        deadline = time.monotonic() + 10
        while main_thread_is_collecting() and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        os.write(dataset.gate_w, b"g")


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="the gate's pipes reach the workers by fork")
def test_cleanup_after_keyboard_interrupt_while_waiting():
    # Python's own handler, whatever the runner inherited: a process started in the
    # background by a non-interactive shell ignores SIGINT (a CI run launched with `&`
    # did, and this test then waited on the workers instead of seeing the interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_while_waiting()
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_while_waiting():
    dataset = Gated()
    loader = DataLoader(dataset, batch_size=8, num_workers=2)
    outcome = {"sent": False}
    helper = threading.Thread(target=interrupt_when_waiting, args=(dataset, outcome))
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in loader:
                pass
    finally:
        helper.join()
        dataset.close()
    assert outcome["sent"], outcome.get("failure")
    assert clean()


def test_cleanup_after_keyboard_interrupt_in_the_loop_body():
    loader = DataLoader(Slow(), batch_size=8, num_workers=2)
    with pytest.raises(KeyboardInterrupt):
        for _ in loader:
            raise KeyboardInterrupt
    assert clean()


def test_reproducible_after_a_failed_epoch():
    # an error ends the epoch and its workers; the next epoch starts afresh
    loader = DataLoader(Failing(), batch_size=4, num_workers=2, persistent_workers=True)
    with pytest.raises(BadKeyError):
        list(loader)
    assert clean()
    ember.manual_seed(0)
    it = iter(loader)
    assert next(it).tolist() == [[0, 0], [1, 1], [2, 2], [3, 3]]
    del it, loader
    assert clean()
