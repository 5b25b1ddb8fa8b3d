"""ember.distributed pieces that need no second process (and never start MPI here)."""

import os
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed import _objects, run
from ember.distributed._exit_order import ExitOrder
from ember.distributed._work import Work, poll_until


def test_public_names():
    for name in ("init_process_group", "is_available", "is_initialized", "get_rank",
                 "get_world_size", "get_backend", "destroy_process_group", "barrier",
                 "new_group", "all_reduce", "broadcast", "reduce", "all_gather",
                 "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "gather",
                 "scatter", "send", "recv", "isend", "irecv", "all_to_all",
                 "all_to_all_single", "broadcast_object_list", "all_gather_object",
                 "gather_object", "scatter_object_list", "monitored_barrier"):
        assert callable(getattr(dist, name)), name
    assert [op.name for op in dist.ReduceOp][:5] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
    assert dist.Backend("MPI") == dist.Backend.MPI == "mpi"
    assert dist.GroupMember.NON_GROUP_MEMBER == -100
    assert ember.nn.parallel.DistributedDataParallel is not None
    assert issubclass(dist.DistBackendError, RuntimeError)
    assert dist.default_pg_timeout == timedelta(minutes=30)


def test_not_initialized():
    assert not dist.is_initialized()
    message = "Default process group has not been initialized"
    with pytest.raises(ValueError, match=message):
        dist.get_rank()
    with pytest.raises(ValueError, match=message):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(ValueError, match=message):
        ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 2))


def test_backend_names():
    from ember.distributed._group import _backend_name

    assert _backend_name(None) == "mpi" and _backend_name("gloo") == "mpi"
    assert _backend_name("cpu:gloo,cuda:nccl") == "mpi" and _backend_name("nccl") == "nccl"
    with pytest.raises(ValueError, match="Invalid backend"):
        _backend_name("ucc")


def test_nccl_backend_is_a_named_stub():
    with pytest.raises(NotImplementedError, match="NCCLBackend"):
        dist.NCCLBackend()
    with pytest.raises(NotImplementedError, match="NCCLBackend"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_backend_interface_is_abstract():
    with pytest.raises(TypeError):
        dist.CommBackend()
    methods = {"allreduce", "broadcast", "reduce", "allgather", "gather", "scatter",
               "reduce_scatter", "alltoall", "barrier", "send", "recv", "exchange", "split",
               "abort"}
    assert methods <= dist.CommBackend.__abstractmethods__


def test_work_waits_with_a_deadline():
    calls = []
    work = Work(lambda: len(calls) > 3 or calls.append(1) and False, timeout=5.0)
    assert not work.is_completed()
    assert work.wait() and work.is_completed() and work.is_success()
    never = Work(lambda: False, timeout=0.05, label="all_reduce")
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match="all_reduce timed out"):
        never.wait()
    assert time.monotonic() - start < 2
    with pytest.raises(dist.DistBackendError):  # the error sticks
        never.is_completed()
    assert not poll_until(lambda: False, 0.01)
    finished = []
    w = Work(lambda: True, finish=lambda: finished.append(1))
    w.wait()
    w.wait()
    assert finished == [1]  # finish runs once
    assert w.get_future().then(lambda f: 42).wait() == 42


def test_object_encoding_roundtrip():
    obj = {"a": [1, 2.5, None, True, "s", b"\x00"], ("k", 1): (3 + 4j, {1, 2}, frozenset([3])),
           "arr": np.arange(6, dtype=np.int16).reshape(2, 3), "scalar": np.float32(1.5),
           "t": ember.tensor([[1.0, 2.0]], requires_grad=True), "dt": ember.float16,
           "dev": ember.device("cpu"), "bf": ember.ones(2, dtype=ember.bfloat16), 7: 2 ** 70}
    back = _objects.decode(_objects.encode(obj))
    assert back["a"] == obj["a"] and back[("k", 1)] == obj[("k", 1)] and back[7] == 2 ** 70
    assert back["arr"].dtype == np.int16 and np.array_equal(back["arr"], obj["arr"])
    assert back["scalar"] == np.float32(1.5) and isinstance(back["scalar"], np.float32)
    assert back["t"].tolist() == [[1.0, 2.0]] and back["t"].requires_grad
    assert back["dt"] is ember.float16 and back["dev"] == ember.device("cpu")
    assert back["bf"].dtype == ember.bfloat16
    assert _objects.decode(_objects.encode(float("nan"))) != 0  # NaN survives (as NaN)


