"""all_reduce of 1 MB to 256 MB float32 tensors on 2 ranks: ember vs raw mpi4py (vs Gloo).

ember's ``dist.all_reduce`` hands the tensor's memory to ``MPI_Iallreduce(MPI_IN_PLACE)`` and
polls it with a timeout; the raw baselines are mpi4py's blocking ``Allreduce(IN_PLACE)`` and
``Iallreduce`` + ``Wait`` on a NumPy array.  With PyTorch installed, ``torch.distributed``
on Gloo (TCP over loopback) runs too, for scale.  Every timing starts after a barrier; the
table shows rank 0's median over the repeats (the three run in alternation).

    python benchmarks/allreduce.py [--repeats 9] [--sizes 1,4,16,64,256] [--no-torch]

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
    p.add_argument("--no-torch", action="store_true")
    args = p.parse_args()

    import numpy as np
    from mpi4py import MPI

    import ember
    import ember.distributed as dist

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    comm = MPI.COMM_WORLD.Dup()
    torch_dist = None
    if not args.no_torch:
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
        print(f"all_reduce (SUM) of float32 tensors, {world} ranks, median of {args.repeats}; "
              f"MPI: {MPI.Get_library_version().splitlines()[0].strip()}")
        head = (f"{'size':>7} {'ember ms':>10} {'mpi4py ms':>10} {'Iallreduce':>11} "
                f"{'overhead':>9} {'ember GB/s':>11}")
        print(head + (f" {'gloo ms':>9}" if torch_dist else ""))
    for mb in [int(s) for s in args.sizes.split(",")]:
        n = mb * 2 ** 20 // 4
        t = ember.ones(n)
        raw = np.ones(n, dtype=np.float32)
        tt = torch.ones(n) if torch_dist else None

        def raw_blocking():
            comm.Allreduce(MPI.IN_PLACE, [raw, MPI.FLOAT], MPI.SUM)

        def raw_nonblocking():
            comm.Iallreduce(MPI.IN_PLACE, [raw, MPI.FLOAT], MPI.SUM).Wait()

        fns = {"ember": lambda: dist.all_reduce(t), "raw": raw_blocking, "iraw": raw_nonblocking}
        if torch_dist:
            fns["gloo"] = lambda: torch_dist.all_reduce(tt)
        for fn in fns.values():  # warm up
            fn()
        times = {k: [] for k in fns}
        for _ in range(args.repeats):
            for k, fn in fns.items():
                times[k].append(timed(fn))
        med = {k: statistics.median(v) for k, v in times.items()}
        if rank == 0:
            best_raw = min(med["raw"], med["iraw"])
            overhead = 100 * (med["ember"] / best_raw - 1)
            gbps = 2 * (world - 1) / world * n * 4 / med["ember"] / 1e9  # bus bandwidth
            line = (f"{mb:>5}MB {1e3 * med['ember']:>10.2f} {1e3 * med['raw']:>10.2f} "
                    f"{1e3 * med['iraw']:>11.2f} {overhead:>8.1f}% {gbps:>11.2f}")
            if torch_dist:
                line += f" {1e3 * med['gloo']:>9.2f}"
            print(line, flush=True)
        del t, raw, tt
    if rank == 0:
        print("overhead: ember against the faster of the two raw mpi4py calls")
    if torch_dist:
        torch_dist.destroy_process_group()
    dist.destroy_process_group()


if __name__ == "__main__":
    if not _under_launcher():
        relaunch()
    main()
