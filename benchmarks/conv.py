"""Convolution and pooling: ember vs PyTorch on the classic MNIST CNN shapes (batch 64).

Workloads (float32): conv 1->32 3x3 on 28x28, conv 32->64 3x3 on 26x26, max_pool2d 2 on
the 24x24 result; each forward alone and forward+backward (backward from a fixed
gradient; the first conv's input needs no gradient, as in a real network).  PyTorch
runs with ``torch.set_num_threads(os.cpu_count())``, NumPy with its BLAS default.
Usage:
    python benchmarks/conv.py [--repeats 15] [--profile]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import alternate, print_table, try_import_torch  # noqa: E402

BATCH = 64


def _make(lib, shapes: dict, grads: set):
    rng = np.random.default_rng(0)
    return {name: lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.1,
                             requires_grad=name in grads)
            for name, shape in shapes.items()}


def workloads(lib):
    """name -> (forward, forward+backward) closures for one library."""
    F = lib.nn.functional
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--profile", action="store_true",
                        help="cProfile ember's forward+backward instead of timing")
    args = parser.parse_args()
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
        torch.set_num_threads(os.cpu_count())
    theirs = workloads(torch) if torch is not None else {}
    rows, totals = [], [0.0, 0.0]
    for name, (fwd, run) in ours.items():
        t_fwd, t_run = theirs.get(name, (None, None))
        rows.append((name + " fwd", *alternate(fwd, t_fwd, repeats=args.repeats)))
        e, t = alternate(run, t_run, repeats=args.repeats)
        rows.append((name + " fwd+bwd", e, t))
        totals[0] += e
        totals[1] += t or 0.0
    rows.append(("MNIST CNN layers fwd+bwd, total", totals[0], totals[1] or None))
    print(f"batch {BATCH}, float32, {os.cpu_count()} CPU threads, median of {args.repeats}")
    print_table(rows, unit="ms", scale=1e3)


if __name__ == "__main__":
    main()
