"""Save and load a 100M-value float32 state dict (100 tensors of 1M) with ember and PyTorch.

ember.save writes atomically: a temporary file, flushed and fsynced, renamed over the
target, then the folder fsynced.  torch.save does not fsync, so the table also shows
torch.save followed by an fsync for a like-for-like comparison.  ember.load verifies the
checksums (CRC-32 of every 1 MiB, SHA-256 over them and the header); torch.load checks
the zip's CRC-32s.  Both load from the page cache, since the file was just written.

    python benchmarks/save_load.py [--tensors 100] [--numel 1000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from _harness import alternate, print_table, try_import_torch  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=100)
    parser.add_argument("--numel", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
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

        rows = []
        e, t = alternate(lambda: ember.save(ours, e_path),
                         (lambda: torch.save(theirs, t_path)) if torch else None,
                         repeats=args.repeats)
        rows.append(("save (ember fsyncs, torch does not)", e, t))
        save_e = e
        e, t_sync = alternate(lambda: ember.save(ours, e_path),
                              torch_save_fsync if torch else None, repeats=args.repeats)
        rows.append(("save, both fsync", e, t_sync))
        e, t_load = alternate(lambda: ember.load(e_path),
                              (lambda: torch.load(t_path)) if torch else None,
                              repeats=args.repeats)
        rows.append(("load", e, t_load))
        load_e = e
        e, t = alternate(lambda: ember.load(e_path, mmap=True),
                         (lambda: torch.load(t_path, mmap=True)) if torch else None,
                         repeats=args.repeats)
        rows.append(("load mmap=True", e, t))
        rows.append(("save + load (torch without fsync)", save_e + load_e,
                     rows[0][2] + t_load if torch else None))
        check = ember.load(e_path)
        assert all(np.array_equal(check[k].numpy(), arrays[k]) for k in arrays)

    print(f"state dict: {args.tensors} float32 tensors of {args.numel:,} values "
          f"({size_mb:.0f} MB); median of {args.repeats}")
    print_table(rows, unit="ms", scale=1e3)
    print("note: torch.save does not fsync; ember.save's time includes its fsyncs.")
    if torch is None:
        print("PyTorch is not installed: ember times only.")


if __name__ == "__main__":
    main()
