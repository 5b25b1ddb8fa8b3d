"""numba kernels of depthwise 2-D convolutions (one filter per channel: ``groups`` equal
to the channels, weight (C, 1, kh, kw)), MobileNet's and ConvNeXt's: the forward, the
adjoint in the input (the input's gradient, or a transposed convolution's forward) and
the weight's gradient, each one task per channel-plane.

NOTE: why.  The general path (conv_arrays.py) makes a column matrix per group and runs
one product per group: for depthwise convolutions those are C products of one row each.
(8, 64, 32, 32) float32 with a 3x3 filter, forward and backward, took 5.2 ms against
PyTorch's 1.15 (forward 1.43 against 0.29; 2-core Intel Xeon, 2026-12-06).

Each kernel loops over the filter taps outside and the output columns inside, so that
the inner loop runs along contiguous memory (at stride 1) and vectorizes.  Sums are in
the data's dtype, in tap order (the weight gradient's in float64, vectorized).
"""

from __future__ import annotations

import numpy as np

from . import _native as native

FUSED_MULTIPLY_ADD = {"contract"}
REORDER = {"reassoc", "contract"}  # (the weight gradient's sums: vectorized, reordered)


def supports(x, w_shape, w_dtype, geo) -> bool:
    """Whether these kernels take a convolution of `x` (N, C, H, W) with filters of
    `w_shape` and `w_dtype`: depthwise (groups == C == the filter count, one channel
    each, 2-D), a float32/float64 NumPy `x` of the filters' dtype, numba on."""
    return (type(x) is np.ndarray and x.ndim == 4 and len(w_shape) == 4
            and x.dtype == w_dtype and x.dtype in (np.float32, np.float64)
            and geo.groups == x.shape[1] == w_shape[0] and w_shape[1] == 1
            and native.enabled())


@native.kernel(inline=True)
def _span(n_out, n_in, stride, offset):
    """The outputs o, first to end (exclusive), whose tap reads an input inside the
    unpadded data: 0 <= o * stride + offset < n_in."""
    first = 0 if offset >= 0 else (stride - 1 - offset) // stride
    last = n_in - 1 - offset
    end = last // stride + 1 if last >= 0 else 0
    return first, max(first, min(end, n_out))


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _forward(x, w, out, sh, sw, dh, dw, lo_h, lo_w):
    images, channels, out_h, out_w = out.shape
    in_h, in_w, kh, kw = x.shape[2], x.shape[3], w.shape[1], w.shape[2]
    for task in native.prange(images * channels):
        i, c = task // channels, task % channels
        src, dst = x[i, c], out[i, c]
        dst[:, :] = 0
        for a in range(kh):
            oh = a * dh - lo_h
            r0, r1 = _span(out_h, in_h, sh, oh)
            for b in range(kw):
                ow = b * dw - lo_w
                c0, c1 = _span(out_w, in_w, sw, ow)
                weight = w[c, a, b]
                for r in range(r0, r1):
                    row, line = src[r * sh + oh], dst[r]
                    if sw == 1:  # (contiguous: the loop vectorizes)
                        part, into = row[c0 + ow:c1 + ow], line[c0:c1]
                        for k in range(c1 - c0):
                            into[k] += part[k] * weight
                    else:
                        for col in range(c0, c1):
                            line[col] += row[col * sw + ow] * weight


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _adjoint(g, w, gx, sh, sw, dh, dw, lo_h, lo_w):
    images, channels, out_h, out_w = g.shape
    in_h, in_w, kh, kw = gx.shape[2], gx.shape[3], w.shape[1], w.shape[2]
    for task in native.prange(images * channels):
        i, c = task // channels, task % channels
        src, dst = g[i, c], gx[i, c]
        dst[:, :] = 0
        for a in range(kh):
            oh = a * dh - lo_h
            r0, r1 = _span(out_h, in_h, sh, oh)
            for b in range(kw):
                ow = b * dw - lo_w
                c0, c1 = _span(out_w, in_w, sw, ow)
                weight = w[c, a, b]
                for r in range(r0, r1):
                    row, line = src[r], dst[r * sh + oh]
                    if sw == 1:
                        part, into = row[c0:c1], line[c0 + ow:c1 + ow]
                        for k in range(c1 - c0):
                            into[k] += part[k] * weight
                    else:
                        for col in range(c0, c1):
                            line[col * sw + ow] += row[col] * weight


@native.kernel(parallel=True, fastmath=REORDER)
def _weight_grad(x, g, gw, sh, sw, dh, dw, lo_h, lo_w):
    images, channels, out_h, out_w = g.shape
    in_h, in_w, kh, kw = x.shape[2], x.shape[3], gw.shape[1], gw.shape[2]
    for c in native.prange(channels):
        for a in range(kh):
            oh = a * dh - lo_h
            r0, r1 = _span(out_h, in_h, sh, oh)
            for b in range(kw):
                ow = b * dw - lo_w
                c0, c1 = _span(out_w, in_w, sw, ow)
                total = 0.0
                for i in range(images):
                    src, grad = x[i, c], g[i, c]
                    for r in range(r0, r1):
                        row, line = src[r * sh + oh], grad[r]
                        if sw == 1:
                            part, other = row[c0 + ow:c1 + ow], line[c0:c1]
                            for k in range(c1 - c0):
                                total += part[k] * other[k]
                        else:
                            for col in range(c0, c1):
                                total += row[col * sw + ow] * line[col]
                gw[c, a, b] = total


def _geometry(geo) -> tuple:
    return (*geo.stride, *geo.dilation, *geo.lo)


def forward(x, w, geo, bias=None):
    """The depthwise convolution of `x` with `w` (plus a per-channel `bias`), the images
    dealt to ember's threads."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape[:2] + geo.out(w.shape[2:]), x.dtype)
    native.run(_forward, out.size * w.shape[2] * w.shape[3], x, np.ascontiguousarray(w[:, 0]),
               out, *_geometry(geo), cut=(0, 2))
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1).astype(out.dtype, copy=False)
    return out


def adjoint(g, w, geo, bias=None):
    """The adjoint in the input: each output of `g` (N, C, *out) added back, times its
    filter tap, into the input positions it read; (N, C, *geo.size) (plus `bias`)."""
    g = np.ascontiguousarray(g)
    gx = np.empty(g.shape[:2] + tuple(geo.size), g.dtype)
    native.run(_adjoint, g.size * w.shape[2] * w.shape[3], g, np.ascontiguousarray(w[:, 0]),
               gx, *_geometry(geo), cut=(0, 2))
    if bias is not None:
        gx += bias.reshape(1, -1, 1, 1).astype(gx.dtype, copy=False)
    return gx


def weight_grad(x, g, kernel, geo):
    """The gradient of the filters (C, 1, kh, kw) from the input `x` and the output's
    gradient `g` (windows outside the padded input read zeros)."""
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    gw = np.empty((x.shape[1],) + tuple(kernel), x.dtype)
    native.run(_weight_grad, g.size * kernel[0] * kernel[1], x, g, gw, *_geometry(geo))
    return gw.reshape((x.shape[1], 1) + tuple(kernel))
