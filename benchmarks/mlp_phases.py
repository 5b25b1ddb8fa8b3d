"""Where the compiled MLP step's time goes: ember.compile's step of ``run.py``'s MLP, phase
by phase, against the same step fused by hand from ember's own pieces, and the ratio of
each to PyTorch's eager step.

The hand-fused step has no framework at all: the products through ember's thread split
with the bias and relu added by the threads (`_parallel.matmul`), the cross-entropy and
its gradient in one serial numba loop, relu's gradient and the bias gradient in one
pass, the gradient products side by side (`_parallel.matmul_pair`) and the fused SGD
kernel called per parameter.  It is what ember.compile could reach with no per-op work
left; the gap per phase says where ember's step spends the rest.

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
    import numba

    from ember.ops import _parallel
    from ember.optim import _fused

    @numba.njit
    def loss_and_gradient(z, y, dz):
        n, c = z.shape
        total = 0.0
        for i in range(n):
            m = z[i].max()
            s = np.float32(0)
            for j in range(c):
                dz[i, j] = np.exp(z[i, j] - m)
                s += dz[i, j]
            total += np.log(s) + m - z[i, y[i]]
            for j in range(c):
                dz[i, j] /= s * n
            dz[i, y[i]] -= np.float32(1.0 / n)
        return total / n

    @numba.njit
    def relu_gradient_and_sums(d, a, sums):
        for j in range(d.shape[1]):
            sums[j] = 0
        for i in range(d.shape[0]):
            for j in range(d.shape[1]):
                v = d[i, j] if a[i, j] > 0 else np.float32(0)
                d[i, j] = v
                sums[j] += v

    rng = np.random.default_rng(0)
    sizes = [784, 512, 256, 10]
    weights = [rng.uniform(-1 / np.sqrt(i), 1 / np.sqrt(i), (o, i)).astype(np.float32)
               for i, o in zip(sizes, sizes[1:])]
    biases = [np.full(o, 0.01, np.float32) for o in sizes[1:]]
    velocity = [np.zeros_like(p) for p in weights + biases]
    data = np.random.default_rng(1)
    x = data.standard_normal((128, 784)).astype(np.float32)
    y = data.integers(0, 10, 128)
    dz = np.empty((128, 10), np.float32)
    bias_grads = [np.empty(o, np.float32) for o in sizes[1:]]
    clock = time.perf_counter

    def step():
        (w1, w2, w3), (b1, b2, b3) = weights, biases
        t0 = clock()
        a1 = _parallel.matmul(x, w1.T, bias=b1, relu=True)
        a2 = _parallel.matmul(a1, w2.T, bias=b2, relu=True)
        z = _parallel.matmul(a2, w3.T, bias=b3)
        t1 = clock()
        loss_and_gradient(z, y, dz)
        t2 = clock()
        da2, dw3 = _parallel.matmul_pair(dz, w3, dz.T, a2)
        np.sum(dz, axis=0, out=bias_grads[2])
        relu_gradient_and_sums(da2, a2, bias_grads[1])
        da1, dw2 = _parallel.matmul_pair(da2, w2, da2.T, a1)
        relu_gradient_and_sums(da1, a1, bias_grads[0])
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
    nn, F = lib.nn, lib.nn.functional  # noqa: N806
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    run._init_like(lib, model)
    if compiled:
        model = lib.compile(model)
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 128))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
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