def test_object_encoding_refuses_code_and_cycles():
    class Custom:
        pass

    with pytest.raises(TypeError, match="Custom.*never pickle"):
        _objects.encode([Custom()])
    with pytest.raises(TypeError, match="dtype object"):
        _objects.encode(np.array([None, 1], dtype=object))
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="cycle"):
        _objects.encode(cyclic)
    with pytest.raises(ValueError, match="magic"):
        _objects.decode(b"\x80\x04pickle")
    bad = _objects.encode({"$evil": 1})  # a user key that looks like a tag stays a key
    assert _objects.decode(bad) == {"$evil": 1}


def test_debug_level_from_env(monkeypatch):
    from ember.distributed import _mismatch

    monkeypatch.setenv("EMBER_DISTRIBUTED_DEBUG", "detail")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() is dist.DebugLevel.DETAIL
    monkeypatch.delenv("EMBER_DISTRIBUTED_DEBUG")
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "INFO")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() is dist.DebugLevel.INFO
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "LOUD")
    with pytest.raises(ValueError, match="OFF, INFO or DETAIL"):
        dist.set_debug_level_from_env()
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() is dist.DebugLevel.OFF
    assert _mismatch.call_site().startswith(os.path.abspath(__file__))


def test_launcher_options_and_diagnosis(tmp_path):
    opts = run._parser().parse_args(["--nproc-per-node", "3", "train.py", "--lr", "0.1"])
    assert opts.nproc_per_node == 3 and opts.script == "train.py"
    assert opts.args == ["--lr", "0.1"]
    (tmp_path / "0.pid").write_text("100 hostA")
    (tmp_path / "1.pid").write_text("101 hostA")
    banner = ("=   PID 101 RUNNING AT hostA\n=   EXIT CODE: 9\n")
    assert run._diagnose(str(tmp_path), banner, 2) == (
        "rank 1 (pid 101 on hostA) killed by signal 9 (SIGKILL)")
    # The watcher saw rank 1 end first: mpiexec naming it too changes nothing ...
    assert run._diagnose(str(tmp_path), banner, 2, first=1) == (
        "rank 1 (pid 101 on hostA) killed by signal 9 (SIGKILL)")
    # ... but when mpiexec names a rank it killed in its clean-up, the first one is named.
    cleanup = banner.replace("PID 101", "PID 100")
    assert run._diagnose(str(tmp_path), cleanup, 2, first=1) == (
        "rank 1 (pid 101 on hostA) ended first, without an error report (killed, or "
        "os._exit); mpiexec then stopped the others (it names rank 0 (pid 100 on hostA) "
        "killed by signal 9 (SIGKILL))")
    assert run._diagnose(str(tmp_path), "=   PID 100 RUNNING AT hostA\n=   EXIT CODE: 3\n",
                         2) == "rank 0 (pid 100 on hostA) exited with code 3"
    assert run._diagnose(str(tmp_path), "", 3) == "ranks [2] never started"
    (tmp_path / "0.error").write_text("ValueError: boom")
    assert run._diagnose(str(tmp_path), "", 2, first=1) == "rank 0 raised ValueError: boom"
    hosts = tmp_path / "hosts"
    hosts.write_text("# comment\nnode1\nnode2:4\n\n")
    assert run._hosts_in(str(hosts)) == 2


