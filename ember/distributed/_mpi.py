"""The MPI backend: collectives through mpi4py, on the arrays' own memory.

Each method hands the NumPy array itself to mpi4py's buffer (uppercase) methods, so data
moves without a Python-level copy: ``all_reduce`` is ``Iallreduce(MPI.IN_PLACE, array)``.
Copies happen only where MPI cannot work on the array directly:

* reductions of float16/bfloat16 (MPI has no such types): reduced in a float32 copy;
* CuPy arrays: staged through host memory (this backend is not CUDA-aware).

Operations that only move data (broadcast, gather, all-to-all...) send raw bytes, so any
dtype works.  Everything is non-blocking; `Work.wait` polls ``Request.Test``.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ._backend import CommBackend, ReduceOp
from ._work import Work, poll_until

_TYPES = {
    np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE,
    np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T,
    np.dtype(np.int32): MPI.INT32_T, np.dtype(np.int64): MPI.INT64_T,
    np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.bool_): MPI.C_BOOL,
    np.dtype(np.complex64): MPI.C_FLOAT_COMPLEX, np.dtype(np.complex128): MPI.C_DOUBLE_COMPLEX,
}
_OPS = {ReduceOp.SUM: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
        ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR,
        ReduceOp.BXOR: MPI.BXOR}
# On booleans the arithmetic reductions are the logical ones (sum = any, product = all).
_BOOL_OPS = {ReduceOp.SUM: MPI.LOR, ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
             ReduceOp.MAX: MPI.LOR, ReduceOp.BAND: MPI.LAND, ReduceOp.BOR: MPI.LOR,
             ReduceOp.BXOR: MPI.LXOR}

_CONTROL_BYTES = 4096  # fixed size of a control message (fingerprints)


class _Staging:
    """Host (and float32) copies of arrays MPI cannot use directly, written back at the end."""

    __slots__ = ("back",)

    def __init__(self):
        self.back = []

    def host(self, array, *, reduce: bool = False, output: bool = True):
        """A NumPy array MPI can read (and write, when `output`) standing for `array`."""
        host = array if isinstance(array, np.ndarray) else array.get()
        if reduce and host.dtype not in _TYPES:
            host = host.astype(np.float32)  # float16 / bfloat16
        if output and host is not array:
            self.back.append((array, host))
        return host

    def finish(self) -> None:
        for array, host in self.back:
            if isinstance(array, np.ndarray):
                array[...] = host
            else:
                array.set(host.astype(array.dtype, copy=False))


def _typed(array):
    """[array, MPI type] for a reduction."""
    return [array, _TYPES[array.dtype]]


def _raw(array):
    """The array as raw bytes (for operations that only move data)."""
    return [array.reshape(-1).view(np.uint8), MPI.BYTE]


def _mpi_op(op: ReduceOp, dtype):
    return (_BOOL_OPS if dtype == np.bool_ else _OPS)[op]


class MPIBackend(CommBackend):
    """A process group on an MPI communicator (``MPI.COMM_WORLD`` or a sub-communicator)."""

    name = "mpi"

    def __init__(self, comm=None):
        base = MPI.COMM_WORLD if comm is None else comm
        # Own communicators: ember's traffic never mixes with the user's own mpi4py calls,
        # and control messages (fingerprints) never mix with ember's data.
        self.comm = base.Dup()
        self.ctrl = base.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        if comm is not None and comm != MPI.COMM_WORLD:
            comm.Free()

    def _work(self, request, staging: _Staging | None = None, value=None) -> Work:
        finish = None if staging is None or not staging.back else staging.finish
        return Work(request.Test, finish=finish, value=value)

    # ---- collectives ---------------------------------------------------------
    def allreduce(self, array, op: ReduceOp) -> Work:
        if type(array) is np.ndarray and array.dtype in _TYPES:  # the common, copy-free path
            req = self.comm.Iallreduce(MPI.IN_PLACE, [array, _TYPES[array.dtype]],
                                       _mpi_op(op, array.dtype))
            return self._work(req)
        staging = _Staging()
        host = staging.host(array, reduce=True)
        req = self.comm.Iallreduce(MPI.IN_PLACE, _typed(host), _mpi_op(op, host.dtype))
        return self._work(req, staging)

    def broadcast(self, array, root: int) -> Work:
        staging = _Staging()
        host = staging.host(array, output=self.rank != root)
        return self._work(self.comm.Ibcast(_raw(host), root=root), staging)

    def reduce(self, array, op: ReduceOp, root: int) -> Work:
        staging = _Staging()
        host = staging.host(array, reduce=True, output=self.rank == root)
        mop = _mpi_op(op, host.dtype)
        if self.rank == root:
            req = self.comm.Ireduce(MPI.IN_PLACE, _typed(host), mop, root=root)
        else:
            req = self.comm.Ireduce(_typed(host), None, mop, root=root)
        return self._work(req, staging)

    def allgather(self, send, recv) -> Work:
        staging = _Staging()
        s = staging.host(send, output=False)
        r = staging.host(recv)
        return self._work(self.comm.Iallgather(_raw(s), _raw(r)), staging)

    def gather(self, send, recv, root: int) -> Work:
        staging = _Staging()
        s = staging.host(send, output=False)
        r = staging.host(recv) if self.rank == root else None
        req = self.comm.Igather(_raw(s), None if r is None else _raw(r), root=root)
        return self._work(req, staging)

    def scatter(self, send, recv, root: int) -> Work:
        staging = _Staging()
        s = staging.host(send, output=False) if self.rank == root else None
        r = staging.host(recv)
        req = self.comm.Iscatter(None if s is None else _raw(s), _raw(r), root=root)
        return self._work(req, staging)

    def reduce_scatter(self, send, recv, op: ReduceOp) -> Work:
        staging = _Staging()
        s = staging.host(send, reduce=True, output=False)
        r = staging.host(recv, reduce=True)
        req = self.comm.Ireduce_scatter_block(_typed(s), _typed(r), _mpi_op(op, s.dtype))
        return self._work(req, staging)

    def alltoall(self, send, recv, send_counts=None, recv_counts=None) -> Work:
        staging = _Staging()
        s = staging.host(send, output=False)
        r = staging.host(recv)
        if send_counts is None:
            return self._work(self.comm.Ialltoall(_raw(s), _raw(r)), staging)
        item = s.itemsize
        sc = [c * item for c in send_counts]
        rc = [c * item for c in recv_counts]
        sbuf = [_raw(s)[0], (sc, _offsets(sc)), MPI.BYTE]
        rbuf = [_raw(r)[0], (rc, _offsets(rc)), MPI.BYTE]
        return self._work(self.comm.Ialltoallv(sbuf, rbuf), staging)

    def barrier(self) -> Work:
        return self._work(self.comm.Ibarrier())

    # ---- point to point ------------------------------------------------------
    def send(self, array, dst: int, tag: int) -> Work:
        host = array if isinstance(array, np.ndarray) else array.get()
        req = self.comm.Isend(_raw(host), dest=dst, tag=tag)
        work = self._work(req)
        work._keep = host  # the buffer must outlive the request
        return work

    def recv(self, array, src: int | None, tag: int) -> Work:
        staging = _Staging()
        host = staging.host(array)
        status = MPI.Status()
        source = MPI.ANY_SOURCE if src is None else src
        req = self.comm.Irecv(_raw(host), source=source, tag=tag)
        work = Work(lambda: req.Test(status), value=src)

        def finish():
            work.value = status.Get_source()
            staging.finish()

        work._finish = finish
        return work

    # ---- control -------------------------------------------------------------
    def exchange(self, payload: bytes, timeout: float) -> list:
        if len(payload) > _CONTROL_BYTES - 4:
            payload = payload[: _CONTROL_BYTES - 4]
        message = bytearray(_CONTROL_BYTES)
        message[:4] = len(payload).to_bytes(4, "little")
        message[4: 4 + len(payload)] = payload
        inbox = {}
        requests = []
        sends = []
        for peer in range(self.size):
            if peer == self.rank:
                continue
            inbox[peer] = bytearray(_CONTROL_BYTES)
            requests.append((peer, self.ctrl.Irecv([inbox[peer], MPI.BYTE], source=peer,
                                                   tag=7)))
            sends.append(self.ctrl.Isend([message, MPI.BYTE], dest=peer, tag=7))
        arrived = {}

        def test() -> bool:
            for peer, req in requests:
                if peer not in arrived and req.Test():
                    arrived[peer] = True
            return len(arrived) == len(requests) and MPI.Request.Testall(sends)

        if not poll_until(test, timeout):
            # A peer that never came: keep the unfinished requests (and their buffers)
            # alive; the group is unusable from now on anyway.
            self._orphans = (requests, sends, message, inbox)
        out = []
        for peer in range(self.size):
            if peer == self.rank:
                out.append(bytes(payload))
            elif peer in arrived:
                n = int.from_bytes(inbox[peer][:4], "little")
                out.append(bytes(inbox[peer][4: 4 + n]))
            else:
                out.append(None)
        return out

    def split(self, ranks: list):
        group = self.comm.Get_group().Incl(list(ranks))
        comm = self.comm.Create(group)
        group.Free()
        if comm == MPI.COMM_NULL:
            return None
        return MPIBackend(comm)

    def abort(self, code: int = 1) -> None:
        MPI.COMM_WORLD.Abort(code)

    def close(self) -> None:
        for comm in (self.comm, self.ctrl):
            try:
                comm.Free()
            except MPI.Exception:  # pragma: no cover - already freed
                pass


def _offsets(counts: list) -> list:
    out, total = [], 0
    for c in counts:
        out.append(total)
        total += c
    return out


def world_info() -> tuple:
    """(rank, size, local_rank, local_size) of this process in MPI.COMM_WORLD."""
    world = MPI.COMM_WORLD
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return world.Get_rank(), world.Get_size(), node.Get_rank(), node.Get_size()
    finally:
        node.Free()
