"""Direct 3x3 convolutions for few channels (numba): the first layer of an image network,
where im2col's column matrix has only 9-63 rows, and layers of up to 16 -> 16 channels
(a CIFAR ResNet's first stage); forward and weight gradient (the input gradient of a
stride-1 layer is a forward convolution: conv_arrays.py sends it here too).

With one input channel (MNIST) im2col copies the image nine times into a column matrix
and multiplies it by a 32x10 weight matrix: a product far too thin for BLAS to pay, so
the copies and the calls are the cost.  Here each image and block of four output
channels is one task that sums the nine shifted rows of each input channel straight into
the four outputs.

The trick that lets the sum vectorize: the output plane is computed over the input's full
width, so that output element ``p = y * W + x`` reads input elements ``p + ky * W + kx``
-- for every tap one contiguous run, the same offset for all p.  The columns x >= OW of
that wide plane are not outputs (their windows wrap around a row's end) and are dropped
when the plane is copied out.  One pass over the plane sums all nine taps of an input
channel into four output channels (nine loads, 36 multiply-adds, four stores per
element), the weights held in registers.

conv_arrays.py sends 3x3, stride-1, undilated, ungrouped, zero-padded float32/float64
convolutions with few channels here (see `supports`), and their weight gradients (18
dot products a pass over an input plane, `weight_grad`); at stride 2 (a network's stem:
`supports_strided`) each input channel is first split into its four phase planes (even
and odd rows and columns, as the depthwise kernels do), where every tap is again a fixed
offset away.  They are summed in a different order than im2col's product, so results
differ from it by rounding.  EMBER_NO_DIRECT_CONV=1 (or ``ENABLED = False``) turns the
path off.
"""

from __future__ import annotations

import os

import numpy as np

from . import _native as native
from . import _parallel
from ._native_activation import FUSED_MULTIPLY_ADD
from ._native_depthwise import REORDER, _widen_rows, phase_index, to_phases
from ._native_winograd import plain_3x3

ENABLED = os.environ.get("EMBER_NO_DIRECT_CONV", "") in ("", "0")

# NOTE: the direct sum costs 9 multiply-adds per output element and input channel, while
# im2col's product reuses each loaded value across output channels, and gains on it as
# they grow; in blocks of four output channels (`_add_nine_taps_by_four`) and pairs for
# the weight gradient, the direct sums hold on up to a product of 256 channels.
# Measured (batch 64, 2 threads, float32), direct / im2col (or Winograd) time, forward,
# input gradient, weight gradient:
#   channels in -> out   32x32              16x16              8x8
#   8 -> 8               0.60 0.59 0.38     0.40 0.51 0.61     0.56 0.60 0.58
#   16 -> 16             0.86 0.89 0.66     0.89 0.88 1.16     0.96 0.92 0.81
#   16 -> 32             1.23 0.90 0.77     1.40 1.44 1.24     1.08 1.05 1.23
#   32 -> 32             1.07 1.09 0.86     2.15 2.44 2.50     1.27 1.29 1.41
# and at batch 128, 32x32: 3 -> 64 0.96 / - / 0.52, 4 -> 64 0.89 0.90 0.87, 6 -> 64 0.99
# 1.13 0.95, 64 -> 4 0.48 / - / 0.41 (- : the input gradient not by this path).  Before
# the blocks (one output channel at a time) the limit was 128, and 128 padded 32x32
# images 3 -> 64 took 5.93 ms direct against 5.11 by im2col.  Few input channels on a
# small output stay here at any channel product (the calls then cost more than the sums).
MAX_IN_CHANNELS = 8
MAX_CHANNEL_PRODUCT = 256
# The weight gradient's pairs hold on further on large planes (those ratios at 32x32:
# 16 -> 32 0.77, 32 -> 16 0.71, 24 -> 24 0.73, 32 -> 32 0.86, 64 -> 64 1.14; at 56x56
# 16 -> 32 0.89), where each image's input planes stay in cache for all its channels.
MAX_WEIGHT_CHANNEL_PRODUCT = 1024
LARGE_PLANE = 32 * 32
# At stride 2 im2col's columns are a strided copy, and the direct kernels (phase planes
# filled once per image) hold on up to a product of 512: direct / im2col time, forward
# and weight gradient, 64 images: 16 -> 16 at 32x32 0.67 0.59, 16 -> 32 at 32x32 0.97
# 0.78 (at 16x16 0.93 0.89, 32 images at 64x64 0.68 0.65), 32 -> 32 at 32x32 0.89 0.97
# (at 16x16 0.83 1.05), 32 -> 64 at 16x16 1.32 1.37.
MAX_STRIDED_CHANNEL_PRODUCT = 512
SMALL_OUTPUT = 1 << 16  # elements
# A weight gradient lays out the gradient planes of the output channels it sums in one
# buffer: at most this many bytes of them a pass over the images (in cache, and bounded
# for large planes of many channels), the channels beyond in further passes.
WIDE_BYTES = 1 << 20
# The (image, block of output channels) tasks are dealt out in at most this many runs,
# each with its own buffers (see _native_depthwise.RUNS: allocations per task contend
# across threads).
RUNS = 64


