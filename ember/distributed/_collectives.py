"""Collectives on tensors: PyTorch's ``torch.distributed`` functions over a `CommBackend`.

Each function checks its tensors, turns global ranks into group ranks, and starts one
backend operation on the tensors' own arrays (``all_reduce`` hands the tensor's memory to
``MPI_Iallreduce`` with ``MPI_IN_PLACE``).  A copy is made only where the layout demands
it: a non-contiguous tensor (reduced in a contiguous copy, written back), and lists of
tensors (``all_gather``, ``gather``, ``scatter``, ``all_to_all``, ``reduce_scatter``),
which are packed into or unpacked from one buffer.  The ``*_into_tensor``/``*_tensor``/
``*_single`` forms need no copy at all.

With ``async_op=True`` a function returns its `Work`; otherwise it waits (with the group's
timeout) and returns None.  In-place results bump the tensors' version counters.
"""

from __future__ import annotations

from .._core.backend import module_of
from .._core.tensor import Tensor
from . import _mismatch
from ._backend import DistBackendError, ReduceOp
from ._group import GroupMember, _resolve, mark_broken
from ._work import seconds


def _pg(group):
    """The group to run on, or None when this rank is not a member (then: do nothing)."""
    pg = _resolve(group)
    if pg == GroupMember.NON_GROUP_MEMBER:
        return None
    if pg._broken is not None:
        raise DistBackendError(f"{pg._describe()} cannot be used after an earlier failure: "
                               f"{pg._broken}")
    return pg


def _check_tensor(t, name: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"Tensor but got {type(t)} instead.")


def _array(t, name: str):
    """The tensor's array, or a contiguous copy of it (written back by `_run`)."""
    _check_tensor(t, name)
    data = t._data
    if data.flags.c_contiguous:
        return data
    return module_of(data).ascontiguousarray(data)


def _check_list(tensors, name: str, n: int, like, op: str) -> None:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: {name} must be a list of tensors, got {type(tensors).__name__}")
    if len(tensors) != n:
        raise RuntimeError(f"{op}: invalid {name} (expected length {n}, got {len(tensors)})")
    for i, t in enumerate(tensors):
        _check_tensor(t, name)
        if t._data.dtype != like.dtype:
            raise ValueError(f"Invalid usage of tensors with different dtypes: {op} got "
                             f"{t.dtype} at index {i} of {name} and {like.dtype}")
        if tuple(t._data.shape) != tuple(like.shape):
            raise RuntimeError(f"{op}: invalid tensor size at index {i} of {name} (expected "
                               f"{tuple(like.shape)}, got {tuple(t._data.shape)})")


