"""``python -m ember.distributed.run``: start a script on N ranks through ``mpiexec``.

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m ember.distributed.run --hostfile hosts --nproc-per-node 4 train.py   # several hosts

The launcher runs ``mpiexec -n <total> python -m ember.distributed.run --worker script
args``.  On each rank the worker sets PyTorch's environment variables (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``,
``MASTER_PORT``) from what ``mpiexec`` tells it, then runs the script as ``__main__``.

Each rank gets ``OMP_NUM_THREADS`` = cores / ranks per host (unless it is set already), as
torchrun does, so that the ranks' BLAS threads do not oversubscribe the machine.

Failures: a rank whose script raises (or exits with a non-zero code) reports its traceback
and a line naming itself, and aborts the whole job (``MPI_Abort``), so the other ranks never
wait for it.  Each worker leaves small status files in a temporary folder; the failing
rank's report goes there too, because ``MPI_Abort`` can cut ``mpiexec``'s forwarding of
that rank's last output.  When ``mpiexec`` ends badly, the launcher prints the reports, says
which rank failed, makes sure no rank of this host is left running, and exits with a
non-zero code.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import traceback

from ._exit_order import ExitOrder

_WORKER_FLAG = "--worker"


def find_mpiexec(explicit: str | None = None) -> str | None:
    """The mpiexec matching this Python's mpi4py: the environment's own first (pip's MPICH
    installs it beside python), then PATH."""
    candidates = [explicit, os.environ.get("EMBER_MPIEXEC")]
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidates.append(os.path.join(folder, "mpiexec"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return shutil.which("mpiexec")


def _flavour(mpiexec: str) -> str:
    """'hydra' (MPICH, Intel MPI) or 'openmpi'."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "hydra"
    return "openmpi" if "Open MPI" in out or "OpenRTE" in out else "hydra"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start a training script on several processes (ranks) through mpiexec.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="ranks per host (default 1)")
    p.add_argument("--nnodes", type=int, default=None,
                   help="number of hosts (default: the hosts in --hostfile, else 1)")
    p.add_argument("--hostfile", default=None,
                   help="file naming the hosts, one per line (passed to mpiexec)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="MASTER_ADDR given to the ranks (for compatibility only)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="MASTER_PORT given to the ranks (for compatibility only)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use")
    p.add_argument("--mpiexec-arg", action="append", default=[],
                   help="an extra argument for mpiexec (repeat for several)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the target as a module (like python -m)")
    p.add_argument("script", help="the script (or module, with -m) each rank runs")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def _hosts_in(path: str) -> int:
    with open(path) as f:
        return sum(1 for line in f if line.strip() and not line.lstrip().startswith("#"))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == _WORKER_FLAG:
        return _worker(argv[1:])
    opts = _parser().parse_args(argv)
    mpiexec = find_mpiexec(opts.mpiexec)
    if mpiexec is None:
        print("ember.distributed.run: mpiexec not found. Install the distributed extra "
              "(pip install 'ember[distributed]', which brings mpi4py and MPICH) or pass "
              "--mpiexec PATH", file=sys.stderr)
        return 2
    nnodes = opts.nnodes or (_hosts_in(opts.hostfile) if opts.hostfile else 1)
    total = nnodes * opts.nproc_per_node
    status_dir = tempfile.mkdtemp(prefix="ember-run-")
    env = dict(os.environ, MASTER_ADDR=opts.master_addr, MASTER_PORT=str(opts.master_port),
               EMBER_RUN_DIR=status_dir, EMBER_RUN_NPROC_PER_NODE=str(opts.nproc_per_node))
    if "OMP_NUM_THREADS" not in env and opts.nproc_per_node > 1:
        # As torchrun does: ranks sharing a host share its cores, so each rank's BLAS gets
        # its share instead of every rank starting one thread per core.
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // opts.nproc_per_node))
    flavour = _flavour(mpiexec)
    cmd = [mpiexec, "-n", str(total)]
    if flavour == "openmpi":
        if opts.hostfile:
            cmd += ["--hostfile", opts.hostfile]
        cmd += ["--map-by", f"ppr:{opts.nproc_per_node}:node"]
        for key in ("MASTER_ADDR", "MASTER_PORT", "EMBER_RUN_DIR", "EMBER_RUN_NPROC_PER_NODE",
                    "PYTHONPATH", "EMBER_DISTRIBUTED_DEBUG", "OMP_NUM_THREADS"):
            if key in env:
                cmd += ["-x", key]
    else:
        if opts.hostfile:
            cmd += ["-f", opts.hostfile]
        cmd += ["-ppn", str(opts.nproc_per_node)]
    cmd += opts.mpiexec_arg
    cmd += [sys.executable, "-m", "ember.distributed.run", _WORKER_FLAG]
    cmd += (["-m"] if opts.module else []) + [opts.script] + list(opts.args)
    try:
        return _supervise(cmd, env, status_dir, total, opts.nproc_per_node)
    finally:
        shutil.rmtree(status_dir, ignore_errors=True)


