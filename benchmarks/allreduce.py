"""all_reduce of 1 MB to 256 MB float32 tensors on 2 ranks: ember vs raw mpi4py (vs Gloo).

ember's ``dist.all_reduce`` hands the tensor's memory to ``MPI_Iallreduce(MPI_IN_PLACE)`` and
polls it with a timeout; the raw baselines are mpi4py's blocking ``Allreduce(IN_PLACE)`` and
``Iallreduce`` + ``Wait`` on a NumPy array.  With ``--torch``, ``torch.distributed`` on Gloo
(TCP over loopback) runs too, for scale.  Every timing starts after a barrier; the
table shows rank 0's median and best time over the repeats (they run in alternation,
in a rotating order).

    python benchmarks/allreduce.py [--repeats 9] [--sizes 1,4,16,64,256] [--torch]

(Started directly, it re-starts itself under ``python -m ember.distributed.run`` with
2 ranks.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _under_launcher() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK"))


def relaunch(nproc: int = 2) -> None:
    """Run this script again on `nproc` ranks through the launcher, and exit with its code."""
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc),
           sys.argv[0], *sys.argv[1:]]
    sys.exit(subprocess.call(cmd))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--sizes", default="1,4,16,64,256", help="sizes in MB")
    p.add_argument("--torch", action="store_true",
                   help="also time torch.distributed on Gloo (PyTorch must be installed)")
    args = p.parse_args()

    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD.Dup()
    torch_dist = None
    if args.torch:
        try:
            import torch
            import torch.distributed as torch_dist

            torch.set_num_threads(1)
            torch_dist.init_process_group("gloo", rank=rank, world_size=world)
        except Exception:  # noqa: BLE001 - PyTorch is optional here
            torch_dist = None

    def timed(fn) -> float:
        comm.Barrier()
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    if rank == 0:
        print(f"all_reduce (SUM) of float32 tensors, {world} ranks, {args.repeats} repeats; "
              f"MPI: {MPI.Get_library_version().splitlines()[0].strip()}")
        head = (f"{'size':>7} | {'ember':>8} {'Allreduce':>10} {'Iallreduce':>11} "
                f"{'overhead':>9} | {'ember':>8} {'raw':>8} {'overhead':>9} | {'GB/s':>6}")
        if torch_dist:
            head += f" | {'gloo':>8}"
        print(f"{'':>7} | {'median ms':^41} | {'best ms':^28} |")
        print(head)
    for mb in [int(s) for s in args.sizes.split(",")]:
        n = mb * 2 ** 20 // 4
        t = ember.ones(n)
        raw = np.ones(n, dtype=np.float32)
        tt = torch.ones(n) if torch_dist else None

        def raw_blocking(raw=raw):
            comm.Allreduce(MPI.IN_PLACE, [raw, MPI.FLOAT], MPI.SUM)

        def raw_nonblocking(raw=raw):
            comm.Iallreduce(MPI.IN_PLACE, [raw, MPI.FLOAT], MPI.SUM).Wait()

        fns = {"ember": lambda t=t: dist.all_reduce(t), "raw": raw_blocking,
               "iraw": raw_nonblocking}
        if torch_dist:
            fns["gloo"] = lambda tt=tt: torch_dist.all_reduce(tt)
        for fn in fns.values():  # warm up
            fn()
        times = {k: [] for k in fns}
        names = list(fns)
        for i in range(args.repeats):
            for k in names[i % len(names):] + names[: i % len(names)]:  # rotate the order
                times[k].append(timed(fns[k]))
        med = {k: statistics.median(v) for k, v in times.items()}
        best = {k: min(v) for k, v in times.items()}
        if rank == 0:
            raw_med = min(med["raw"], med["iraw"])
            raw_best = min(best["raw"], best["iraw"])
            gbps = 2 * (world - 1) / world * n * 4 / best["ember"] / 1e9  # bus bandwidth
            line = (f"{mb:>5}MB | {1e3 * med['ember']:>8.2f} {1e3 * med['raw']:>10.2f} "
                    f"{1e3 * med['iraw']:>11.2f} {100 * (med['ember'] / raw_med - 1):>8.1f}% | "
                    f"{1e3 * best['ember']:>8.2f} {1e3 * raw_best:>8.2f} "
                    f"{100 * (best['ember'] / raw_best - 1):>8.1f}% | {gbps:>6.2f}")
            if torch_dist:
                line += f" | {1e3 * med['gloo']:>8.2f}"
            print(line, flush=True)
    # The fixed cost of one call (argument checks, Work, the polling wait), on a tiny tensor:
    # this is what ember adds on top of MPI, whatever the machine's load.
    tiny, tiny_raw = ember.ones(4), np.ones(4, dtype=np.float32)
    per_call = {}
    for name, fn in (("ember", lambda: dist.all_reduce(tiny)),
                     ("mpi4py", lambda: comm.Allreduce(MPI.IN_PLACE, tiny_raw, MPI.SUM))):
        samples = []
        for _ in range(5):
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(2000):
                fn()
            samples.append((time.perf_counter() - start) / 2000)
        per_call[name] = min(samples)
    if rank == 0:
        print("overhead: ember against the faster of the two raw mpi4py calls; GB/s: ember's "
              "bus bandwidth at its best time")
        print(f"one call on a 4-element tensor: ember {1e6 * per_call['ember']:.1f} us, "
              f"mpi4py Allreduce {1e6 * per_call['mpi4py']:.1f} us")
    if torch_dist:
        torch_dist.destroy_process_group()
    dist.destroy_process_group()


if __name__ == "__main__":
    if not _under_launcher():
        relaunch()
    main()
