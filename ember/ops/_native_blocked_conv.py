"""Register-blocked 3x3 convolutions (numba, explicit SIMD vectors): the forward of a
3x3 layer of a CNN at stride 1 or 2, so the input gradient of a stride-1 one (a
forward of the output's gradient with the filters flipped: conv_arrays.py's
`_transpose_as_conv`), and the weight gradient of a stride-1 one of few channels.

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

import os

import numpy as np

from . import _native as native
from ._native_direct_conv import _over_output_channels, _store_totals
from ._native_vectors import AVX512, LANES, load, multiply_add, splat, store, total
from ._native_winograd import plain_3x3

ENABLED = os.environ.get("EMBER_NO_BLOCKED_CONV", "") in ("", "0")

BLOCK = 8   # output channels a pass
ROWS = 3    # vectors of output positions a pass
TAPS = 9
# Each thread's images are dealt out to at most this many runs of numba's threads, each
# with buffers of its own (as _native_direct_conv.RUNS).
RUNS = 64


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
# The weight gradient (`weight_grad`) sums each plane's dot products in registers and
# adds them up per image, which pays on large planes of few channels only (64 images,
# ms, this kernel against the direct one or Winograd, PyTorch: 16 -> 16 at 32x32 1.97
# 2.45 1.59, 16 -> 32 3.70 4.70 3.03, 8 -> 8 0.70 0.78 0.70; but 32 -> 32 at 16x16 2.40
# 1.75, 3 -> 16 at 32x32 0.96 0.60, where laying out the gradient planes costs more
# than the sums).  Stride 1 only.
WEIGHT_MIN_IN_CHANNELS = 8
WEIGHT_MAX_CHANNEL_PRODUCT = 512
WEIGHT_MIN_PLANE = 32 * 32


def strided_3x3(kernel, geo) -> bool:
    """A 2-D 3x3 convolution of stride 2, dilation 1, one group, zero padding (no
    cropping) and an output, when numba is on."""
    return (tuple(kernel) == (3, 3) and len(geo.size) == 2 and geo.stride == (2, 2)
            and geo.dilation == (1, 1) and geo.groups == 1 and min(geo.lo + geo.hi) >= 0
            and min(geo.out(kernel)) >= 1 and native.enabled())


def weight_supports(dtype, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether a convolution's weight gradient takes this path: `supports`' stride-1
    geometry, and few channels over a large plane (see WEIGHT_MAX_CHANNEL_PRODUCT)."""
    if not (ENABLED and AVX512 and dtype == np.float32 and plain_3x3(kernel, geo)):
        return False
    out_h, out_w = geo.out((3, 3))
    return (in_channels >= WEIGHT_MIN_IN_CHANNELS and out_h * out_w >= WEIGHT_MIN_PLANE
            and in_channels * out_channels <= WEIGHT_MAX_CHANNEL_PRODUCT)


