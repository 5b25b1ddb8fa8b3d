"""A DistributedDataParallel training step on 2 ranks against one process, and the overlap
of gradient communication with backward.

Each rank runs the same model (default: an MLP of 6 layers of 1024 units, 6.3M parameters,
25 MB of float32 gradients) on its own batch.  Measured on rank 0, median of the repeats,
each after a barrier:

* one process:  forward + backward + SGD step without DDP (rank 1 idles in a barrier);
* DDP step:     the same with DDP on 2 ranks, so 2x the samples per step;
* backward alone, three ways: under ``no_sync`` (no communication), with DDP (buckets
  all-reduced from the gradient hooks while backward goes on), and with DDP holding every
  bucket back until backward is done (the same copies and all-reduces, not overlapped).

``hidden`` is the share of the reduction time (copies and all-reduces) that overlapping
hides: (without overlap - DDP) / (without overlap - no_sync).

    python benchmarks/ddp_step.py [--repeats 9] [--batch 64] [--width 1024] [--depth 6]
        [--bucket-cap-mb 25] [--model mlp|cnn]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.allreduce import _under_launcher, relaunch  # noqa: E402


def build(args):
    import ember.nn as nn

    if args.model == "cnn":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))), "examples"))
        from train_ddp import Net

        return Net(0.0)
    layers = [nn.Flatten(), nn.Linear(784, args.width), nn.ReLU()]
    for _ in range(args.depth - 2):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    layers += [nn.Linear(args.width, 10), nn.LogSoftmax(dim=1)]
    return nn.Sequential(*layers)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--bucket-cap-mb", type=float, default=25)
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    args = p.parse_args()

    import ember
    import ember.distributed as dist
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    model = build(args)
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    opt = ember.optim.SGD(model.parameters(), lr=1e-3)
    x = ember.randn(args.batch, 1, 28, 28)
    y = ember.randint(0, 10, (args.batch,))
    n_params = sum(p.numel() for p in model.parameters())

    def measure(fn, only_rank0: bool = False) -> float:
        times = []
        for i in range(args.repeats + 1):
            dist.barrier()
            start = time.perf_counter()
            if not only_rank0 or rank == 0:
                fn()
            elapsed = time.perf_counter() - start
            if i:  # the first run warms up
                times.append(elapsed)
        return statistics.median(times)

    def single_step():
        opt.zero_grad()
        F.nll_loss(model(x), y).backward()
        opt.step()

    def ddp_step():
        opt.zero_grad()
        F.nll_loss(ddp(x), y).backward()
        opt.step()

    def prepared(sync: bool):
        """Forward outside the timing; returns the loss whose backward is timed."""
        opt.zero_grad()
        if sync:
            return F.nll_loss(ddp(x), y)
        with ddp.no_sync():
            return F.nll_loss(ddp(x), y)

    def one_backward(sync: bool, overlap: bool) -> float:
        ddp._overlap = overlap
        loss = prepared(sync)
        dist.barrier()
        start = time.perf_counter()
        loss.backward()
        elapsed = time.perf_counter() - start
        ddp._overlap = True
        return elapsed

    t_single = measure(single_step, only_rank0=True)
    t_ddp = measure(ddp_step)
    # the three backward variants in alternation (rotating order), so drift hits all alike
    modes = {"local": (False, True), "ddp": (True, True), "serial": (True, False)}
    samples = {m: [] for m in modes}
    names = list(modes)
    for i in range(args.repeats + 1):
        for m in names[i % 3:] + names[: i % 3]:
            elapsed = one_backward(*modes[m])
            if i:
                samples[m].append(elapsed)
    b_local, b_ddp, b_serial = (statistics.median(samples[m]) for m in names)
    if rank == 0:
        comm = b_serial - b_local
        hidden = (b_serial - b_ddp) / comm if comm > 0 else float("nan")
        print(f"model {args.model}: {n_params / 1e6:.2f}M parameters "
              f"({4 * n_params / 2 ** 20:.1f} MB of gradients) in {len(ddp._buckets)} "
              f"buckets; batch {args.batch} per rank; median of {args.repeats} (ms)")
        print(f"{'one process step':<40} {1e3 * t_single:9.1f}")
        print(f"{f'DDP step, {world} ranks ({world}x the samples)':<40} {1e3 * t_ddp:9.1f}"
              f"   throughput x{world * t_single / t_ddp:.2f}")
        print(f"{'backward, no communication (no_sync)':<40} {1e3 * b_local:9.1f}")
        print(f"{'backward, DDP without overlap':<40} {1e3 * b_serial:9.1f}"
              f"   reduction {1e3 * comm:.1f}")
        print(f"{'backward with DDP (overlapped)':<40} {1e3 * b_ddp:9.1f}"
              f"   hidden {100 * hidden:.0f}% of the reduction")
    dist.destroy_process_group()


if __name__ == "__main__":
    if not _under_launcher():
        relaunch()
    main()
