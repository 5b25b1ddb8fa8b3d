"""Memory and time of activation checkpointing on a deep MLP.

A 24-layer MLP (width 1024, ReLU, batch 256, float32), one SGD step per iteration,
three ways:

* plain: every activation kept for backward;
* checkpoint_sequential: 4 segments, non-reentrant;
* memory budget: ``plan_memory_budget`` at half of the plain run's saved activations.

For each: the saved activations held at the end of the forward pass (our own
accounting: ``saved_tensor_report`` for the plain run, the plan's figures for the
budget), the peak of all memory traced by ``tracemalloc`` during forward + backward
+ step (above what parameters and gradients already hold), and the step time (best
of the timed steps).  Usage::

    python benchmarks/checkpoint_memory.py [--layers 24] [--width 1024] [--batch 256]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.autograd.graph import saved_tensor_report  # noqa: E402
from ember.autograd.selective_checkpoint import plan_memory_budget  # noqa: E402
from ember.utils.checkpoint import checkpoint_sequential  # noqa: E402

MB = 2 ** 20


def build(layers: int, width: int):
    ember.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*mods)


def step(model, opt, x, forward):
    opt.zero_grad(set_to_none=False)  # keep gradient buffers: measure activations only
    loss = forward(x).square().mean()
    loss.backward()
    opt.step()


def measure(model, opt, x, forward, repeats: int):
    step(model, opt, x, forward)  # warm-up (allocates the gradient buffers)
    times, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        step(model, opt, x, forward)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    step(model, opt, x, forward)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return min(times), min(cpu), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    model = build(args.layers, args.width)
    opt = ember.optim.SGD(model.parameters(), lr=1e-4)
    x = ember.randn(args.batch, args.width)

    plain_saved = saved_tensor_report(model(x).square().mean()).activation_bytes
    plan = plan_memory_budget(model, x, budget_bytes=plain_saved // 2)

    rows = []
    t, c, peak = measure(model, opt, x, model, args.repeats)
    rows.append(("plain", plain_saved, peak, t, c))
    t, c, peak = measure(model, opt, x,
                      lambda inp: checkpoint_sequential(model, 4, inp, use_reentrant=False),
                      args.repeats)
    seg_saved = saved_tensor_report(
        checkpoint_sequential(model, 4, x, use_reentrant=False)).activation_bytes
    rows.append(("checkpoint_sequential(4)", seg_saved, peak, t, c))
    t, c, peak = measure(model, opt, x, lambda inp: plan.run(model, inp), args.repeats)
    rows.append((f"budget {plain_saved // 2 / MB:.0f} MB", plan.kept_bytes, peak, t, c))

    print(f"{args.layers}-layer MLP, width {args.width}, batch {args.batch}, float32; "
          f"parameters {sum(p.numel() for p in model.parameters()) * 4 / MB:.0f} MB")
    print(f"{'mode':<26}{'saved after fwd':>16}{'peak traced':>13}{'step (wall)':>13}"
          f"{'step (CPU)':>12}{'CPU vs plain':>14}")
    for name, saved, peak, seconds, cpu_seconds in rows:
        print(f"{name:<26}{saved / MB:>13.1f} MB{peak / MB:>10.1f} MB{seconds:>11.3f} s"
              f"{cpu_seconds:>10.3f} s{cpu_seconds / rows[0][4]:>13.2f}x")
    print("(checkpoint_sequential's frames also hold the inputs of segments 2 and 3: "
          f"{2 * args.batch * args.width * 4 / MB:.1f} MB)")
    print()
    print(plan.summary())


if __name__ == "__main__":
    main()
