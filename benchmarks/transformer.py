"""Transformer encoder layer training step: ember vs PyTorch.

One TransformerEncoderLayer (d_model 128, 4 heads, feed-forward 2048, dropout 0.1,
batch_first) on a (32, 64, 128) batch: forward, mean squared error against a fixed
target, backward and one SGD step.  Both libraries start from the same weights and run
with one BLAS/compute thread, timed in CPU time, by default (``--threads``, ``--clock``;
see lstm.py for why).  Usage:
    python benchmarks/transformer.py [--repeats 7] [--threads 1] [--clock cpu]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from benchmarks._harness import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default="1")

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import print_table, try_import_torch  # noqa: E402
from benchmarks.lstm import alternate_timed  # noqa: E402

D_MODEL, HEADS, SEQ, BATCH = 128, 4, 64, 32


def make_step(lib, state=None):
    """A closure running one training step, and the layer's state dict (for the other lib)."""
    layer = lib.nn.TransformerEncoderLayer(D_MODEL, HEADS, batch_first=True)
    if state is not None:
        layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32))
    target = lib.tensor(rng.standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32))
    opt = lib.optim.SGD(layer.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(layer(x), target)
        loss.backward()
        opt.step()
        return loss

    weights = {k: v.detach().numpy().copy() for k, v in layer.state_dict().items()}
    return step, weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(args.threads)
    ours, weights = make_step(ember)
    theirs = make_step(torch, weights)[0] if torch is not None else None
    e, t = alternate_timed(ours, theirs, args.repeats, args.clock)
    print(f"TransformerEncoderLayer training step: d_model {D_MODEL}, {HEADS} heads, seq {SEQ}, "
          f"batch {BATCH}; {args.threads} thread(s), {args.clock} time, median of "
          f"{args.repeats}")
    print_table([("forward + backward + SGD step", e, t)], unit="ms", scale=1e3)


if __name__ == "__main__":
    main()
