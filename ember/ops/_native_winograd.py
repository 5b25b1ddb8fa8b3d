"""Winograd F(4x4, 3x3) convolutions: 3x3, stride-1 convolutions in float32 with 4x fewer
multiplies than im2col (conv_arrays.py sends the forward convolution, the input gradient
as a forward convolution of the padded output gradient, and the weight gradient here).

Winograd's minimal filtering computes a 4x4 block of a correlation's output from a 6x6
input tile and a 3x3 filter as ``A^T [(G w G^T) * (B^T d B)] A``: the tile and the filter
are each transformed to 6x6, multiplied position by position (36 multiplies instead of
144), and the product transformed back.  Over channels the position-by-position product
becomes 36 matrix products, one per tile position, which BLAS runs:
``M[p] = V[p] @ U[p]``, V (tiles, C) from the input and U (C, O) from the filters.

The matrices come from the Toom-Cook construction at the points 0, 1, -1, 2, -2 and
infinity (`toom_cook`).  NOTE: the transforms add and subtract values up to 8x apart, so
results differ from the direct sum by more rounding than im2col's: MNIST's conv2 at
batch 64, against float64, 5.2e-5 (im2col 7.3e-6) on outputs up to 10.5; its input
gradient 8.5e-5 (2.3e-6) on values up to 12.  float64 stays on im2col, and
EMBER_NO_WINOGRAD=1 (or ``ENABLED = False``) turns the path off.  An inf or NaN in
the input spreads through its tiles' transforms: such a convolution is computed again
by im2col, so non-finite values land where the direct sum puts them.

The weight gradient runs here too, as F(3x3, 4x4): the correlation of the input's 6x6
tiles with the output gradient's 4x4 blocks gives 3x3 taps (`conv_weight`).
"""

from __future__ import annotations

import math
import os

import numpy as np

from . import _native as native
from . import _parallel

POINTS = (0.0, 1.0, -1.0, 2.0, -2.0)  # and infinity: the leading coefficient
TILE = 4     # output block per tile
SPAN = 6     # input tile: TILE + 3 - 1
POSITIONS = SPAN * SPAN


def _powers(k: int) -> np.ndarray:
    """(SPAN, k): row i holds point_i ** 0..k-1; the last row picks the x**(k-1) coefficient."""
    rows = [[p ** j for j in range(k)] for p in POINTS]
    rows.append([0.0] * (k - 1) + [1.0])
    return np.array(rows)


def toom_cook(m: int, r: int) -> tuple:
    """(A^T, G, B^T) of the 1-D correlation F(m, r) with ``m + r - 1 == SPAN``:
    ``y = A^T [(G g) * (B^T d)]`` gives ``y[i] = sum_k d[i + k] g[k]`` for i < m.

    Polynomial multiplication evaluates both factors at the points (``G``, ``A``) and
    interpolates (the inverse Vandermonde ``C``); correlation is its transpose in the
    first factor, so ``B^T = C^T``.  Each row of ``B^T`` is scaled to small integers (so
    that the input transform rounds nothing) and ``G``'s row by the inverse.
    """
    assert m + r - 1 == SPAN
    bt = np.linalg.inv(_powers(SPAN)).T
    scale = _scales()
    bt_int = np.round(bt * scale[:, None])
    assert np.allclose(bt_int, bt * scale[:, None], atol=1e-9)
    return _powers(m).T, _powers(r) / scale[:, None], bt_int


def _scales() -> np.ndarray:
    """(SPAN,): what each row of the inverse Vandermonde's transpose is multiplied by
    to make it small integers (B^T's rows; G's rows are divided by it)."""
    bt = np.round(np.linalg.inv(_powers(SPAN)).T, 12)
    return np.array([1.0 / np.abs(row[row != 0]).min() for row in bt])


AT_OUT, G_FILTER, BT = toom_cook(TILE, 3)      # 4x4 outputs from 3x3 filters

# The weight gradient is the correlation of the input with the output's gradient, 3
# taps from 4x4 blocks: F(3, 4), whose B^T is the forward's (the same six points).  Its
# G (6x4) is used unscaled, the powers of the points (`_gradient_rows`: integers, so
# the gradient's transform rounds nothing), and the scales go into its A^T instead:
# (D^-1 X D^-1) * V = D^-1 (X * V) D^-1 for the diagonal D of `_scales`.
AT_GRADIENT = toom_cook(3, TILE)[0] / _scales()[None, :]      # (3, 6)
G_GRADIENT = _powers(TILE)                                     # (6, 4)
AT_GRADIENT32 = AT_GRADIENT.astype(np.float32)


ENABLED = os.environ.get("EMBER_NO_WINOGRAD", "").strip() in ("", "0")

