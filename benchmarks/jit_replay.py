"""Graph-mode replay against eager: a conv/batch-norm/pool/linear net, inference under no_grad.

Rows: eager, the replay of a graph traced with grad enabled, and of one traced under
no_grad (which records inference-only ops such as max pooling without indices).  The
same three on PyTorch (``torch.jit.trace``) when it is installed, in alternation; the
ratio column is ember / PyTorch for each row.

    python benchmarks/jit_replay.py [--threads 2] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import alternate, pin_threads_from_argv, print_table, try_import_torch  # noqa: E402

pin_threads_from_argv("2")

import ember  # noqa: E402


def make_net(lib):
    """The same net in either library: three conv/batch-norm/ReLU/max-pool stages, a linear
    head (batch 8 of 3x64x64 images)."""
    nn = lib.nn
    layers = []
    for c_in, c_out in ((3, 32), (32, 64), (64, 64)):
        layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(),
                   nn.MaxPool2d(2)]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(64 * 8 * 8, 10))


def _three(lib, model, example, batch):
    """eager, replay (traced with grad), replay (traced under no_grad) as callables."""
    model = model.eval()
    traced = lib.jit.trace(model, example)
    with lib.no_grad():
        traced_no_grad = lib.jit.trace(model, example)

    def run(fn):
        def call():
            with lib.no_grad():
                fn(batch)
        return call

    return run(model), run(traced), run(traced_no_grad)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="2")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch = try_import_torch()
    ours = _three(ember, make_net(ember), ember.randn(1, 3, 64, 64), ember.randn(8, 3, 64, 64))
    theirs = (None, None, None)
    if torch is not None:
        theirs = _three(torch, make_net(torch), torch.randn(1, 3, 64, 64),
                        torch.randn(8, 3, 64, 64))
    rows = []
    for name, e_fn, t_fn in zip(("eager", "replay (traced with grad)",
                                 "replay (traced under no_grad)"), ours, theirs):
        e, t = alternate(e_fn, t_fn, repeats=args.repeats, inner=5)
        rows.append((name, e, t))
    print_table(rows, unit="ms", scale=1e3)
    eager = rows[0][1]
    for name, e, _ in rows[1:]:
        print(f"{name}: {e / eager:.3f} x ember eager")


if __name__ == "__main__":
    main()
