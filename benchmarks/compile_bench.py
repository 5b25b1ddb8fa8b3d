"""ember.compile on the suite's training steps: compiled ember against PyTorch eager and
against ember eager, in one process.

For each of the MLP, MNIST CNN and char-GPT steps of ``benchmarks/run.py`` (and, with
``--only latency,chain``, the CNN's batch-1 inference under no_grad and an elementwise
chain's forward and backward on 1M elements) three closures are built
from the same code and weights: ember compiled (``ember.compile(model)``; the first call
captures, before any timing), ember eager and PyTorch eager.  The three take turns
(`rounds` of them), each turn a warm-up and then `repeats` timed calls, as in
`run.alternate`; the table shows medians and ratios.

``--clock cpu`` times CPU seconds of the process instead of wall seconds: on a machine
that other jobs load, a single-threaded run (``--threads 1``) then still measures the
work each library does (with several threads it adds up every thread's time, so use
the wall clock there).  Usage:
    python benchmarks/compile_bench.py [--only mlp,gpt,cnn,latency] [--repeats 15]
                                       [--rounds 3] [--threads 2] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._harness import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default=None)

from benchmarks import run  # noqa: E402

TARGETS = {"mlp": 0.8, "gpt": 0.85, "cnn": 0.9}  # compiled / PyTorch eager (issue 15)


def cnn_latency(lib):
    """The suite's batch-1 CNN inference under no_grad, the model through `run._compiled`."""
    model = run._compiled(lib, run.mnist_cnn(lib).eval())
    x, _ = run._cnn_batch(lib, 1)

    def infer():
        with lib.no_grad():
            return model(x)
    return infer


def elementwise_chain(lib):
    """Forward and backward of a float32 elementwise chain over 1M elements (what fusion
    generates one kernel for): ``tanh(gelu(x * w) + x) * 0.5`` with a broadcast w."""
    def chain(x, w):
        return (lib.nn.functional.gelu(x * w) + x).tanh() * 0.5

    fn = lib.compile(chain) if run.COMPILE["ember"] and lib.__name__ == "ember" else chain
    rng = run.np.random.default_rng(6)
    x = lib.tensor(rng.standard_normal((1024, 1024)).astype(run.np.float32),
                   requires_grad=True)
    w = lib.tensor(rng.standard_normal(1024).astype(run.np.float32), requires_grad=True)

    def step():
        x.grad = w.grad = None
        fn(x, w).sum().backward()
    return step


BUILDERS = {"mlp": run.mlp_step, "cnn": run.cnn_step, "gpt": run.gpt_step,
            "latency": cnn_latency, "chain": elementwise_chain}


def build(key: str, lib, compiled: bool):
    """The workload's step closure, with the model through ember.compile if asked."""
    run.COMPILE["ember"] = compiled
    try:
        return BUILDERS[key](lib)
    finally:
        run.COMPILE["ember"] = False


def turns(fns: list, repeats: int, rounds: int, clock, inner: int = 1) -> list:
    """Median seconds per call of each closure, the closures taking turns `rounds` times
    (each turn: run.WARM seconds untimed, then its share of `repeats` timed calls)."""
    times = [[] for _ in fns]
    per_round = -(-repeats // rounds)
    for _ in range(rounds):
        for fn, acc in zip(fns, times):
            end = time.perf_counter() + run.WARM
            fn()
            while time.perf_counter() < end:
                fn()
            for _ in range(per_round):
                start = clock()
                for _ in range(inner):
                    fn()
                acc.append((clock() - start) / inner)
    return [statistics.median(acc) for acc in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="mlp,gpt,cnn",
                        help="comma-separated subset of: mlp, gpt, cnn, latency, chain")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    import ember
    from benchmarks._harness import try_import_torch

    torch = try_import_torch()
    threads = args.threads or os.cpu_count()
    if torch is not None:
        torch.set_num_threads(threads)
    ember.set_num_threads(threads)
    print(f"ember.compile, {threads} threads, {args.clock} clock, median of {args.repeats} "
          f"alternated runs")
    print("| workload | compiled (ms) | ember eager (ms) | PyTorch (ms) | compiled/PyTorch "
          "| target | compiled/eager |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key in [k.strip() for k in args.only.split(",") if k.strip()]:
        compiled = build(key, ember, True)
        compiled()  # the capture (and the kernels' compilation) before any timing
        eager = build(key, ember, False)
        theirs = build(key, torch, False) if torch is not None else None
        inner = 20 if key == "latency" else 1
        fns = [compiled, eager] + ([theirs] if theirs is not None else [])
        c, e, *t = turns(fns, args.repeats, args.rounds, clock, inner)
        t = t[0] if t else None
        ratio = f"{c / t:.2f}" if t else "-"
        print(f"| {key} | {c * 1e3:.2f} | {e * 1e3:.2f} | "
              f"{(f'{t * 1e3:.2f}' if t else '-')} | {ratio} | {TARGETS.get(key, '-')} | "
              f"{c / e:.2f} |")


if __name__ == "__main__":
    main()