def _supervise(cmd: list, env: dict, status_dir: str, total: int, local_ranks: int) -> int:
    """Run mpiexec, pass its output through, and explain a failure."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE)
    exit_order = ExitOrder(lambda: _statuses(status_dir), local_ranks).start()

    def forward(signum, frame):  # Ctrl-C / kill: let mpiexec stop the ranks
        try:
            proc.send_signal(signum)
        except OSError:
            pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    tail = b""
    try:
        out = sys.stdout.buffer
        while True:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out.write(chunk)
            out.flush()
            tail = (tail + chunk)[-65536:]
        rc = proc.wait()
    finally:
        exit_order.stop()
        for s, h in old.items():
            signal.signal(s, h)
    stray = _kill_strays(status_dir)
    if rc != 0:
        for rank, status in sorted(_statuses(status_dir).items()):
            if "report" in status:
                print(f"---- rank {rank} ----\n{status['report']}", file=sys.stderr)
        print(f"ember.distributed.run: the job failed (mpiexec exit code {rc}): "
              f"{_diagnose(status_dir, tail.decode('utf-8', 'replace'), total, exit_order.first)}",
              file=sys.stderr)
    if stray:
        print(f"ember.distributed.run: stopped ranks left running: {stray}", file=sys.stderr)
    return rc if rc != 0 else (1 if stray else 0)


def _statuses(status_dir: str) -> dict:
    """rank -> {'pid', 'host', 'error', 'report', 'done'} from the workers' status files."""
    out: dict = {}
    for name in os.listdir(status_dir):
        rank, _, kind = name.partition(".")
        if not rank.isdigit() or name.endswith(".tmp"):
            continue
        with open(os.path.join(status_dir, name)) as f:
            text = f.read().strip()
        entry = out.setdefault(int(rank), {})
        if kind == "pid":
            pid, _, host = text.partition(" ")
            entry["pid"], entry["host"] = int(pid), host
        else:
            entry[kind] = text
    return out


def _diagnose(status_dir: str, output: str, total: int, first: int | None = None) -> str:
    """Which rank failed first, as far as can be told.  `first`: the rank of this host seen
    to end first without finishing (``ExitOrder``), if one was."""
    statuses = _statuses(status_dir)
    errors = [f"rank {r} raised {s['error']}" for r, s in sorted(statuses.items())
              if "error" in s]
    if errors:
        return "; ".join(errors)
    named_rank, named = _named_by_mpiexec(output, statuses)
    if first is not None and first != named_rank and "pid" in statuses.get(first, {}):
        pid, host = statuses[first]["pid"], statuses[first]["host"]
        # mpiexec names the lowest rank whose exit was bad, which can be one that it killed
        # itself once `first` had died.
        return (f"rank {first} (pid {pid} on {host}) ended first, without an error report "
                f"(killed, or os._exit); mpiexec then stopped the others"
                + (f" (it names {named})" if named else ""))
    if named is not None:
        return named
    missing = [r for r in range(total) if r not in statuses]
    if missing:
        return f"ranks {missing} never started"
    return "no rank reported an error; see the output above"


def _named_by_mpiexec(output: str, statuses: dict) -> tuple:
    """(rank, how it ended) from MPICH's "BAD TERMINATION" block, the latter as
    'rank 1 (pid 123 on host) killed by signal 9 (SIGKILL)'; (None, None) without one."""
    by_pid = {s.get("pid"): r for r, s in statuses.items()}
    m = re.search(r"PID (\d+) RUNNING AT (\S+)\s*=\s*EXIT CODE: (-?\d+)", output)
    if not (m and int(m.group(1)) in by_pid):
        return None, None
    rank, code = by_pid[int(m.group(1))], int(m.group(3))
    how = (f"killed by signal {code} ({signal.Signals(code).name})"
           if code in (6, 9, 11, 15) else f"exited with code {code}")
    return rank, f"rank {rank} (pid {m.group(1)} on {m.group(2)}) {how}"


