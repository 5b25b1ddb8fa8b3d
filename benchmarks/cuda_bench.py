"""The suite's training workloads on a CUDA GPU: ember (on CuPy) against PyTorch.

The workloads are `benchmarks/run.py`'s, built with each library's default device set to
'cuda', so the same model code, weights and data run on the GPU.  Each timed block ends
with a device synchronisation, so that it measures the GPU's work and not only the
queueing of it.  The two libraries take turns (see `run.alternate`).  Needs CuPy and a
GPU; PyTorch with CUDA for the ratio.  Usage:
    python benchmarks/cuda_bench.py [--only mlp,gpt] [--repeats 30]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import run as suite  # noqa: E402
from benchmarks._harness import try_import_torch  # noqa: E402

WORKLOADS = {
    "mlp": suite.mlp_step,
    "cnn": suite.cnn_step,
    "gpt": suite.gpt_step,
    "lstm": suite.lstm_step,
    "matmul fwd+bwd": suite.matmul_backward,
    "batch-1 CNN": suite.cnn_latency,
}


def _synchronised(lib, step):
    """`step` followed by waiting for the GPU, so that a timing covers the work itself."""
    sync = lib.cuda.synchronize

    def call():
        step()
        sync()
    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    import ember

    if not ember.cuda.is_available():
        sys.exit("cuda_bench: needs CuPy and a CUDA GPU")
    torch = try_import_torch()
    if torch is not None and not torch.cuda.is_available():
        torch = None
    libs = [ember] + ([torch] if torch is not None else [])
    for lib in libs:
        lib.set_default_device("cuda")
    print(f"GPU: {ember.cuda.get_device_name(0)}; PyTorch: "
          f"{torch.__version__ if torch else 'absent'}")
    print(f"{'workload':<16}{'ember ms':>10}{'torch ms':>10}{'ratio':>8}")
    chosen = [w for w in args.only.split(",") if w] or list(WORKLOADS)
    for name in chosen:
        build = WORKLOADS[name]
        steps = [_synchronised(lib, build(lib)) for lib in libs]
        ours, theirs, _ = suite.alternate(steps[0], steps[1] if len(steps) > 1 else None,
                                          args.repeats)
        ratio = f"{ours / theirs:8.2f}" if theirs else f"{'-':>8}"
        theirs_ms = f"{theirs * 1e3:10.2f}" if theirs else f"{'-':>10}"
        print(f"{name:<16}{ours * 1e3:10.2f}{theirs_ms}{ratio}", flush=True)


if __name__ == "__main__":
    main()
