"""ember.compile on the suite's training steps: compiled ember against PyTorch eager and
against ember eager, in one process.

For each of the MLP, MNIST CNN and char-GPT steps of ``benchmarks/run.py`` (and, with
``--only latency``, the CNN's batch-1 inference under no_grad) three
closures are built from the same code and weights: ember eager, ember compiled
(``ember.compile(model)``; the first call captures, it runs in the warm-up) and
PyTorch eager.  Each pair is timed with `run.alternate` (turns, warm-ups, medians), so
the two ratios come from separate alternations.  Usage:
    python benchmarks/compile_bench.py [--only mlp,gpt] [--repeats 15] [--rounds 3]
                                       [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys

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


BUILDERS = {"mlp": run.mlp_step, "cnn": run.cnn_step, "gpt": run.gpt_step,
            "latency": cnn_latency}


def build(key: str, lib, compiled: bool):
    """The workload's step closure, with the model through ember.compile if asked."""
    run.COMPILE["ember"] = compiled
    try:
        return BUILDERS[key](lib)
    finally:
        run.COMPILE["ember"] = False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="mlp,gpt,cnn")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    import ember
    from benchmarks._harness import try_import_torch

    torch = try_import_torch()
    threads = args.threads or os.cpu_count()
    if torch is not None:
        torch.set_num_threads(threads)
    print(f"ember.compile, {threads} threads, median of {args.repeats} alternated runs")
    print("| workload | compiled (ms) | ember eager (ms) | PyTorch (ms) | compiled/PyTorch "
          "| target | compiled/eager |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key in [k.strip() for k in args.only.split(",") if k.strip()]:
        compiled = build(key, ember, True)
        compiled()  # the capture (and the kernels' compilation) before any timing
        eager = build(key, ember, False)
        theirs = build(key, torch, False) if torch is not None else None
        inner = 20 if key == "latency" else 1
        c1, t = run.alternate(compiled, theirs, args.repeats, inner, rounds=args.rounds)
        c2, e = run.alternate(compiled, eager, args.repeats, inner, rounds=args.rounds)
        ratio = f"{c1 / t:.2f}" if t else "-"
        print(f"| {key} | {c1 * 1e3:.2f} | {e * 1e3:.2f} | "
              f"{(f'{t * 1e3:.2f}' if t else '-')} | {ratio} | {TARGETS.get(key, '-')} | "
              f"{c2 / e:.2f} |")


if __name__ == "__main__":
    main()
