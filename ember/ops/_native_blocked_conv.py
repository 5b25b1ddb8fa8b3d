"""Register-blocked convolutions (numba, explicit SIMD vectors) for layers of few
channels: the forward of a CNN's layer with square filters (3x3 above all, and 2x2 to
7x7) at stride 1 or 2 (`conv_forward`); so the input gradient of a stride-1 one (a
forward of the output's gradient with the filters flipped: conv_arrays.py's
`_transpose_as_conv`); the input gradient of a stride-2 one, which is also a stride-2
transposed convolution's forward, phase by phase (`input_grad_strided`); and the weight
gradient of 3x3 layers and of 4x4 stride-2 ones (`weight_grad`).

The layout is `_native_direct_conv.py`'s: each image's channels are zero padded into
planes of the padded width, and the output is computed over that whole width (a "wide"
plane), so that output position ``p = y * width + x`` reads input position ``p + ky *
width + kx`` for tap (ky, kx): for every tap one run of the plane at a fixed offset.
The columns past the output's width are dropped when the wide plane is copied out.  At
stride 2 each channel is first split into its four phase planes (even and odd rows by
even and odd columns, as _native_direct_conv.py's stride-2 kernels do), where every
tap is again one run at a fixed offset (`layout`).

What is new is where the sums live.  The direct kernels add each input channel's nine
taps into output planes in memory, a load and a store of a sum for every nine
multiply-adds.  Here a pass holds ROWS vectors of positions (`_native_vectors.LANES`
each) for BLOCK output channels, 24 sums, in registers, through every input channel
and tap: per tap it loads ROWS runs of the input and BLOCK weights (broadcast), and
makes ROWS x BLOCK multiply-adds.  Only at the end of the pass are the sums stored.

NOTE: why.  Batch 64, 2 threads, 2-core Intel Xeon with AVX-512 (2026-12-07), ms:
16 -> 16 channels at 32x32 1.51 (the direct kernel 2.62, PyTorch's oneDNN 1.56),
32 -> 32 at 16x16 1.14 (Winograd 1.66, PyTorch 1.14), 8 -> 8 at 32x32 0.34 (direct
0.79, PyTorch 0.86), 16 -> 32 at 32x32 2.37 (Winograd 3.80, PyTorch 2.40); at stride 2,
16 -> 32 from 32x32 1.06 (the direct stride-2 kernel 1.71, PyTorch 0.77), 32 -> 64 from
16x16 1.28 (im2col 1.49, PyTorch 0.62).

It takes float32 only, and only where the processor has AVX-512: its 24 sums, the runs
and a weight need 28 of the 32 vector registers; with AVX's 16 they would spill to
memory.  Sums are in a different order than im2col's product: results differ from it by
rounding.  EMBER_NO_BLOCKED_CONV=1 (or ``ENABLED = False``) turns the path off.

This module imports numba (through ops/_native_vectors.py): conv_arrays.py imports it
only where the native kernels run (`_native.enabled()`).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from . import _native as native
from . import _parallel
from ._native_vectors import (AVX512, LANES, load, multiply_add, splat, splat_at, store,
                              transpose_tile)
from ._native_winograd import plain_3x3

ENABLED = os.environ.get("EMBER_NO_BLOCKED_CONV", "") in ("", "0")

BLOCK = 8   # output channels a pass
ROWS = 3    # vectors of output positions a pass
TAPS = 9
# A lone image's blocks of output channels are dealt out from this many multiply-adds:
# the worker's share is a Python part, which starts tens of microseconds late.  NOTE: one
# image, split against one thread (2-core Intel Xeon, 2026-12-07), ms: 32 -> 32 at
# 56x56 (29M) 0.30-0.31 against 0.39-0.40, a 7x7 stem at stride 2 from 224x224 (118M)
# 0.94-1.02 against 1.56-1.58; but 16 -> 16 at 64x64 (9.4M) 0.150 against 0.146, and at
# 32x32 (2.4M) 0.143-0.147 against 0.088.
LONE_SPLIT_MIN = 1 << 24


# Where it wins (the NOTE's measurements and these): at stride 1 up to a product of 1024
# channels (in x out) over two or more images.  Beyond, Winograd's four times fewer
# multiply-adds win (64 -> 64 at 8x8, 64 images: 1.70 against 1.14 ms; at 28x28, 8
# images: 1.78 against 1.31).  A lone image runs on one thread, and wins up to 256
# (16 -> 16 at 32x32: 0.05 against 0.10 ms; 32 -> 64 at 26x26 0.17 against 0.13 for
# the lone Winograd on two).  At stride 2 the other paths are im2col's strided columns
# and, for few channels, the direct kernel: this one wins up to 8192 (64 -> 128 at
# 28x28, 8 images: 1.31 against 1.75 ms; 128 -> 256 at 14x14 2.00 against 1.56), and
# for a lone image up to 2048 (64 -> 128 at 56x56: 0.98 against 0.80).
MAX_CHANNEL_PRODUCT = 1024
MAX_LONE_CHANNEL_PRODUCT = 256
MAX_STRIDED_CHANNEL_PRODUCT = 8192
MAX_LONE_STRIDED_CHANNEL_PRODUCT = 2048
# Filters of other sides (2 to MAX_SIDE) have no Winograd path: im2col's is the other.
# Against it (ms, 2 threads): a ResNet-18 stem, 3 -> 64 7x7 at stride 2 from 112x112,
# 8 images, 1.77 against 3.12 (PyTorch 1.51); LeNet's 5x5 layers, 64 images, 1 -> 6 at
# 32x32 0.16 against 0.59, 6 -> 16 at 14x14 0.22 against 0.72; 32 -> 64 5x5 at 28x28
# 17.8 against 28.7; DCGAN's 4x4 stride-2 layers, 32 images, 3 -> 64 0.35 against 0.72,
# but 64 -> 128 2.84 against 2.69 and 128 -> 256 5.69 against 2.97.  A lone image (on
# one thread): the 7x7 stem from 224x224 1.61 against 1.57.
MAX_OTHER_CHANNEL_PRODUCT = 4096
MAX_LONE_OTHER_CHANNEL_PRODUCT = 2048
MAX_SIDE = 7
# Since the filters are read in place (`filters_in_blocks`), those other sides win far
# beyond where the outputs are at least LARGE_OUTPUT_SIDE a side.  NOTE: ms, this kernel
# against im2col's path and PyTorch (2-core Intel Xeon, 2026-12-08): DCGAN's 64 -> 128
# 4x4 stride-2 layer, 32 images from 16x16, 2.57-2.87 against 2.87-3.27 (1.83-2.06),
# from 32x32 8.40 against 11.49 (7.15); 128 -> 128 4x4 stride 2 from 16x16, 16 images,
# 2.71 against 3.13 (1.91); 128 -> 256 from 32x32, 8 images, 8.12 against 9.77 (6.93);
# 64 -> 128 5x5 at 16x16, 16 images, 6.45 against 8.37 (4.71); 64 -> 128 7x7 stride 2
# from 32x32 6.38 against 9.28 (5.22).  But to 4x4 outputs, 128 -> 256 from 8x8 (32
# images), 5.35 against 3.06.
MAX_OTHER_LARGE_OUTPUT_CHANNEL_PRODUCT = 32768
LARGE_OUTPUT_SIDE = 8
# A lone image's 3x3 layers with outputs of LONE_SIDES (stride 1) or at least
# LONE_SIDES[0] on a side (stride 2) take this path up to far more channels, since the
# filters are read in place (`filters_in_blocks`).  NOTE: one image, us, this kernel
# against the path chosen before (Winograd's on two threads or im2col's split product)
# and PyTorch (2-core Intel Xeon, 2026-12-08): stride 1, 64 -> 64 at 8x8 67 against 153
# (64), 128 -> 128 at 8x8 191 against 241 (139), at 14x14 324 against 727 (260), 64 ->
# 64 at 16x16 156 against 230 (127), 256 -> 256 at 14x14 1090 against 1355 (957), at
# 16x16 1165 against 1306 (1085); but at 7x7 490 against 448, 384 -> 384 at 13x13 2146
# against 1931, and from 26x26 Winograd wins (64 -> 64 at 56x56 1049 against 779).
# Stride 2: 64 -> 128 to 28x28 654 against 891 (587), 128 -> 256 to 14x14 675 against
# 790 (528), 128 -> 128 to 8x8 225 against 245; 256 -> 256 to 8x8 502 against 493, but
# 512 -> 512 to 8x8 1659 against 1484 and 256 -> 512 to 7x7 882 against 813.
LONE_SIDES = (8, 16)
MAX_LONE_PLANE_CHANNEL_PRODUCT = 65536
MAX_LONE_STRIDED_PLANE_CHANNEL_PRODUCT = 32768
# The weight gradient (`weight_grad`) holds a vector of output channels per sum, which
# wastes lanes below 16 of them, and lays out each image's gradient position by
# position, which costs more than the sums for few input channels at stride 1 (64
# images, ms, this kernel against the paths before it, PyTorch: 16 -> 16 at 32x32 1.62
# 2.22 1.51, 16 -> 32 at 32x32 3.20 4.30 2.55, 32 -> 32 at 32x32 5.59 8.53 5.79, 32 -> 32
# at 16x16 1.49 1.54 1.13; but 8 -> 8 at 32x32 0.87 0.70, 3 -> 16 0.62 0.59, 32 -> 64 at
# 24x24 6.78 5.46, 64 -> 64 at 8x8 1.95 1.23).  At stride 2, where the other paths are
# the direct stride-2 kernel and im2col's strided columns: 16 -> 32 from 32x32 2.19 2.96
# 1.57, 32 -> 64 from 16x16 1.42 1.83 0.67, a stem 3 -> 16 from 64x64 (32 images) 0.46
# 0.55 0.31; but 64 -> 128 from 28x28 (8 images) 1.52 1.42.
# Since the gradient's layout is transposed in registers (`transpose_tile`), few input
# channels gain too, down to 2 (one group of three taken for 1: three times the sums):
# 64 images at 32x32, ms, 3 -> 16 0.39 against 0.55 (the direct kernel; PyTorch 0.43),
# 2 -> 16 0.41 against 0.48, 4 -> 16 0.63 against 0.73, 3 -> 64 1.31 against 1.90; 8
# images of 3 -> 64 at 112x112 2.37 against 2.90; but 1 -> 32 at 26x26 (MNIST's first
# layer) 0.56 against 0.43.
WEIGHT_MIN_IN_CHANNELS = 2
WEIGHT_MIN_OUT_CHANNELS = 16
WEIGHT_MAX_CHANNEL_PRODUCT = 1024
WEIGHT_MIN_PLANE = 16 * 16
WEIGHT_MAX_STRIDED_CHANNEL_PRODUCT = 2048
# A 4x4 layer at stride 2 (DCGAN's), one input channel's 16 taps a pass, against
# im2col's strided columns (32 images, ms, PyTorch's in brackets): 3 -> 64 from 32x32
# 0.53 against 1.04 (0.28), 64 -> 128 from 16x16 3.40 against 3.59 (2.26), 128 -> 64
# 3.73 against 6.44 (2.65), 64 -> 3 from 32x32 1.64 against 5.90 (1.49, 3 of 16 lanes
# used); but 128 -> 256 from 8x8 7.99 against 3.07.
WEIGHT_MAX_4X4_CHANNEL_PRODUCT = 8192


def strided_3x3(kernel, geo) -> bool:
    """A 2-D 3x3 convolution of stride 2, dilation 1, one group, zero padding (no
    cropping) and an output, when numba is on."""
    return tuple(kernel) == (3, 3) and stride_taken(kernel, geo) == 2


def stride_taken(kernel, geo) -> int:
    """The stride (1 or 2) of a convolution whose geometry the forward kernel takes: 2-D,
    square filters of side 2 to MAX_SIDE, the same stride of 1 or 2 both ways, no
    dilation, one group, zero padding (no cropping), an output, numba on; else 0."""
    if not (len(geo.size) == 2 and len(kernel) == 2 and kernel[0] == kernel[1]
            and 2 <= kernel[0] <= MAX_SIDE and geo.stride in ((1, 1), (2, 2))
            and geo.dilation == (1, 1) and geo.groups == 1 and min(geo.lo + geo.hi) >= 0
            and min(geo.out(kernel)) >= 1 and native.enabled()):
        return 0
    return geo.stride[0]


# Each thread holds a call's planes (every input channel of one image, padded): at most
# this many bytes of them (a 1024 -> 1 layer on 224x224 images would need 200 MB).
PLANES_MAX_BYTES = 8 << 20


def _planes_fit(channels: int, geo) -> bool:
    """Whether one image's padded planes of `channels` fit PLANES_MAX_BYTES."""
    height, width = geo.padded()
    return channels * (height + 2) * (width + 2) * 4 <= PLANES_MAX_BYTES


