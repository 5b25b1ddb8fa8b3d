"""Where the compiled MLP step's time goes: ember.compile's step of ``run.py``'s MLP, phase
by phase, against the same step fused by hand from ember's own pieces, and the ratio of
each to PyTorch's eager step.

The hand-fused step has no framework at all: ember's kernels called on arrays, the
products through ember's thread split with the bias and relu added by the threads
(`_parallel.matmul`), the cross-entropy and its gradient in one serial kernel
(`_native_rows.class_loss_sum`), relu's gradient and the bias gradient in one pass
(`_native_activation.relu_grad_and_sums`), the gradient products side by side
(`_parallel.matmul_pair`) and the fused SGD kernel called per parameter.  It is what
ember.compile could reach with no per-op work left; the gap per phase says where ember's
step spends the rest.

Each library's step runs in short blocks (25 untimed steps, then `--steps` timed ones)
taken in turns `--rounds` times; the ratios are the medians of each round's ratio, with
their quartiles (the shared host's speed moves from second to second).  Usage:
    python benchmarks/mlp_phases.py [--rounds 20] [--steps 80] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._harness import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default="2")

import numpy as np  # noqa: E402

from benchmarks import run  # noqa: E402
from benchmarks._harness import libraries_on_threads  # noqa: E402

PHASES = ("forward", "loss", "backward", "step")


def _hand_fused_step():
    """The MLP step from ember's pieces (see the module docstring): a closure returning its
    four phases' seconds."""
    from ember.ops import _native_activation, _native_rows, _parallel
    from ember.optim import _fused

    weights, biases, x, y = run.mlp_arrays()
    velocity = [np.zeros_like(p) for p in weights + biases]
    bias_grads = [np.empty(b.shape, np.float32) for b in biases]
    scale = np.float32(1 / x.shape[0])
    clock = time.perf_counter

    def step():
        (w1, w2, w3), (b1, b2, b3) = weights, biases
        t0 = clock()
        a1 = _parallel.matmul(x, w1.T, bias=b1, relu=True)
        a2 = _parallel.matmul(a1, w2.T, bias=b2, relu=True)
        z = _parallel.matmul(a2, w3.T, bias=b3)
        t1 = clock()
        _, gradient, _ = _native_rows.class_loss_sum(z, y)  # (the mean's gradient: scaled)
        dz = gradient * scale
        t2 = clock()
        da2, dw3 = _parallel.matmul_pair(dz, w3, dz.T, a2)
        np.sum(dz, axis=0, out=bias_grads[2])
        _native_activation.relu_grad_and_sums(da2, a2, bias_grads[1])
        da1, dw2 = _parallel.matmul_pair(da2, w2, da2.T, a1)
        _native_activation.relu_grad_and_sums(da1, a1, bias_grads[0])
        dw1 = _parallel.matmul(da1.T, x)
        t3 = clock()
        for p, g, v in zip(weights + biases, [dw1, dw2, dw3] + bias_grads, velocity):
            _fused.sgd_step(p, g, v, lr=0.01, momentum=0.9, dampening=0.0, weight_decay=0.0,
                            nesterov=False, maximize=False, first=False)
        t4 = clock()
        return t1 - t0, t2 - t1, t3 - t2, t4 - t3
    return step


def _phased(lib, compiled: bool):
    """`run.mlp_step`'s step for `lib` (through ember.compile when `compiled`), returning
    its four phases' seconds."""
    F = lib.nn.functional  # noqa: N806
    model, x, y, opt = run.mlp_parts(lib)
    if compiled:
        model = lib.compile(model)
    clock = time.perf_counter

    def step():
        t0 = clock()
        opt.zero_grad()
        out = model(x)
        t1 = clock()
        loss = F.cross_entropy(out, y)
        t2 = clock()
        loss.backward()
        t3 = clock()
        opt.step()
        t4 = clock()
        return t1 - t0, t2 - t1, t3 - t2, t4 - t3
    return step


def _block(step, steps: int) -> list:
    """Each phase's median over `steps` timed steps, after 25 untimed ones."""
    for _ in range(25):
        step()
    times = [step() for _ in range(steps)]
    return [statistics.median(t[k] for t in times) for k in range(len(PHASES))] + [
        statistics.median(sum(t) for t in times)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=80)
    args = parser.parse_args()
    torch = libraries_on_threads(args.threads)
    import ember

    steps = {"ember compiled": _phased(ember, True), "hand-fused": _hand_fused_step()}
    if torch is not None:
        steps["PyTorch"] = _phased(torch, False)
    blocks: dict = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            blocks[name].append(_block(step, args.steps))
    print(f"MLP 784-512-256-10 training step, batch 128, {args.threads} threads; medians of "
          f"{args.rounds} rounds of {args.steps} steps, us")
    print(f"| {'step':15s} | " + " | ".join(f"{p:>8s}" for p in PHASES + ("total",)) + " |")
    print("|" + "-" * 17 + "|" + "|".join("-" * 10 for _ in range(len(PHASES) + 1)) + "|")
    for name, rows in blocks.items():
        cells = [statistics.median(r[k] for r in rows) * 1e6 for k in range(len(PHASES) + 1)]
        print(f"| {name:15s} | " + " | ".join(f"{c:8.0f}" for c in cells) + " |")
    if torch is not None:
        for name in ("ember compiled", "hand-fused"):
            ratios = sorted(a[-1] / b[-1] for a, b in zip(blocks[name], blocks["PyTorch"]))
            quarter = len(ratios) // 4
            print(f"{name} / PyTorch: median {statistics.median(ratios):.3f} "
                  f"(quartiles {ratios[quarter]:.3f}-{ratios[-1 - quarter]:.3f})")


if __name__ == "__main__":
    main()