# Below these channel counts the products are too small for the transforms to pay.
# Forward+backward of a layer against im2col (`EMBER_NO_WINOGRAD`'s path), min of seven
# alternated blocks, 8 and 32 images, 2-core AMD EPYC, 2026-12-06 (Winograd's time over
# im2col's):
#   16 -> 16 channels: 1.02-1.17 at 16x16 to 32x32 outputs, 1.07-1.69 at 8x8 and 12x12
#   8 -> 32, 8 -> 64: 1.00-1.71 at every size
#   16 -> 32, 32 -> 16, 16 -> 64: 0.88-0.97 from 16x16, 1.42-1.67 at 8x8
#   32 -> 32: 0.74-1.03 from 12x12, 0.82-1.25 at 8x8;  64 -> 64: 0.71-0.87 at every size
# so: 16 channels on each side and 512 (now 256, below) in times out, and on outputs of
# fewer than 16x16 pixels (a few tiles an image) 64 on each side.  (Until then: 8 in
# and 16 out, set on MNIST's 32 -> 64 layer, which stays.)
# NOTE: 32 -> 32 and 32 -> 64 layers at 8x8 gain 5-11% at 32 images and nothing at 8
# (0.89-0.95 and 1.00-1.18, re-measured), a few hundredths of a millisecond a step on
# such small layers; the path's first use costs ~3 s of kernel builds in a cold numba
# cache.  examples/train_classifier.py (32 -> 32 at 8x8) ran its first time +9.2 to
# +10.3 s over its warm run with them, +5.4 to +6.5 s without; its warm run the same
# within the noise.  So on small outputs only 64 channels (0.71-0.87) take the path.
# NOTE: since the products take several images' tiles (TILES_PER_PRODUCT, 2026-12-07),
# 16 -> 16 layers gain too: forward+backward against the 512 minimum (im2col), medians
# of seven alternated: 0.92-0.95 at 32x32 (8 and 32 images), 0.69 at 24x24, 0.67-0.73
# at 16x16.  And 32 -> 32 at 8x8 would now take 0.37-0.41 of im2col's time (32 and 128
# images), but examples/train_classifier.py's first run would pay the path's builds for
# a program of ~45 steps: with 32 channels enough at 8x8, `benchmarks/cold_start.py`
# gave +11.0 to +13.6 s (three pairs; +4.9 to +5.3 s as it is, limit +10) and no warm
# run visibly shorter.  Left as it is.
MIN_CHANNELS = 16
MIN_CHANNEL_PRODUCT = 256
SMALL_OUTPUT = 16 * 16
MIN_CHANNELS_SMALL_OUTPUT = 64
# NOTE: the transformed filters (36 x C x O floats: 38 MB for 512 -> 512 channels) are
# made per call and read by products of as many rows as the batch has tiles: with few
# tiles for many channels they cost more than the products save.  Forward + input
# gradient, Winograd / im2col ms (2-core AMD EPYC, 2026-12-07): 512 -> 512 at 4x4, 8
# images (8 tiles) 29.8 / 15.0, at 2x2, 32 images (32 tiles) 34.5 / 16.6, 256 -> 256 at
# 4x4, 16 images 11.9 / 9.0, 128 -> 128 at 8x8, 2 images 1.32 / 1.14; where it still
# gains: 4 images 1.35 / 2.05, 256 -> 256 at 4x4, 32 images 8.7 / 12.6, 512 -> 512 at 4x4,
# 64 images 41 / 66, at 7x7, 16 images 40.9 / 45.7.  So at least MIN_TILES tiles in the
# batch, and at most FILTER_PER_TILE input times output channels for each.
MIN_TILES = 16
FILTER_PER_TILE = 4096
# NOTE: with MKL's products on ember's threads (ops/_mkl.py) im2col's product gains on
# these, and Winograd keeps at most 2048 filters per tile, counted over the tiles'
# output pixels that are the layer's (a 7x7 output takes 2x2 tiles, 8x8 pixels: 49 of
# 64 used).  Winograd / im2col ms, forward and input gradient (2-core Intel Xeon, MKL,
# 2026-12-07): 512 -> 512 at 7x7, 16 images (5350 filters a used pixel-tile) 26.5 /
# 17.5 and 25.5 / 20.1; 256 -> 256 at 7x7, 8 images (2675) 3.44 / 2.67 and 3.17 / 2.91;
# 256 -> 256 at 4x4, 16 images (4096) 2.37 / 1.89 and 2.13 / 2.20; where it still
# gains: 256 -> 256 at 4x4, 32 images (2048) 3.48 / 3.61 and 3.23 / 4.29; at 7x7, 16
# images (1337) 4.25 / 4.87 and 3.99 / 5.54.
FILTER_PER_PIXEL_MKL = 2048


