"""DataLoader throughput: ember vs PyTorch in one run, and the worker-to-main transports.

1. MNIST-shaped loading: 10,000 uint8 28x28 images (the real t10k set from
   shared/data/mnist when it is there, random bytes otherwise), each turned into a float
   tensor scaled to [0, 1] in ``__getitem__``, with its label; batch 64, shuffled, with 0
   and 2 workers (persistent, so start-up is not counted).  Loaders take turns, one epoch
   each, and each reports its best epoch of `--repeats`.  ember runs with its default
   per-sample seeding and with ``seed_per_sample=False``; PyTorch's rows are skipped when
   it is absent.
2. Transport: one worker sends batches of one float32 array of a given size and the main
   process touches every page; per-batch time through shared memory, through the pipe
   with out-of-band buffers, and as one plain pickle (best of `--rounds` interleaved
   rounds).  ``_shared_memory.MIN_SHM_BYTES`` is chosen from this table.

Usage:
    python benchmarks/dataloader.py [--repeats 5] [--rounds 5] [--skip-throughput]
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import try_import_torch  # noqa: E402
from ember.utils.data import _shared_memory  # noqa: E402

_MNIST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..",
                      "shared", "data", "mnist")


def mnist_arrays(n: int = 10_000):
    """(images uint8 [n, 28, 28], labels int64 [n])."""
    images_path = os.path.join(_MNIST, "t10k-images-idx3-ubyte.gz")
    labels_path = os.path.join(_MNIST, "t10k-labels-idx1-ubyte.gz")
    if os.path.exists(images_path) and os.path.exists(labels_path):
        with gzip.open(images_path) as f:
            images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(labels_path) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
        return images[:n].copy(), labels[:n].copy(), "t10k"
    rng = np.random.default_rng(0)
    return (rng.integers(0, 256, (n, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, n).astype(np.int64), "random")


class MnistLike:
    """A map-style dataset written the same way for both libraries."""

    def __init__(self, lib, images, labels):
        self.lib, self.images, self.labels = lib, images, labels

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        image = self.lib.from_numpy(self.images[i]).float().div(255.0).unsqueeze(0)
        return image, int(self.labels[i])


def epoch_time(loader) -> float:
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def throughput(repeats: int) -> None:
    images, labels, source = mnist_arrays()
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    print(f"MNIST-shaped loading ({source} images, {len(images)} samples, batch 64): "
          f"batches/s (best of {repeats} interleaved epochs), higher is better")
    print(f"{'workers':<8} {'ember':>10} {'ember, no reseed':>18} {'torch':>10} "
          f"{'ember/torch':>12}")
    for workers in (0, 2):
        extra = {"persistent_workers": True} if workers else {}
        loaders = {}
        for reseed in (True, False):
            loaders[reseed] = ember.utils.data.DataLoader(
                MnistLike(ember, images, labels), batch_size=64, shuffle=True,
                num_workers=workers, seed_per_sample=reseed, **extra)
        if torch is not None:
            loaders["torch"] = torch.utils.data.DataLoader(
                MnistLike(torch, images, labels), batch_size=64, shuffle=True,
                num_workers=workers, **extra)
        for loader in loaders.values():   # warm-up (and worker start-up, not timed)
            epoch_time(loader)
        best = {key: float("inf") for key in loaders}
        for _ in range(repeats):
            for key, loader in loaders.items():
                best[key] = min(best[key], epoch_time(loader))
        rate = {key: len(loaders[key]) / t for key, t in best.items()}
        del loaders
        t_rate = rate.get("torch")
        t_text = f"{t_rate:10.1f}" if t_rate else f"{'-':>10}"
        ratio = f"{rate[True] / t_rate:12.2f}" if t_rate else f"{'-':>12}"
        print(f"{workers:<8} {rate[True]:10.1f} {rate[False]:18.1f} {t_text} {ratio}")


class Payload:
    """Every item is one ready-made float32 array of `nbytes` (copied, like a real batch)."""

    def __init__(self, nbytes: int, count: int):
        self.array = np.ones(nbytes // 4, dtype=np.float32)
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        return self.array.copy()


def _identity(x):
    return x


def _transport_loader(nbytes: int, mode: str, batches: int):
    """A loader with one persistent worker whose transport is forced to `mode`."""
    saved = _shared_memory.MIN_ARRAY_BYTES, _shared_memory.MIN_SHM_BYTES
    if mode == "shm":
        _shared_memory.MIN_SHM_BYTES = 0
    elif mode == "pipe":
        _shared_memory.MIN_SHM_BYTES = 1 << 62
    else:  # everything inside one pickle
        _shared_memory.MIN_ARRAY_BYTES = 1 << 62
    try:
        loader = ember.utils.data.DataLoader(Payload(nbytes, batches), batch_size=None,
                                             num_workers=1, collate_fn=_identity,
                                             seed_per_sample=False, prefetch_factor=4,
                                             persistent_workers=True)
        next(iter(loader))   # the worker starts (and inherits the settings) now
        return loader
    finally:
        _shared_memory.MIN_ARRAY_BYTES, _shared_memory.MIN_SHM_BYTES = saved


def _epoch_per_batch(loader) -> float:
    start = time.perf_counter()
    count = 0
    for batch in loader:
        batch.reshape(-1).view(np.uint8)[::4096].sum()   # the consumer touches every page
        count += 1
    return (time.perf_counter() - start) / count


def transports(batches: int, rounds: int) -> None:
    print("\nworker -> main transport, one float32 array per batch, one worker: microseconds "
          f"per batch (best of {rounds} interleaved rounds), lower is better")
    print(f"{'batch size':<12} {'shared memory':>14} {'pipe (oob)':>12} {'pickle':>10} "
          f"{'shm/pipe':>9}")
    modes = ("shm", "pipe", "pickle")
    for nbytes in (16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20):
        n = batches if nbytes <= (1 << 20) else max(20, batches // 5)
        loaders = {mode: _transport_loader(nbytes, mode, n) for mode in modes}
        best = {mode: float("inf") for mode in modes}
        for _ in range(rounds):
            for mode in modes:
                best[mode] = min(best[mode], _epoch_per_batch(loaders[mode]))
        del loaders
        label = f"{nbytes >> 10} KiB" if nbytes < (1 << 20) else f"{nbytes >> 20} MiB"
        print(f"{label:<12} {best['shm'] * 1e6:14.1f} {best['pipe'] * 1e6:12.1f} "
              f"{best['pickle'] * 1e6:10.1f} {best['shm'] / best['pipe']:9.2f}")
    print(f"(current choice: shared memory from {_shared_memory.MIN_SHM_BYTES >> 10} KiB of "
          f"large arrays per batch, arrays under {_shared_memory.MIN_ARRAY_BYTES >> 10} KiB "
          "stay in the pickle)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--transport-batches", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    if not args.skip_throughput:
        throughput(args.repeats)
    transports(args.transport_batches, args.rounds)


if __name__ == "__main__":
    main()
