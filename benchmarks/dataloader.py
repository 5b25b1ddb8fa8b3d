"""DataLoader throughput: ember vs PyTorch in one run, and the worker-to-main transports.

1. MNIST-shaped loading: 10,000 uint8 28x28 images (the real t10k set from
   shared/data/mnist when it is there, random bytes otherwise), each turned into a float
   tensor scaled to [0, 1] in ``__getitem__``, with its label; batch 64, one epoch, with 0
   and 2 workers (persistent workers, so start-up is not counted; the median epoch of
   `--repeats` after one warm-up epoch).  ember runs with its default per-sample seeding
   and with ``seed_per_sample=False``; PyTorch's rows are skipped when it is absent.
2. Transport: one worker sends batches of one float32 array of a given size, the main
   process touches every page; per batch time through shared memory, through the pipe
   with out-of-band buffers, and as a plain pickle.  ``_shared_memory.MIN_SHM_BYTES`` is
   chosen from this table.

Usage:
    python benchmarks/dataloader.py [--repeats 3] [--transport-batches 200]
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
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


def epoch_time(loader, repeats: int) -> float:
    for _ in loader:          # warm-up (and worker start-up)
        pass
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in loader:
            pass
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def throughput(repeats: int) -> None:
    images, labels, source = mnist_arrays()
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    print(f"MNIST-shaped loading ({source} images, {len(images)} samples, batch 64): "
          "batches/s, higher is better")
    print(f"{'workers':<8} {'ember':>10} {'ember, no reseed':>18} {'torch':>10} "
          f"{'ember/torch':>12}")
    for workers in (0, 2):
        extra = {"persistent_workers": True} if workers else {}
        rows = []
        for reseed in (True, False):
            loader = ember.utils.data.DataLoader(
                MnistLike(ember, images, labels), batch_size=64, shuffle=True,
                num_workers=workers, seed_per_sample=reseed, **extra)
            rows.append(len(loader) / epoch_time(loader, repeats))
            del loader
        t_rate = None
        if torch is not None:
            loader = torch.utils.data.DataLoader(MnistLike(torch, images, labels), batch_size=64,
                                                 shuffle=True, num_workers=workers, **extra)
            t_rate = len(loader) / epoch_time(loader, repeats)
            del loader
        t_text = f"{t_rate:10.1f}" if t_rate else f"{'-':>10}"
        ratio = f"{rows[0] / t_rate:12.2f}" if t_rate else f"{'-':>12}"
        print(f"{workers:<8} {rows[0]:10.1f} {rows[1]:18.1f} {t_text} {ratio}")


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


def transport_time(nbytes: int, mode: str, batches: int) -> float:
    """Seconds per batch from one worker, the main process touching every page."""
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
                                             seed_per_sample=False, prefetch_factor=4)
        it = iter(loader)
        first = next(it)
        del first
        start = time.perf_counter()
        count = 0
        for batch in it:
            batch.reshape(-1).view(np.uint8)[::4096].sum()
            count += 1
        return (time.perf_counter() - start) / count
    finally:
        _shared_memory.MIN_ARRAY_BYTES, _shared_memory.MIN_SHM_BYTES = saved


def transports(batches: int) -> None:
    print("\nworker -> main transport, one float32 array per batch: microseconds per batch, "
          "lower is better")
    print(f"{'batch size':<12} {'shared memory':>14} {'pipe (oob)':>12} {'pickle':>10} "
          f"{'shm/pipe':>9}")
    for nbytes in (16 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20):
        n = batches if nbytes <= (1 << 20) else max(20, batches // 4)
        times = {mode: min(transport_time(nbytes, mode, n) for _ in range(2))
                 for mode in ("shm", "pipe", "pickle")}
        label = f"{nbytes >> 10} KiB" if nbytes < (1 << 20) else f"{nbytes >> 20} MiB"
        print(f"{label:<12} {times['shm'] * 1e6:14.1f} {times['pipe'] * 1e6:12.1f} "
              f"{times['pickle'] * 1e6:10.1f} {times['shm'] / times['pipe']:9.2f}")
    print(f"(current choice: shared memory from {_shared_memory.MIN_SHM_BYTES >> 10} KiB of "
          f"large arrays per batch, arrays under {_shared_memory.MIN_ARRAY_BYTES >> 10} KiB "
          "stay in the pickle)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--transport-batches", type=int, default=200)
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    if not args.skip_throughput:
        throughput(args.repeats)
    transports(args.transport_batches)


if __name__ == "__main__":
    main()
