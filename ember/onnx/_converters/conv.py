"""Convolutions: conv1d/2d/3d (Conv) and conv_transpose1d/2d/3d (ConvTranspose)."""

from __future__ import annotations

from ...ops import conv
from .._convert import Call


def convert_convolution(c: Call) -> None:
    x, w = c.input(0), c.input(1)
    bias = c.input(2) if c.arg(2) is not None else ""
    geo, transposed = c.arg(3), bool(c.arg(4, False))
    kernel = list(c.shape(1)[2:])
    attrs = dict(kernel_shape=kernel, strides=list(geo.stride), dilations=list(geo.dilation),
                 group=int(geo.groups), pads=list(geo.lo) + list(geo.hi))
    if not transposed:
        c.done(c.op("Conv", x, w, *([bias] if bias else []), **attrs))
        return
    # ConvTranspose: output = stride * (in - 1) + output_padding + dilation * (k - 1) + 1
    #                         - pad_lo - pad_hi; output_padding covers what the formula misses.
    size_in = c.shape(0)[2:]
    out_pad = [n - (s * (i - 1) + d * (k - 1) + 1 - lo - hi) for n, i, k, s, d, lo, hi in
               zip(geo.size, size_in, kernel, geo.stride, geo.dilation, geo.lo, geo.hi)]
    if any(p < 0 for p in out_pad):
        c.fail(f"cannot express the output size {list(geo.size)} of this transposed "
               "convolution")
    if any(out_pad):
        attrs["output_padding"] = out_pad
    c.done(c.op("ConvTranspose", x, w, *([bias] if bias else []), **attrs))


def convert_convolution_weight(c: Call) -> None:
    c.fail("the weight gradient of a convolution (a backward op) cannot be exported")


CONVERTERS = {
    conv.Convolution: convert_convolution,
    conv.ConvolutionWeight: convert_convolution_weight,
}
