"""Optimizer step time: ember vs PyTorch on a model of 100 parameter tensors (~10M values).

The parameters are the weights and biases of 50 layers (float32); every parameter has a
fixed gradient, and the timed call is one ``optimizer.step()``.  PyTorch runs with the
thread count matched to NumPy's (one thread for elementwise work).  Usage:
    python benchmarks/optim_step.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import alternate, print_table, try_import_torch  # noqa: E402

# 50 (weight, bias) pairs: 100 tensors, 10.1M values in all
SHAPES = [s for _ in range(50) for s in ((448, 448), (448,))]

OPTIMIZERS = {
    "SGD momentum": ("SGD", {"lr": 0.01, "momentum": 0.9}),
    "Adam": ("Adam", {"lr": 1e-3}),
    "AdamW": ("AdamW", {"lr": 1e-3, "weight_decay": 1e-2}),
}


def make_step(lib, name: str, options: dict):
    rng = np.random.default_rng(0)
    params = []
    for shape in SHAPES:
        p = lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.01, requires_grad=True)
        p.grad = lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.01)
        params.append(p)
    opt = getattr(lib.optim, name)(params, **options)
    opt.step()  # create the state outside the timing
    return opt.step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    total = sum(int(np.prod(s)) for s in SHAPES)
    rows = []
    for label, (name, options) in OPTIMIZERS.items():
        ours = make_step(ember, name, options)
        theirs = make_step(torch, name, options) if torch is not None else None
        e, t = alternate(ours, theirs, repeats=args.repeats)
        rows.append((f"{label} step", e, t))
    print(f"optimizer.step(), {len(SHAPES)} float32 tensors, {total / 1e6:.1f}M values, "
          f"median of {args.repeats}")
    print_table(rows, unit="ms", scale=1e3)


if __name__ == "__main__":
    main()
