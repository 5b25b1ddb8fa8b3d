"""LSTM language model training step: ember vs PyTorch (word_language_model style).

Embedding(10000, 256) -> dropout -> 2-layer LSTM(256, 256, dropout=0.2) -> dropout ->
Linear(256, 10000), cross-entropy over a (35, 20) batch of token ids, backward, gradient
clipping and one SGD step.  Both libraries start from the same weights.

Both run with one BLAS/compute thread by default (``--threads`` to change): on a shared
machine, multi-threaded BLAS timings of small matrix products are dominated by thread
contention.  Times are the process's CPU time by default (``--clock wall`` for wall time):
with one thread on an idle machine the two agree, and on a busy one CPU time is not
inflated by the other processes.  Usage:
    python benchmarks/lstm.py [--repeats 7] [--threads 1] [--clock cpu]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from benchmarks._harness import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default="1")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import alternate, print_table, try_import_torch  # noqa: E402

VOCAB, EMBED, HIDDEN, LAYERS, SEQ, BATCH = 10_000, 256, 256, 2, 35, 20


def make_step(lib, state=None):
    """A closure running one training step, and the model's state dict (for the other lib)."""
    nn = lib.nn

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(VOCAB, EMBED)
            self.rnn = nn.LSTM(EMBED, HIDDEN, LAYERS, dropout=0.2)
            self.decoder = nn.Linear(HIDDEN, VOCAB)

        def forward(self, tokens, hidden):
            emb = self.drop(self.encoder(tokens))
            output, hidden = self.rnn(emb, hidden)
            return self.decoder(self.drop(output)).view(-1, VOCAB), hidden

    model = LanguageModel()
    if state is not None:
        model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    rng = np.random.default_rng(0)
    tokens = lib.tensor(rng.integers(0, VOCAB, (SEQ, BATCH)))
    targets = lib.tensor(rng.integers(0, VOCAB, SEQ * BATCH))
    opt = lib.optim.SGD(model.parameters(), lr=20.0)
    hidden = (lib.zeros(LAYERS, BATCH, HIDDEN), lib.zeros(LAYERS, BATCH, HIDDEN))

    def step():
        opt.zero_grad()
        out, _ = model(tokens, hidden)
        loss = nn.functional.cross_entropy(out, targets)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        return loss

    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return step, weights


def alternate_timed(ember_fn, torch_fn, repeats: int, clock: str) -> tuple:
    """Median seconds per call of each workload, timed in alternation with `clock`."""
    if clock == "wall":
        return alternate(ember_fn, torch_fn, repeats=repeats)
    timings = ([], [])
    for fn in (ember_fn, torch_fn):
        if fn is not None:
            fn()
            fn()
    for _ in range(repeats):
        for fn, out in zip((ember_fn, torch_fn), timings):
            if fn is not None:
                start = time.process_time()
                fn()
                out.append(time.process_time() - start)
    return (statistics.median(timings[0]),
            statistics.median(timings[1]) if timings[1] else None)


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
    print(f"LSTM LM training step: vocab {VOCAB}, embedding {EMBED}, {LAYERS} layers of "
          f"{HIDDEN}, seq {SEQ}, batch {BATCH}; {args.threads} thread(s), {args.clock} time, "
          f"median of {args.repeats}")
    print_table([("forward + backward + clip + SGD step", e, t)], unit="ms", scale=1e3)


if __name__ == "__main__":
    main()