def supports(dtype, images: int, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether a convolution takes this path: float32, 3x3 of stride 1 (the geometry of
    `_native_winograd.plain_3x3`) or 2 (`strided_3x3`), an AVX-512 processor, and few
    channels (see MAX_CHANNEL_PRODUCT)."""
    if not (ENABLED and AVX512 and dtype == np.float32):
        return False
    if plain_3x3(kernel, geo):
        limit = MAX_CHANNEL_PRODUCT if images > 1 else MAX_LONE_CHANNEL_PRODUCT
    elif strided_3x3(kernel, geo):
        limit = (MAX_STRIDED_CHANNEL_PRODUCT if images > 1
                 else MAX_LONE_STRIDED_CHANNEL_PRODUCT)
    else:
        return False
    return in_channels * out_channels <= limit


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
    BLOCK output channels from `first` (their filters: `filters` (C, 9, BLOCK)), over
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
    for c in range(filters.shape[0]):
        base = c * stride + p
        for t in range(TAPS):
            at = base + offsets[t]
            f = filters[c, t]
            r0 = load(planes, at)
            r1 = load(planes, at + lanes)
            r2 = load(planes, at + 2 * lanes)
            s00, s10, s20 = _times_weight(r0, r1, r2, f[0], s00, s10, s20)
            s01, s11, s21 = _times_weight(r0, r1, r2, f[1], s01, s11, s21)
            s02, s12, s22 = _times_weight(r0, r1, r2, f[2], s02, s12, s22)
            s03, s13, s23 = _times_weight(r0, r1, r2, f[3], s03, s13, s23)
            s04, s14, s24 = _times_weight(r0, r1, r2, f[4], s04, s14, s24)
            s05, s15, s25 = _times_weight(r0, r1, r2, f[5], s05, s15, s25)
            s06, s16, s26 = _times_weight(r0, r1, r2, f[6], s06, s16, s26)
            s07, s17, s27 = _times_weight(r0, r1, r2, f[7], s07, s17, s27)
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
def _wide_out(wide, out, i, first, width):
    """The rows of `wide` (wide planes, lines `width` apart) into image `i` of out from
    channel `first`, those channels that `out` has (the last block may have padding)."""
    out_h, out_w = out.shape[2], out.shape[3]
    for k in range(min(wide.shape[0], out.shape[1] - first)):
        for y in range(out_h):
            row, line = out[i, first + k, y], wide[k, y * width:]
            for j in range(out_w):
                row[j] = line[j]


@native.kernel(inline=True)
def _fill_phases(x, i, planes, stride, height, width, lo_h, lo_w):
    """Image `i` of x (N, C, H, W), zero padded by (lo_h, lo_w) before, split into its
    four phase planes per channel (even and odd rows by even and odd columns, each
    `height` x `width`, one after the other in the channel's part of `planes`): padded
    position (2r + a, 2s + b) goes to row r, column s of phase plane 2a + b."""
    size = height * width
    h, w = x.shape[2], x.shape[3]
    for c in range(x.shape[1]):
        for phase in range(4):
            a, b = phase // 2, phase % 2
            plane = planes[c * stride + phase * size:]
            for r in range(height):
                y = 2 * r + a - lo_h
                line = plane[r * width:(r + 1) * width]
                if y < 0 or y >= h:
                    line[:] = 0
                    continue
                # columns j of the line read x's column 2j + b - lo_w, where it has one
                start = min(max((lo_w - b + 1) // 2, 0), width)
                stop = max(min((w - 1 + lo_w - b) // 2 + 1, width), start)
                line[:start] = 0
                line[stop:] = 0
                row = x[i, c, y, 2 * start + b - lo_w:]
                for j in range(stop - start):
                    line[start + j] = row[2 * j]


@native.kernel(parallel=True)
def _conv3x3(x, filters, bias, out, lo_h, lo_w, stride, offsets, strided):
    """out (N, O, OH, OW) = the 3x3 correlation of x (N, C, H, W) at stride 1, or 2 where
    `strided`, zero padded by (lo_h, lo_w) before, with the filters (B, C, 9, BLOCK) (B
    blocks of output channels, the last padded with zero filters) plus bias (B * BLOCK,).
    At stride 1 each channel is padded into a plane OW + 2 wide, at stride 2 split into
    four phase planes OW + 1 wide (`_fill_phases`), `stride` apart (`layout`); tap t
    reads `offsets[t]` past the position it serves.  The images go to runs of numba's
    threads; each run fills its images' planes one at a time and makes every block's
    passes."""
    images = x.shape[0]
    out_h, out_w = out.shape[2], out.shape[3]
    width = out_w + (1 if strided else 2)
    span = (out_h - 1) * width + out_w   # the wide plane, to its last output
    step = ROWS * LANES
    passes = (span + step - 1) // step
    runs = min(images, RUNS)
    for run in native.prange(runs):
        planes = np.zeros(x.shape[1] * stride, np.float32)
        wide = np.empty((BLOCK, passes * step), np.float32)
        for i in range(run * images // runs, (run + 1) * images // runs):
            if strided:
                _fill_phases(x, i, planes, stride, out_h + 1, width, lo_h, lo_w)
            else:
                _pad_image(x, i, planes, stride, width, lo_h, lo_w)
            for b in range(filters.shape[0]):
                for q in range(passes):
                    _block_pass(planes, filters[b], bias, b * BLOCK, q * step, stride,
                                offsets, wide)
                _wide_out(wide, out, i, b * BLOCK, width)


def layout(out_h: int, out_w: int, strided: bool) -> tuple:
    """(the distance between two channels' parts of the planes buffer, the nine taps'
    offsets) for an output of out_h x out_w at stride 1 or 2 (`strided`).  A channel's
    part holds its padded plane (stride 1) or its four phase planes (stride 2), and what
    its last pass reads beyond them: up to ROWS * LANES positions past the wide plane's
    end plus the farthest tap's offset (rounded up to whole vectors)."""
    width = out_w + (1 if strided else 2)
    if strided:   # tap (ky, kx): phase plane (ky % 2, kx % 2), ky // 2 rows down
        size = (out_h + 1) * width
        offsets = [(ky % 2 * 2 + kx % 2) * size + ky // 2 * width + kx // 2
                   for ky in range(3) for kx in range(3)]
    else:
        offsets = [ky * width + kx for ky in range(3) for kx in range(3)]
    span = (out_h - 1) * width + out_w
    step = ROWS * LANES
    reach = -(-span // step) * step + max(offsets)
    if strided:
        reach = max(reach, 4 * (out_h + 1) * width)
    return -(-reach // LANES) * LANES, np.array(offsets, np.int64)


def filters_in_blocks(w: np.ndarray, bias) -> tuple:
    """(filters (B, C, 9, BLOCK), bias (B * BLOCK,)) in float32 from `w` (O, C, 3, 3) and
    `bias` (None: zeros): output channels in blocks of BLOCK, padded with zero filters."""
    out_channels, channels = w.shape[:2]
    blocks = -(-out_channels // BLOCK)
    padded = np.zeros((blocks * BLOCK, channels, TAPS), np.float32)
    padded[:out_channels] = w.reshape(out_channels, channels, TAPS)
    filters = np.ascontiguousarray(padded.reshape(blocks, BLOCK, channels, TAPS)
                                   .transpose(0, 2, 3, 1))
    b = np.zeros(blocks * BLOCK, np.float32)
    if bias is not None:
        b[:out_channels] = bias
    return filters, b


def conv_forward(x, w, geo, bias=None):
    """The 3x3 correlation of `x` (N, C, H, W), zero padded as `geo` says (a `supports`
    geometry, stride 1 or 2), with `w` (O, C, 3, 3), plus `bias`: (N, O, OH, OW)
    float32; batches are cut over ember's threads by images."""
    a = np.ascontiguousarray(x, np.float32)
    filters, b = filters_in_blocks(w, bias)
    out_h, out_w = geo.out((3, 3))
    out = np.empty((a.shape[0], w.shape[0], out_h, out_w), np.float32)
    strided = geo.stride == (2, 2)
    stride, offsets = layout(out_h, out_w, strided)
    native.run(_conv3x3, out.size * a.shape[1] * TAPS, a, filters, b, out, geo.lo[0],
               geo.lo[1], stride, offsets, strided, cut=(0, 3))
    return out


# ---------------------------------------------------------------------------
# the weight gradient


@native.kernel(inline=True)
def _pair_dots(planes, base, g0, g1, passes, width, totals0, totals1):
    """``totals0[t] +=`` the dot product of tap t of the input plane at `base` in
    `planes` with the wide gradient plane `g0`, and ``totals1[t] +=`` that with `g1`,
    for the nine taps: 18 sums of vectors in registers over `passes` vectors of
    positions, each added up into the float64 totals at the end."""
    lanes = LANES
    z = splat(np.float32(0))
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = z, z, z, z, z, z, z, z, z
    r0, r1, r2, r3, r4, r5, r6, r7, r8 = z, z, z, z, z, z, z, z, z
    for q in range(passes):
        p = q * lanes
        u = load(g0, p)
        v = load(g1, p)
        at = base + p
        s0, r0 = _times_both(load(planes, at), u, v, s0, r0)
        s1, r1 = _times_both(load(planes, at + 1), u, v, s1, r1)
        s2, r2 = _times_both(load(planes, at + 2), u, v, s2, r2)
        at += width
        s3, r3 = _times_both(load(planes, at), u, v, s3, r3)
        s4, r4 = _times_both(load(planes, at + 1), u, v, s4, r4)
        s5, r5 = _times_both(load(planes, at + 2), u, v, s5, r5)
        at += width
        s6, r6 = _times_both(load(planes, at), u, v, s6, r6)
        s7, r7 = _times_both(load(planes, at + 1), u, v, s7, r7)
        s8, r8 = _times_both(load(planes, at + 2), u, v, s8, r8)
    _add_totals(totals0, s0, s1, s2, s3, s4, s5, s6, s7, s8)
    _add_totals(totals1, r0, r1, r2, r3, r4, r5, r6, r7, r8)


@native.kernel(inline=True)
def _times_both(tap, u, v, s, r):
    """Two sums plus a tap's run times each of two gradient runs."""
    return multiply_add(tap, u, s), multiply_add(tap, v, r)


@native.kernel(inline=True)
def _add_totals(totals, s0, s1, s2, s3, s4, s5, s6, s7, s8):
    """Each tap's vector of sums added up into its float64 total."""
    totals[0] += total(s0)
    totals[1] += total(s1)
    totals[2] += total(s2)
    totals[3] += total(s3)
    totals[4] += total(s4)
    totals[5] += total(s5)
    totals[6] += total(s6)
    totals[7] += total(s7)
    totals[8] += total(s8)


@native.kernel
def _weight3x3(x, g, gw, zero, first, stop, lo_h, lo_w, stride):
    """gw[first:stop] (O, C, 3, 3), float64: for each tap, the sum over images and
    output positions of g (N, O, OH, OW) times the input x (N, C, H, W) zero padded
    by (lo_h, lo_w) before, that tap read (`_pair_dots`, two output channels a pass).
    Per image the input is padded into planes `stride` apart and the range's gradient
    planes laid out in wide rows (zeros between the rows and past the end: what they
    meet there is not summed).  (`zero` is unused: the signature of
    `_native_direct_conv._over_output_channels`' kernels.)"""
    images, channels = x.shape[0], x.shape[1]
    out_h, out_w = g.shape[2], g.shape[3]
    width = out_w + 2
    span = (out_h - 1) * width + out_w
    passes = (span + LANES - 1) // LANES
    planes = np.zeros(channels * stride, np.float32)
    rows = stop - first + (stop - first) % 2   # (even: pairs)
    wide = np.zeros((rows, passes * LANES), np.float32)
    totals = np.zeros((rows, channels, TAPS))
    for i in range(images):
        _pad_image(x, i, planes, stride, width, lo_h, lo_w)
        for k in range(stop - first):
            for y in range(out_h):
                row, line = g[i, first + k, y], wide[k, y * width:]
                for j in range(out_w):
                    line[j] = row[j]
        for c in range(channels):
            for k in range(0, rows, 2):
                _pair_dots(planes, c * stride, wide[k], wide[k + 1], passes, width,
                           totals[k, c], totals[k + 1, c])
    _store_totals(totals, gw, first, stop)


def weight_grad(x, g, geo):
    """The gradient of `conv_forward`'s filters (O, C, 3, 3), float32, from its input `x`
    (N, C, H, W) and the output's gradient `g` (N, O, OH, OW); None where it is not
    finite (see `_native_direct_conv.weight_grad`)."""
    out_h, out_w = g.shape[2], g.shape[3]
    return _over_output_channels(_weight3x3, x.astype(np.float32, copy=False),
                                 g.astype(np.float32, copy=False), geo.lo[0], geo.lo[1],
                                 _dots_stride(out_h, out_w))


def _dots_stride(out_h: int, out_w: int) -> int:
    """The distance between two channels' padded planes for the weight gradient: its
    passes read up to a vector past the wide plane's end, plus the taps' reach."""
    width = out_w + 2
    span = (out_h - 1) * width + out_w
    reach = -(-span // LANES) * LANES + 2 * width + 2
    return -(-reach // LANES) * LANES
