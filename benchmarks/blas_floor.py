"""The matrix products inside the benchmark steps: NumPy's BLAS against PyTorch's.

ember multiplies matrices with whatever BLAS NumPy was built with (OpenBLAS in NumPy's
wheels), split over its own threads, or with MKL's products on those threads where the
`mkl` extra is installed on an Intel processor (ops/_mkl.py); PyTorch's x86 wheels
multiply with MKL.  The "ember" column times ember's own product (`_parallel.matmul`, the
BLAS its threads call named in the header); the "NumPy" column NumPy's, on OpenBLAS's own
threads (as many as ember's).  This script times the products of one
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
import time

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
    threads = args.threads or os.cpu_count() or 1
    if torch is not None:
        torch.set_num_threads(threads)
    import ember
    from ember.ops import _blas, _parallel

    ember.set_num_threads(threads)
    openblas = _blas.openblas()
    chosen = _blas.products()

    def numpy_turn(fn):
        """`fn` with OpenBLAS threading its own products (ember keeps it on one thread)."""
        if openblas is None:
            return fn
        return lambda: (openblas.set_num_threads(threads), fn(), openblas.set_num_threads(1))

    rng = np.random.default_rng(0)
    library = chosen.library if chosen is not None else "NumPy's"
    print(f"| workload | product | shapes | ember ({library}) us | NumPy us | PyTorch us "
          "| ember / PyTorch | NumPy / PyTorch |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    sums: dict[str, list[float]] = {}
    for workload, what, left, right, layouts in PRODUCTS:
        a, b = _matrix(left, layouts[0], rng), _matrix(right, layouts[1], rng)
        runs = [functools.partial(_parallel.matmul, a, b),
                numpy_turn(functools.partial(np.matmul, a, b))]
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            runs.append(functools.partial(torch.matmul, ta, tb))
        turns: list[list[float]] = [[] for _ in runs]
        # three turns each, ember and PyTorch alternating, then NumPy's; the best median.
        # (After a product on OpenBLAS's own threads they spin for ~0.1 s, each holding a
        # core: ops/_parallel.py.  So NumPy's turns come last, and the next row waits.)
        for order in ([0, 2][:len(runs) - 1], [1]):
            for _ in range(3):
                for i in order:
                    turns[i].append(median_time(runs[i], args.repeats // 3, warmup=1) * 1e6)
        time.sleep(0.5)
        best = [min(times) for times in turns] + [0.0] * (3 - len(turns))
        ours, numpy_us, theirs = best
        shapes = f"{left[0]}x{left[1]} @ {right[0]}x{right[1]}"
        ratios = (f"{theirs:.1f} | {ours / theirs:.2f} | {numpy_us / theirs:.2f}" if theirs
                  else "- | - | -")
        print(f"| {workload} | {what} | {shapes} | {ours:.1f} | {numpy_us:.1f} | {ratios} |")
        total = sums.setdefault(workload, [0.0, 0.0, 0.0])
        for i, value in enumerate(best):
            total[i] += value
    ours, numpy_us, theirs = sums["MLP"]
    line = f"\nMLP step's eight products: ember {ours:.0f} us, NumPy {numpy_us:.0f} us"
    if theirs:
        line += (f", PyTorch {theirs:.0f} us; ratios {ours / theirs:.2f} (ember), "
                 f"{numpy_us / theirs:.2f} (NumPy)")
    print(line)


if __name__ == "__main__":
    main()
