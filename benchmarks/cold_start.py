"""The cold start: what the first run of a program pays for numba's kernel builds.

Runs ``examples/train_classifier.py --epochs 1`` in a fresh process with an empty numba
cache (``NUMBA_CACHE_DIR`` pointed at a new temporary directory), then again with the
cache that run filled, and prints both wall times and the difference: the extra time
of a first run, which issue 15 keeps under 10 s.  There is no PyTorch side: PyTorch
ships compiled kernels.

On a shared machine the difference moves by a second or two from run to run, so
``--pairs`` repeats the measurement, and ``--against TREE`` alternates each pair with
another checkout of ember (put first on ``PYTHONPATH``) to compare two commits under
the same load.  ``--steps`` times less than the whole program: the example's network
built, two Adam steps on random 8x8 batches and one evaluation batch, where the builds
are nearly all of the time (no data loading, no progress bar)::

    python benchmarks/cold_start.py --pairs 3
    git worktree add /tmp/base <commit>
    python benchmarks/cold_start.py --pairs 6 --steps --against /tmp/base
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/train_classifier.py"

# `--steps`: the example's first training steps and an evaluation, in the tree's ember
STEPS = """
import importlib.util, sys
import numpy as np
import ember
import ember.nn.functional as F
spec = importlib.util.spec_from_file_location("example", sys.argv[1])
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
model = example.Net(1, 8, 10)
optimizer = ember.optim.Adam(model.parameters(), lr=1e-3)
rng = np.random.default_rng(0)
x = ember.tensor(rng.standard_normal((32, 1, 8, 8)).astype(np.float32))
y = ember.tensor(rng.integers(0, 10, 32))
for _ in range(2):
    optimizer.zero_grad()
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
model.eval()
with ember.no_grad():
    x = ember.tensor(rng.standard_normal((256, 1, 8, 8)).astype(np.float32))
    F.cross_entropy(model(x), ember.tensor(rng.integers(0, 10, 256))).item()
"""


def timed_run(tree: Path, cache: str, steps: bool) -> float:
    """Wall seconds of one run from `tree` (the example, or `STEPS`), numba's cache in
    `cache`."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])))
    command = ([sys.executable, "-c", STEPS, str(tree / EXAMPLE)] if steps
               else [sys.executable, str(tree / EXAMPLE), "--epochs", "1"])
    with tempfile.TemporaryDirectory() as outputs:   # (the example writes runs/ here)
        start = time.perf_counter()
        subprocess.run(command, cwd=outputs, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start


def cold_and_warm(tree: Path, steps: bool) -> tuple:
    """(cold, warm) wall seconds: a run from an empty cache, then one from its builds."""
    with tempfile.TemporaryDirectory() as cache:
        return timed_run(tree, cache, steps), timed_run(tree, cache, steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="cold/warm pairs per tree")
    parser.add_argument("--against", type=Path, default=None,
                        help="another ember checkout, measured alternately with this one")
    parser.add_argument("--steps", action="store_true",
                        help="time the example network's first steps, not the whole program")
    args = parser.parse_args()
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    extras = {tree: [] for tree in trees}
    for _ in range(args.pairs):
        for tree in trees:
            cold, warm = cold_and_warm(tree, args.steps)
            extras[tree].append(cold - warm)
            print(f"{tree}: cold {cold:.2f} s, warm {warm:.2f} s, first run +{cold - warm:.2f} s",
                  flush=True)
    limit = "" if args.steps else "; limit +10 s"
    for tree, extra in extras.items():
        print(f"{tree}: first run +{min(extra):.2f} to +{max(extra):.2f} s "
              f"(median +{statistics.median(extra):.2f}) over {len(extra)} pairs{limit}")


if __name__ == "__main__":
    main()
