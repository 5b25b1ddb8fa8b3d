"""The matrix products inside the benchmark steps: NumPy's BLAS against PyTorch's.

ember multiplies matrices with whatever BLAS NumPy was built with (OpenBLAS in NumPy's
wheels); PyTorch's x86 wheels multiply with MKL.  This script times the products of one
MLP training step (784-512-256-10, batch 128: three forward, five backward) and a few
GPT and LSTM ones, each with the operand layouts ember's linear layers pass (a
transposed weight is a column-major view), on both libraries in alternation.  Their sum
is the floor under ember's step time: a ratio above 1.0 here cannot be won back by
anything outside the products.  Each figure is the best of three medians, the two
libraries taking turns.  Usage:
    python benchmarks/blas_floor.py [--threads N] [--repeats 300]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._harness import (  # noqa: E402
    median_time,
    pin_threads_from_argv,
    try_import_torch,
)

pin_threads_from_argv(default=None)

import numpy as np  # noqa: E402

# (workload, what, left shape, right shape, layouts): layouts "NT" means the left operand
# is C-ordered and the right one a transposed view (column-major), as in a linear layer.
PRODUCTS = (
    ("MLP", "layer 1 forward x @ W1^T", (128, 784), (784, 512), "NT"),
    ("MLP", "layer 2 forward", (128, 512), (512, 256), "NT"),
    ("MLP", "layer 3 forward", (128, 256), (256, 10), "NT"),
    ("MLP", "grad W1 = g1^T @ x", (512, 128), (128, 784), "TN"),
    ("MLP", "grad W2 = g2^T @ h1", (256, 128), (128, 512), "TN"),
    ("MLP", "grad W3 = g3^T @ h2", (10, 128), (128, 256), "TN"),
    ("MLP", "grad h1 = g2 @ W2", (128, 256), (256, 512), "NN"),
    ("MLP", "grad h2 = g3 @ W3", (128, 10), (10, 256), "NN"),
    ("GPT", "MLP up-projection forward", (2048, 128), (128, 512), "NT"),
    ("GPT", "MLP down-projection forward", (2048, 512), (512, 128), "NT"),
    ("LSTM", "recurrent product W_hh @ h^T", (1024, 256), (256, 20), "NT"),
    ("LSTM", "its gradient dgates @ W_hh", (20, 1024), (1024, 256), "NN"),
    ("LSTM", "decoder forward", (700, 256), (256, 10000), "NT"),
)


def _matrix(shape, layout: str, rng):
    """A float32 matrix of `shape`: C-ordered ("N"), or the transposed view of one ("T")."""
    if layout == "T":
        return rng.standard_normal(shape[::-1]).astype(np.float32).T
    return rng.standard_normal(shape).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(args.threads or os.cpu_count() or 1)
    rng = np.random.default_rng(0)
    print("| workload | product | shapes | NumPy us | PyTorch us | ratio |")
    print("|---|---|---|---:|---:|---:|")
    sums: dict[str, list[float]] = {}
    for workload, what, left, right, layouts in PRODUCTS:
        a, b = _matrix(left, layouts[0], rng), _matrix(right, layouts[1], rng)
        run_numpy = functools.partial(np.matmul, a, b)
        run_torch = None
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            run_torch = functools.partial(torch.matmul, ta, tb)
        ours_turns, theirs_turns = [], []
        for _ in range(3):  # three turns each, alternating; keep the best median
            ours_turns.append(median_time(run_numpy, args.repeats // 3, warmup=1) * 1e6)
            if run_torch is not None:
                theirs_turns.append(median_time(run_torch, args.repeats // 3, warmup=1) * 1e6)
        ours, theirs = min(ours_turns), min(theirs_turns, default=0.0)
        shapes = f"{left[0]}x{left[1]} @ {right[0]}x{right[1]}"
        theirs_text = f"{theirs:.1f} | {ours / theirs:.2f}" if theirs else "- | -"
        print(f"| {workload} | {what} | {shapes} | {ours:.1f} | {theirs_text} |")
        total = sums.setdefault(workload, [0.0, 0.0])
        total[0] += ours
        total[1] += theirs
    ours, theirs = sums["MLP"]
    if theirs:
        print(f"\nMLP step's eight products: NumPy {ours:.0f} us, PyTorch {theirs:.0f} us, "
              f"ratio {ours / theirs:.2f}")
    else:
        print(f"\nMLP step's eight products: NumPy {ours:.0f} us")


if __name__ == "__main__":
    main()
