"""Converters of convolutions and transposed convolutions."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from tests.onnx._check import check_fn, op_types

CONVS = {
    "conv1d": lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1),
    "conv1d_same": lambda: nn.Conv1d(4, 6, 4, padding="same", dilation=2),
    "conv2d_groups": lambda: nn.Conv2d(4, 8, 3, padding=(1, 2), groups=2, bias=False),
    "conv2d_dilated": lambda: nn.Conv2d(4, 2, (3, 2), stride=(2, 1), dilation=(2, 1)),
    "conv2d_depthwise": lambda: nn.Conv2d(4, 4, 3, padding=1, groups=4),
    "conv3d": lambda: nn.Conv3d(4, 3, 2, stride=(1, 2, 1), padding=1),
}

TRANSPOSED = {
    "convt1d": lambda: nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1),
    "convt2d": lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(1, 0),
                                          groups=2),
    "convt2d_dilated": lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, dilation=2,
                                                  output_padding=1, bias=False),
    "convt3d": lambda: nn.ConvTranspose3d(4, 2, 2, stride=2),
}

INPUTS = {1: (2, 4, 9), 2: (2, 4, 7, 8), 3: (2, 4, 5, 6, 4)}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv(name):
    module = CONVS[name]()
    nd = int(name[4])
    assert op_types(check_fn(module, ember.randn(*INPUTS[nd]))) == {"Conv"}


@pytest.mark.parametrize("name", sorted(TRANSPOSED))
def test_conv_transpose(name):
    module = TRANSPOSED[name]()
    nd = int(name[5])
    assert op_types(check_fn(module, ember.randn(*INPUTS[nd]))) == {"ConvTranspose"}


def test_unbatched_conv():
    check_fn(nn.Conv2d(4, 3, 3), ember.randn(4, 6, 6), batch=False)
