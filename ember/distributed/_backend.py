"""The backend interface: what a communication library must provide to ember.distributed.

The public functions (``all_reduce``, ``broadcast``...) validate their tensors, translate
ranks, check for mismatched collectives and then call one method of a `CommBackend` on
plain backend arrays (NumPy for the CPU, CuPy for a GPU).  A backend never sees a Tensor:
it moves bytes.  Every method starts the operation and returns a `Work` (see _work.py)
whose ``wait`` polls for completion against the group's timeout, so blocking calls and
``async_op=True`` share one path.

Two backends plug in here:

* `MPIBackend` (_mpi.py): mpi4py on NumPy buffers, non-blocking collectives
  (``Iallreduce``...) under ``mpiexec``;
* `NCCLBackend`: GPU collectives through CuPy's ``cupy.cuda.nccl``: not written yet.

Conventions every method follows: arrays are C-contiguous and are written in place
(``recv``/output arrays, or the one array of ``allreduce``/``broadcast``); ranks are ranks
*within the backend's communicator*; ``op`` is a `ReduceOp` (never AVG: the caller turns AVG
into SUM and divides, since no MPI library has an average).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod


class DistError(RuntimeError):
    """Base class of ember.distributed's errors (PyTorch's ``DistError``)."""

    __module__ = "ember.distributed"


class DistBackendError(DistError):
    """A collective failed in the backend: a timeout, a lost peer, a mismatch."""

    __module__ = "ember.distributed"


class DistNetworkError(DistError):
    """A network error while setting up or running a process group."""

    __module__ = "ember.distributed"


class ReduceOp(enum.Enum):
    """How a reducing collective combines the ranks' values."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"ReduceOp.{self.name}"


class Backend(str):
    """A backend's name, PyTorch-style: ``Backend("MPI") == Backend.MPI == "mpi"``."""

    UNDEFINED = "undefined"
    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name!r}")
        return str.__new__(cls, name.lower())


class CommBackend(ABC):
    """A communicator over a fixed set of processes, with collective operations on arrays.

    Subclasses implement the methods below; each returns a started `Work`.  ``rank`` and
    ``size`` are this process's rank in the communicator and the number of processes.
    """

    name: str = "undefined"
    rank: int
    size: int

    # ---- collectives ---------------------------------------------------------
    @abstractmethod
    def allreduce(self, array, op: ReduceOp):
        """Reduce `array` over all ranks, in place on every rank."""

    @abstractmethod
    def broadcast(self, array, root: int):
        """Copy `array` of rank `root` into `array` of every other rank."""

    @abstractmethod
    def reduce(self, array, op: ReduceOp, root: int):
        """Reduce `array` over all ranks into `array` of rank `root` (others keep theirs)."""

    @abstractmethod
    def allgather(self, send, recv):
        """``recv`` (size * send.size elements) gets every rank's `send`, in rank order."""

    @abstractmethod
    def gather(self, send, recv, root: int):
        """Like allgather, but only `root` receives (`recv` is None elsewhere)."""

    @abstractmethod
    def scatter(self, send, recv, root: int):
        """`root`'s `send` (size * recv.size elements) is cut into equal parts, part i to rank i."""

    @abstractmethod
    def reduce_scatter(self, send, recv, op: ReduceOp):
        """Reduce `send` (size * recv.size elements) over ranks; rank i keeps part i in `recv`."""

    @abstractmethod
    def alltoall(self, send, recv, send_counts=None, recv_counts=None):
        """Rank i sends its j-th part of `send` to rank j, which stores it as its i-th part.

        Parts are equal unless ``send_counts``/``recv_counts`` (in elements) are given.
        """

    @abstractmethod
    def barrier(self):
        """Completes once every rank has entered the barrier."""

    # ---- point to point ------------------------------------------------------
    @abstractmethod
    def send(self, array, dst: int, tag: int):
        """Send `array` to rank `dst`."""

    @abstractmethod
    def recv(self, array, src: int | None, tag: int):
        """Receive into `array` from `src` (any rank when None); the Work's result is the
        sender's rank."""

    # ---- control -------------------------------------------------------------
    @abstractmethod
    def exchange(self, payload: bytes, timeout: float) -> list:
        """Send a small `payload` to every other rank and receive theirs, on a channel kept
        apart from user traffic.  Returns one entry per rank (this rank's own payload at
        its index); None for ranks whose payload did not arrive within `timeout` seconds.
        Used to check collectives for mismatches and to name ranks that are missing."""

    @abstractmethod
    def split(self, ranks: list):
        """A new backend over `ranks` (ranks of this communicator, sorted), or None on the
        ranks not in it.  Every rank of this communicator must call it."""

    @abstractmethod
    def abort(self, code: int = 1) -> None:
        """Stop every process of the job now (after an uncaught error on this rank)."""

    def close(self) -> None:  # noqa: B027 - optional: not every backend holds resources
        """Release the communicator (the processes keep running)."""


class NCCLBackend(CommBackend):
    """GPU collectives through CuPy's ``cupy.cuda.nccl`` (planned; not implemented).

    The intended shape: one NCCL communicator per group, created from a unique id that
    rank 0 makes and the MPI backend broadcasts; each method runs the matching ``nccl*``
    call on the current CuPy stream and returns a `Work` that polls a CUDA event.
    """

    name = "nccl"

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(
            "NCCLBackend (GPU collectives through cupy.cuda.nccl) is not implemented yet; "
            "use backend='mpi', which stages CUDA tensors through host memory"
        )
