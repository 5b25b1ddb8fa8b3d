"""Converters of pooling, adaptive pooling, interpolation and padding."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.nn import functional as F
from tests.onnx._check import check_fn, op_types

POOLS = {
    "max1d": lambda: nn.MaxPool1d(3, stride=2, padding=1),
    "max2d": lambda: nn.MaxPool2d(2),
    "max2d_ceil": lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True),
    "max2d_dilated": lambda: nn.MaxPool2d(2, stride=1, padding=1, dilation=2),
    "max3d": lambda: nn.MaxPool3d(2, stride=(1, 2, 2), padding=(1, 0, 1)),
    "avg1d": lambda: nn.AvgPool1d(3, stride=2, padding=1),
    "avg2d": lambda: nn.AvgPool2d(2),
    "avg2d_no_pad_count": lambda: nn.AvgPool2d(3, stride=2, padding=1,
                                               count_include_pad=False),
    "avg2d_ceil": lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True),
    "avg2d_ceil_no_pad_count": lambda: nn.AvgPool2d(2, stride=2, ceil_mode=True,
                                                    count_include_pad=False),
    "avg2d_divisor": lambda: nn.AvgPool2d(2, divisor_override=3),
    "avg3d": lambda: nn.AvgPool3d(2, stride=1, padding=1),
    "adaptive_avg1d": lambda: nn.AdaptiveAvgPool1d(3),
    "adaptive_avg2d_global": lambda: nn.AdaptiveAvgPool2d(1),
    "adaptive_avg2d_divisible": lambda: nn.AdaptiveAvgPool2d((3, 4)),
    "adaptive_avg2d_uneven": lambda: nn.AdaptiveAvgPool2d((4, 5)),
    "adaptive_avg3d": lambda: nn.AdaptiveAvgPool3d((1, 2, 2)),
    "adaptive_max2d": lambda: nn.AdaptiveMaxPool2d((3, 2)),
    "adaptive_max2d_global": lambda: nn.AdaptiveMaxPool2d(1),
    "lp1d": lambda: nn.LPPool1d(2, 3, stride=2),
    "lp2d": lambda: nn.LPPool2d(3, 2),
}

INPUTS = {"1d": (2, 3, 12), "2d": (2, 3, 6, 8), "3d": (2, 3, 4, 6, 4)}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pool(name):
    nd = next(k for k in INPUTS if k in name)
    x = ember.randn(*INPUTS[nd])
    if name.startswith("lp"):
        x = x.abs() + 0.1
    check_fn(POOLS[name](), x)


def test_global_average_is_a_reduce_mean():
    proto = check_fn(nn.AdaptiveAvgPool2d(1), ember.randn(2, 3, 5, 5))
    assert op_types(proto) == {"ReduceMean"}


def test_max_pool_indices():
    def fn(x):
        return F.max_pool2d(x, 2, return_indices=True)
    check_fn(fn, ember.randn(2, 3, 6, 4))


def test_max_pool_without_indices_has_one_node():
    proto = check_fn(nn.MaxPool2d(2), ember.randn(2, 3, 6, 4))
    assert [n.op_type for n in proto.graph.node] == ["MaxPool"]


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolate(mode):
    extra = {} if mode == "nearest" else {"align_corners": False}
    check_fn(lambda x: F.interpolate(x, scale_factor=2, mode=mode, **extra),
             ember.randn(2, 3, 4, 5))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(mode):
    check_fn(lambda x: F.pad(x, (1, 2, 2, 0), mode=mode), ember.randn(2, 3, 4, 5))


def test_constant_pad_crops_and_fills():
    check_fn(lambda x: F.pad(x, (-1, 2), value=3.5), ember.randn(2, 3, 5))


def test_a_2d_padding_and_its_transpose_export_as_gathers_and_products():
    # F.pad's one-pass 2-D map (resample.PlaneMap), and its adjoint (what its gradient
    # runs): each element of the padded planes added back into its source
    import numpy as np

    from ember.ops.resample import PlaneMap

    rows, cols = np.array([1, 0, 1, 2, 3, 2]), np.array([2, 1, 0, 1, 2, 3, 4, 3])
    proto = check_fn(lambda x: PlaneMap.apply(x, rows=rows, cols=cols, size=(4, 5)),
                     ember.randn(2, 3, 4, 5))
    assert "Gather" in op_types(proto)
    check_fn(lambda g: PlaneMap.apply(g, rows=rows, cols=cols, size=(4, 5), adjoint=True),
             ember.randn(2, 3, 6, 8))
