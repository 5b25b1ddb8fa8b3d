"""Run as a plain process (no mpiexec): a group of one, and the error for a missing launcher."""

import os

import ember
import ember.distributed as dist
import ember.nn as nn
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - the usual idiom


def main():
    dist.init_process_group()  # MPI singleton: world size 1
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    t = ember.arange(3.0)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [0.0, 1.0, 2.0]
    box = [None]
    dist.all_gather_object(box, {"x": 1})
    assert box == [{"x": 1}]
    model = nn.Linear(3, 2)
    ddp = DDP(model)
    ddp(ember.ones(1, 3)).sum().backward()
    assert model.weight.grad.tolist() == [[1.0, 1.0, 1.0]] * 2
    dist.destroy_process_group()
    os.environ["WORLD_SIZE"] = "2"  # as if torchrun had started us: MPI needs mpiexec
    try:
        dist.init_process_group("gloo")
    except RuntimeError as exc:
        assert "mpiexec" in str(exc) and "ember.distributed.run" in str(exc), exc
    else:
        raise AssertionError("WORLD_SIZE=2 without mpiexec must fail")
    print(f"SINGLE-OK pid={os.getpid()}", flush=True)


if __name__ == "__main__":
    main()
