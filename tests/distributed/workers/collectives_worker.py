"""Run on 2 ranks (EMBER_DISTRIBUTED_DEBUG=DETAIL is fine): every collective, checked.

The last line printed by each rank is "COLLECTIVES-OK <rank>".
"""

import os
from datetime import timedelta

import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import ReduceOp


def eq(t, expected):
    np.testing.assert_allclose(t.numpy(), np.asarray(expected, dtype=t.numpy().dtype))


def expect_error(call, kind, message):
    try:
        call()
    except kind as exc:
        assert str(exc) == message, str(exc)
    else:
        raise AssertionError(f"expected {kind.__name__}: {message}")


def reductions(rank, world):
    t = ember.tensor([1.0, 2.0, 3.0]) * (rank + 1)
    memory = t._data
    version = t._version.value
    dist.all_reduce(t)
    assert t._data is memory and t._version.value == version + 1  # in place, no new array
    eq(t, [3.0, 6.0, 9.0])
    for op, expected in ((ReduceOp.PRODUCT, [2.0, 8.0, 18.0]), (ReduceOp.MIN, [1, 2, 3]),
                         (ReduceOp.MAX, [2, 4, 6]), (ReduceOp.AVG, [1.5, 3.0, 4.5])):
        t = ember.tensor([1.0, 2.0, 3.0]) * (rank + 1)
        dist.all_reduce(t, op=op)
        eq(t, expected)
    for dtype in (ember.int64, ember.float64, ember.float16, ember.bfloat16, ember.int32):
        t = ember.full((5,), rank + 2, dtype=dtype)
        dist.all_reduce(t)
        assert t.dtype == dtype
        eq(t.float(), [5.0] * 5)
    b = ember.tensor([rank == 0, False])
    dist.all_reduce(b)  # SUM on bool is "any"
    assert b.tolist() == [True, False]
    nc = ember.arange(6.0).reshape(2, 3).t()  # non-contiguous: reduced in a copy, written back
    view_of = nc._data
    dist.all_reduce(nc)
    assert nc._data is view_of
    eq(nc, (np.arange(6.0).reshape(2, 3).T * 2))
    try:
        dist.all_reduce(ember.ones(2, dtype=ember.int64), op=ReduceOp.AVG)
    except ValueError as exc:
        assert "AVG" in str(exc)
    else:
        raise AssertionError("AVG on integers must fail")
    # reduce: only dst gets the result
    t = ember.ones(2) * (rank + 1)
    dist.reduce(t, dst=1)
    eq(t, [3.0, 3.0] if rank == 1 else [1.0, 1.0])
    # async: a Work with wait/is_completed
    t = ember.ones(1000) * rank
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert work.result()[0] is t
    eq(t, np.ones(1000))
    fut = dist.all_reduce(ember.ones(2), async_op=True).get_future()
    eq(fut.wait()[0], [2.0, 2.0])


def movement(rank, world):
    t = ember.arange(4.0) if rank == 0 else ember.zeros(4)
    dist.broadcast(t, src=0)
    eq(t, [0, 1, 2, 3])
    t = ember.full((2,), float(rank))
    w = dist.broadcast(t, src=1, async_op=True)
    w.wait()
    eq(t, [1.0, 1.0])
    # all_gather into a list, and into one tensor (no copy)
    out = [ember.zeros(2, 3) for _ in range(world)]
    dist.all_gather(out, ember.full((2, 3), float(rank)))
    for r in range(world):
        eq(out[r], np.full((2, 3), r))
    big = ember.zeros(world * 2, 3)
    memory = big._data
    dist.all_gather_into_tensor(big, ember.full((2, 3), float(rank)))
    assert big._data is memory
    eq(big, np.repeat(np.arange(world, dtype=np.float32), 6).reshape(world * 2, 3))
    # gather / scatter
    if rank == 0:
        lst = [ember.zeros(3) for _ in range(world)]
        dist.gather(ember.full((3,), rank + 10.0), gather_list=lst, dst=0)
        eq(lst[1], [11.0] * 3)
    else:
        dist.gather(ember.full((3,), rank + 10.0), dst=0)
    got = ember.zeros(2)
    dist.scatter(got, [ember.full((2,), 5.0 + r) for r in range(world)] if rank == 1 else None,
                 src=1)
    eq(got, [5.0 + rank] * 2)
    # the list is required on the root and refused elsewhere (each rank fails on its own)
    rooted = rank == 0
    lst = None if rooted else [ember.zeros(3) for _ in range(world)]
    expect_error(lambda: dist.gather(ember.zeros(3), gather_list=lst, dst=0), ValueError,
                 "Argument ``gather_list`` must be specified on destination rank." if rooted
                 else "Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    lst = [ember.zeros(3) for _ in range(world)] if rooted else None
    expect_error(lambda: dist.scatter(ember.zeros(3), scatter_list=lst, src=1), ValueError,
                 "Argument ``scatter_list`` must NOT be specified on non-source ranks." if rooted
                 else "Argument ``scatter_list`` must be specified on source rank.")
    expect_error(lambda: dist.all_gather_into_tensor(ember.zeros(3), ember.zeros(2)),
                 RuntimeError, "all_gather_into_tensor: output tensor must have 2 times the "
                 "input's elements and its dtype (expected 4 x float32, got 3 x float32)")
    expect_error(lambda: dist.reduce_scatter_tensor(ember.zeros(2), ember.zeros(5)),
                 RuntimeError, "reduce_scatter_tensor: input tensor must have 2 times the "
                 "output's elements and its dtype (expected 4 x float32, got 5 x float32)")
    # reduce_scatter, reduce_scatter_tensor
    out = ember.zeros(2)
    dist.reduce_scatter(out, [ember.full((2,), float(r + rank)) for r in range(world)])
    eq(out, [2.0 * rank + 1] * 2)
    out = ember.zeros(2)
    dist.reduce_scatter_tensor(out, ember.arange(4.0), op=ReduceOp.AVG)
    eq(out, [2.0 * rank, 2.0 * rank + 1])
    # all_to_all
    outs = [ember.zeros(2) for _ in range(world)]
    dist.all_to_all(outs, [ember.full((2,), 10.0 * rank + r) for r in range(world)])
    for r in range(world):
        eq(outs[r], [10.0 * r + rank] * 2)
    out = ember.zeros(4)
    dist.all_to_all_single(out, ember.arange(4.0) + 10 * rank)
    eq(out, [2 * rank, 2 * rank + 1, 10 + 2 * rank, 11 + 2 * rank])
    # uneven splits: rank 0 sends 1 row to 0, 2 rows to 1; rank 1 sends 3 rows to 0, 0 to 1
    send = ember.arange(3.0).reshape(3, 1) + 100 * rank
    in_splits = [1, 2] if rank == 0 else [3, 0]
    out_splits = [1, 3] if rank == 0 else [2, 0]
    out = ember.zeros(sum(out_splits), 1)
    dist.all_to_all_single(out, send, out_splits, in_splits)
    eq(out.reshape(-1), [0, 100, 101, 102] if rank == 0 else [1, 2])


def point_to_point(rank, world):
    if rank == 0:
        dist.send(ember.arange(3.0), dst=1)
        t = ember.zeros(2, dtype=ember.int64)
        src = dist.recv(t)  # from any rank
        assert src == 1
        eq(t, [7, 8])
    else:
        t = ember.zeros(3)
        assert dist.recv(t, src=0) == 0
        eq(t, [0, 1, 2])
        dist.isend(ember.tensor([7, 8]), dst=0).wait()
    a, b = ember.full((2,), float(rank)), ember.zeros(2)
    peer = 1 - rank
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, a, peer),
                                    dist.P2POp(dist.irecv, b, peer)])
    for w in works:
        w.wait()
    eq(b, [float(peer)] * 2)


