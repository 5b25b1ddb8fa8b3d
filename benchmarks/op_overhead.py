"""Per-op overhead on tiny tensors: ember vs PyTorch in one run.

Three workloads, microseconds per elementwise op on a 16-element float32 tensor:
no grad; with graph recording; recording + backward.  Usage:
    python benchmarks/op_overhead.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import alternate, print_table, try_import_torch  # noqa: E402

CHAIN = 20  # ops per timed call


def workloads(lib, torch_like: bool):
    x0 = np.linspace(-1, 1, 16, dtype=np.float32)
    x = lib.tensor(x0)
    w = lib.tensor(x0, requires_grad=True)

    def no_grad():
        with lib.no_grad():
            y = x
            for _ in range(CHAIN):
                y = y * x
        return y

    def record():
        y = w
        for _ in range(CHAIN):
            y = y * w
        return y

    def record_backward():
        y = w
        for _ in range(CHAIN):
            y = y * w
        y.sum().backward()
        w.grad = None

    return {"no grad": no_grad, "recording": record, "recording + backward": record_backward}


def main() -> None:
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    ours = workloads(ember, False)
    theirs = workloads(torch, True) if torch is not None else {}
    rows = []
    for name, fn in ours.items():
        e, t = alternate(fn, theirs.get(name), repeats=15, inner=50)
        rows.append((f"{name} (per op)", e / CHAIN, t / CHAIN if t else None))
    print(f"per-op overhead, 16-element float32 tensors, {CHAIN} ops per call")
    print_table(rows)


if __name__ == "__main__":
    main()
