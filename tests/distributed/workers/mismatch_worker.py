"""Run on 2 ranks with EMBER_DISTRIBUTED_DEBUG=DETAIL: mismatched collectives are reported
with every rank's call and call site, and the group stays usable afterwards."""

import os

import ember
import ember.distributed as dist


def expect_mismatch(fn, *needles):
    try:
        fn()
    except dist.DistBackendError as exc:
        text = str(exc)
        for needle in needles:
            assert needle in text, f"{needle!r} not in:\n{text}"
        print(f"rank {dist.get_rank()} caught:\n{text}", flush=True)
    else:
        raise AssertionError("mismatch not detected")


def main():
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL
    t = ember.ones(4)

    def different_ops():
        if rank == 0:
            dist.all_reduce(t)  # LINE-ALL-REDUCE
        else:
            dist.broadcast(t, src=0)  # LINE-BROADCAST

    expect_mismatch(different_ops, "rank 0: call #1 all_reduce(float32[4], op=SUM)",
                    "rank 1: call #1 broadcast(float32[4], src=0)", "mismatch_worker.py:")

    def different_shapes():
        dist.all_reduce(ember.ones(3 + rank))

    expect_mismatch(different_shapes, "float32[3]", "float32[4]", "in different_shapes")

    def different_dtypes():
        dist.all_gather_into_tensor(ember.zeros(4, dtype=ember.float64 if rank else ember.float32),
                                    ember.ones(2, dtype=ember.float64 if rank else ember.float32))

    expect_mismatch(different_dtypes, "float64", "float32")
    dist.all_reduce(t)  # the group still works
    assert t.tolist() == [2.0] * 4
    print(f"MISMATCH-OK {rank} pid={os.getpid()}", flush=True)


if __name__ == "__main__":
    main()