def objects(rank, world):
    box = [None, None]
    obj = {"rank": rank, "name": f"r{rank}", "vals": (1.5, None, [True]),
           "t": ember.arange(3) * rank, "a": np.eye(2) * rank, 7: {1, 2}, "b": b"\x00\xff"}
    dist.all_gather_object(box, obj)
    assert box[1]["rank"] == 1 and box[0]["name"] == "r0" and box[1]["vals"] == (1.5, None, [True])
    assert box[1]["t"].tolist() == [0, 1, 2] and box[1]["a"][1, 1] == 1.0
    assert box[0][7] == {1, 2} and box[1]["b"] == b"\x00\xff"
    lst = [{"lr": 0.1}, "x", 3] if rank == 0 else [None, None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [{"lr": 0.1}, "x", 3]
    gathered = [None] * world if rank == 1 else None
    dist.gather_object(("hello", rank), gathered, dst=1)
    if rank == 1:
        assert gathered == [("hello", 0), ("hello", 1)]
    out = [None]
    dist.scatter_object_list(out, [{"i": i} for i in range(world)] if rank == 0 else None, src=0)
    assert out[0] == {"i": rank}

    class NotPlain:
        pass

    try:
        dist.all_gather_object(box, NotPlain())
    except TypeError as exc:
        assert "NotPlain" in str(exc) and "pickle" in str(exc)
    else:
        raise AssertionError("arbitrary objects must be refused")


def groups(rank, world):
    g = dist.new_group([1])
    if rank == 1:
        assert dist.get_rank(g) == 0 and dist.get_world_size(g) == 1
        t = ember.ones(2)
        dist.all_reduce(t, group=g)
        eq(t, [1.0, 1.0])
        dist.broadcast(t, src=1, group=g)
    else:
        assert g == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
        assert dist.all_reduce(ember.ones(2), group=g) is None  # not a member: no-op
    everyone = dist.new_group()
    t = ember.ones(1)
    dist.all_reduce(t, group=everyone)
    eq(t, [2.0])
    assert dist.get_process_group_ranks(everyone) == [0, 1]
    dist.barrier()
    dist.monitored_barrier(timeout=timedelta(seconds=30))


def main():
    dist.init_process_group("mpi", timeout=timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and world == 2 and dist.get_backend() == "mpi"
    assert os.environ["RANK"] == str(rank) and os.environ["WORLD_SIZE"] == "2"
    assert os.environ["LOCAL_RANK"] == str(rank) and os.environ["MASTER_PORT"]
    try:
        dist.init_process_group("mpi")
    except ValueError as exc:
        assert "twice" in str(exc)
    reductions(rank, world)
    movement(rank, world)
    point_to_point(rank, world)
    objects(rank, world)
    groups(rank, world)
    print(f"COLLECTIVES-OK {rank} debug={dist.get_debug_level().name} pid={os.getpid()}",
          flush=True)
    dist.destroy_process_group()
    assert not dist.is_initialized()


if __name__ == "__main__":
    main()
