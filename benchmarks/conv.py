"""Convolution and pooling: ember vs PyTorch on the classic MNIST CNN shapes (batch 64).

Workloads (float32): conv 1->32 3x3 on 28x28, conv 32->64 3x3 on 26x26, max_pool2d 2 on
the 24x24 result; each forward alone and forward+backward (backward from a fixed
gradient; the first conv's input needs no gradient, as in a real network).  By default
PyTorch runs with ``torch.set_num_threads(os.cpu_count())`` and NumPy with its BLAS
default; ``--threads N`` pins both to N threads (set before NumPy is imported).

The two libraries run in alternation; the table shows the median and the best (min)
time of each, the min being the steadier figure on a shared machine.  ``--clock cpu``
times with the process CPU clock instead of the wall clock: on a machine shared with
other work this is the stable measure, but it is only comparable between the libraries
with ``--threads 1`` (it adds up the time of every thread).  Usage:
    python benchmarks/conv.py [--repeats 15] [--threads N] [--clock wall|cpu] [--profile]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for both libraries (default: NumPy's BLAS default, "
                             "PyTorch os.cpu_count())")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile ember's forward+backward instead of timing")
    args = parser.parse_args()
    if args.threads:  # must happen before NumPy loads its BLAS
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.threads)
    return args


ARGS = _args() if __name__ == "__main__" else None

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import try_import_torch  # noqa: E402

BATCH = 64


def _make(lib, shapes: dict, grads: set):
    rng = np.random.default_rng(0)
    return {name: lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.1,
                             requires_grad=name in grads)
            for name, shape in shapes.items()}


def workloads(lib):
    """name -> (forward, forward+backward) closures for one library."""
    F = lib.nn.functional  # noqa: N806 - the usual name
    t = _make(lib, {"x1": (BATCH, 1, 28, 28), "w1": (32, 1, 3, 3), "b1": (32,),
                    "x2": (BATCH, 32, 26, 26), "w2": (64, 32, 3, 3), "b2": (64,),
                    "x3": (BATCH, 64, 24, 24)},
              grads={"w1", "b1", "x2", "w2", "b2", "x3"})
    g = _make(lib, {"g1": (BATCH, 32, 26, 26), "g2": (BATCH, 64, 24, 24),
                    "g3": (BATCH, 64, 12, 12)}, grads=set())

    def conv1():
        return F.conv2d(t["x1"], t["w1"], t["b1"])

    def conv2():
        return F.conv2d(t["x2"], t["w2"], t["b2"])

    def pool():
        return F.max_pool2d(t["x3"], 2)

    def both(fn, grad):
        def run():
            fn().backward(grad)
        return run

    return {
        "conv 1->32 3x3, 28x28": (conv1, both(conv1, g["g1"])),
        "conv 32->64 3x3, 26x26": (conv2, both(conv2, g["g2"])),
        "max_pool2d 2, 64x24x24": (pool, both(pool, g["g3"])),
    }


def _alternate(ours, theirs, repeats: int, clock=time.perf_counter) -> tuple:
    """(median, min) seconds of each, timed in alternation after two warm-up calls."""
    fns = [f for f in (ours, theirs) if f is not None]
    for fn in fns:
        fn()
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, acc in zip(fns, times):
            start = clock()
            fn()
            acc.append(clock() - start)
    stats = [(float(np.median(acc)), min(acc)) for acc in times]
    return stats[0], (stats[1] if theirs is not None else (None, None))


def main() -> None:
    args = ARGS
    ours = workloads(ember)
    if args.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.repeats):
            for _, run in ours.values():
                run()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        return
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(args.threads or os.cpu_count())
    theirs = workloads(torch) if torch is not None else {}
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rows = []
    total = np.zeros(4)
    for name, (fwd, run) in ours.items():
        t_fwd, t_run = theirs.get(name, (None, None))
        for label, e_fn, t_fn in (("fwd", fwd, t_fwd), ("fwd+bwd", run, t_run)):
            (e_med, e_min), (t_med, t_min) = _alternate(e_fn, t_fn, args.repeats, clock)
            rows.append((f"{name} {label}", e_med, t_med, e_min, t_min))
            if label == "fwd+bwd":
                total += [e_med, t_med or 0, e_min, t_min or 0]
    rows.append(("MNIST CNN layers fwd+bwd, total", *total))
    threads = args.threads or f"BLAS default / torch {os.cpu_count()}"
    print(f"batch {BATCH}, float32, threads: {threads}, {args.clock} clock, "
          f"{args.repeats} alternated runs (ms)")
    print(f"{'workload':<36} {'ember med':>9} {'torch med':>9} {'ratio':>6} "
          f"{'ember min':>9} {'torch min':>9} {'ratio':>6}")
    for name, e_med, t_med, e_min, t_min in rows:
        med = f"{t_med * 1e3:9.2f} {e_med / t_med:6.2f}" if t_med else f"{'-':>9} {'-':>6}"
        best = f"{t_min * 1e3:9.2f} {e_min / t_min:6.2f}" if t_min else f"{'-':>9} {'-':>6}"
        print(f"{name:<36} {e_med * 1e3:9.2f} {med} {e_min * 1e3:9.2f} {best}")


if __name__ == "__main__":
    main()
