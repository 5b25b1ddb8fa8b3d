"""Process groups: ``init_process_group``, ``new_group``, the queries, and failure handling.

The default group spans every process ``mpiexec`` started (MPI's ``COMM_WORLD``); its size
and each process's rank come from MPI, and PyTorch's environment variables (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``) are checked against them, or filled in when absent.

Failure handling: with more than one rank, ``init_process_group`` installs an exception
hook.  A rank whose script raises prints its traceback, then a line naming itself, and
calls ``MPI_Abort``: ``mpiexec`` ends every rank at once, so no rank is left waiting in a
collective for a peer that is gone.  (A rank that dies outright, e.g. killed by a signal,
makes ``mpiexec`` end the job the same way.)  Waits that run out of the group's timeout
raise `DistBackendError` (see _work.py).
"""

from __future__ import annotations

import os
import sys
import warnings
from datetime import timedelta

from ._backend import Backend, DistBackendError, NCCLBackend
from ._work import seconds

default_pg_timeout = timedelta(minutes=30)

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to "
                    "call init_process_group.")


class ProcessGroup:
    """A set of ranks that run collectives together (returned by ``new_group``)."""

    def __init__(self, backend, ranks: list, timeout_s: float, name: str, backend_name: str):
        self._backend = backend
        self._ranks = list(ranks)  # global rank of each group rank
        self._timeout = timeout_s
        self._name = name
        self._backend_name = backend_name
        self._seq = 0  # collectives started so far (the mismatch check compares it)
        self._broken = None  # set after a timeout: the group cannot be used again

    def rank(self) -> int:
        """This process's rank within the group."""
        return self._backend.rank

    def size(self) -> int:
        """The number of ranks in the group."""
        return self._backend.size

    def name(self) -> str:
        return self._backend_name

    @property
    def group_name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return (f"<ember.distributed.ProcessGroup {self._name!r} ({self._backend_name}): "
                f"ranks {self._ranks}, this is rank {self.rank()}>")

    def _describe(self) -> str:
        return "the default group" if self is _STATE.default else f"group {self._name!r}"


class GroupMember:
    """``GroupMember.WORLD`` is the default group; ``new_group`` gives ``NON_GROUP_MEMBER``
    to the ranks that are not in the new group."""

    WORLD = None
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801 - PyTorch's name
    """``group.WORLD``: the default process group (None before ``init_process_group``)."""

    WORLD = None


_GROUP_NAMESPACE = group  # `group` is also a parameter name below


class _State:
    default: ProcessGroup | None = None
    groups: list = []
    previous_hook = None


_STATE = _State()


def is_available() -> bool:
    """True when a communication backend can be used here (mpi4py is installed)."""
    return is_mpi_available()


def is_mpi_available() -> bool:
    """True when mpi4py (and so an MPI library) is installed."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """False: the NCCL backend is not implemented yet."""
    return False


def is_gloo_available() -> bool:
    """False: ember has no Gloo; ``backend="gloo"`` is served by MPI."""
    return False


def is_initialized() -> bool:
    """True between ``init_process_group`` and ``destroy_process_group``."""
    return _STATE.default is not None


def _default() -> ProcessGroup:
    if _STATE.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _STATE.default


def _backend_name(backend) -> str:
    """'mpi' or 'nccl' from PyTorch's spellings ('gloo', 'cpu:gloo,cuda:nccl', None)."""
    if backend is None:
        return Backend.MPI
    names = [part.split(":")[-1] for part in str(backend).lower().split(",")]
    for name in names:
        if name in (Backend.MPI, Backend.GLOO):
            return Backend.MPI  # Gloo's job (CPU collectives) is done by MPI here
    if Backend.NCCL in names:
        return Backend.NCCL
    raise ValueError(f"Invalid backend: {backend!r}; ember.distributed has 'mpi' "
                     "('gloo' is accepted as an alias) and 'nccl' (not implemented yet)")


def _import_mpi():
    try:  # (lazy: _mpi imports mpi4py, an optional dependency)
        from . import _mpi
    except ImportError as exc:
        raise RuntimeError(
            "the MPI backend needs mpi4py and an MPI library: pip install 'ember[distributed]' "
            "(mpi4py and MPICH), then start the ranks with "
            "`python -m ember.distributed.run --nproc-per-node N script.py`"
        ) from exc
    return _mpi


