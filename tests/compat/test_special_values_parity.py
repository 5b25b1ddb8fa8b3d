"""Parity with PyTorch at special values: the elementwise ops and their gradients at 0,
-0, +-inf, NaN, the edges of piecewise functions and ties between operands, where a
formula that is right in general can give inf - inf or 0 / 0.

PyTorch itself answers some of these differently in its scalar loop and its vectorized
one (a NaN's gradient in hardtanh, elu, hardswish); a point is compared only where its
answer is the same for a 19-element tensor and for 40 copies of it.  Skipped when
PyTorch is not installed."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
POINTS = [NAN, INF, -INF, -6.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 20.0,
          -20.0, 1e-30, -1e-30, 2.9999]
UNARY = ["abs", "acos", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "deg2rad",
         "erf", "erfc", "exp", "exp2", "expm1", "floor", "frac", "log", "log10", "log1p",
         "log2", "logit", "neg", "nan_to_num", "rad2deg", "reciprocal", "round", "rsqrt",
         "sigmoid", "sign", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
         "relu", "angle"]
ACTIVATIONS = ["hardswish", "hardsigmoid", "hardtanh", "relu6", "elu", "celu", "selu",
               "silu", "mish", "softplus", "logsigmoid", "softsign", "tanhshrink"]
BINARY = ["add", "sub", "mul", "div", "pow", "atan2", "fmod", "remainder", "maximum",
          "minimum", "fmax", "fmin", "hypot", "copysign", "xlogy", "logaddexp", "logaddexp2",
          "nextafter", "float_power"]
PAIR_POINTS = [NAN, INF, -INF, -2.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0]
# (op, dtype): where the two disagree and ember keeps its answer
KNOWN = {
    # PyTorch's float32 GELU gives nan at +inf (its vectorized erf); ember inf, the limit
    ("gelu", "float32"),
}


def _run(lib, fn, columns, dtype, reps):
    """The output and the gradients (None where there is no gradient) of ``fn`` on
    tensors holding `columns` repeated `reps` times, first copy only."""
    tensors = [lib.tensor(np.array(c * reps, dtype), requires_grad=True) for c in columns]
    out = fn(lib, *tensors)
    values = [out.detach().numpy()[:len(columns[0])].astype(np.float64)]
    if out.requires_grad:
        out.backward(lib.ones_like(out))
        values += [None if t.grad is None else t.grad.numpy()[:len(columns[0])]
                   .astype(np.float64) for t in tensors]
    return values


def _same(a, b):
    return np.isclose(a, b, rtol=2e-5, atol=1e-6, equal_nan=True)


def _differences(name, fn, columns, labels, dtype):
    theirs = [_run(torch, fn, columns, dtype, reps) for reps in (1, 40)]
    ours = [_run(ember, fn, columns, dtype, reps) for reps in (1, 40)]
    found = []
    for k, what in enumerate(["value"] + [f"grad {i}" for i in range(len(columns))]):
        t1, t40 = (t[k] if k < len(t) else None for t in theirs)
        e1, e40 = (e[k] if k < len(e) else None for e in ours)
        if t1 is None or e1 is None:
            if (t1 is None) != (e1 is None):
                found.append(f"{name} {dtype} {what}: PyTorch has one: {t1 is not None}")
            continue
        bad = _same(t1, t40) & ~(_same(e1, t1) & _same(e40, t40))
        found += [f"{name} {dtype} {what} at {labels[i]}: ember {e40[i]}, PyTorch {t40[i]}"
                  for i in np.nonzero(bad)[0][:3]]
    return found


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_ops_and_activations_at_special_values(dtype):
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in UNARY:
            found += _differences(name, lambda lib, x, n=name: getattr(lib, n)(x), [POINTS],
                                  POINTS, dtype)
        for name in ACTIVATIONS + ["gelu"]:
            if (name, dtype) in KNOWN:
                continue
            found += _differences(
                name, lambda lib, x, n=name: getattr(lib.nn.functional, n)(x), [POINTS],
                POINTS, dtype)
        for name, call in [("threshold", lambda fn, x: fn.threshold(x, 1.0, 2.0)),
                           ("hardshrink", lambda fn, x: fn.hardshrink(x, 0.5)),
                           ("softshrink", lambda fn, x: fn.softshrink(x, 0.5)),
                           ("leaky_relu", lambda fn, x: fn.leaky_relu(x, 0.1))]:
            found += _differences(name, lambda lib, x, c=call: c(lib.nn.functional, x),
                                  [POINTS], POINTS, dtype)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_ops_at_special_values(dtype):
    pairs = list(itertools.product(PAIR_POINTS, PAIR_POINTS))
    columns = [[a for a, _ in pairs], [b for _, b in pairs]]
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in BINARY:
            found += _differences(name, lambda lib, a, b, n=name: getattr(lib, n)(a, b),
                                  columns, pairs, dtype)
        for name, call in [("smooth_l1_loss", lambda fn, a, b: fn.smooth_l1_loss(
                               a, b, reduction="none")),
                           ("huber_loss", lambda fn, a, b: fn.huber_loss(
                               a, b, reduction="none", delta=0.5)),
                           ("l1_loss", lambda fn, a, b: fn.l1_loss(a, b, reduction="none")),
                           ("mse_loss", lambda fn, a, b: fn.mse_loss(a, b, reduction="none"))]:
            found += _differences(name, lambda lib, a, b, c=call: c(lib.nn.functional, a, b),
                                  columns, pairs, dtype)
    assert not found, "\n".join(found)


ROWS = [[1.0, 2.0, 3.0, 4.0], [NAN, 1.0, 2.0, 3.0], [INF, 1.0, 2.0, 3.0], [-INF, 1.0, 2.0, 3.0],
        [INF, -INF, 1.0, 2.0], [2.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0], [-0.0, 0.0, 1.0, 1.0],
        [INF, INF, 1.0, 2.0], [NAN, INF, -INF, 0.0], [1e30, 1e30, -1e30, 1.0],
        [3.0, 3.0, 3.0, 3.0], [-1.0, -2.0, -3.0, -4.0], [1e-30, 2e-30, 0.0, 1.0]]
REDUCTIONS = {
    "sum": lambda lib, x: x.sum(1), "mean": lambda lib, x: x.mean(1),
    "prod": lambda lib, x: x.prod(1), "amax": lambda lib, x: x.amax(1),
    "amin": lambda lib, x: x.amin(1), "max": lambda lib, x: x.max(1)[0],
    "min": lambda lib, x: x.min(1)[0], "var": lambda lib, x: x.var(1),
    "std": lambda lib, x: x.std(1), "norm": lambda lib, x: x.norm(dim=1),
    "norm 1": lambda lib, x: x.norm(p=1, dim=1),
    "norm inf": lambda lib, x: x.norm(p=INF, dim=1),
    "logsumexp": lambda lib, x: x.logsumexp(1), "cumsum": lambda lib, x: x.cumsum(1),
    "cumprod": lambda lib, x: x.cumprod(1), "cummax": lambda lib, x: x.cummax(1)[0],
    "median": lambda lib, x: x.median(1)[0], "nansum": lambda lib, x: x.nansum(1),
    "nanmean": lambda lib, x: x.nanmean(1), "softmax": lambda lib, x: x.softmax(1),
    "log_softmax": lambda lib, x: x.log_softmax(1), "sort": lambda lib, x: x.sort(1)[0],
    "logcumsumexp": lambda lib, x: x.logcumsumexp(1),
    "normalize": lambda lib, x: lib.nn.functional.normalize(x, dim=1),
    "nanmedian": lambda lib, x: x.nanmedian(1)[0],
}
# (op, dtype): where the two disagree and ember keeps its answer
KNOWN_ROWS = {
    # PyTorch's float32 std takes the root in float64: 1e30s give 9.6e29 where ember's
    # float32 squares overflow to inf
    ("std", "float32"),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reductions_over_rows_holding_special_values(dtype):
    found = _table_differences(REDUCTIONS, ROWS, dtype, KNOWN_ROWS, _same)
    assert not found, "\n".join(found)


def _table_differences(table: dict, data, dtype, known, same) -> list:
    """For each op of `table` (name -> fn(lib, x)) on a tensor holding `data`: where its
    value or its gradient (of the outputs' sum) differs between ember and PyTorch."""
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn in table.items():
            if (name, dtype) in known:
                continue
            theirs, ours = (_whole_run(lib, fn, data, dtype) for lib in (torch, ember))
            for what, a, b in zip(("value", "grad"), ours, theirs):
                found += [f"{name} {dtype} {what} at {tuple(i)}: ember {a[tuple(i)]}, "
                          f"PyTorch {b[tuple(i)]}" for i in np.argwhere(~same(a, b))[:3]]
    return found


def _whole_run(lib, fn, data, dtype):
    x = lib.tensor(np.array(data, dtype), requires_grad=True)
    out = fn(lib, x)
    out.backward(lib.ones_like(out))
    return out.detach().numpy().astype(np.float64), x.grad.numpy().astype(np.float64)


IMAGE = [[[[1.0, NAN, 3.0, 4.0], [5.0, 6.0, INF, 8.0], [9.0, 9.0, -INF, 12.0],
           [13.0, 14.0, 15.0, 16.0]],
          [[2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0], [0.0, 0.0, 0.0, 0.0],
           [-1.0, -1.0, 5.0, 5.0]]]]
LAYERS = {
    "max_pool2d": lambda lib, x: lib.nn.functional.max_pool2d(x, 2),
    "max_pool2d 3x3/1": lambda lib, x: lib.nn.functional.max_pool2d(x, 3, 1, 1),
    "max_pool2d ceil": lambda lib, x: lib.nn.functional.max_pool2d(x, 3, 2, ceil_mode=True),
    "avg_pool2d": lambda lib, x: lib.nn.functional.avg_pool2d(x, 3, 1, 1),
    "avg_pool2d no pad count": lambda lib, x: lib.nn.functional.avg_pool2d(
        x, 3, 1, 1, count_include_pad=False),
    "adaptive_max_pool2d": lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, 3),
    "adaptive_avg_pool2d": lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x, 3),
    "lp_pool2d": lambda lib, x: lib.nn.functional.lp_pool2d(x, 2, 2),
    "bilinear": lambda lib, x: lib.nn.functional.interpolate(x, scale_factor=2,
                                                             mode="bilinear"),
    "nearest": lambda lib, x: lib.nn.functional.interpolate(x, size=(3, 5)),
    "bicubic": lambda lib, x: lib.nn.functional.interpolate(x, size=(5, 5), mode="bicubic",
                                                            align_corners=True),
    "batch_norm": lambda lib, x: lib.nn.functional.batch_norm(x, None, None, training=True),
    "instance_norm": lambda lib, x: lib.nn.functional.instance_norm(x),
    "group_norm": lambda lib, x: lib.nn.functional.group_norm(x, 2),
    "layer_norm": lambda lib, x: lib.nn.functional.layer_norm(x, (4, 4)),
    "local_response_norm": lambda lib, x: lib.nn.functional.local_response_norm(x, 2),
    "softmax over channels": lambda lib, x: lib.softmax(x, 1),
    "conv2d": lambda lib, x: lib.nn.functional.conv2d(x, lib.ones(1, 2, 2, 2,
                                                                  dtype=x.dtype)),
    "pad replicate": lambda lib, x: lib.nn.functional.pad(x, (1, 2, 1, 0), mode="replicate"),
    "pad circular": lambda lib, x: lib.nn.functional.pad(x, (1, 2, 1, 0), mode="circular"),
    "cummin": lambda lib, x: x.cummin(3)[0],
    "renorm": lambda lib, x: x.renorm(2, 1, 5.0),
    "cosine_similarity": lambda lib, x: lib.nn.functional.cosine_similarity(x, x.flip(3),
                                                                            dim=3),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layers_on_an_image_holding_special_values(dtype):
    found = _table_differences(LAYERS, IMAGE, dtype, set(), lambda a, b: np.isclose(
        a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
    assert not found, "\n".join(found)