def _reader(folder):
    """The launcher's reader of the status folder `folder`, as it hands it to ExitOrder."""
    return lambda: run._statuses(str(folder))


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="pidfds are Linux-only")
def test_exit_order_names_the_rank_that_ended_first(tmp_path):
    host = socket.gethostname()
    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                for _ in range(3)]
    try:
        for rank, proc in enumerate(sleepers):
            (tmp_path / f"{rank}.pid").write_text(f"{proc.pid} {host}")
        (tmp_path / "3.pid").write_text("1 elsewhere")  # another host's rank: not watched
        watch = ExitOrder(_reader(tmp_path), local_ranks=3).start()
        time.sleep(0.3)
        # Rank 0 finishes its script (a done file, then exit): that is not a failure.
        (tmp_path / "0.done").write_text("0")
        sleepers[0].terminate()
        sleepers[0].wait()
        time.sleep(0.3)
        assert watch.first is None
        sleepers[2].kill()   # the failure: dies with no report
        sleepers[2].wait()
        deadline = time.monotonic() + 20   # (a loaded machine may run the thread late)
        while watch.first is None and time.monotonic() < deadline:
            time.sleep(0.01)
        sleepers[1].kill()   # what mpiexec's clean-up would do next
        sleepers[1].wait()
        watch.stop()
        assert watch.first == 2
    finally:
        for proc in sleepers:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="pidfds are Linux-only")
def test_exit_order_takes_no_order_from_a_tie(tmp_path, monkeypatch):
    host = socket.gethostname()
    # Both ranks are gone before the watcher looks: no order can be told.
    for rank in range(2):
        proc = subprocess.Popen([sys.executable, "-c", "pass"])
        proc.wait()
        (tmp_path / f"{rank}.pid").write_text(f"{proc.pid} {host}")
    watch = ExitOrder(_reader(tmp_path), local_ranks=2).start()
    watch._thread.join(timeout=20)   # (it ends by itself once a rank has ended)
    assert not watch._thread.is_alive() and watch.first is None
    watch.stop()
    # Stopped before any rank wrote its pid file: nothing seen, and stop() returns.
    empty = tmp_path / "empty"
    empty.mkdir()
    watch = ExitOrder(_reader(empty), local_ranks=2).start()
    watch.stop()
    assert watch.first is None
    # The folder removed under it: the thread ends quietly.
    gone = tmp_path / "gone"
    gone.mkdir()
    raised = []
    monkeypatch.setattr(threading, "excepthook", raised.append)
    watch = ExitOrder(_reader(gone), local_ranks=2).start()
    gone.rmdir()
    watch._thread.join(timeout=20)
    assert not watch._thread.is_alive() and raised == []
    watch.stop()
    assert watch.first is None


def test_launcher_without_mpiexec(monkeypatch, capsys):
    monkeypatch.setattr(run, "find_mpiexec", lambda explicit=None: None)
    assert run.main(["--nproc-per-node", "2", "script.py"]) == 2
    assert "pip install 'ember[distributed]'" in capsys.readouterr().err


def test_status_files_are_written_whole_and_read_back(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBER_RUN_DIR", raising=False)
    assert run._write_status(0, "error", "x") is False      # no launcher's folder
    monkeypatch.setenv("EMBER_RUN_DIR", str(tmp_path))
    assert run._write_status(1, "report", "Traceback ...\nboom\n") is True
    (tmp_path / "2.report.tmp").write_text("half a fil")        # a write in progress
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1.report", "2.report.tmp"]
    assert run._statuses(str(tmp_path)) == {1: {"report": "Traceback ...\nboom"}}


def test_a_failure_report_goes_to_stderr_when_no_job_is_aborted(capsys, monkeypatch):
    monkeypatch.delenv("EMBER_RUN_DIR", raising=False)
    run._fail(0, 1, "uncaught ValueError: boom", 1, "Traceback (most recent call last)\n")
    assert capsys.readouterr().err == "Traceback (most recent call last)\n"