def _reduce_op(op, array, name: str) -> tuple:
    """(the backend's op, whether to divide by the group size afterwards)."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp, got {op!r}")
    kind = array.dtype.kind
    floating = kind in "fc" or array.dtype.name == "bfloat16"
    if kind == "c" and op in (ReduceOp.MIN, ReduceOp.MAX):
        raise ValueError(f"{name} does not support {op} on complex tensors")
    if floating and op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR):
        raise ValueError(f"{name} does not support {op} on floating-point tensors")
    if op is ReduceOp.AVG:
        if not floating:
            raise ValueError(f"{name}: ReduceOp.AVG needs a floating-point or complex tensor, "
                             f"got {array.dtype.name}")
        return ReduceOp.SUM, True
    return op, False


def _root(pg, global_rank, group_rank, op: str) -> int:
    """The group rank of a src/dst given as a global rank or a group rank."""
    if global_rank is None and group_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    if global_rank is not None and group_rank is not None:
        raise ValueError("Can not specify both group_rank and global_rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise RuntimeError(f"{op}: invalid root rank: {group_rank}")
        return int(group_rank)
    if global_rank not in pg._ranks:
        if pg is _resolve(None):
            raise RuntimeError(f"{op}: invalid root rank: {global_rank}")
        raise ValueError(f"Global rank {global_rank} is not part of group {pg._name!r}")
    return pg._ranks.index(global_rank)


def _root_list(pg, root: int, tensors, name: str, like, op: str, role: str) -> bool:
    """Whether this rank is `root`, where the list `tensors` (one tensor like `like` per
    rank) is required; on the other ranks it must be absent.  `role` names the root in
    the messages ("destination", "source")."""
    if pg.rank() != root:
        if tensors:
            raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")
        return False
    if not tensors:
        raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
    _check_list(tensors, name, pg.size(), like, op)
    return True


def _check_world_times(op: str, whole, part, whole_name: str, part_name: str, n: int) -> None:
    """`whole` must hold `n` times the elements of `part`, in the same dtype."""
    if whole.size != part.size * n or whole.dtype != part.dtype:
        raise RuntimeError(
            f"{op}: {whole_name} tensor must have {n} times the {part_name}'s elements and its "
            f"dtype (expected {n * part.size} x {part.dtype.name}, got {whole.size} x "
            f"{whole.dtype.name})")


def _averaging(array, n: int, avg: bool):
    """What runs after a reduction: for ReduceOp.AVG (`avg`), divide `array` in place by
    the group size `n`; otherwise nothing (None)."""
    if not avg:
        return None

    def divide() -> None:
        array[...] /= n

    return divide


def _unstacking(recv, tensors):
    """What runs after a gather: copy ``recv[i]`` into ``tensors[i]``."""
    def unpack() -> None:
        for i, t in enumerate(tensors):
            t._data[...] = recv[i]

    return unpack


def _timeout_message(pg, op: str, seq: int, waited: float) -> str:
    me = pg._ranks[pg.rank()]
    others = [r for r in pg._ranks if r != me]
    if len(others) == 1:
        who = (f"rank {others[0]} did not complete it (it may have died, be stuck, or be "
               "waiting in a different collective)")
    else:
        who = (f"at least one of ranks {others} did not join it; run with "
               "EMBER_DISTRIBUTED_DEBUG=DETAIL to name it and see every rank's call")
    return (f"{op} (call #{seq} on {pg._describe()}) timed out after {waited:.1f} s on "
            f"rank {me}: {who}")


def _run(pg, op: str, signature, start, *, outputs=(), after=None, result=None,
         async_op: bool = False):
    """Start `start(backend)` as collective `op`, then finish or hand back its Work.

    `signature()` describes the call for the mismatch check; `outputs` are (tensor, array)
    pairs written in place (copied back when the array is a stand-in, versions bumped);
    `after()` runs once the data has arrived, before that.
    """
    if _mismatch.detail():
        _mismatch.check(pg, op, signature())
    pg._seq += 1
    seq = pg._seq
    work = start(pg._backend)
    backend_finish = work._finish

    def finish() -> None:
        if backend_finish is not None:
            backend_finish()
        if after is not None:
            after()
        for t, a in outputs:
            if a is not t._data:
                t._data[...] = a
            t._version.value += 1

    work._finish = finish
    work._timeout = pg._timeout
    work._label = op
    work._on_timeout = lambda waited: mark_broken(pg, _timeout_message(pg, op, seq, waited))
    work._result = list(result) if result is not None else [t for t, _ in outputs]
    if async_op:
        return work
    work.wait()
    return None


def _meta(array) -> str:
    return _mismatch.array_meta(array)


# ---- reductions and broadcast ----------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over the ranks of `group`; every rank gets the result in place."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    base, avg = _reduce_op(op, a, "all_reduce")
    return _run(pg, "all_reduce", lambda: f"all_reduce({_meta(a)}, op={op.name})",
                lambda b: b.allreduce(a, base), outputs=[(tensor, a)],
                after=_averaging(a, pg.size(), avg), async_op=async_op)


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Copy `tensor` of rank `src` into `tensor` on every other rank of `group`."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    root = _root(pg, src, group_src, "broadcast")
    return _run(pg, "broadcast", lambda: f"broadcast({_meta(a)}, src={pg._ranks[root]})",
                lambda b: b.broadcast(a, root), outputs=[(tensor, a)], async_op=async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst=None):
    """Reduce `tensor` over the ranks; only rank `dst` gets the result (in place)."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    root = _root(pg, dst, group_dst, "reduce")
    base, avg = _reduce_op(op, a, "reduce")
    is_root = pg.rank() == root
    return _run(pg, "reduce",
                lambda: f"reduce({_meta(a)}, dst={pg._ranks[root]}, op={op.name})",
                lambda b: b.reduce(a, base, root), outputs=[(tensor, a)] if is_root else (),
                after=_averaging(a, pg.size(), avg and is_root), async_op=async_op)


