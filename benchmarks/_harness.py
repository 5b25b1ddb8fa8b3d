"""Shared timing helpers for the benchmarks: alternate ember and PyTorch, take medians."""

from __future__ import annotations

import os
import statistics
import sys
import time


def pin_threads_from_argv(default: str | None = "1") -> None:
    """Set the BLAS thread count from ``--threads N`` (or `default`); call before NumPy loads.

    BLAS libraries read their thread count once, when they are loaded, so this must run
    before the first ``import numpy``.  With no flag and no default nothing is set.
    """
    value = default
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            value = sys.argv[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
    if value:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = value


def try_import_torch():
    """PyTorch when installed (with its thread count matched to NumPy's), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def turn_arguments(doc: str, repeats: int, only_help: str, compiled_help: str | None = None):
    """The parsed arguments of a benchmark whose libraries take turns (run.py's
    `alternate`): --threads (2), --repeats, --rounds (3) and --only; with
    `compiled_help`, --compiled too."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=None, help=only_help)
    if compiled_help is not None:
        parser.add_argument("--compiled", action="store_true", help=compiled_help)
    return parser.parse_args()


def libraries_on_threads(threads: int):
    """ember and PyTorch (where installed) each set to `threads` threads; PyTorch's module,
    or None.  (ember is imported here, not at the top: `pin_threads_from_argv` must run
    before NumPy loads.)"""
    import ember

    ember.set_num_threads(threads)
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(threads)
    return torch


def median_time(fn, repeats: int = 7, inner: int = 1, warmup: int = 2) -> float:
    """Median seconds of one call of `fn`, over `repeats` timings of `inner` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


def alternate(ember_fn, torch_fn, repeats: int = 7, inner: int = 1) -> tuple:
    """Time both workloads in alternation (so machine noise hits both alike)."""
    e_times, t_times = [], []
    for fn in (ember_fn, torch_fn):
        if fn is not None:
            fn()
            fn()
    for _ in range(repeats):
        e_times.append(median_time(ember_fn, repeats=1, inner=inner, warmup=0))
        if torch_fn is not None:
            t_times.append(median_time(torch_fn, repeats=1, inner=inner, warmup=0))
    e = statistics.median(e_times)
    t = statistics.median(t_times) if t_times else None
    return e, t


def print_table(rows, unit: str = "us", scale: float = 1e6) -> None:
    """rows: (name, ember_seconds, torch_seconds or None)."""
    print(f"{'workload':<40} {'ember ' + unit:>12} {'torch ' + unit:>12} {'ratio':>8}")
    for name, e, t in rows:
        ts = f"{t * scale:12.2f}" if t else f"{'-':>12}"
        ratio = f"{e / t:8.2f}" if t else f"{'-':>8}"
        print(f"{name:<40} {e * scale:12.2f} {ts} {ratio}")
