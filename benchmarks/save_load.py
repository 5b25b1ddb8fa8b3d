"""Save and load a 100M-value float32 state dict (100 tensors of 1M) with ember and PyTorch.

ember.save writes atomically: a temporary file, flushed and fsynced, renamed over the
target, then the folder fsynced.  torch.save does not fsync, so the table also shows
torch.save followed by an fsync for a like-for-like comparison.  ember.load reads
through the safetensors library and verifies its checksums (CRC-32 of every 1 MiB of every
entry, hashed on up to four threads, SHA-256 over those digests and over the header; CRC-32
is not cryptographic: it catches corruption, not tampering); torch.load does not check the
data (a flipped byte in a storage
loads silently).  Both load from the page cache, since the files were just written, and
both allocate their buffers with malloc, so whether fresh memory must be faulted in
depends on what the previous run freed (the same for both).  Each workload runs several
times, alternating with PyTorch; the best and the median times are shown.

    python benchmarks/save_load.py [--tensors 100] [--numel 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from _harness import print_table, try_import_torch  # noqa: E402


def timed(pairs: dict, repeats: int) -> dict:
    """Run each (ember_fn, torch_fn) pair `repeats` times in alternation; all timings.

    Every run starts with no dirty pages (an untimed ``os.sync()``): otherwise the fsync of
    one run pays for writing back what an unsynced torch.save left in the page cache.
    """
    times = {name: ([], []) for name in pairs}
    for _ in range(repeats):
        for name, fns in pairs.items():
            for fn, out in zip(fns, times[name]):
                if fn is not None:
                    if hasattr(os, "sync"):
                        os.sync()
                    start = time.perf_counter()
                    fn()
                    out.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=100)
    parser.add_argument("--numel", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    arrays = {f"layer{i}.weight": rng.standard_normal(args.numel, dtype=np.float32)
              for i in range(args.tensors)}
    ours = {k: ember.from_numpy(v) for k, v in arrays.items()}
    torch = try_import_torch()
    theirs = {k: torch.from_numpy(v) for k, v in arrays.items()} if torch else None
    size_mb = sum(a.nbytes for a in arrays.values()) / 1e6

    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(__file__))) as tmp:
        e_path, t_path = os.path.join(tmp, "ember.pt"), os.path.join(tmp, "torch.pt")

        def torch_save_fsync():
            with open(t_path, "wb") as f:
                torch.save(theirs, f)
                f.flush()
                os.fsync(f.fileno())

        ember.save(ours, e_path)  # warm up both, and have files to load
        if torch:
            torch.save(theirs, t_path)
        pairs = {
            "save (ember fsyncs, torch does not)": (lambda: ember.save(ours, e_path),
                                                    lambda: torch.save(theirs, t_path)),
            "save, both fsync": (lambda: ember.save(ours, e_path), torch_save_fsync),
            "load": (lambda: ember.load(e_path), lambda: torch.load(t_path)),
            "load mmap=True": (lambda: ember.load(e_path, mmap=True),
                               lambda: torch.load(t_path, mmap=True)),
        }
        if torch is None:
            pairs = {k: (v[0], None) for k, v in pairs.items()}
        times = timed(pairs, args.repeats)
        check = ember.load(e_path)
        assert all(np.array_equal(check[k].numpy(), arrays[k]) for k in arrays)

    print(f"state dict: {args.tensors} float32 tensors of {args.numel:,} values "
          f"({size_mb:.0f} MB), {args.repeats} alternating runs")
    for label, stat in (("best", min), ("median", statistics.median)):
        rows = [(name, stat(e), stat(t) if t else None) for name, (e, t) in times.items()]
        save, load = rows[0], rows[2]
        rows.append(("save + load (torch without fsync)", save[1] + load[1],
                     save[2] + load[2] if torch else None))
        print(f"\n{label} of {args.repeats}:")
        print_table(rows, unit="ms", scale=1e3)
    print("note: torch.save does not fsync; ember.save's time includes its fsyncs. "
          "ember.load verifies checksums of all data (CRC-32); torch.load does not.")
    if torch is None:
        print("PyTorch is not installed: ember times only.")


if __name__ == "__main__":
    main()
