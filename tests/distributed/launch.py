"""Running test workers on several ranks, with bounded time and no stray processes.

Tests that need a multi-rank job are marked `requires_mpi`: they skip cleanly when mpi4py
or a matching ``mpiexec`` is missing (install the ``distributed`` extra).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def _mpiexec():
    if importlib.util.find_spec("mpi4py") is None:
        return None
    from ember.distributed.run import find_mpiexec

    return find_mpiexec()


MPIEXEC = _mpiexec()
requires_mpi = pytest.mark.skipif(
    MPIEXEC is None, reason="needs mpi4py and mpiexec: pip install 'ember[distributed]'")


class Result:
    def __init__(self, returncode: int, output: str, seconds: float):
        self.returncode = returncode
        self.output = output
        self.seconds = seconds

    def pids(self) -> list:
        """The pids the workers printed as 'pid=NNN'."""
        return [int(p) for p in re.findall(r"pid=(\d+)", self.output)]


def _env(extra: dict | None) -> dict:
    env = dict(os.environ)
    env.pop("EMBER_DISTRIBUTED_DEBUG", None)
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(key, None)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def run(cmd: list, timeout: float, env: dict | None = None) -> Result:
    """Run `cmd` in its own session; on timeout kill the whole session and fail."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} did not finish within {timeout} s:\n"
                    f"{out.decode(errors='replace')[-4000:]}")
    return Result(proc.returncode, out.decode(errors="replace"), time.monotonic() - start)


def launch(worker: str, *args, nproc: int = 2, timeout: float = 90, env=None) -> Result:
    """``python -m ember.distributed.run --nproc-per-node N workers/<worker> args``."""
    script = worker if os.path.isabs(worker) or "/" in worker else os.path.join(WORKERS, worker)
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc),
           script, *args]
    return run(cmd, timeout, env)


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def assert_no_strays(result: Result) -> None:
    pids = result.pids()
    assert pids, "the workers printed no pids"
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"ranks still running after the job ended: {left}"
    assert "stopped ranks left running" not in result.output, result.output