# ---- gathering ----------------------------------------------------------------------

def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """``tensor_list[i]`` gets rank i's `tensor`, on every rank."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    _check_list(tensor_list, "tensor_list", pg.size(), a, "all_gather")
    recv = module_of(a).empty((pg.size(),) + a.shape, dtype=a.dtype)
    return _run(pg, "all_gather", lambda: f"all_gather({_meta(a)})",
                lambda b: b.allgather(a, recv), outputs=[(t, t._data) for t in tensor_list],
                after=_unstacking(recv, tensor_list), async_op=async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """`output_tensor` (world_size times the input, concatenated or stacked on dim 0) gets
    every rank's `input_tensor`, written straight into its memory."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(input_tensor, "input_tensor")
    out = _array(output_tensor, "output_tensor")
    _check_world_times("all_gather_into_tensor", out, a, "output", "input", pg.size())
    return _run(pg, "all_gather_into_tensor",
                lambda: f"all_gather_into_tensor({_meta(out)}, {_meta(a)})",
                lambda b: b.allgather(a, out), outputs=[(output_tensor, out)],
                async_op=async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False,
           group_dst=None):
    """Rank `dst` gets every rank's `tensor` in ``gather_list`` (given only on `dst`)."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    root = _root(pg, dst, group_dst, "gather")
    recv = None
    if _root_list(pg, root, gather_list, "gather_list", a, "gather", "destination"):
        recv = module_of(a).empty((pg.size(),) + a.shape, dtype=a.dtype)
    return _run(pg, "gather", lambda: f"gather({_meta(a)}, dst={pg._ranks[root]})",
                lambda b: b.gather(a, recv, root),
                outputs=[(t, t._data) for t in gather_list] if recv is not None else (),
                after=_unstacking(recv, gather_list) if recv is not None else None,
                async_op=async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op: bool = False,
            group_src=None):
    """Rank i gets ``scatter_list[i]`` of rank `src` in `tensor`."""
    pg = _pg(group)
    if pg is None:
        return None
    a = _array(tensor, "tensor")
    root = _root(pg, src, group_src, "scatter")
    send = None
    if _root_list(pg, root, scatter_list, "scatter_list", a, "scatter", "source"):
        send = module_of(a).stack([t._data for t in scatter_list])
    return _run(pg, "scatter", lambda: f"scatter({_meta(a)}, src={pg._ranks[root]})",
                lambda b: b.scatter(send, a, root), outputs=[(tensor, a)], async_op=async_op)


# ---- reduce-scatter and all-to-all ------------------------------------------------------

def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input_list[i]`` over the ranks into `output` of rank i."""
    pg = _pg(group)
    if pg is None:
        return None
    out = _array(output, "output")
    _check_list(input_list, "input_list", pg.size(), out, "reduce_scatter")
    base, avg = _reduce_op(op, out, "reduce_scatter")
    send = module_of(out).stack([t._data for t in input_list])
    return _run(pg, "reduce_scatter", lambda: f"reduce_scatter({_meta(out)}, op={op.name})",
                lambda b: b.reduce_scatter(send, out, base), outputs=[(output, out)],
                after=_averaging(out, pg.size(), avg), async_op=async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None,  # noqa: A002
                          async_op: bool = False):
    """Reduce `input` (world_size parts along dim 0) over the ranks; rank i keeps part i."""
    pg = _pg(group)
    if pg is None:
        return None
    out = _array(output, "output")
    a = _array(input, "input")
    _check_world_times("reduce_scatter_tensor", a, out, "input", "output", pg.size())
    base, avg = _reduce_op(op, a, "reduce_scatter_tensor")
    return _run(pg, "reduce_scatter_tensor",
                lambda: f"reduce_scatter_tensor({_meta(out)}, {_meta(a)}, op={op.name})",
                lambda b: b.reduce_scatter(a, out, base), outputs=[(output, out)],
                after=_averaging(out, pg.size(), avg), async_op=async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Rank i's ``input_tensor_list[j]`` arrives in rank j's ``output_tensor_list[i]``."""
    pg = _pg(group)
    if pg is None:
        return None
    n = pg.size()
    for name, lst in (("output_tensor_list", output_tensor_list),
                      ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or len(lst) != n:
            raise RuntimeError(f"all_to_all: {name} must be a list of {n} tensors")
        for t in lst:
            _check_tensor(t, name)
    dtype = input_tensor_list[0]._data.dtype
    if any(t._data.dtype != dtype for t in list(output_tensor_list) + list(input_tensor_list)):
        raise ValueError("Invalid usage of tensors with different dtypes in all_to_all")
    xp = module_of(input_tensor_list[0]._data)
    send = xp.concatenate([t._data.reshape(-1) for t in input_tensor_list])
    recv_counts = [t._data.size for t in output_tensor_list]
    recv = xp.empty(sum(recv_counts), dtype=dtype)
    send_counts = [t._data.size for t in input_tensor_list]

    def unpack() -> None:
        pos = 0
        for t, c in zip(output_tensor_list, recv_counts):
            t._data[...] = recv[pos: pos + c].reshape(t._data.shape)
            pos += c

    return _run(pg, "all_to_all", lambda: f"all_to_all({dtype.name})",
                lambda b: b.alltoall(send, recv, send_counts, recv_counts),
                outputs=[(t, t._data) for t in output_tensor_list], after=unpack,
                async_op=async_op)


def all_to_all_single(output, input, output_split_sizes=None,  # noqa: A002
                      input_split_sizes=None, group=None, async_op: bool = False):
    """All-to-all along dim 0 of one input and one output tensor (equal parts, or the rows
    given by the split sizes), straight from and into their memory."""
    pg = _pg(group)
    if pg is None:
        return None
    out = _array(output, "output")
    a = _array(input, "input")
    if out.dtype != a.dtype:
        raise ValueError("Invalid usage of tensors with different dtypes in all_to_all_single")
    n = pg.size()
    row_in = a.size // a.shape[0] if a.ndim and a.shape[0] else 1
    row_out = out.size // out.shape[0] if out.ndim and out.shape[0] else 1
    if output_split_sizes is None and input_split_sizes is None:
        if a.size % n or out.size != a.size:
            raise RuntimeError(f"all_to_all_single: input and output must have the same number "
                               f"of elements, divisible by the group size {n}")
        counts = None
    else:
        ins = _splits(input_split_sizes, a, n, "input_split_sizes")
        outs = _splits(output_split_sizes, out, n, "output_split_sizes")
        counts = ([s * row_in for s in ins], [s * row_out for s in outs])
    return _run(pg, "all_to_all_single", lambda: f"all_to_all_single({a.dtype.name})",
                lambda b: b.alltoall(a, out, *(counts or (None, None))),
                outputs=[(output, out)], async_op=async_op)


def _splits(sizes, array, n: int, name: str) -> list:
    rows = array.shape[0] if array.ndim else 1
    if sizes is None:
        if rows % n:
            raise RuntimeError(f"all_to_all_single: dim 0 ({rows}) is not divisible by {n}")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows:
        raise RuntimeError(f"all_to_all_single: {name} must have {n} entries summing to "
                           f"{rows}, got {sizes}")
    return sizes


# ---- barriers ---------------------------------------------------------------------------

def barrier(group=None, async_op: bool = False, device_ids=None, timeout=None):
    """Wait until every rank of `group` has reached the barrier."""
    pg = _pg(group)
    if pg is None:
        return None
    work = _run(pg, "barrier", lambda: "barrier()", lambda b: b.barrier(), async_op=True)
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it within `timeout`."""
    pg = _pg(group)
    if pg is None:
        return
    limit = pg._timeout if timeout is None else seconds(timeout)
    replies = pg._backend.exchange(b"monitored_barrier", limit)
    missing = [pg._ranks[r] for r, reply in enumerate(replies) if reply is None]
    if missing:
        if not wait_all_ranks:
            missing = missing[:1]
        what = "Rank" if len(missing) == 1 else "Ranks"
        raise mark_broken(pg, f"{what} {', '.join(map(str, missing))} failed to pass "
                              f"monitoredBarrier in {int(limit * 1000)} ms")
