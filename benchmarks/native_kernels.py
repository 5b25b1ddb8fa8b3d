"""The numba kernels of ember/ops/_native_*.py against PyTorch, one op at a time.

Each row is an op at a GPT-ish size ((64*128, 256) float32 by default) through ember's
public API: forward under no_grad, and forward + backward (a recorded forward, then
``y.backward(g)``).  Three timings: ember with its numba kernels, ember's NumPy path
(``use_numba(False)``), PyTorch; the ratios ember/PyTorch (lower is better) are what
docs/performance.md quotes.  The three take turns call by call (see _harness.alternate).
Usage:
    python benchmarks/native_kernels.py [--rows 8192] [--cols 256] [--repeats 15]
                                        [--threads N] [--only gelu,softmax]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._harness import median_time, pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default=None)

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks._harness import try_import_torch  # noqa: E402
from ember.ops import _native as native  # noqa: E402


def ops(lib, shape):
    """name -> a function of x calling the op: the same calls on both libraries."""
    fn = lib.nn.functional
    cols = shape[-1]
    w = lib.ones(cols)
    b = lib.zeros(cols)
    target = lib.tensor(np.random.default_rng(0).integers(0, cols, shape[0]))
    wc, bc = lib.ones(64), lib.zeros(64)  # (group norm: x as (-1, 64 channels, 32))
    values = lib.tensor(np.random.default_rng(2).standard_normal(shape).astype(np.float32))
    return {
        "gelu": lambda x: fn.gelu(x),
        "gelu tanh": lambda x: fn.gelu(x, approximate="tanh"),
        "silu": lambda x: fn.silu(x),
        "tanh": lambda x: lib.tanh(x),
        "softmax": lambda x: fn.softmax(x, -1),
        "log_softmax": lambda x: fn.log_softmax(x, -1),
        "layer_norm": lambda x: fn.layer_norm(x, (cols,), w, b),
        "cross_entropy": lambda x: fn.cross_entropy(x, target),
        "dropout p=0.1": lambda x: fn.dropout(x, 0.1, training=True),
        "group_norm": lambda x: fn.group_norm(x.reshape(-1, 64, 32), 32, wc, bc),
        "mse_loss": lambda x: fn.mse_loss(x, values),
    }


def workloads(lib, shape, name):
    """(forward, forward + backward) closures of op `name` on `lib`."""
    fn = ops(lib, shape)[name]
    data = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x = lib.tensor(data)
    xr = lib.tensor(data, requires_grad=True)
    y0 = fn(xr)
    g = lib.ones(tuple(y0.shape)) if y0.dim() else None

    def forward():
        with lib.no_grad():
            fn(x)

    def forward_backward():
        xr.grad = None
        fn(xr).backward(g)

    return forward, forward_backward


def _turns(fns, repeats):
    """Median seconds of each closure, the closures taking turns call by call."""
    for f in fns:
        f()
        f()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for t, f in zip(times, fns):
            t.append(median_time(f, repeats=1, warmup=0))
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64 * 128)
    parser.add_argument("--cols", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    torch = try_import_torch()
    threads = args.threads or os.cpu_count()
    ember.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    shape = (args.rows, args.cols)
    names = list(ops(ember, shape))
    if args.only:
        names = [n for n in names if n.split()[0] in args.only.split(",")]
    print(f"shape {shape} float32, {threads} threads, numba "
          f"{'on' if native.enabled() else 'unavailable'}; median of {args.repeats}; "
          "times in ms, ratios ember/PyTorch")
    print(f"{'op':<15} {'pass':<9} {'numba':>8} {'NumPy':>8} {'torch':>8} "
          f"{'numba/pt':>9} {'NumPy/pt':>9}")
    for name in names:
        e_fwd, e_bwd = workloads(ember, shape, name)

        def off(f):
            def run():
                with native.use_numba(False):
                    f()
            return run

        n_fwd, n_bwd = off(e_fwd), off(e_bwd)
        t_fwd, t_bwd = workloads(torch, shape, name) if torch is not None else (None, None)
        for label, fns in (("fwd", (e_fwd, n_fwd, t_fwd)), ("fwd+bwd", (e_bwd, n_bwd, t_bwd))):
            times = _turns([f for f in fns if f is not None], args.repeats)
            e, n = times[0], times[1]
            t = times[2] if len(times) > 2 else None
            ratios = (f"{e / t:9.2f} {n / t:9.2f}" if t else f"{'-':>9} {'-':>9}")
            tt = f"{t * 1e3:8.3f}" if t else f"{'-':>8}"
            print(f"{name:<15} {label:<9} {e * 1e3:8.3f} {n * 1e3:8.3f} {tt} {ratios}")


if __name__ == "__main__":
    main()