def weight_supports(dtype, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether a convolution's weight gradient takes this path: `supports`' geometry
    with 3x3 filters, 16 output channels or more, and at stride 1 few channels over a
    large plane, at stride 2 few channels (see WEIGHT_MAX_CHANNEL_PRODUCT); or 4x4
    filters at stride 2 and few channels."""
    if not (ENABLED and AVX512 and dtype == np.float32 and _planes_fit(in_channels, geo)):
        return False
    product = in_channels * out_channels
    if tuple(kernel) == (4, 4) and stride_taken(kernel, geo) == 2:
        return product <= WEIGHT_MAX_4X4_CHANNEL_PRODUCT
    if out_channels < WEIGHT_MIN_OUT_CHANNELS:
        return False
    if strided_3x3(kernel, geo):
        return product <= WEIGHT_MAX_STRIDED_CHANNEL_PRODUCT
    if not plain_3x3(kernel, geo):
        return False
    out_h, out_w = geo.out((3, 3))
    return (in_channels >= WEIGHT_MIN_IN_CHANNELS and out_h * out_w >= WEIGHT_MIN_PLANE
            and product <= WEIGHT_MAX_CHANNEL_PRODUCT)


# The input gradient of a stride-2 layer (`input_grad_strided`), against col2im's (ms,
# PyTorch's in brackets; 64 images unless said): 16 -> 32 from 32x32 1.26-1.30 against
# 1.88-2.03 (1.46-1.60), 32 -> 64 from 16x16 1.13 against 1.68-1.84 (1.01-1.09), 32 ->
# 64 from 56x56 (8 images) 1.31-1.38 against 1.79-1.89 (1.37-1.51), 64 -> 128 4x4 from
# 16x16 (32 images) 3.12-3.39 against 3.52-3.78 (2.07-2.30), 64 -> 128 from 28x28 (8
# images) 1.49 against 1.57 (1.13); but 128 -> 256 from 14x14 (8 images) 2.74 against
# 1.56, and to 3 channels (a block of 8 made for 3) 1.18 against 0.57.
INPUT_MIN_CHANNELS = 8
INPUT_MAX_CHANNEL_PRODUCT = 8192


def input_supports(dtype, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether the input gradient of a convolution (or a transposed convolution's
    forward) takes `input_grad_strided`: float32, a stride-2 `stride_taken` geometry
    with filters of at least 2x2, an AVX-512 processor, and few channels, at least
    INPUT_MIN_CHANNELS of them in the result."""
    return (ENABLED and AVX512 and dtype == np.float32 and min(kernel) >= 2
            and in_channels >= INPUT_MIN_CHANNELS
            and in_channels * out_channels <= INPUT_MAX_CHANNEL_PRODUCT
            and stride_taken(kernel, geo) == 2 and _planes_fit(out_channels, geo))


def supports(dtype, images: int, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether a convolution takes this path: float32, a `stride_taken` geometry, an
    AVX-512 processor, and few channels for its filters and stride (see
    MAX_CHANNEL_PRODUCT), or a lone image's small planes (see LONE_SIDES)."""
    product = in_channels * out_channels
    if not (ENABLED and AVX512 and dtype == np.float32
            and product <= MAX_LONE_PLANE_CHANNEL_PRODUCT):   # (the largest limit)
        return False
    stride = stride_taken(kernel, geo)
    if stride == 0 or not _planes_fit(in_channels, geo):
        return False
    lone = images == 1
    if lone and tuple(kernel) == (3, 3):
        out = geo.out(kernel)
        if stride == 1 and LONE_SIDES[0] <= min(out) and max(out) <= LONE_SIDES[1]:
            return product <= MAX_LONE_PLANE_CHANNEL_PRODUCT
        if stride == 2 and min(out) >= LONE_SIDES[0]:
            return product <= MAX_LONE_STRIDED_PLANE_CHANNEL_PRODUCT
    if tuple(kernel) != (3, 3):
        limit = MAX_LONE_OTHER_CHANNEL_PRODUCT if lone else MAX_OTHER_CHANNEL_PRODUCT
        if not lone and min(geo.out(kernel)) >= LARGE_OUTPUT_SIDE:
            limit = MAX_OTHER_LARGE_OUTPUT_CHANNEL_PRODUCT
    elif stride == 1:
        limit = MAX_LONE_CHANNEL_PRODUCT if lone else MAX_CHANNEL_PRODUCT
    else:
        limit = MAX_LONE_STRIDED_CHANNEL_PRODUCT if lone else MAX_STRIDED_CHANNEL_PRODUCT
    return product <= limit


@native.kernel(inline=True)
def _pad_image(x, i, planes, stride, width, lo_h, lo_w):
    """Image `i` of x (N, C, H, W) into `planes` (C planes, `stride` apart, rows `width`
    long) from row `lo_h` and column `lo_w`; the border is left as it is (zeros)."""
    for c in range(x.shape[1]):
        for y in range(x.shape[2]):
            row = x[i, c, y]
            start = c * stride + (lo_h + y) * width + lo_w
            into = planes[start:start + x.shape[3]]
            for j in range(x.shape[3]):
                into[j] = row[j]


@native.kernel(inline=True)
def _block_pass(planes, filters, bias, first, p, stride, offsets, wide):
    """The sums of output positions p to p + ROWS * LANES - 1 of the wide plane for the
    BLOCK output channels from `first` (their filters: `filters` (BLOCK, C, T)), over
    every input channel and tap, into the rows of `wide` from column p.  Tap t of
    output position p reads position ``p + offsets[t]`` of its input channel's part of
    `planes` (`stride` long).  (Written out: the sums are named values, which LLVM keeps
    in registers.)"""
    lanes = LANES
    s00 = splat(bias[first])
    s01 = splat(bias[first + 1])
    s02 = splat(bias[first + 2])
    s03 = splat(bias[first + 3])
    s04 = splat(bias[first + 4])
    s05 = splat(bias[first + 5])
    s06 = splat(bias[first + 6])
    s07 = splat(bias[first + 7])
    s10, s11, s12, s13, s14, s15, s16, s17 = s00, s01, s02, s03, s04, s05, s06, s07
    s20, s21, s22, s23, s24, s25, s26, s27 = s00, s01, s02, s03, s04, s05, s06, s07
    for c in range(filters.shape[1]):
        base = c * stride + p
        for t in range(filters.shape[2]):
            at = base + offsets[t]
            r0 = load(planes, at)
            r1 = load(planes, at + lanes)
            r2 = load(planes, at + 2 * lanes)
            s00, s10, s20 = _times_weight(r0, r1, r2, filters[0, c, t], s00, s10, s20)
            s01, s11, s21 = _times_weight(r0, r1, r2, filters[1, c, t], s01, s11, s21)
            s02, s12, s22 = _times_weight(r0, r1, r2, filters[2, c, t], s02, s12, s22)
            s03, s13, s23 = _times_weight(r0, r1, r2, filters[3, c, t], s03, s13, s23)
            s04, s14, s24 = _times_weight(r0, r1, r2, filters[4, c, t], s04, s14, s24)
            s05, s15, s25 = _times_weight(r0, r1, r2, filters[5, c, t], s05, s15, s25)
            s06, s16, s26 = _times_weight(r0, r1, r2, filters[6, c, t], s06, s16, s26)
            s07, s17, s27 = _times_weight(r0, r1, r2, filters[7, c, t], s07, s17, s27)
    _store_row(wide, p, s00, s01, s02, s03, s04, s05, s06, s07)
    _store_row(wide, p + lanes, s10, s11, s12, s13, s14, s15, s16, s17)
    _store_row(wide, p + 2 * lanes, s20, s21, s22, s23, s24, s25, s26, s27)


@native.kernel(inline=True)
def _times_weight(r0, r1, r2, weight, s0, s1, s2):
    """One output channel's three sums plus the three runs times its `weight`."""
    k = splat(weight)
    return multiply_add(r0, k, s0), multiply_add(r1, k, s1), multiply_add(r2, k, s2)


@native.kernel(inline=True)
def _store_row(wide, q, v0, v1, v2, v3, v4, v5, v6, v7):
    """The BLOCK vectors of sums for positions from q into the rows of `wide`."""
    store(wide[0], q, v0)
    store(wide[1], q, v1)
    store(wide[2], q, v2)
    store(wide[3], q, v3)
    store(wide[4], q, v4)
    store(wide[5], q, v5)
    store(wide[6], q, v6)
    store(wide[7], q, v7)


@native.kernel(inline=True)
def _wide_out(wide, out, i, first, width, sizes):
    """The rows of `wide` (wide planes, lines `width` apart, of sizes[0] x sizes[1]
    outputs) into image `i` of out from channel `first`, those channels that `out` has
    (the last block may have padding): output (y, x) to out's row sizes[4] + y *
    sizes[6], column sizes[5] + x * sizes[6], where out has them (an input gradient's
    phase, `input_grad_strided`; the plain forward's: (y, x) itself)."""
    rows, cols, row0, col0, step = sizes[0], sizes[1], sizes[4], sizes[5], sizes[6]
    height, length = out.shape[2], out.shape[3]
    start = max(0, (step - 1 - col0) // step)          # the first x with a column
    stop = max(min(cols, (length - 1 - col0) // step + 1), start)
    for k in range(min(wide.shape[0], out.shape[1] - first)):
        for y in range(rows):
            at = row0 + y * step
            if at < 0 or at >= height:
                continue
            row, line = out[i, first + k, at, col0 + start * step:], wide[k, y * width:]
            if step == 1:   # (a loop of its own: vectorized, where the strided one is not)
                for x in range(stop - start):
                    row[x] = line[start + x]
            else:
                for x in range(stop - start):
                    row[x * step] = line[start + x]


@native.kernel(inline=True)
def _fill_phases(x, i, planes, stride, height, width, lo_h, lo_w):
    """Image `i` of x (N, C, H, W), zero padded by (lo_h, lo_w) before, split into its
    four phase planes per channel (even and odd rows by even and odd columns, each
    `height` x `width`, one after the other in the channel's part of `planes`): padded
    position (2r + a, 2s + b) goes to row r, column s of phase plane 2a + b.  Only the
    image's own positions are written, each row's even and odd columns in two runs: the
    padding around them is left as it is (the callers' zeros, made once)."""
    size = height * width
    w = x.shape[3]
    first = lo_w % 2   # (the first of a row's columns that lands on an even padded one)
    # (the columns of each phase that the planes hold: no window reads past them)
    evens = max(min((w - first + 1) // 2, width - (first + lo_w) // 2), 0)
    odds = max(min((w + first) // 2, width - (1 - first + lo_w) // 2), 0)
    for c in range(x.shape[1]):
        for y in range(min(x.shape[2], 2 * height - lo_h)):
            padded = y + lo_h
            at = c * stride + padded % 2 * 2 * size + padded // 2 * width
            row = x[i, c, y]
            even = planes[at + (first + lo_w) // 2:]
            odd = planes[at + size + (1 - first + lo_w) // 2:]
            for j in range(evens):
                even[j] = row[first + 2 * j]
            for j in range(odds):
                odd[j] = row[1 - first + 2 * j]


@native.kernel
def _conv(x, filters, bias, out, stride, offsets, sizes, first, last):
    """A correlation of x (N, C, H, W) with the filters (B, BLOCK, C, T) (T taps, kh x
    kw; B blocks of output channels, the last padded with zero filters) plus bias (B *
    BLOCK,), for blocks `first` to ``last - 1`` (the output channels from ``first *
    BLOCK`` on), written into out as `_wide_out` places it.  `sizes` (int64): the output's
    rows and columns, kh - 1, kw - 1, out's first row and column and its step, the
    padding before (rows, columns), and 1 for stride 2, else 0.  At stride 1 each
    channel is padded into a plane `reach` wider than the output, at stride 2 split into
    four phase planes `reach // 2` wider (`_fill_phases`), `stride` apart (`layout`);
    tap t reads `offsets[t]` past the position it serves.  The images are filled one at
    a time, and every block's passes made over each.  (A serial kernel: the callers deal
    the images to ember's threads; a threaded build took ~4 s more to compile.)"""
    rows, cols, lo_h, lo_w, strided = sizes[0], sizes[1], sizes[7], sizes[8], sizes[9]
    width = cols + (sizes[3] // 2 if strided else sizes[3])
    span = (rows - 1) * width + cols   # the wide plane, to its last output
    step = ROWS * LANES
    passes = (span + step - 1) // step
    planes = np.zeros(x.shape[1] * stride, np.float32)
    wide = np.empty((BLOCK, passes * step), np.float32)
    for i in range(x.shape[0]):
        if strided:
            _fill_phases(x, i, planes, stride, rows + sizes[2] // 2, width, lo_h, lo_w)
        else:
            _pad_image(x, i, planes, stride, width, lo_h, lo_w)
        for b in range(first, last):   # (as `_conv_phases`: a shared inline helper cost
            for q in range(passes):    # ~0.3 s more of the first build)
                _block_pass(planes, filters[b], bias, b * BLOCK, q * step, stride,
                            offsets, wide)
            _wide_out(wide, out, i, b * BLOCK, width, sizes)


@native.kernel
def _conv_phases(x, f0, f1, f2, f3, bias, out, stride, o0, o1, o2, o3, sizes, width, first,
                 last):
    """`input_grad_strided`'s four phase correlations of x (N, C, h, w) in one call:
    each image padded once (by sizes[0, 7] rows and sizes[0, 8] columns, into planes
    `width` wide, `stride` apart), then for phase k its filters `fk` and tap offsets
    `ok`, its outputs and placement in row k of `sizes` (as `_conv` takes them)."""
    step = ROWS * LANES
    top = 0
    for k in range(4):
        top = max(top, (sizes[k, 0] - 1) * width + sizes[k, 1])
    planes = np.zeros(x.shape[1] * stride, np.float32)
    wide = np.empty((BLOCK, (top + step - 1) // step * step), np.float32)
    for i in range(x.shape[0]):
        _pad_image(x, i, planes, stride, width, sizes[0, 7], sizes[0, 8])
        for k in range(4):
            filters = f0 if k == 0 else f1 if k == 1 else f2 if k == 2 else f3
            offsets = o0 if k == 0 else o1 if k == 1 else o2 if k == 2 else o3
            span = (sizes[k, 0] - 1) * width + sizes[k, 1]
            for b in range(first, last):
                for q in range((span + step - 1) // step):
                    _block_pass(planes, filters[b], bias, b * BLOCK, q * step, stride,
                                offsets, wide)
                _wide_out(wide, out, i, b * BLOCK, width, sizes[k])


@functools.lru_cache(maxsize=256)   # (per call it cost ~2 us of a lone image's ~50)
def layout(out_h: int, out_w: int, strided: bool, side: int = 3, side_w: int = 0) -> tuple:
    """(the distance between two channels' parts of the planes buffer, the taps'
    offsets, row by row) for an output of out_h x out_w and filters of `side` x `side`
    (or `side` x `side_w`) at stride 1 or 2 (`strided`).  A channel's part holds its
    padded plane (stride 1) or its four phase planes (stride 2), and what its last pass
    reads beyond them: up to ROWS * LANES positions past the wide plane's end plus the
    farthest tap's offset (rounded up to whole vectors).  The offsets array is shared
    by the calls of one geometry: read it only."""
    side_w = side_w or side
    width = out_w + ((side_w - 1) // 2 if strided else side_w - 1)
    taps = [(ky, kx) for ky in range(side) for kx in range(side_w)]
    if strided:   # tap (ky, kx): phase plane (ky % 2, kx % 2), ky // 2 rows down
        size = (out_h + (side - 1) // 2) * width
        offsets = [(ky % 2 * 2 + kx % 2) * size + ky // 2 * width + kx // 2
                   for ky, kx in taps]
    else:
        offsets = [ky * width + kx for ky, kx in taps]
    span = (out_h - 1) * width + out_w
    step = ROWS * LANES
    extent = -(-span // step) * step + max(offsets)
    if strided:
        extent = max(extent, 4 * size)
    return -(-extent // LANES) * LANES, np.array(offsets, np.int64)


def filters_in_blocks(w: np.ndarray, bias) -> tuple:
    """(filters (B, BLOCK, C, T), bias (B * BLOCK,)) in float32 from `w` (O, C, kh, kw)
    (T = kh * kw taps, row by row) and `bias` (None: zeros): output channels in blocks
    of BLOCK, the last padded with zero filters.  A C-contiguous float32 `w` of whole
    blocks is only reshaped.

    NOTE: why the kernel reads the filters in their own layout (each block's BLOCK
    weights of a tap from BLOCK rows) rather than side by side: transposing them into
    that order cost 23 us a call for 64 -> 64 filters and 93 for 128 -> 128, a quarter
    of a lone 8x8 image's convolution (2-core Intel Xeon, 2026-12-08)."""
    out_channels, channels = w.shape[:2]
    taps = w.shape[2] * w.shape[3]
    blocks = -(-out_channels // BLOCK)
    if out_channels == blocks * BLOCK and w.dtype == np.float32 and w.flags.c_contiguous:
        filters = w.reshape(blocks, BLOCK, channels, taps)
    else:
        filters = np.zeros((blocks, BLOCK, channels, taps), np.float32)
        filters.reshape(blocks * BLOCK, channels, taps)[:out_channels] = \
            w.reshape(out_channels, channels, taps)
    b = np.zeros(blocks * BLOCK, np.float32)
    if bias is not None:
        b[:out_channels] = bias
    return filters, b


def conv_forward(x, w, geo, bias=None):
    """The correlation of `x` (N, C, H, W), zero padded as `geo` says (a `supports`
    geometry), with `w` (O, C, k, k), plus `bias`: (N, O, OH, OW) float32; batches are
    cut over ember's threads by images."""
    a = np.ascontiguousarray(x, np.float32)
    side = w.shape[2]
    out_h, out_w = geo.out((side, side))
    out = np.empty((a.shape[0], w.shape[0], out_h, out_w), np.float32)
    strided = geo.stride == (2, 2)
    sizes = np.array([out_h, out_w, side - 1, side - 1, 0, 0, 1, geo.lo[0], geo.lo[1],
                      strided], np.int64)
    _run(a, w, bias, out, layout(out_h, out_w, strided, side), sizes)
    return out


def input_grad_strided(c, w, geo, bias=None):
    """The adjoint in its input of a stride-2 `conv_forward` (a `supports` geometry, the
    filters at least 2x2): `c` (N, O, oh, ow) -> (N, C, H, W) float32, plus `bias` at
    every position (a transposed convolution's).  Each phase of the padded input (even
    or odd rows by even or odd columns) receives a stride-1 correlation of `c`: with the
    taps of that phase, flipped, their input and output channels swapped, and `c` zero
    padded so that each of the phase's positions reads the outputs whose windows hold
    it; `_wide_out` writes its positions straight into the result, every second row and
    column (no columns, no col2im).  The four phases run in one call per thread's
    images (`_conv_phases`), each image padded once for all of them (by the largest
    phase's reach; the others' taps start further in)."""
    g = np.ascontiguousarray(c, np.float32)
    out_h, out_w = g.shape[2:]
    height, length = geo.padded()
    kh, kw = w.shape[2:]
    lo_h, lo_w = (kh + 1) // 2 - 1, (kw + 1) // 2 - 1   # (the largest phase's reach)
    rows = [(height - a + 1) // 2 for a in range(2)]
    cols = [(length - b + 1) // 2 for b in range(2)]
    width = max(cols) + lo_w
    filters, offsets, sizes = [], [], np.zeros((4, 10), np.int64)
    for k, (a, b) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        sub = w[:, :, a::2, b::2][:, :, ::-1, ::-1].transpose(1, 0, 2, 3)  # (C, O, ., .)
        dy, dx = sub.shape[2:]
        shift_h, shift_w = lo_h - (dy - 1), lo_w - (dx - 1)
        filters.append(filters_in_blocks(sub, bias))
        offsets.append(np.array([(i + shift_h) * width + j + shift_w for i in range(dy)
                                 for j in range(dx)], np.int64))
        sizes[k] = (rows[a], cols[b], dy - 1, dx - 1, a - geo.lo[0], b - geo.lo[1], 2,
                    lo_h, lo_w, 0)
        assert rows[a] >= out_h and cols[b] >= out_w   # (the padding below: not negative)
    step = ROWS * LANES
    reach = max(-(-((sizes[k, 0] - 1) * width + sizes[k, 1]) // step) * step
                + int(offsets[k].max()) for k in range(4))
    stride = -(-max(reach, (max(rows) + lo_h) * width) // LANES) * LANES
    out = np.empty((g.shape[0], w.shape[1]) + tuple(geo.size), np.float32)
    blocks = filters[0][0].shape[0]
    bias32 = filters[0][1]

    def images(part: slice, first: int = 0, last: int = blocks) -> None:
        _conv_phases(g[part], filters[0][0], filters[1][0], filters[2][0], filters[3][0],
                     bias32, out[part], stride, *offsets, sizes, width, first, last)

    work = out.size * w.shape[0] * kh * kw // 4
    _deal(images, g.shape[0], blocks, work)
    return out


def _deal(images, count: int, blocks: int, work: int) -> None:
    """``images(part)`` over ember's threads: each its images, or a lone image's blocks of
    output channels (``images(every, first, last)``), where `work` (multiply-adds) is
    large enough; else on this thread."""
    threads, every = _parallel.threads(), slice(0, count)
    if threads > 1 and count > 1 and work >= native.SPLIT_MIN:   # (each its images)
        _parallel.run_parts(images, _parallel.split(count, threads))
    elif threads > 1 and blocks > 1 and work >= LONE_SPLIT_MIN:
        # (a lone image: each thread its blocks of output channels)
        _parallel.run_parts(lambda part: images(every, part.start, part.stop),
                            _parallel.split(blocks, threads))
    else:
        images(every)


def _run(a, w, bias, out, planes_layout: tuple, sizes) -> None:
    """`_conv` of images `a` with the filters `w` (O, C, kh, kw) plus `bias` into
    `out`, as `sizes` says: each of ember's threads its images, or a lone image's blocks
    of output channels, where the work is large enough."""
    filters, b = filters_in_blocks(w, bias)
    stride, offsets = planes_layout
    blocks = filters.shape[0]

    def images(part: slice, first: int = 0, last: int = blocks) -> None:
        _conv(a[part], filters, b, out[part], stride, offsets, sizes, first, last)

    _deal(images, a.shape[0], blocks,
          sizes[0] * sizes[1] * a.shape[0] * w.shape[0] * a.shape[1] * len(offsets))


# ---------------------------------------------------------------------------
# the weight gradient
#
# dw[o, c, t] sums g[o, p] times input channel c's tap t at p over the images and
# positions p.  Here a vector holds LANES output channels: per image the gradient is laid
# out position by position (`rows`: each wide position's LANES channels side by side),
# and a group of three input channels keeps 27 vectors of sums, one per channel and tap,
# in registers over every position, adding for each the gradient's vector times the tap
# (one value, broadcast).  No sums are added across lanes; each image's are added into
# float64 totals, as the direct kernels add each plane's.


@native.kernel(inline=True)
def _nine_taps(planes, at, width, gradient, s0, s1, s2, s3, s4, s5, s6, s7, s8):
    """The nine sums of one input channel plus, for each tap (ky, kx), the `gradient`
    vector times the channel's value at ``at + ky * width + kx`` in `planes` (its padded
    plane).  (Three rows from `at`, each with steps of 0, 1 and 2: LLVM keeps a pointer
    per row and folds the steps into the loads.)"""
    r1, r2 = at + width, at + 2 * width
    return (multiply_add(splat_at(planes, at), gradient, s0),
            multiply_add(splat_at(planes, at + 1), gradient, s1),
            multiply_add(splat_at(planes, at + 2), gradient, s2),
            multiply_add(splat_at(planes, r1), gradient, s3),
            multiply_add(splat_at(planes, r1 + 1), gradient, s4),
            multiply_add(splat_at(planes, r1 + 2), gradient, s5),
            multiply_add(splat_at(planes, r2), gradient, s6),
            multiply_add(splat_at(planes, r2 + 1), gradient, s7),
            multiply_add(splat_at(planes, r2 + 2), gradient, s8))


@native.kernel(inline=True)
def _nine_phase_taps(planes, at, size, width, gradient, s0, s1, s2, s3, s4, s5, s6, s7,
                     s8):
    """`_nine_taps` at stride 2: tap (ky, kx) read from phase plane (ky % 2, kx % 2) of
    the channel (four planes of `size` from `at`), ky // 2 rows and kx // 2 columns on."""
    odd_column, odd_row = at + size, at + 2 * size
    return (multiply_add(splat_at(planes, at), gradient, s0),
            multiply_add(splat_at(planes, odd_column), gradient, s1),
            multiply_add(splat_at(planes, at + 1), gradient, s2),
            multiply_add(splat_at(planes, odd_row), gradient, s3),
            multiply_add(splat_at(planes, odd_row + size), gradient, s4),
            multiply_add(splat_at(planes, odd_row + 1), gradient, s5),
            multiply_add(splat_at(planes, at + width), gradient, s6),
            multiply_add(splat_at(planes, odd_column + width), gradient, s7),
            multiply_add(splat_at(planes, at + width + 1), gradient, s8))


@native.kernel(inline=True)
def _add_sums(totals, scratch, sums):
    """The vectors of `sums` (a tuple: one channel's taps) added into `totals` (taps,
    LANES), float64, through `scratch` (taps * LANES float32s)."""
    lanes = LANES
    for t, vector in enumerate(sums):
        store(scratch, t * lanes, vector)
    for t in range(totals.shape[0]):
        for lane in range(lanes):
            totals[t, lane] += scratch[t * lanes + lane]


@native.kernel(inline=True)
def _lay_out_gradient(g, i, rows, width):
    """Image `i`'s gradient planes (of g (N, O, OH, OW), C-contiguous) into `rows` (one
    row per block of LANES output channels): each wide position's LANES channels side by
    side, the positions `width` apart a line (those past a line's end are left as they
    are: the callers' zeros).  Whole blocks go LANES positions of a line at a time,
    transposed in registers (`transpose_tile`); the rest of a line, and a last block of
    fewer channels, one value at a time.  (One value at a time, the layout took ~40% of
    a 16 -> 16 layer's weight gradient at 32x32.)"""
    lanes = LANES
    out_channels, out_h, out_w = g.shape[1], g.shape[2], g.shape[3]
    flat = g.reshape(g.size)
    plane = out_h * out_w
    for b in range(rows.shape[0]):
        row, first = rows[b], b * lanes
        count = min(lanes, out_channels - first)
        tiles = out_w // lanes if count == lanes else 0
        for y in range(out_h):
            source = ((i * out_channels + first) * out_h + y) * out_w
            for t in range(tiles):
                transpose_tile(flat, source + t * lanes, plane, row,
                               (y * width + t * lanes) * lanes, lanes)
            for j in range(tiles * lanes, out_w):
                at = (y * width + j) * lanes
                for lane in range(count):
                    row[at + lane] = g[i, first + lane, y, j]


@native.kernel
def _weight_sums(x, g, totals, lo_h, lo_w, stride, strided):
    """totals (B, C3, 9, LANES), float64 (output channel o in lane o % LANES of block
    o // LANES; C3: the input channels rounded up to threes) += the weight gradient's
    sums over the images of x (N, C, H, W) and g (N, O, OH, OW), the 3x3 layer of
    stride 1, or 2 where `strided`, zero padded by (lo_h, lo_w) before.  Planes as
    `_conv` fills them, `stride` apart (`layout`), each tap's step written out
    (`_nine_taps`, `_nine_phase_taps`); the gradient's wide positions past each row are
    zero in `rows`, so what the taps meet there is not summed (unless it is not
    finite)."""
    images = x.shape[0]
    out_h, out_w = g.shape[2], g.shape[3]
    width = out_w + (1 if strided else 2)
    span = (out_h - 1) * width + out_w
    size = (out_h + 1) * width   # (a phase plane's, at stride 2)
    blocks, padded_channels = totals.shape[0], totals.shape[1]
    lanes = LANES
    planes = np.zeros(padded_channels * stride, np.float32)
    rows = np.zeros((blocks, span * lanes), np.float32)
    scratch = np.empty(TAPS * lanes, np.float32)
    z = splat(np.float32(0))
    for i in range(images):
        if strided:
            _fill_phases(x, i, planes, stride, out_h + 1, width, lo_h, lo_w)
        else:
            _pad_image(x, i, planes, stride, width, lo_h, lo_w)
        _lay_out_gradient(g, i, rows, width)
        for b in range(blocks):
            row = rows[b]
            for first in range(0, padded_channels, 3):
                a0, a1, a2, a3, a4, a5, a6, a7, a8 = z, z, z, z, z, z, z, z, z
                b0, b1, b2, b3, b4, b5, b6, b7, b8 = z, z, z, z, z, z, z, z, z
                c0, c1, c2, c3, c4, c5, c6, c7, c8 = z, z, z, z, z, z, z, z, z
                base = first * stride
                if strided:
                    for p in range(span):
                        gradient = load(row, p * lanes)
                        a0, a1, a2, a3, a4, a5, a6, a7, a8 = _nine_phase_taps(
                            planes, base + p, size, width, gradient, a0, a1, a2, a3, a4,
                            a5, a6, a7, a8)
                        b0, b1, b2, b3, b4, b5, b6, b7, b8 = _nine_phase_taps(
                            planes, base + stride + p, size, width, gradient, b0, b1, b2,
                            b3, b4, b5, b6, b7, b8)
                        c0, c1, c2, c3, c4, c5, c6, c7, c8 = _nine_phase_taps(
                            planes, base + 2 * stride + p, size, width, gradient, c0, c1,
                            c2, c3, c4, c5, c6, c7, c8)
                else:
                    for p in range(span):
                        gradient = load(row, p * lanes)
                        a0, a1, a2, a3, a4, a5, a6, a7, a8 = _nine_taps(
                            planes, base + p, width, gradient, a0, a1, a2, a3, a4, a5,
                            a6, a7, a8)
                        b0, b1, b2, b3, b4, b5, b6, b7, b8 = _nine_taps(
                            planes, base + stride + p, width, gradient, b0, b1, b2, b3,
                            b4, b5, b6, b7, b8)
                        c0, c1, c2, c3, c4, c5, c6, c7, c8 = _nine_taps(
                            planes, base + 2 * stride + p, width, gradient, c0, c1, c2,
                            c3, c4, c5, c6, c7, c8)
                _add_sums(totals[b, first], scratch, (a0, a1, a2, a3, a4, a5, a6, a7, a8))
                _add_sums(totals[b, first + 1], scratch,
                          (b0, b1, b2, b3, b4, b5, b6, b7, b8))
                _add_sums(totals[b, first + 2], scratch,
                          (c0, c1, c2, c3, c4, c5, c6, c7, c8))


@native.kernel(inline=True)
def _sixteen_phase_taps(planes, at, size, width, gradient, s0, s1, s2, s3, s4, s5, s6, s7,
                        s8, s9, s10, s11, s12, s13, s14, s15):
    """The sixteen sums of one input channel of a 4x4 stride-2 layer plus, for each tap
    (ky, kx), the `gradient` vector times the channel's value in phase plane (ky % 2, kx
    % 2) (four planes of `size` from `at`), ky // 2 rows and kx // 2 columns on."""
    eo, oe = at + size, at + 2 * size
    oo = oe + size
    return (multiply_add(splat_at(planes, at), gradient, s0),
            multiply_add(splat_at(planes, eo), gradient, s1),
            multiply_add(splat_at(planes, at + 1), gradient, s2),
            multiply_add(splat_at(planes, eo + 1), gradient, s3),
            multiply_add(splat_at(planes, oe), gradient, s4),
            multiply_add(splat_at(planes, oo), gradient, s5),
            multiply_add(splat_at(planes, oe + 1), gradient, s6),
            multiply_add(splat_at(planes, oo + 1), gradient, s7),
            multiply_add(splat_at(planes, at + width), gradient, s8),
            multiply_add(splat_at(planes, eo + width), gradient, s9),
            multiply_add(splat_at(planes, at + width + 1), gradient, s10),
            multiply_add(splat_at(planes, eo + width + 1), gradient, s11),
            multiply_add(splat_at(planes, oe + width), gradient, s12),
            multiply_add(splat_at(planes, oo + width), gradient, s13),
            multiply_add(splat_at(planes, oe + width + 1), gradient, s14),
            multiply_add(splat_at(planes, oo + width + 1), gradient, s15))


@native.kernel
def _weight_sums_4x4(x, g, totals, lo_h, lo_w, stride, scratch):
    """`_weight_sums` for a 4x4 layer of stride 2 (DCGAN's): totals (B, C, 16, LANES)
    float64, one input channel at a time (16 sums, one per tap, in registers over every
    position; `scratch`: 16 * LANES float32s to add them up through)."""
    out_h, out_w = g.shape[2], g.shape[3]
    width = out_w + 1
    size = (out_h + 1) * width
    span = (out_h - 1) * width + out_w
    lanes = LANES
    planes = np.zeros(x.shape[1] * stride, np.float32)
    rows = np.zeros((totals.shape[0], span * lanes), np.float32)
    z = splat(np.float32(0))
    for i in range(x.shape[0]):
        _fill_phases(x, i, planes, stride, out_h + 1, width, lo_h, lo_w)
        _lay_out_gradient(g, i, rows, width)
        for b in range(totals.shape[0]):
            row = rows[b]
            for c in range(x.shape[1]):
                s0, s1, s2, s3, s4, s5, s6, s7 = z, z, z, z, z, z, z, z
                s8, s9, s10, s11, s12, s13, s14, s15 = z, z, z, z, z, z, z, z
                base = c * stride
                for p in range(span):
                    (s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14,
                     s15) = _sixteen_phase_taps(planes, base + p, size, width,
                                                load(row, p * lanes), s0, s1, s2, s3, s4,
                                                s5, s6, s7, s8, s9, s10, s11, s12, s13,
                                                s14, s15)
                _add_sums(totals[b, c], scratch, (s0, s1, s2, s3, s4, s5, s6, s7, s8, s9,
                                                  s10, s11, s12, s13, s14, s15))


def weight_grad(x, g, geo, side: int = 3):
    """The gradient of `conv_forward`'s filters (O, C, side, side), float32, from its
    input `x` (N, C, H, W) and the output's gradient `g` (N, O, OH, OW): 3x3 at stride 1
    or 2, 4x4 at stride 2 (`weight_supports`); None where it is not finite (see
    `_native_direct_conv.weight_grad`).  Each of ember's threads takes a share of the
    images, with totals of its own, added at the end."""
    a = np.ascontiguousarray(x, np.float32)
    grad = np.ascontiguousarray(g, np.float32)
    (out_channels, out_h, out_w), channels = grad.shape[1:], a.shape[1]
    strided = geo.stride == (2, 2)
    stride, _ = layout(out_h, out_w, strided, side)
    taps = side * side
    blocks = -(-out_channels // LANES)
    shape = (blocks, channels, taps, LANES) if side == 4 else (
        blocks, -(-channels // 3) * 3, taps, LANES)

    def sums(images: slice) -> np.ndarray:
        totals = np.zeros(shape)
        if side == 4:
            _weight_sums_4x4(a[images], grad[images], totals, geo.lo[0], geo.lo[1], stride,
                             np.empty(taps * LANES, np.float32))
        else:
            _weight_sums(a[images], grad[images], totals, geo.lo[0], geo.lo[1], stride,
                         strided)
        return totals

    threads = _parallel.threads()
    if threads > 1 and a.shape[0] > 1 and grad.size * channels * taps >= native.SPLIT_MIN:
        totals = sum(_parallel.run_parts(sums, _parallel.split(a.shape[0], threads)))
    else:
        totals = sums(slice(0, a.shape[0]))
    if not np.isfinite(totals).all():
        return None
    gw = totals.transpose(0, 3, 1, 2).reshape(-1, shape[1], taps)[:out_channels, :channels]
    return gw.reshape(out_channels, channels, side, side).astype(np.float32)