def _alive(pid: int) -> bool:
    """True while `pid` is a running (not zombie) rank of ours."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rpartition(")")[2].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            ours = b"ember.distributed.run" in f.read()
        return state != "Z" and ours
    except (OSError, IndexError):
        if not os.path.isdir("/proc"):  # no procfs: ask the kernel
            try:
                os.kill(pid, 0)
                return True
            except OSError:
                return False
        return False


def _kill_strays(status_dir: str, grace: float = 3.0) -> list:
    """SIGKILL any rank of this host still running `grace` seconds after mpiexec returned
    (mpiexec stops the ranks asynchronously, so give them a moment first)."""
    import socket
    import time

    host = socket.gethostname()
    pids = {r: s["pid"] for r, s in _statuses(status_dir).items()
            if "pid" in s and s.get("host") == host and "done" not in s}
    deadline = time.monotonic() + grace
    while any(_alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    stray = []
    for rank, pid in sorted(pids.items()):
        if _alive(pid):
            stray.append(rank)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return stray


# ---- the worker: runs on every rank -----------------------------------------------------

def _first_env(*names):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            return int(v)
    return None


def _rank_info() -> tuple:
    """(rank, size, local_rank, local_size) from the MPI launcher's environment."""
    rank = _first_env("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
    size = _first_env("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
    local = _first_env("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")
    local_size = _first_env("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")
    if None in (rank, size, local, local_size):  # an MPI we do not know: ask MPI itself
        from ._mpi import world_info  # (lazy: _mpi imports mpi4py, which is optional)

        return world_info()
    return rank, size, local, local_size


def _status_dir() -> str | None:
    """The launcher's status folder, or None when this rank was started some other way."""
    folder = os.environ.get("EMBER_RUN_DIR")
    return folder if folder and os.path.isdir(folder) else None


def _write_status(rank: int, kind: str, text: str) -> bool:
    """Leave `text` in the status file `<rank>.<kind>`; written whole, then renamed, so the
    launcher never reads half a file.  False where it could not be written."""
    folder = _status_dir()
    if folder is None:
        return False
    path = os.path.join(folder, f"{rank}.{kind}")
    try:
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    except OSError:
        return False
    return True


def _worker(argv: list) -> int:
    import runpy
    import socket

    module = bool(argv) and argv[0] == "-m"
    if module:
        argv = argv[1:]
    target, args = argv[0], argv[1:]
    rank, size, local, local_size = _rank_info()
    per_node = int(os.environ.get("EMBER_RUN_NPROC_PER_NODE", local_size) or local_size)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(local),
                      LOCAL_WORLD_SIZE=str(local_size), GROUP_RANK=str(rank // max(per_node, 1)))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    _write_status(rank, "pid", f"{os.getpid()} {socket.gethostname()}")
    sys.argv = [target] + args
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code in (None, 0):
            _write_status(rank, "done", "0")
            return 0
        status = code if isinstance(code, int) else 1
        _write_status(rank, "error", f"SystemExit({code!r})")
        _fail(rank, size, f"exited with code {code!r}", status,
              "" if isinstance(code, int) else f"{code}\n")
        return status
    except BaseException as exc:  # noqa: BLE001 - every failure must end the job
        _write_status(rank, "error", f"{type(exc).__name__}: {exc}")
        _fail(rank, size, f"uncaught {type(exc).__name__}: {exc}", 1, traceback.format_exc())
        return 1
    _write_status(rank, "done", "0")
    return 0


def _fail(rank: int, size: int, reason: str, code: int, details: str) -> None:
    """Report the failure (`details`: the traceback, if any), then end the whole job now if
    MPI is up (others may wait on this rank), else just exit."""
    mpi = sys.modules.get("mpi4py.MPI")
    aborting = size > 1 and mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized()
    report = details
    if aborting:
        report += (f"[ember.distributed.run] rank {rank} of {size} failed ({reason}); "
                   f"aborting all {size} ranks\n")
    sys.stdout.flush()
    if not (aborting and _write_status(rank, "report", report)):  # (the launcher prints it)
        sys.stderr.write(report)
    sys.stderr.flush()
    if aborting:
        mpi.COMM_WORLD.Abort(code)


if __name__ == "__main__":
    sys.exit(main())
