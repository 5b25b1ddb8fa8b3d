"""In-process A/B of the numba kernels on benchmarks/run.py's training steps.

One process builds each workload once per library and times ember's step call by call in
turn under three settings: every numba kernel on; the kernels of the optimizer, LSTM,
batch-norm and max-pool families (optim/_fused.py, ops/_native_rnn.py,
ops/_native_batchnorm.py, ops/_native_pool.py) off; and numba off entirely.  Then
PyTorch's step is timed in a block of its own (its threads and ember's must not
alternate call by call, see docs/performance.md).  On a shared machine this compares
the settings within the same moments, which separate runs of run.py cannot.  Usage:
    python benchmarks/native_ab.py [--only cnn,lstm] [--repeats 20]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks import run  # noqa: E402
from benchmarks._harness import try_import_torch  # noqa: E402
from ember.ops import _native as native  # noqa: E402
from ember.ops import _native_batchnorm, _native_pool, _native_rnn  # noqa: E402
from ember.optim import _fused  # noqa: E402

WORKLOADS = {"cnn": run.cnn_step, "lstm": run.lstm_step, "mlp": run.mlp_step,
             "gpt": run.gpt_step}
# (module, name of the function that says whether its kernels apply)
FAMILY_SWITCHES = [(_fused, "usable"), (_native_rnn, "supports"),
                   (_native_batchnorm, "supports"), (_native_pool, "supports"),
                   (_native_pool, "scatter_supported")]


@contextlib.contextmanager
def families_off():
    """The optimizer / LSTM / batch-norm / max-pool kernels refuse every call."""
    saved = [(module, name, getattr(module, name)) for module, name in FAMILY_SWITCHES]
    for module, name, _ in saved:
        setattr(module, name, lambda *args, **kwargs: False)
    try:
        yield
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)


SETTINGS = {"all kernels": contextlib.nullcontext, "families off": families_off,
            "numba off": lambda: native.use_numba(False)}


def _timed(step) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="cnn,lstm")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(os.cpu_count())
    for key in args.only.split(","):
        step = WORKLOADS[key](ember)
        times = {name: [] for name in SETTINGS}
        for setting in SETTINGS.values():  # warm up (and compile) each setting
            with setting():
                step()
        for _ in range(args.repeats):
            for name, setting in SETTINGS.items():
                with setting():
                    times[name].append(_timed(step))
        theirs = None
        if torch is not None:
            torch_step = WORKLOADS[key](torch)
            torch_step()
            theirs = float(np.median([_timed(torch_step) for _ in range(args.repeats)]))
        print(f"{key}: median of {args.repeats} interleaved calls (ms)")
        for name, values in times.items():
            ours = float(np.median(values))
            ratio = f"  ratio to PyTorch {ours / theirs:.2f}" if theirs else ""
            print(f"  {name:14s} {ours * 1e3:9.2f}{ratio}")
        if theirs:
            print(f"  {'PyTorch':14s} {theirs * 1e3:9.2f}")


if __name__ == "__main__":
    main()
