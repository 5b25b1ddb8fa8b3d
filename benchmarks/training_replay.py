"""ember.compile's training replay against its op-by-op replay, in one process.

For each of the MLP, MNIST CNN and char-GPT training steps of ``benchmarks/run.py``
(their models through ``ember.compile``), the step runs in alternated blocks with each
captured graph's training replay on (the graph on arrays under one autograd node:
``ember/_compile/graph_node.py``) and off (every op through ``Function.apply`` and the
engine).  The table gives the median step time of each and their ratio.  Usage:
    python benchmarks/training_replay.py [--only mlp,gpt,cnn] [--blocks 20] [--threads 2]
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

import ember  # noqa: E402
from benchmarks import run  # noqa: E402

STEPS = {"mlp": (run.mlp_step, 50), "cnn": (run.cnn_step, 2), "gpt": (run.gpt_step, 2)}


def graphs_of(step) -> list:
    """The captured graphs of the compiled model that `step` (a run.py closure) trains."""
    models = [c.cell_contents for c in step.__closure__
              if hasattr(c.cell_contents, "_compiled")]
    return [g for m in models for g in m._compiled.graphs.values() if hasattr(g, "whole")]


def compare(key: str, blocks: int) -> tuple:
    """(median ms with the training replay, median ms op by op, graphs using it)."""
    make, per_block = STEPS[key]
    step = make(ember)
    for _ in range(3):  # (the first call captures)
        step()
    graphs = graphs_of(step)
    wholes = [g.whole for g in graphs]
    times: dict = {True: [], False: []}
    for _ in range(blocks):
        for on in (True, False):
            for g, whole in zip(graphs, wholes):
                g.whole = whole if on else None
            step()
            start = time.perf_counter()
            for _ in range(per_block):
                step()
            times[on].append((time.perf_counter() - start) / per_block * 1e3)
    for g, whole in zip(graphs, wholes):
        g.whole = whole
    used = sum(w is not None for w in wholes)
    return statistics.median(times[True]), statistics.median(times[False]), used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="mlp,gpt,cnn")
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        ember.set_num_threads(args.threads)
    run.COMPILE["ember"] = True
    print("| step | training replay (ms) | op by op (ms) | ratio | graphs replayed whole |")
    print("|---|---|---|---|---|")
    for key in args.only.split(","):
        whole, per_op, used = compare(key, args.blocks)
        print(f"| {key} | {whole:.3f} | {per_op:.3f} | {whole / per_op:.3f} | {used} |")


if __name__ == "__main__":
    main()