def supports(dtype, images: int, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether a convolution takes this path: float32 or float64, the geometry of
    `_native_winograd.plain_3x3`, and few channels (see the NOTE)."""
    if not (ENABLED and dtype in (np.float32, np.float64) and plain_3x3(kernel, geo)):
        return False
    h, w = geo.padded()
    return (in_channels * out_channels <= MAX_CHANNEL_PRODUCT
            or (in_channels < MAX_IN_CHANNELS
                and images * out_channels * (h - 2) * (w - 2) < SMALL_OUTPUT))


def weight_supports(dtype, images: int, in_channels: int, out_channels: int, kernel,
                    geo) -> bool:
    """Whether a convolution's weight gradient takes this path: where the forward does
    (`supports`), and on large planes up to a larger channel product (see the NOTE)."""
    if supports(dtype, images, in_channels, out_channels, kernel, geo):
        return True
    if not (ENABLED and dtype in (np.float32, np.float64) and plain_3x3(kernel, geo)):
        return False
    h, w = geo.padded()
    return (in_channels * out_channels <= MAX_WEIGHT_CHANNEL_PRODUCT
            and (h - 2) * (w - 2) >= LARGE_PLANE)


@native.kernel(inline=True)
def _add_nine_taps_by_four(a0, a1, a2, a3, f0, f1, f2, f3, t0, t1, t2, t3, t4, t5, t6, t7,
                           t8, span):
    """``ak[p] +=`` the 3x3 filter `fk` times the nine taps `tj` at p, for p < span and
    four output channels k at once: the taps in row order (fk[0, 0] with t0 ... fk[2, 2]
    with t8), the weights in registers.  Each tap is loaded once for the four (36
    multiply-adds to 13 loads, where one channel at a time did 9 to 10)."""
    u0, u1, u2, u3, u4, u5, u6, u7, u8 = f0[0, 0], f0[0, 1], f0[0, 2], f0[1, 0], f0[1, 1], \
        f0[1, 2], f0[2, 0], f0[2, 1], f0[2, 2]
    v0, v1, v2, v3, v4, v5, v6, v7, v8 = f1[0, 0], f1[0, 1], f1[0, 2], f1[1, 0], f1[1, 1], \
        f1[1, 2], f1[2, 0], f1[2, 1], f1[2, 2]
    w0, w1, w2, w3, w4, w5, w6, w7, w8 = f2[0, 0], f2[0, 1], f2[0, 2], f2[1, 0], f2[1, 1], \
        f2[1, 2], f2[2, 0], f2[2, 1], f2[2, 2]
    z0, z1, z2, z3, z4, z5, z6, z7, z8 = f3[0, 0], f3[0, 1], f3[0, 2], f3[1, 0], f3[1, 1], \
        f3[1, 2], f3[2, 0], f3[2, 1], f3[2, 2]
    for p in range(span):
        x0, x1, x2, x3, x4 = t0[p], t1[p], t2[p], t3[p], t4[p]
        x5, x6, x7, x8 = t5[p], t6[p], t7[p], t8[p]
        a0[p] += (u0 * x0 + u1 * x1 + u2 * x2 + u3 * x3 + u4 * x4 + u5 * x5 + u6 * x6
                  + u7 * x7 + u8 * x8)
        a1[p] += (v0 * x0 + v1 * x1 + v2 * x2 + v3 * x3 + v4 * x4 + v5 * x5 + v6 * x6
                  + v7 * x7 + v8 * x8)
        a2[p] += (w0 * x0 + w1 * x1 + w2 * x2 + w3 * x3 + w4 * x4 + w5 * x5 + w6 * x6
                  + w7 * x7 + w8 * x8)
        a3[p] += (z0 * x0 + z1 * x1 + z2 * x2 + z3 * x3 + z4 * x4 + z5 * x5 + z6 * x6
                  + z7 * x7 + z8 * x8)


@native.kernel(inline=True)
def _start_block(acc, bias, first, span):
    """The four rows of `acc` (output channels `first` to ``first + 3``) set to their
    channels' bias over `span`."""
    for k in range(4):
        b = bias[first + k]
        for p in range(span):
            acc[k, p] = b


@native.kernel(inline=True)
def _add_block_taps(acc, w, first, c, t0, t1, t2, t3, t4, t5, t6, t7, t8, span):
    """Input channel `c`'s nine taps into the four output channels from `first` (the
    rows of `acc`)."""
    _add_nine_taps_by_four(acc[0], acc[1], acc[2], acc[3], w[first, c], w[first + 1, c],
                           w[first + 2, c], w[first + 3, c], t0, t1, t2, t3, t4, t5, t6, t7,
                           t8, span)


@native.kernel(inline=True)
def _block_out(acc, out, i, first, width):
    """A block's wide planes (rows of `acc`, lines `width` apart) into image `i` of out,
    those of its channels that `out` has (the last block may have padding ones)."""
    out_h, out_w = out.shape[2], out.shape[3]
    for k in range(min(4, out.shape[1] - first)):
        plane = out[i, first + k]
        for y in range(out_h):
            row, wide = plane[y], acc[k, y * width:]
            for j in range(out_w):
                row[j] = wide[j]


@native.kernel(inline=True)
def _pad_image(x, i, padded, lo_h, lo_w):
    """Image `i` of x (N, C, H, W) into `padded` (C, H', W') from row `lo_h` and column
    `lo_w`; the border around it is left as it is (the callers' zeros)."""
    for c in range(x.shape[1]):
        for y in range(x.shape[2]):
            row, into = x[i, c, y], padded[c, lo_h + y, lo_w:]
            for j in range(x.shape[3]):
                into[j] = row[j]


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _conv3x3(x, w, bias, out, lo_h, lo_w):
    """out (N, O, OH, OW) = the 3x3 correlation of the images x (N, C, H, W), zero padded
    by (lo_h, lo_w) before and to OH + 2, OW + 2 in all, with w (4B, C, 3, 3), plus bias
    (4B,): the filters in blocks of four output channels, the last block padded
    (`_in_blocks_of_four`); one task per image and block.  Each run pads its images one
    at a time into a buffer of its own (in cache, where a padded copy of the batch made
    beforehand was a serial pass over memory: 0.45 of a 2.6 ms layer)."""
    images, out_h, out_w = out.shape[0], out.shape[2], out.shape[3]
    channels_in = x.shape[1]
    height, width = out_h + 2, out_w + 2   # the padded plane
    span = (out_h - 1) * width + out_w     # the wide plane, up to its last output element
    blocks = w.shape[0] // 4
    tasks = images * blocks
    runs = min(tasks, RUNS)
    for run in native.prange(runs):
        padded = np.zeros((channels_in, height, width), x.dtype)
        planes = padded.reshape(channels_in, -1)
        acc = np.empty((4, span), x.dtype)
        image = -1
        for task in range(run * tasks // runs, (run + 1) * tasks // runs):
            i, first = task // blocks, task % blocks * 4
            if i != image:
                _pad_image(x, i, padded, lo_h, lo_w)
                image = i
            _start_block(acc, bias, first, span)
            for c in range(channels_in):
                r0 = planes[c]
                r1, r2 = r0[width:], r0[2 * width:]
                _add_block_taps(acc, w, first, c, r0, r0[1:], r0[2:], r1, r1[1:], r1[2:], r2,
                                r2[1:], r2[2:], span)
            _block_out(acc, out, i, first, width)


def conv_forward(x, w, geo, bias=None):
    """The 3x3 correlation of `x` (N, C, H, W), zero padded as `geo` says (a `supports`
    geometry), with `w` (O, C, 3, 3), plus `bias`: (N, O, OH, OW), of their common dtype;
    batches are cut over ember's threads by images."""
    dtype = np.result_type(x, w)
    a = np.ascontiguousarray(x, dtype)
    k, b = _in_blocks_of_four(w, bias, dtype)
    out_h, out_w = geo.out((3, 3))
    out = np.empty((a.shape[0], w.shape[0], out_h, out_w), dtype)
    native.run(_conv3x3, out.size, a, k, b, out, geo.lo[0], geo.lo[1], cut=(0, 3))
    return out


def _in_blocks_of_four(w, bias, dtype) -> tuple:
    """The filters `w` (O, C, 3, 3) and `bias` (None: zeros) in `dtype`, padded with
    zero filters to a multiple of four output channels (what the kernels take: one
    kernel loop for every block, no other for the last one's few channels)."""
    blocks = -(-w.shape[0] // 4)
    k = np.zeros((4 * blocks,) + w.shape[1:], dtype)
    k[:w.shape[0]] = w
    b = np.zeros(4 * blocks, dtype)
    if bias is not None:
        b[:w.shape[0]] = bias
    return k, b


@native.kernel(inline=True)
def _add_nine_dots_by_two(totals0, totals1, t0, t1, t2, t3, t4, t5, t6, t7, t8, wide0,
                          wide1, span, zero):
    """``totals0[j] +=`` the dot product of tap `tj` with `wide0` over `span`
    elements, and ``totals1[j] +=`` that with `wide1`, for j = 0..8 (two output
    channels' 3x3 weight gradient), in one pass that loads each tap once for both: 18
    sums from `zero` (its type: the sums' dtype)."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = zero
    r0 = r1 = r2 = r3 = r4 = r5 = r6 = r7 = r8 = zero
    for p in range(span):
        x0, x1, x2, x3, x4 = t0[p], t1[p], t2[p], t3[p], t4[p]
        x5, x6, x7, x8 = t5[p], t6[p], t7[p], t8[p]
        u, v = wide0[p], wide1[p]
        s0 += x0 * u
        s1 += x1 * u
        s2 += x2 * u
        s3 += x3 * u
        s4 += x4 * u
        s5 += x5 * u
        s6 += x6 * u
        s7 += x7 * u
        s8 += x8 * u
        r0 += x0 * v
        r1 += x1 * v
        r2 += x2 * v
        r3 += x3 * v
        r4 += x4 * v
        r5 += x5 * v
        r6 += x6 * v
        r7 += x7 * v
        r8 += x8 * v
    totals0[0] += s0
    totals0[1] += s1
    totals0[2] += s2
    totals0[3] += s3
    totals0[4] += s4
    totals0[5] += s5
    totals0[6] += s6
    totals0[7] += s7
    totals0[8] += s8
    totals1[0] += r0
    totals1[1] += r1
    totals1[2] += r2
    totals1[3] += r3
    totals1[4] += r4
    totals1[5] += r5
    totals1[6] += r6
    totals1[7] += r7
    totals1[8] += r8


@native.kernel(inline=True)
def _add_channel_dots(totals, c, t0, t1, t2, t3, t4, t5, t6, t7, t8, wide, span, zero):
    """Input channel `c`'s nine taps dotted with each gradient plane (rows of `wide`, an
    even number of them) into ``totals[k, c]``, two planes a pass."""
    for k in range(0, wide.shape[0], 2):
        _add_nine_dots_by_two(totals[k, c], totals[k + 1, c], t0, t1, t2, t3, t4, t5, t6, t7,
                              t8, wide[k], wide[k + 1], span, zero)


@native.kernel(inline=True)
def _widen_block(g, i, first, stop, wide, width):
    """Image `i`'s gradient planes `first` to `stop` into the rows of `wide` (one more
    row, left zero, where they are odd)."""
    for k in range(stop - first):
        _widen_rows(g[i, first + k], wide[k], width)


@native.kernel(inline=True)
def _store_totals(totals, gw, first, stop):
    """The sums (rows from output channel `first`, C, 9) into the filters' gradient gw,
    up to output channel `stop`."""
    for k in range(stop - first):
        for c in range(totals.shape[1]):
            for t in range(9):
                gw[first + k, c, t // 3, t % 3] = totals[k, c, t]


@native.kernel(fastmath=REORDER)
def _weight3x3(x, g, gw, zero, first, stop, lo_h, lo_w):
    """gw[first:stop] (O, C, 3, 3), float64: for each tap, the sum over images and
    outputs of g (N, O, OH, OW) times the input x (N, C, H, W), zero padded by (lo_h,
    lo_w) before and to OH + 2, OW + 2 in all, that tap read.  Per image the input is
    padded into a buffer (in cache) and the gradient planes of the range are laid out in
    rows of its width (zeros between); then per input channel and pair of output
    channels one pass makes the 18 dot products (the trick of `_conv3x3`).  A plane's
    dot products are summed in the data's dtype (`zero`: its 0), the planes' in
    float64.  (The range rather than slices of g: one build for whole arrays and
    threads' shares.)"""
    images, channels_in = x.shape[0], x.shape[1]
    out_h, out_w = g.shape[2], g.shape[3]
    height, width = out_h + 2, out_w + 2
    span = (out_h - 1) * width + out_w
    padded = np.zeros((channels_in, height, width), x.dtype)
    planes = padded.reshape(channels_in, -1)
    rows = stop - first + (stop - first) % 2   # (even: pairs)
    wide = np.zeros((rows, span), g.dtype)
    totals = np.zeros((rows, channels_in, 9))
    for i in range(images):
        _pad_image(x, i, padded, lo_h, lo_w)
        _widen_block(g, i, first, stop, wide, width)
        for c in range(channels_in):
            r0 = planes[c]
            r1, r2 = r0[width:], r0[2 * width:]
            _add_channel_dots(totals, c, r0, r0[1:], r0[2:], r1, r1[1:], r1[2:], r2, r2[1:],
                              r2[2:], wide, span, zero)
    _store_totals(totals, gw, first, stop)


def weight_grad(x, g, geo):
    """The gradient of `conv_forward`'s filters (O, C, 3, 3) from its input `x` (N, C, H,
    W), zero padded as `geo` says, and the output's gradient `g` (N, O, OH, OW), in their
    dtype; None where it is not finite (the dot products also multiply the input by the
    zeros between the gradient's rows: an inf there gives NaN, where the general path's
    sums may not)."""
    return _over_output_channels(_weight3x3, x, g, geo.lo[0], geo.lo[1])


def _over_output_channels(kernel, x, g, *extra):
    """``kernel(x, g, gw, zero, first, stop, *extra)`` (a weight gradient's kernel) over
    all the output channels of `g`, halved over ember's threads when large, each half in
    runs of channels whose gradient planes fit WIDE_BYTES; the filters' gradient (O, C,
    3, 3) in the data's dtype, or None where it is not finite.

    NOTE: the halves are Python parts (each half's milliseconds dwarf the wait for the
    GIL); numba's own threads, with ember's worker polling beside them, did not scale
    here (3.8 ms on one, 4.0-4.2 on two, 128 CIFAR images 3 -> 16)."""
    dtype = np.result_type(x, g)
    a = np.ascontiguousarray(x, dtype)
    grad = np.ascontiguousarray(g, dtype)
    gw = np.empty((grad.shape[1], a.shape[1], 3, 3))
    zero = dtype.type(0)
    count = grad.shape[1]
    # (a wide plane is at most the output's rows of its width plus two)
    plane_bytes = grad.shape[2] * (grad.shape[3] + 2) * dtype.itemsize
    run = max(2, WIDE_BYTES // plane_bytes // 2 * 2)

    def channels(outs: slice) -> None:
        for first in range(outs.start, outs.stop, run):
            kernel(a, grad, gw, zero, first, min(first + run, outs.stop), *extra)

    if native.cuts(grad.size * a.shape[1] * 9) and count > 2:
        # halves of whole pairs (and runs of them): each channel is then summed in the
        # same pair (the same bits) as on one thread
        halves = [slice(2 * pairs.start, min(2 * pairs.stop, count))
                  for pairs in _parallel.split((count + 1) // 2, 2)]
        _parallel.run_parts(channels, halves)
    else:
        channels(slice(0, count))
    if not np.isfinite(gw).all():
        return None
    return gw.astype(dtype, copy=False)


# ---------------------------------------------------------------------------
# stride 2: a network's stem (3 -> 16 or 32 channels, halving the image)


def supports_strided(dtype, images: int, in_channels: int, out_channels: int, kernel,
                     geo) -> bool:
    """Whether a convolution takes the stride-2 direct path: `supports`' rule for the
    channels with the limit of MAX_STRIDED_CHANNEL_PRODUCT, and the geometry of a 3x3
    filter at stride 2 (undilated, one group, zero padding, an output)."""
    if not (ENABLED and dtype in (np.float32, np.float64) and tuple(kernel) == (3, 3)
            and len(geo.size) == 2 and geo.stride == (2, 2)
            and geo.dilation == (1, 1) and geo.groups == 1 and min(geo.lo + geo.hi) >= 0
            and min(geo.out(kernel)) >= 1 and native.enabled()):
        return False
    out_h, out_w = geo.out(kernel)
    return (in_channels * out_channels <= MAX_STRIDED_CHANNEL_PRODUCT
            or (in_channels < MAX_IN_CHANNELS
                and images * out_channels * out_h * out_w < SMALL_OUTPUT))


@native.kernel(inline=True)
def _fill_image_phases(x, i, phases, line, height, width, lo_h, lo_w, index):
    """Each input channel of image `i` into its four phase planes (a row of `phases`)."""
    for c in range(x.shape[1]):
        to_phases(x[i, c], phases[c], line, height, width, 2, 2, lo_h, lo_w, index)


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _conv3x3_stride2(x, w, bias, out, lo_h, lo_w, index):
    """out (N, O, OH, OW) = the 3x3 correlation at stride 2 of x (N, C, H, W), zero
    padded by (lo_h, lo_w) before, with w (4B, C, 3, 3), plus bias (4B,) (in blocks of
    four output channels, as `_conv3x3`'s).  Per image each input channel is split once
    into its four phase planes (even and odd rows and columns, `_fill_phases`), where
    every tap of every output is a fixed offset away: then per block one pass sums the
    nine taps of each input channel."""
    images, out_h, out_w = out.shape[0], out.shape[2], out.shape[3]
    channels_in = x.shape[1]
    height, width = out_h + 1, out_w + 1
    size = height * width
    span = (out_h - 1) * width + out_w
    for i in native.prange(images):
        phases = np.empty((channels_in, 4 * size), x.dtype)   # (each thread its own)
        line = np.empty(2 * width, x.dtype)
        acc = np.empty((4, span), x.dtype)
        _fill_image_phases(x, i, phases, line, height, width, lo_h, lo_w, index)
        for first in range(0, w.shape[0], 4):
            _start_block(acc, bias, first, span)
            for c in range(channels_in):
                ee, eo = phases[c], phases[c, size:]
                oe, oo = phases[c, 2 * size:], phases[c, 3 * size:]
                _add_block_taps(acc, w, first, c, ee, eo, ee[1:], oe, oo, oe[1:], ee[width:],
                                eo[width:], ee[width + 1:], span)
            _block_out(acc, out, i, first, width)


@native.kernel(fastmath=REORDER)
def _weight3x3_stride2(x, g, gw, zero, first, stop, lo_h, lo_w, index):
    """gw[first:stop] (O, C, 3, 3), float64: `_weight3x3` at stride 2, the taps read from
    each input channel's phase planes (split once per image for all the output channels
    of the range), the gradient laid out in their rows, two output channels a pass."""
    images, channels_in = x.shape[0], x.shape[1]
    out_h, out_w = g.shape[2], g.shape[3]
    height, width = out_h + 1, out_w + 1
    size = height * width
    span = (out_h - 1) * width + out_w
    phases = np.empty((channels_in, 4 * size), x.dtype)
    line = np.empty(2 * width, x.dtype)
    rows = stop - first + (stop - first) % 2   # (even: pairs)
    wide = np.zeros((rows, span), g.dtype)
    totals = np.zeros((rows, channels_in, 9))
    for i in range(images):
        _fill_image_phases(x, i, phases, line, height, width, lo_h, lo_w, index)
        _widen_block(g, i, first, stop, wide, width)
        for c in range(channels_in):
            ee, eo = phases[c], phases[c, size:]
            oe, oo = phases[c, 2 * size:], phases[c, 3 * size:]
            _add_channel_dots(totals, c, ee, eo, ee[1:], oe, oo, oe[1:], ee[width:],
                              eo[width:], ee[width + 1:], wide, span, zero)
    _store_totals(totals, gw, first, stop)


def conv_forward_strided(x, w, geo, bias=None):
    """The 3x3 correlation at stride 2 of `x` (N, C, H, W), zero padded as `geo` says,
    with `w` (O, C, 3, 3), plus `bias`; batches cut over ember's threads by images."""
    dtype = np.result_type(x, w)
    a = np.ascontiguousarray(x, dtype)
    k, b = _in_blocks_of_four(w, bias, dtype)
    out_h, out_w = geo.out((3, 3))
    out = np.empty((a.shape[0], w.shape[0], out_h, out_w), dtype)
    lo_h, lo_w = geo.lo
    index = phase_index(a.shape[2:], (out_h, out_w), (3, 3), (2, 2, 1, 1, lo_h, lo_w))
    native.run(_conv3x3_stride2, out.size * a.shape[1] * 9, a, k, b, out, lo_h, lo_w, index,
               cut=(0, 3))
    return out


def weight_grad_strided(x, g, geo):
    """The gradient of `conv_forward_strided`'s filters (O, C, 3, 3) from its input `x`
    and the output's gradient `g`; None where it is not finite (see `weight_grad`)."""
    lo_h, lo_w = geo.lo
    index = phase_index(x.shape[2:], g.shape[2:], (3, 3), (2, 2, 1, 1, lo_h, lo_w))
    return _over_output_channels(_weight3x3_stride2, x, g, lo_h, lo_w, index)
