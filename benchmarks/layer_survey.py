"""A survey of common layers and ops, forward + backward, ember against PyTorch: the
same call on the same data in one process, sorted by the ratio ember/PyTorch (worst
first), to find the ops that fall far behind.

Each op runs on a (8, 64, 32, 32), (32, 64, 256) or (4096, 256) float32 input that
requires grad; a timed call is the forward and ``y.backward(ones)``.  The two libraries
take turns on each op, `--rounds` times (run.py's `alternate`: each turn warmed up
first), and the ratio is that of the two medians; the rounds' own ratios show how far
the machine moved meanwhile (this host has slow spells of a few seconds).  An op's
time can also depend on the process: on the test VM, in some processes, one core
writing what the other had read cost 10-20x, and ops whose calling thread writes a
whole large array slowed 3-6x there (docs/performance.md, thirtieth session): re-run
an outlier alone with --only, and in a few processes, before acting on it.
Usage:
    python benchmarks/layer_survey.py [--threads 2] [--repeats 30] [--rounds 3] [--only elu,where]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._harness import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default="2")

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks import run  # noqa: E402
from benchmarks._harness import libraries_on_threads, turn_arguments  # noqa: E402

# seconds each library runs a case untimed when its turn comes (run.py's WARM is 0.25:
# long enough for the other library's spinning threads to stop; 0.15 keeps the survey's
# 50 cases under a minute and a half)
WARM = 0.15


def cases(lib) -> dict:
    """name -> (input array, function of the input tensor): the same calls on both."""
    fn = lib.nn.functional
    rng = np.random.default_rng(0)

    def data(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    images, rows3, rows = data(8, 64, 32, 32), data(32, 64, 256), data(4096, 256)
    w3, w1, wd, wd7 = (lib.tensor(data(64, 64, 3, 3)), lib.tensor(data(64, 64, 1, 1)),
                       lib.tensor(data(64, 1, 3, 3)), lib.tensor(data(64, 1, 7, 7)))
    picks = lib.tensor(rng.integers(0, 256, (4096, 16)))
    scale, shift = lib.tensor(data(64)), lib.tensor(data(64))
    return {
        "conv 3x3, 64 channels": (images[:2], lambda x: fn.conv2d(x, w3, padding=1)),
        "conv 1x1": (images, lambda x: fn.conv2d(x, w1)),
        "depthwise conv 3x3": (images, lambda x: fn.conv2d(x, wd, padding=1, groups=64)),
        "depthwise conv 3x3/2": (images, lambda x: fn.conv2d(x, wd, stride=2, padding=1,
                                                             groups=64)),
        "depthwise conv 7x7": (images, lambda x: fn.conv2d(x, wd7, padding=3, groups=64)),
        "batch_norm (training)": (images, lambda x: fn.batch_norm(x, None, None,
                                                                  training=True)),
        "instance_norm": (images, lambda x: fn.instance_norm(x)),
        "group_norm": (images, lambda x: fn.group_norm(x, 32)),
        "group_norm (weight, bias)": (images, lambda x: fn.group_norm(x, 32, scale, shift)),
        "layer_norm (2 dims)": (images, lambda x: fn.layer_norm(x, (32, 32))),
        "rms_norm": (rows3, lambda x: fn.rms_norm(x, (256,))),
        "max_pool2d": (images, lambda x: fn.max_pool2d(x, 2)),
        "max_pool2d 3x3/2": (images, lambda x: fn.max_pool2d(x, 3, 2, 1)),
        "avg_pool2d": (images, lambda x: fn.avg_pool2d(x, 2)),
        "adaptive_avg_pool2d 1": (images, lambda x: fn.adaptive_avg_pool2d(x, 1)),
        "interpolate nearest": (images, lambda x: fn.interpolate(x, scale_factor=2)),
        "interpolate bilinear": (images, lambda x: fn.interpolate(x, scale_factor=2,
                                                                  mode="bilinear")),
        "pad reflect": (images, lambda x: fn.pad(x, (1, 1, 1, 1), mode="reflect")),
        "pixel_shuffle": (images, lambda x: fn.pixel_shuffle(x, 2)),
        "sigmoid": (rows, lambda x: lib.sigmoid(x)),
        "leaky_relu": (rows, lambda x: fn.leaky_relu(x, 0.1)),
        "elu": (rows, lambda x: fn.elu(x)),
        "softplus": (rows, lambda x: fn.softplus(x)),
        "hardswish": (rows, lambda x: fn.hardswish(x)),
        "mish": (rows, lambda x: fn.mish(x)),
        "glu": (rows, lambda x: fn.glu(x)),
        "prelu": (images, lambda x: fn.prelu(x, lib.full((64,), 0.25))),
        "softmax (dim 1 of 3)": (rows3, lambda x: fn.softmax(x, 1)),
        "logsumexp": (rows, lambda x: x.logsumexp(1)),
        "cumsum": (rows, lambda x: x.cumsum(1)),
        "norm (dim 1)": (rows, lambda x: x.norm(dim=1)),
        "var": (rows, lambda x: x.var(1)),
        "where": (rows, lambda x: lib.where(x > 0, x, x * 0.1)),
        "clamp": (rows, lambda x: x.clamp(-1, 1)),
        "cat": (rows, lambda x: lib.cat([x, x], 1)),
        "transpose + contiguous": (rows3, lambda x: x.transpose(1, 2).contiguous()),
        "scaled_dot_product_attention": (data(8, 4, 128, 32), lambda q: (
            fn.scaled_dot_product_attention(q, q, q, is_causal=True))),
        "l1_loss": (rows, lambda x: fn.l1_loss(x, x.detach() * 0.5)),
        "mse_loss": (rows, lambda x: fn.mse_loss(x, x.detach() * 0.5)),
        "kl_div": (rows, lambda x: fn.kl_div(fn.log_softmax(x, 1),
                                             fn.softmax(x.detach(), 1),
                                             reduction="batchmean")),
        "cosine_similarity": (rows, lambda x: fn.cosine_similarity(x, x.detach() + 1)),
        "normalize": (rows, lambda x: fn.normalize(x)),
        "tanh": (rows, lambda x: x.tanh()),
        "expm1": (rows, lambda x: x.expm1()),
        "log1p": (rows, lambda x: x.abs().log1p()),
        "pow 2": (rows, lambda x: x ** 2),
        "hardtanh": (rows, lambda x: fn.hardtanh(x)),
        "logsigmoid": (rows, lambda x: fn.logsigmoid(x)),
        "binary_cross_entropy_with_logits": (rows, lambda x: (
            fn.binary_cross_entropy_with_logits(x, (x.detach() > 0).float()))),
        "smooth_l1_loss": (rows, lambda x: fn.smooth_l1_loss(x, x.detach() * 0.5)),
        "huber_loss": (rows, lambda x: fn.huber_loss(x, x.detach() * 0.5)),
        "gather (16 of 256 per row)": (rows, lambda x: x.gather(1, picks)),
    }


def case_step(lib, array, op):
    """One call of the case: forward on a fresh leaf, then ``backward(ones)``."""
    x = lib.tensor(array, requires_grad=True)

    def step():
        x.grad = None
        y = op(x)
        y.backward(lib.ones_like(y))

    return step


def main() -> None:
    args = turn_arguments(__doc__, 30, "comma-separated parts of names")
    torch = libraries_on_threads(args.threads)
    run.WARM = WARM
    ours = cases(ember)
    theirs = cases(torch) if torch is not None else {}
    rows = []
    for name, (array, op) in ours.items():
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        theirs_step = case_step(torch, *theirs[name]) if theirs else None
        e, t, spread = run.alternate(case_step(ember, array, op), theirs_step, args.repeats,
                                     rounds=args.rounds)
        rows.append((name, e, t, spread))
    rows.sort(key=lambda r: -(r[1] / r[2]) if r[2] else 0)
    print(f"{args.threads} threads, median of {args.repeats} in {args.rounds} turns each, "
          "forward + backward, ms")
    print(f"{'op':<34} {'ember':>8} {'PyTorch':>8} {'ratio':>6}  rounds")
    for name, e, t, spread in rows:
        ratio = f"{e / t:6.2f}" if t else f"{'-':>6}"
        torch_ms = f"{t * 1e3:8.3f}" if t else f"{'-':>8}"
        rounds = f"{min(spread):.2f}-{max(spread):.2f}" if spread else ""
        print(f"{name:<34} {e * 1e3:8.3f} {torch_ms} {ratio}  {rounds}")

if __name__ == "__main__":
    main()