def _products_on_mkl() -> bool:
    """Whether ember's threads run MKL's products (ops/_blas.py's choice)."""
    from . import _blas

    products = _blas.products()
    return products is not None and products.library == "mkl"


def plain_3x3(kernel, geo) -> bool:
    """A 2-D 3x3 convolution of stride and dilation 1, one group, zero padding (no
    cropping) and an output: the geometry both native 3x3 paths (this one and
    _native_direct_conv.py) take, when numba is on."""
    return (tuple(kernel) == (3, 3) and len(geo.size) == 2 and geo.stride == (1, 1)
            and geo.dilation == (1, 1) and geo.groups == 1 and min(geo.lo + geo.hi) >= 0
            and min(geo.padded()) >= 3 and native.enabled())


def supports(images: int, dtype, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether a convolution of `images` images takes this path: float32, `plain_3x3`,
    channels enough for its output's size (see MIN_CHANNELS), tiles enough for its
    filters (see MIN_TILES), and for a lone image at most FILTERS_SPLIT_MIN filters.

    NOTE: a lone image goes to both threads by `conv_forward`'s lone path, whose threads
    each transform all the filters; with more than FILTERS_SPLIT_MIN that costs more
    than it saves (one image, 2-core Intel Xeon, 2026-12-07: 128 -> 128 at 14x14 620
    us so against 720 on one thread, 128 -> 256 1293 against 1255, 256 -> 256 3228
    against 2516), and the bands on one thread lose to im2col's product on both
    (ResNet-18's 256 -> 256 layer at 14x14: 2420 against 1094 us, PyTorch 809)."""
    if not (ENABLED and dtype == np.float32 and plain_3x3(kernel, geo)):
        return False
    if images == 1 and in_channels * out_channels > FILTERS_SPLIT_MIN:
        return False
    out, th, tw = _tiles(geo)
    tiles = images * th * tw
    if tiles < MIN_TILES or in_channels * out_channels > FILTER_PER_TILE * tiles:
        return False
    # (filters per tile over the share of its pixels that are outputs: c*o / tiles /
    # (pixels / (tiles * TILE^2)))
    if _products_on_mkl() and in_channels * out_channels * TILE * TILE > \
            FILTER_PER_PIXEL_MKL * images * math.prod(out):
        return False
    fewer = min(in_channels, out_channels)
    if math.prod(out) < SMALL_OUTPUT:
        return fewer >= MIN_CHANNELS_SMALL_OUTPUT
    return fewer >= MIN_CHANNELS and in_channels * out_channels >= MIN_CHANNEL_PRODUCT


# NOTE: the weight gradient's sums S (36 x C x O per thread) take every image's tiles
# and blocks; beyond ~7x7 tiles an image those no longer stay in the core's cache
# (32x32 outputs: 0.87-1.10 of im2col's time at 16 -> 32 to 32 -> 64 channels, 0.72-0.75
# at 64 -> 64), and a few tiles in all leave the fixed costs (~0.1 ms) unpaid (64 -> 64
# channels at 8x8: 1.52 for 8 images, 0.98 for 32).  Where it takes the path, against
# im2col, 8 and 32 images: 0.68-0.99 at 16x16 outputs, 0.67-0.84 at 12x12 for 64 -> 64
# (2-core AMD EPYC, 2026-12-07).  MNIST's conv2 (32 -> 64, 24x24, 64 images): 14.3-18.7
# -> 8.1-10.8 ms.
GRADIENT_MAX_TILES = 49           # an image's, unless 64 channels each side
GRADIENT_MIN_TILES = 36           # all images'
# NOTE: each thread holds its sums S and a product's result, 36 x C x O floats each:
# 2 x 38 MB for 512 -> 512 channels, where im2col's accumulator is 9 MB.  Its weight
# gradient at 7x7, 16 images: 56.7 ms here, 61.3 by im2col; 256 -> 256 at 14x14 18.9
# against 29.0, 128 -> 128 at 28x28 26.1 against 53.4.  So up to 256 x 256.
GRADIENT_MAX_CHANNEL_PRODUCT = 256 * 256
# NOTE: each product takes the tiles of as many images as make about TILES_PER_PRODUCT: a
# product over few tiles (an image's 16 at 14x14, 4 at 8x8) is slow, and in the weight
# gradient each adds a pass over S.  Forward convolutions, ms, one image a product
# against about 144 tiles, medians of six alternated in one process: MNIST's conv2
# 10.2 -> 8.7, its input gradient (64 -> 32, 24x24 padded by 2) 11.8 -> 9.8, 64 -> 64
# at 8x8 (32 images) 1.67 -> 0.79, 128 -> 128 at 14x14 2.98 -> 2.50, 64 -> 64 at 32x32
# 3.89 -> 3.52.  Weight gradients, one image a product against about 144 tiles:
# MNIST's conv2 (64 images, 36 tiles each) 10.1 -> 7.3-8.3 (im2col 15.4-18.4), and
# alternated in one process, medians of eight: 9.74 -> 7.57 (im2col 13.29);
# 256 -> 256 channels at 14x14, 8 images, 20.3 -> 14.5-15.4 (im2col 15.3-16.9);
# 64 -> 64 at 8x8, 32 images, 2.05 -> 0.8-1.0 (im2col 2.0-2.1); at 56x56 and 32x32
# unchanged (AMD EPYC, 2026-12-07).
TILES_PER_PRODUCT = 144
# ... within this many bytes of transformed tiles and products a thread.  NOTE: 512 ->
# 512 channels at 7x7 (4 tiles an image), 16 images: 14 images a product, ~8 MB a
# thread instead of 21 (36 images), forward 29.1 against 29.7 ms; a 3 MB cap (5 images)
# took 35.8 against 30.9 (medians of six alternated).
PRODUCT_BYTES = 8 << 20


def weight_supports(images: int, dtype, in_channels: int, out_channels: int, kernel,
                    geo) -> bool:
    """Whether a convolution's weight gradient takes `conv_weight`: `supports`, tiles
    enough in all, few enough an image (see GRADIENT_MAX_TILES), and channels few enough
    for its sums' memory (GRADIENT_MAX_CHANNEL_PRODUCT)."""
    if (in_channels * out_channels > GRADIENT_MAX_CHANNEL_PRODUCT
            or not supports(images, dtype, in_channels, out_channels, kernel, geo)):
        return False
    _, th, tw = _tiles(geo)
    return (images * th * tw >= GRADIENT_MIN_TILES
            and (th * tw <= GRADIENT_MAX_TILES or min(in_channels, out_channels) >= 64))


def _tiles(geo) -> tuple:
    """(output size, tiles down, tiles across) of a 3x3 stride-1 convolution."""
    out = tuple(n - 2 for n in geo.padded())
    return out, -(-out[0] // TILE), -(-out[1] // TILE)


# ----------------------------------------------------------------------
# kernels
#
# NOTE: the kernels work band by band (one tile row of one image), each band in the
# core's cache from the images' (N, C, H, W) layout to the products' and back.  A band
# is copied channels last first, so that every transform step runs over a long
# contiguous run (all the band's tiles and channels at once), which LLVM vectorizes.
# Transforms on the images' own layout ran over one tile's 4-6 pixels, and separate
# whole-batch passes to and from channels last waited on memory: both took longer than
# the products they feed.  fastmath "contract" lets the sums use fused multiply-adds,
# "reassoc" lets the finiteness check's sum vectorize; no flag assumes values finite.
#
# Each step applies B^T (or A^T) to six rows at once, with the matrices' entries written
# into the formulas (`_input_rows`, `_output_rows`): six rows read and six (four) written
# per element, and 12 (10) adds and multiplies, where a general row-of-the-matrix pass
# read six rows for each row written and multiplied by every entry, zeros too.  MNIST's
# conv2 (32 -> 64 channels, 26x26), one image: input transform 49-76 -> 34-50 us,
# output transform 57 -> 49 us; its input gradient (64 -> 32, 28x28) 111 -> 75 and
# 47 -> 33 us (2-core AMD EPYC, 2026-12-07).

_FAST = {"contract", "reassoc"}


@native.kernel(fastmath=_FAST)
def _input_rows(r0, r1, r2, r3, r4, r5, o0, o1, o2, o3, o4, o5):
    """(o0, ..., o5) = BT @ (r0, ..., r5), row by row: the input transform's step.

    BT's rows, from `toom_cook` (the test suite checks these formulas against it):
    (4, 0, -5, 0, 1, 0), (0, 4, 4, -1, -1, 0), (0, -4, 4, 1, -1, 0), (0, -2, -1, 2, 1, 0),
    (0, 2, -1, -2, 1, 0), (0, 4, 0, -5, 0, 1).

    NOTE: called, not inlined: each call does whole rows, so the call costs nothing
    measurable, and inlining it at its call sites took longer to compile cold."""
    for f in range(o0.shape[0]):
        a, b, c, d = r1[f], r2[f], r3[f], r4[f]
        even = 4 * b - d          # (rows 1 and 2 share these halves, rows 3 and 4 theirs)
        odd = 4 * a - c
        near = d - b
        far = 2 * (c - a)
        o0[f] = 4 * r0[f] - 5 * b + d
        o1[f] = even + odd
        o2[f] = even - odd
        o3[f] = near + far
        o4[f] = near - far
        o5[f] = 4 * a - 5 * c + r5[f]


@native.kernel(fastmath=_FAST)
def _output_rows(r0, r1, r2, r3, r4, r5, base, o0, o1, o2, o3):
    """(o0, ..., o3) = base + AT @ (r0, ..., r5), row by row: the output transform's step.

    AT's rows, from `toom_cook`: (1, 1, 1, 1, 1, 0), (0, 1, -1, 2, -2, 0),
    (0, 1, 1, 4, 4, 0), (0, 1, -1, 8, -8, 1)."""
    for f in range(o0.shape[0]):
        plus = r1[f] + r2[f]
        minus = r1[f] - r2[f]
        plus2 = r3[f] + r4[f]
        minus2 = r3[f] - r4[f]
        z = base[f]
        o0[f] = z + r0[f] + plus + plus2
        o1[f] = z + minus + 2 * minus2
        o2[f] = z + plus + 4 * plus2
        o3[f] = z + minus + 8 * minus2 + r5[f]


@native.kernel(fastmath=_FAST)
def _transform_tiles(src, lo_h, lo_w, th, tw, dst, start, stop):
    """dst[i * 6 + j, band - start, tx * C + c] = (BT @ d @ BT^T)[i, j] for the bands
    start..stop-1 (band = n * th + ty), d the 6x6 tile of src[n, c] at row 4 ty - lo_h,
    column 4 tx - lo_w (zeros outside src).

    Band by band (one tile row of one image): its tiles are copied as [row k, column
    l, (tx, c)] (a pixel on a tile border goes to both tiles), then both products run
    over whole (tx, c) rows."""
    chans, height, width = src.shape[1:]
    run = tw * chans
    # where column x of src goes in a tile row: (l, tx) and, on a border, (l + 4, tx - 1)
    first = np.empty(width, np.int64)
    second = np.empty(width, np.int64)
    for x in range(width):
        col, tx = (lo_w + x) % TILE, (lo_w + x) // TILE
        first[x] = col * run + tx * chans if tx < tw else -1
        second[x] = (col + TILE) * run + (tx - 1) * chans if col < 2 and tx >= 1 else -1
    tiles = np.empty((SPAN, SPAN * run), dst.dtype)                 # [k, (l, tx, c)]
    down = np.empty((SPAN, SPAN * run), dst.dtype)                  # BT @ d: [i, (l, tx, c)]
    for task in range(start, stop):
        n = task // th
        ty = task - n * th
        tiles[:] = 0
        for k in range(SPAN):
            y = TILE * ty + k - lo_h
            if 0 <= y < height:
                into = tiles[k]
                for x in range(width):     # (c innermost: the stores run along c)
                    at, again = first[x], second[x]
                    for c in range(chans):
                        value = src[n, c, y, x]
                        if at >= 0:
                            into[at + c] = value
                        if again >= 0:
                            into[again + c] = value
        _input_rows(tiles[0], tiles[1], tiles[2], tiles[3], tiles[4], tiles[5],
                    down[0], down[1], down[2], down[3], down[4], down[5])
        band = task - start
        for i in range(SPAN):                                       # (BT @ d) @ BT^T
            d = down[i]
            at = i * SPAN
            _input_rows(d[:run], d[run:2 * run], d[2 * run:3 * run], d[3 * run:4 * run],
                        d[4 * run:5 * run], d[5 * run:], dst[at, band], dst[at + 1, band],
                        dst[at + 2, band], dst[at + 3, band], dst[at + 4, band],
                        dst[at + 5, band])


@native.kernel(fastmath=_FAST)
def _untransform_tiles(prod, bias, th, tw, out, check, start, stop):
    """out[n, o, 4 ty + p, 4 tx + q] = (AT @ M @ AT^T)[p, q] + bias[o] for the bands
    start..stop-1, M the 6x6 products of tile (n, ty, tx): prod[i * 6 + j, band - start,
    tx * O + o]; blocks past the output's edge are cut off.  check[band] is 0 when the
    band's outputs are finite, NaN when not."""
    chans, height, width = out.shape[1:]
    run = tw * chans
    zero = np.zeros(run, out.dtype)
    biases = np.empty(run, out.dtype)
    for f in range(run):
        biases[f] = bias[f % chans]
    half = np.empty((TILE, SPAN, run), out.dtype)                  # AT @ M: [p, j, (tx, o)]
    block = np.empty((TILE, TILE, run), out.dtype)                 # [p, q, (tx, o)]
    for task in range(start, stop):
        n = task // th
        ty = task - n * th
        row = task - start
        for j in range(SPAN):
            _output_rows(prod[j, row], prod[SPAN + j, row], prod[2 * SPAN + j, row],
                         prod[3 * SPAN + j, row], prod[4 * SPAN + j, row],
                         prod[5 * SPAN + j, row], zero, half[0, j], half[1, j], half[2, j],
                         half[3, j])
        for p in range(TILE):
            h = half[p]
            _output_rows(h[0], h[1], h[2], h[3], h[4], h[5], biases,
                         block[p, 0], block[p, 1], block[p, 2], block[p, 3])
        flat = block.reshape(-1)
        total = np.float32(0)
        for f in range(flat.size):     # value * 0 is 0 for a finite value, else NaN
            total += flat[f] * np.float32(0)
        check[task] = total
        # (row by row of the output, so that the stores run along x: with the stores
        # along o, a plane apart each, an MNIST conv2 image took 46-55 us here, now 34-39)
        for o in range(chans):
            for p in range(min(TILE, height - TILE * ty)):
                line = out[n, o, TILE * ty + p]
                for x in range(width):
                    line[x] = block[p, x % TILE, (x // TILE) * chans + o]


@native.kernel(fastmath=_FAST)
def _gradient_rows(r0, r1, r2, r3, o0, o1, o2, o3, o4, o5):
    """(o0, ..., o5) = G_GRADIENT @ (r0, ..., r3), row by row: the output gradient's
    transform step.  G_GRADIENT's rows, the powers of the points 0, 1, -1, 2, -2 and
    the leading coefficient: (1, 0, 0, 0), (1, 1, 1, 1), (1, -1, 1, -1), (1, 2, 4, 8),
    (1, -2, 4, -8), (0, 0, 0, 1)."""
    for f in range(o0.shape[0]):
        a, b, c, d = r0[f], r1[f], r2[f], r3[f]
        even = a + c
        odd = b + d
        even2 = a + 4 * c
        odd2 = 2 * b + 8 * d
        o0[f] = a
        o1[f] = even + odd
        o2[f] = even - odd
        o3[f] = even2 + odd2
        o4[f] = even2 - odd2
        o5[f] = d


@native.kernel(fastmath=_FAST)
def _transform_blocks(src, th, tw, dst, start, stop):
    """dst[i * 6 + j, band - start, tx * O + o] = (G_GRADIENT @ e @ G_GRADIENT^T)[i, j]
    for the bands start..stop-1 (band = n * th + ty), e the 4x4 block of src[n, o] at
    row 4 ty, column 4 tx (zeros past src's edge): `_transform_tiles` for the output
    gradient's blocks, which do not overlap."""
    chans, height, width = src.shape[1:]
    run = tw * chans
    blocks = np.empty((TILE, TILE * run), dst.dtype)                # [k, (l, tx, o)]
    down = np.empty((SPAN, TILE * run), dst.dtype)                  # G e: [i, (l, tx, o)]
    for task in range(start, stop):
        n = task // th
        ty = task - n * th
        blocks[:] = 0
        for k in range(min(TILE, height - TILE * ty)):
            into = blocks[k]
            y = TILE * ty + k
            for x in range(width):     # (o innermost: the stores run along o)
                at = (x % TILE) * run + (x // TILE) * chans
                for o in range(chans):
                    into[at + o] = src[n, o, y, x]
        _gradient_rows(blocks[0], blocks[1], blocks[2], blocks[3],
                       down[0], down[1], down[2], down[3], down[4], down[5])
        band = task - start
        for i in range(SPAN):                                       # (G e) G^T
            d = down[i]
            at = i * SPAN
            _gradient_rows(d[:run], d[run:2 * run], d[2 * run:3 * run], d[3 * run:],
                           dst[at, band], dst[at + 1, band], dst[at + 2, band],
                           dst[at + 3, band], dst[at + 4, band], dst[at + 5, band])


@native.kernel(fastmath=_FAST)
def _untransform_sums(sums, at, half, out):
    """out[p, q] = sum over i, j of at[p, i] at[q, j] sums[i * 6 + j]: the 6x6 sums of
    every (channel, output channel) pair, rows of C*O values, back to 3x3 taps; `half`
    (6, C*O) is scratch.  (NumPy's two tensordots took ~160 us for MNIST's conv2.)"""
    rows, span = at.shape
    for p in range(rows):
        half[:] = 0
        for i in range(span):
            for j in range(span):
                a, src, dst = at[p, i], sums[i * span + j], half[j]
                for f in range(dst.shape[0]):
                    dst[f] += a * src[f]
        for q in range(rows):
            dst = out[p, q]
            dst[:] = 0
            for j in range(span):
                b, src = at[q, j], half[j]
                for f in range(dst.shape[0]):
                    dst[f] += b * src[f]


# ----------------------------------------------------------------------
# the convolutions


G32 = G_FILTER.astype(np.float32)


@native.kernel(fastmath=_FAST)
def _filter_kernel(g, taps, half, out, start):
    """out[i * 6 + j, start:start + n] = sum over k, l of g[i, k] g[j, l] taps[k * 3 +
    l]: G w G^T of n filters at once, rows of n = taps.shape[1] values; `half` (18, n)
    is scratch for G w.

    NOTE: the loops over G's rows and columns run to its shape, not to the constants 6
    and 3: with constant trip counts LLVM unrolled them whole, each copy holding a
    vectorized row loop, and the kernel took 0.71-0.92 s to compile from a cold cache
    instead of 0.44-0.49 s, for the same speed (15-18 us for 2048 filter pairs)."""
    rows, cols = g.shape
    n = taps.shape[1]
    for i in range(rows):
        for col in range(cols):
            a, b, c = g[i, 0], g[i, 1], g[i, 2]
            r0, r1, r2, dst = taps[col], taps[3 + col], taps[6 + col], half[i * 3 + col]
            for f in range(n):
                dst[f] = a * r0[f] + b * r1[f] + c * r2[f]
    for i in range(rows):
        for j in range(rows):
            a, b, c = g[j, 0], g[j, 1], g[j, 2]
            r0, r1, r2 = half[i * 3], half[i * 3 + 1], half[i * 3 + 2]
            dst = out[i * rows + j, start:start + n]
            for f in range(n):
                dst[f] = a * r0[f] + b * r1[f] + c * r2[f]


# From this many filters (input x output channels) the filter transform is cut over
# ember's threads by input channels.  NOTE: it is made afresh for every call (the input
# gradient's filters are another transform), and for 256 -> 256 channels it took
# 1.50-1.65 ms on one thread, against ~2.5 for the products of 8 images at 7x7.  Cut
# over two threads (min of 5 x 20 calls, AMD EPYC, 2026-12-07): 256 x 256 filters 0.83
# ms, 128 x 256 0.54 -> 0.32, 128 x 128 0.26 -> 0.19; 64 x 64 takes 0.055 on one.
FILTERS_SPLIT_MIN = 1 << 14


def _filter_transform(w):
    """(36, C, O) float32: G w[o, c] G^T of every 3x3 filter, in two passes of 3-term
    sums over the taps (a (9, C*O) copy of `w`) laid out as the result; from
    FILTERS_SPLIT_MIN filters each of ember's threads takes a run of input channels,
    its part of the copy and of the passes.  (Two products with a transposing copy
    after them took 230 us on MNIST's conv2; one BLAS product by kron(G, G): 25 us in
    all with OpenBLAS's AVX-512 kernels and 39 with its Haswell ones
    (_blas.preferred_core); this 25-26.  The float32 sums round a float64 transform by
    at most about an ulp.)"""
    o, c = w.shape[:2]
    out = np.empty((POSITIONS, c * o), np.float32)

    def channels(part: slice) -> None:
        run = w[:, part].reshape(o, -1, 9)
        taps = np.ascontiguousarray(run.transpose(2, 1, 0).reshape(9, -1),
                                    dtype=np.float32)                 # [k * 3 + l, (c, o)]
        _filter_kernel(G32, taps, np.empty((18, taps.shape[1]), np.float32), out,
                       part.start * o)

    threads = _parallel.threads()
    if c * o >= FILTERS_SPLIT_MIN and threads > 1 and c > 1:
        _parallel.run_parts(channels, _parallel.split(c, threads))
    else:
        channels(slice(0, c))
    return out.reshape(POSITIONS, c, o)


def _images_per_product(tiles: int, channels: int) -> int:
    """How many images' tiles (`tiles` an image) each product takes: about
    TILES_PER_PRODUCT, fewer where the transformed tiles of `channels` (in and out
    together) would pass PRODUCT_BYTES, one at least."""
    most = PRODUCT_BYTES // (POSITIONS * 4 * channels)
    return max(1, min(TILES_PER_PRODUCT, most) // tiles)


def _image_runs(run: slice, th: int, tw: int, c: int, o: int, images: int = 1):
    """For each `images` images' worth of the bands in `run`: (first band, last band + 1,
    a view (36, bands, tw * c) for the input's tiles, one (36, bands, tw * o) for the
    output side), the views cut from two buffers made once (flat: a run of fewer bands
    stays contiguous)."""
    step = images * th
    tiles = np.empty(POSITIONS * step * tw * c, np.float32)
    other = np.empty(POSITIONS * step * tw * o, np.float32)
    for first in range(run.start, run.stop, step):
        last = min(first + step, run.stop)
        k = last - first
        yield (first, last, tiles[:POSITIONS * k * tw * c].reshape(POSITIONS, k, tw * c),
               other[:POSITIONS * k * tw * o].reshape(POSITIONS, k, tw * o))


def conv_forward(x, w, geo, bias=None):
    """The 3x3 stride-1 convolution of float32 `x` (N, C, H, W) with `w` (O, C, 3, 3),
    plus `bias`: `conv_array`'s result, or None where it is not finite (an inf or NaN
    in `x` or `w` spreads through a tile's transforms: the caller recomputes).

    The bands (tile rows) of all images are dealt out to the threads in contiguous runs
    of at least an image's worth, which each thread takes a few images' worth at a time
    (TILES_PER_PRODUCT): tiles, products and output stay near its core (the whole
    batch's transformed tiles and products are 2.25x its input and output, and made the
    kernels wait on memory: 2x slower).  A lone image (with at most FILTERS_SPLIT_MIN
    filters: `supports`) takes half its bands to each of two threads in one native call
    each (ops/_native_winograd_lone.py; MNIST's conv2 150 against 225 us on one thread);
    where that cannot run, the whole image runs on this thread."""
    tiles = _tiles(geo)
    (out_h, out_w), th, tw = tiles
    n, o, c = x.shape[0], w.shape[0], w.shape[1]
    if n == 1 and _parallel.threads() == 2:
        from . import _native_winograd_lone

        done = _native_winograd_lone.conv_forward(x, w, geo, bias, tiles)
        if done is not None:
            return None if np.isnan(done[1]).any() else done[0]
    u = _filter_transform(w)
    b = np.zeros(o, np.float32) if bias is None else bias.astype(np.float32)
    x = np.ascontiguousarray(x)
    out = np.empty((n, o, out_h, out_w), np.float32)
    check = np.empty(n * th, np.float32)

    images = _images_per_product(th * tw, c + o)

    def bands(run: slice) -> None:
        for first, last, v, prod in _image_runs(run, th, tw, c, o, images):
            _transform_tiles(x, geo.lo[0], geo.lo[1], th, tw, v, first, last)
            np.matmul(v.reshape(POSITIONS, -1, c), u, out=prod.reshape(POSITIONS, -1, o))
            _untransform_tiles(prod, b, th, tw, out, check, first, last)

    _parallel.run_parts(bands, _parallel.split(n * th, min(n, _parallel.threads())))
    return None if np.isnan(check).any() else out


def conv_weight(x, g, geo):
    """The weight gradient (O, C, 3, 3) of the 3x3 stride-1 convolution of float32 `x`
    (N, C, H, W) whose output's gradient is `g` (N, O, *output): `conv_weight_array`'s
    result, or None where it is not finite (the caller recomputes, as for `conv_forward`).

    Each image's tiles (`_transform_tiles`, as the forward's) and output-gradient blocks
    (`_transform_blocks`) are transformed, and ``S[p] += V[p]^T @ E[p]`` sums their
    products over the tiles for each of the 36 positions (C x O each); at the end
    ``A S A^T`` (AT_GRADIENT) gives the 3x3 taps.  The images are dealt to the threads as
    the forward's bands are, each thread summing its own S."""
    _, th, tw = _tiles(geo)
    n, c, o = x.shape[0], x.shape[1], g.shape[1]
    x = np.ascontiguousarray(x)
    g = np.ascontiguousarray(g, dtype=np.float32)
    images = _images_per_product(th * tw, c + o)

    def bands(run: slice) -> np.ndarray:
        total = np.zeros((POSITIONS, c, o), np.float32)
        part = np.empty((POSITIONS, c, o), np.float32)
        for first, last, v, e in _image_runs(run, th, tw, c, o, images):
            _transform_tiles(x, geo.lo[0], geo.lo[1], th, tw, v, first, last)
            _transform_blocks(g, th, tw, e, first, last)
            np.matmul(v.reshape(POSITIONS, -1, c).transpose(0, 2, 1),
                      e.reshape(POSITIONS, -1, o), out=part)
            total += part
        return total

    sums = _parallel.run_parts(bands, _parallel.split(n * th, min(n, _parallel.threads())))
    taps = np.empty((3, 3, c * o), np.float32)
    _untransform_sums(sum(sums[1:], sums[0]).reshape(POSITIONS, c * o), AT_GRADIENT32,
                      np.empty((SPAN, c * o), np.float32), taps)
    weight = np.ascontiguousarray(taps.reshape(3, 3, c, o).transpose(3, 2, 0, 1))
    return weight if np.isfinite(weight).all() else None