def _env_int(name: str):
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the default process group: every process that ``mpiexec`` started.

    Rank and size come from MPI; `rank`/`world_size` (or the ``RANK``/``WORLD_SIZE``
    environment variables) may be given and must agree with them.  `timeout` (a timedelta,
    default 30 minutes) bounds every wait of a collective on this group.  ``init_method``
    is accepted for compatibility: under MPI, ``mpiexec`` itself is the rendezvous.
    Start the processes with ``python -m ember.distributed.run --nproc-per-node N
    script.py`` (or ``mpiexec -n N python script.py``).
    """
    if _STATE.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _backend_name(backend)
    if name == Backend.NCCL:
        NCCLBackend()  # raises NotImplementedError naming itself
    if store is not None:
        raise NotImplementedError("init_process_group(store=...): the MPI backend needs no "
                                  "store; mpiexec connects the processes")
    if init_method not in (None, "env://"):
        warnings.warn(f"init_process_group: init_method={init_method!r} is ignored by the MPI "
                      "backend (mpiexec connects the processes)", UserWarning, stacklevel=2)
    timeout_s = seconds(default_pg_timeout if timeout is None else timeout)
    mpi = _import_mpi()
    mpi_rank, mpi_size, local_rank, local_size = mpi.world_info()
    _check_agrees("world_size", None if world_size in (None, -1) else world_size, mpi_size)
    _check_agrees("rank", None if rank in (None, -1) else rank, mpi_rank)
    _check_agrees("WORLD_SIZE", _env_int("WORLD_SIZE"), mpi_size, env=True)
    _check_agrees("RANK", _env_int("RANK"), mpi_rank, env=True)
    for key, value in (("RANK", mpi_rank), ("WORLD_SIZE", mpi_size),
                       ("LOCAL_RANK", local_rank), ("LOCAL_WORLD_SIZE", local_size)):
        os.environ.setdefault(key, str(value))
    pg = ProcessGroup(mpi.MPIBackend(), list(range(mpi_size)), timeout_s,
                      group_name or "default_pg", name)
    _STATE.default = pg
    _STATE.groups = [pg]
    group.WORLD = GroupMember.WORLD = pg
    if mpi_size > 1 and _STATE.previous_hook is None:
        _STATE.previous_hook = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def _check_agrees(what: str, given, actual: int, env: bool = False) -> None:
    if given is None or given == actual:
        return
    if env and what == "WORLD_SIZE" and actual == 1:
        raise RuntimeError(
            f"WORLD_SIZE={given} but this process is alone in its MPI job: the MPI backend "
            "needs its processes started by mpiexec. Use `python -m ember.distributed.run "
            f"--nproc-per-node {given} script.py` (or `mpiexec -n {given} python script.py`)"
        )
    source = f"the environment variable {what}" if env else f"{what}={given}"
    raise ValueError(f"init_process_group: {source} disagrees with MPI, which says "
                     f"{what.lower()} is {actual} (given {given})")


def destroy_process_group(group=None) -> None:
    """Leave `group` (default: every group, after which ``init_process_group`` may run
    again).  The processes keep running."""
    if group is None or group is _STATE.default:
        for pg in _STATE.groups:
            pg._backend.close()
        _STATE.default = None
        _STATE.groups = []
        GroupMember.WORLD = _GROUP_NAMESPACE.WORLD = None
        if _STATE.previous_hook is not None:
            sys.excepthook = _STATE.previous_hook
            _STATE.previous_hook = None
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    if group in _STATE.groups:
        _STATE.groups.remove(group)
        group._backend.close()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None, device_id=None):
    """A process group over `ranks` (global ranks; default: all).

    Every rank of the default group must call it, in the same order as the other ranks
    (as in PyTorch).  Ranks outside `ranks` get ``GroupMember.NON_GROUP_MEMBER``.
    """
    world = _default()
    size = world.size()
    members = list(range(size)) if ranks is None else sorted(set(int(r) for r in ranks))
    for r in members:
        if not 0 <= r < size:
            raise ValueError(f"new_group: rank {r} is not in the default group of {size} ranks")
    timeout_s = world._timeout if timeout is None else seconds(timeout)
    backend_obj = world._backend.split(members)
    if backend_obj is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(backend_obj, members, timeout_s,
                      group_desc or f"group{len(_STATE.groups)}", world._backend_name)
    _STATE.groups.append(pg)
    return pg


def _resolve(group) -> ProcessGroup:
    """The ProcessGroup behind a ``group=`` argument (None: the default group)."""
    if group is None or group is GroupMember.WORLD:
        return _default()
    if isinstance(group, ProcessGroup):
        if group._backend is None:
            raise ValueError("the process group has been destroyed")
        return group
    if group == GroupMember.NON_GROUP_MEMBER:
        return group
    raise TypeError(f"group must be a ProcessGroup or None, got {type(group).__name__}")


def get_rank(group=None) -> int:
    """This process's rank in `group` (the default group when None); -1 if not a member."""
    pg = _resolve(group)
    return -1 if pg == GroupMember.NON_GROUP_MEMBER else pg.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in `group`; -1 if this process is not a member."""
    pg = _resolve(group)
    return -1 if pg == GroupMember.NON_GROUP_MEMBER else pg.size()


def get_backend(group=None) -> Backend:
    """The backend's name (``"mpi"``)."""
    pg = _resolve(group)
    if pg == GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return Backend(pg._backend_name)


def get_process_group_ranks(group) -> list:
    """The global ranks of `group`'s members, in group-rank order."""
    pg = _resolve(group)
    return list(pg._ranks)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of rank `group_rank` of `group`."""
    pg = _resolve(group)
    if not 0 <= group_rank < len(pg._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg._name!r}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """The rank within `group` of the process with global rank `global_rank`."""
    pg = _resolve(group)
    try:
        return pg._ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg._name!r}") from None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its machine (``LOCAL_RANK``)."""
    value = _env_int("LOCAL_RANK")
    if value is not None:
        return value
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment; start the job with "
                       "`python -m ember.distributed.run` or pass fallback_rank")


def get_pg_count() -> int:
    """The number of process groups created so far (the default group included)."""
    return len(_STATE.groups)


def mark_broken(pg: ProcessGroup, message: str) -> DistBackendError:
    """Record that `pg` failed (no later collective may use it) and return the error."""
    pg._broken = message
    return DistBackendError(message)


def _abort_on_uncaught(exc_type, exc, tb) -> None:
    """sys.excepthook of a multi-rank job: print the error, then end every rank."""
    previous = _STATE.previous_hook or sys.__excepthook__
    try:
        previous(exc_type, exc, tb)
    finally:
        abort_job(f"uncaught {exc_type.__name__}: {exc}")


def abort_job(reason: str, code: int = 1) -> None:
    """Print which rank failed and why, then abort every rank of the job (MPI_Abort)."""
    pg = _STATE.default
    if pg is None or pg._backend is None:
        return
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed stdout must not stop the abort
        pass
    sys.stderr.write(f"[ember.distributed] rank {pg.rank()} of {pg.size()} failed ({reason}); "
                     f"aborting all {pg.size()} ranks\n")
    sys.stderr.flush()
    pg._backend.abort(code)
