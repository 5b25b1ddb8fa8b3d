"""Run on 2 ranks: DDP training in which rank 1 fails at step 3 (argv[1] says how).

    raise  - rank 1 raises ValueError
    kill   - rank 1 is killed by SIGKILL in the middle of its backward pass
    hang   - rank 1 stops taking part (sleeps); DDP's group has a 3 s timeout
    exit   - rank 1 leaves early with sys.exit(3)
"""

import os
import signal
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - the usual idiom


def main():
    how = sys.argv[1]
    # A lenient default group keeps the ranks in step; DDP runs on a group with a short
    # timeout, so that a hang is reported within seconds.
    dist.init_process_group("mpi", timeout=timedelta(seconds=60))
    fast = dist.new_group(timeout=timedelta(seconds=3))
    rank = dist.get_rank()
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    ddp = DDP(model, process_group=fast)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    first = model[0].weight
    for step in range(1, 6):
        dist.barrier()
        print(f"rank {rank} pid={os.getpid()} step {step}", flush=True)
        if rank == 1 and step == 3:
            if how == "raise":
                raise ValueError("simulated failure on rank 1")
            if how == "hang":
                time.sleep(60)
            if how == "exit":
                sys.exit(3)
            if how == "kill":  # die mid-backward, once the first gradient is ready
                first.register_post_accumulate_grad_hook(
                    lambda p: os.kill(os.getpid(), signal.SIGKILL))
        x = ember.randn(4, 8)
        opt.zero_grad()
        F.cross_entropy(ddp(x), ember.tensor([0, 1, 0, 1])).backward()
        opt.step()
    print(f"rank {rank} finished", flush=True)


if __name__ == "__main__":
    main()
