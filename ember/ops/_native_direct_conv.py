"""Direct 3x3 convolutions for few input channels (numba): the first layer of an image
network, where im2col's column matrix has only 9-63 rows; forward and weight gradient.

With one input channel (MNIST) im2col copies the image nine times into a column matrix
and multiplies it by a 32x10 weight matrix: a product far too thin for BLAS to pay, so
the copies and the calls are the cost.  Here each (image, output channel) pair is one
task that sums the nine shifted rows of each input channel straight into the output.

The trick that lets the sum vectorize: the output plane is computed over the input's full
width, so that output element ``p = y * W + x`` reads input elements ``p + ky * W + kx``
-- for every tap one contiguous run, the same offset for all p.  The columns x >= OW of
that wide plane are not outputs (their windows wrap around a row's end) and are dropped
when the plane is copied out.  One pass over the plane sums all nine taps of a channel
(nine loads, nine multiply-adds, one store per element), the weights held in registers.

conv_arrays.py sends 3x3, stride-1, undilated, ungrouped, zero-padded float32/float64
convolutions with few channels here (see `supports`), and their weight gradients (nine
dot products a plane, `weight_grad`); at stride 2 (a network's stem: `supports_strided`)
each input channel is first split into its four phase planes (even and odd rows and
columns, as the depthwise kernels do), where every tap is again a fixed offset away.
They are summed in a different order than im2col's product, so results differ from it
by rounding.  EMBER_NO_DIRECT_CONV=1 (or ``ENABLED = False``) turns the path off.
"""

from __future__ import annotations

import os

import numpy as np

from . import _native as native
from . import _parallel
from ._native_activation import FUSED_MULTIPLY_ADD
from ._native_depthwise import REORDER, _widen_rows, add_nine_dots, phase_index, to_phases
from ._native_winograd import plain_3x3

ENABLED = os.environ.get("EMBER_NO_DIRECT_CONV", "") in ("", "0")

# NOTE: the direct sum costs 9 multiply-adds per output element and input channel, while
# im2col's product reuses each loaded value across output channels, and gains on it as
# they grow.  Measured (2 threads, float32, ms; direct / im2col / PyTorch 2.13):
#   images, channels in -> out, size   direct   im2col   PyTorch
#   1, 1 -> 32, 28x28                  0.016    0.028    0.016
#   64, 1 -> 32, 28x28                 0.44     0.72     0.27
#   1, 3 -> 32, 28x28                  0.029    0.040    0.024
#   64, 3 -> 16, 28x28                 0.47     0.59     0.27
#   64, 4 -> 32, 28x28                 1.12     1.24     0.60
#   64, 6 -> 32, 28x28                 1.58     1.51     0.82
#   1, 7 -> 32, 30x30 (padded)         0.071    0.112    0.059
#   128, 3 -> 64, 34x34 (padded)       5.93     5.11     4.14
# so: fewer than 8 input channels (from 6 im2col already gains), and either at most 128
# input times output channels or a small output (the calls then cost more than the sums).
# Near the limit the two paths are within 15% either way: 3 -> 32 channels took 2.83
# against 3.22 ms for 128 padded 32x32 images, 0.74 against 0.64 for 8 padded 64x64
# ones; 2 -> 64 channels 4.04 against 5.05 ms (128 padded 32x32 images).
MAX_IN_CHANNELS = 8
MAX_CHANNEL_PRODUCT = 128
SMALL_OUTPUT = 1 << 16  # elements
# The (image, output channel) tasks are dealt out in at most this many runs, each with
# its own buffer (see _native_depthwise.RUNS: allocations per task contend across threads).
RUNS = 64


def supports(dtype, images: int, in_channels: int, out_channels: int, kernel, geo) -> bool:
    """Whether a convolution takes this path: float32 or float64, the geometry of
    `_native_winograd.plain_3x3`, and few channels (see the NOTE)."""
    if not (ENABLED and dtype in (np.float32, np.float64) and in_channels < MAX_IN_CHANNELS
            and plain_3x3(kernel, geo)):
        return False
    h, w = geo.padded()
    return (in_channels * out_channels <= MAX_CHANNEL_PRODUCT
            or images * out_channels * (h - 2) * (w - 2) < SMALL_OUTPUT)


@native.kernel(inline=True)
def _add_nine_taps(acc, f, t0, t1, t2, t3, t4, t5, t6, t7, t8, span):
    """``acc[p] +=`` the 3x3 filter `f` times the nine taps `tk` at p, for p < span: the
    taps in row order (f[0, 0] with t0 ... f[2, 2] with t8), the weights in registers."""
    w0, w1, w2 = f[0, 0], f[0, 1], f[0, 2]
    w3, w4, w5 = f[1, 0], f[1, 1], f[1, 2]
    w6, w7, w8 = f[2, 0], f[2, 1], f[2, 2]
    for p in range(span):
        acc[p] += (w0 * t0[p] + w1 * t1[p] + w2 * t2[p] + w3 * t3[p] + w4 * t4[p]
                   + w5 * t5[p] + w6 * t6[p] + w7 * t7[p] + w8 * t8[p])


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _conv3x3(x, w, bias, out):
    """out (N, O, H-2, W-2) = the 3x3 correlation of the padded images x (N, C, H, W)
    with w (O, C, 3, 3), plus bias (O,); one task per (image, output channel)."""
    images, channels_out, out_h, out_w = out.shape
    channels_in, width = x.shape[1], x.shape[3]
    span = (out_h - 1) * width + out_w   # the wide plane, up to its last output element
    planes = x.reshape(images, channels_in, -1)
    tasks = images * channels_out
    runs = min(tasks, RUNS)
    for run in native.prange(runs):
        acc = np.empty(span, x.dtype)
        for task in range(run * tasks // runs, (run + 1) * tasks // runs):
            i, o = task // channels_out, task % channels_out
            b = bias[o]
            for p in range(span):
                acc[p] = b
            for c in range(channels_in):
                r0 = planes[i, c]
                r1, r2 = r0[width:], r0[2 * width:]
                _add_nine_taps(acc, w[o, c], r0, r0[1:], r0[2:], r1, r1[1:], r1[2:], r2,
                               r2[1:], r2[2:], span)
            plane = out[i, o]
            for y in range(out_h):
                row, wide = plane[y], acc[y * width:]
                for j in range(out_w):
                    row[j] = wide[j]


def conv_forward(padded, w, bias=None):
    """The 3x3 correlation of `padded` (N, C, H, W; already zero-padded) with `w`
    (O, C, 3, 3), plus `bias`: (N, O, H - 2, W - 2), of their common dtype; batches are
    cut over ember's threads by images."""
    dtype = np.result_type(padded, w)
    x = np.ascontiguousarray(padded, dtype)
    k = np.ascontiguousarray(w, dtype)
    b = np.zeros(k.shape[0], dtype) if bias is None else np.ascontiguousarray(bias, dtype)
    n, _, h, width = x.shape
    out = np.empty((n, k.shape[0], h - 2, width - 2), dtype)
    native.run(_conv3x3, out.size, x, k, b, out, cut=(0, 3))
    return out


@native.kernel(fastmath=REORDER)
def _weight3x3(x, g, gw, zero, first, stop):
    """gw[first:stop] (O, C, 3, 3), float64: for each tap, the sum over images and
    outputs of g (N, O, H-2, W-2) times the padded input x (N, C, H, W) that tap read.
    Per (image, output channel) the gradient is laid out in rows of the input's width
    (zeros between), then nine dot products a pass per input channel read it once (the
    trick of `_conv3x3`); one task per output channel (their sums are apart).  A plane's
    dot products are summed in the data's dtype (`zero`: its 0), the planes' in float64.
    (The range rather than slices of g: one build for whole arrays and threads' shares.)"""
    images, channels_in, _, width = x.shape
    out_h, out_w = g.shape[2], g.shape[3]
    span = (out_h - 1) * width + out_w
    planes = x.reshape(images, channels_in, -1)
    for o in range(first, stop):
        wide = np.zeros(span, g.dtype)
        totals = np.zeros((channels_in, 9))
        for i in range(images):
            _widen_rows(g[i, o], wide, width)
            for c in range(channels_in):
                r0 = planes[i, c]
                r1, r2 = r0[width:], r0[2 * width:]
                add_nine_dots(totals[c], r0, r0[1:], r0[2:], r1, r1[1:], r1[2:], r2, r2[1:],
                              r2[2:], wide, span, zero)
        for c in range(channels_in):
            for t in range(9):
                gw[o, c, t // 3, t % 3] = totals[c, t]


def weight_grad(padded, g):
    """The gradient of `conv_forward`'s filters (O, C, 3, 3) from the padded input (N, C,
    H, W) and the output's gradient `g` (N, O, H - 2, W - 2), in their dtype; None where
    it is not finite (the dot products also multiply the input by the zeros between the
    gradient's rows: an inf there gives NaN, where the general path's sums may not)."""
    return _over_output_channels(_weight3x3, padded, g)


def _over_output_channels(kernel, x, g, *extra):
    """``kernel(x, g, gw, zero, first, stop, *extra)`` (a weight gradient's kernel) over
    all the output channels of `g`, halved over ember's threads when large; the filters'
    gradient (O, C, 3, 3) in the data's dtype, or None where it is not finite.

    NOTE: the halves are Python parts (each half's milliseconds dwarf the wait for the
    GIL); numba's own threads, with ember's worker polling beside them, did not scale
    here (3.8 ms on one, 4.0-4.2 on two, 128 CIFAR images 3 -> 16)."""
    dtype = np.result_type(x, g)
    a = np.ascontiguousarray(x, dtype)
    grad = np.ascontiguousarray(g, dtype)
    gw = np.empty((grad.shape[1], a.shape[1], 3, 3))
    zero = dtype.type(0)
    if native.cuts(grad.size * a.shape[1] * 9) and grad.shape[1] > 1:
        _parallel.run_parts(lambda outs: kernel(a, grad, gw, zero, outs.start, outs.stop,
                                                *extra),
                            _parallel.split(grad.shape[1], 2))
    else:
        kernel(a, grad, gw, zero, 0, grad.shape[1], *extra)
    if not np.isfinite(gw).all():
        return None
    return gw.astype(dtype, copy=False)


# ---------------------------------------------------------------------------
# stride 2: a network's stem (3 -> 16 or 32 channels, halving the image)


def supports_strided(dtype, images: int, in_channels: int, out_channels: int, kernel,
                     geo) -> bool:
    """Whether a convolution takes the stride-2 direct path: `supports`' rule for the
    channels, with the geometry of a 3x3 filter at stride 2 (undilated, one group, zero
    padding, an output)."""
    if not (ENABLED and dtype in (np.float32, np.float64) and in_channels < MAX_IN_CHANNELS
            and tuple(kernel) == (3, 3) and len(geo.size) == 2 and geo.stride == (2, 2)
            and geo.dilation == (1, 1) and geo.groups == 1 and min(geo.lo + geo.hi) >= 0
            and min(geo.out(kernel)) >= 1 and native.enabled()):
        return False
    out_h, out_w = geo.out(kernel)
    return (in_channels * out_channels <= MAX_CHANNEL_PRODUCT
            or images * out_channels * out_h * out_w < SMALL_OUTPUT)


@native.kernel(inline=True)
def _fill_image_phases(x, i, phases, line, height, width, lo_h, lo_w, index):
    """Each input channel of image `i` into its four phase planes (a row of `phases`)."""
    for c in range(x.shape[1]):
        to_phases(x[i, c], phases[c], line, height, width, 2, 2, lo_h, lo_w, index)


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _conv3x3_stride2(x, w, bias, out, lo_h, lo_w, index):
    """out (N, O, OH, OW) = the 3x3 correlation at stride 2 of x (N, C, H, W), zero
    padded by (lo_h, lo_w) before, with w (O, C, 3, 3), plus bias (O,).  Per image each
    input channel is split once into its four phase planes (even and odd rows and
    columns, `_fill_phases`), where every tap of every output is a fixed offset away:
    then per output channel one pass sums the nine taps of each input channel."""
    images, channels_out, out_h, out_w = out.shape
    channels_in = x.shape[1]
    height, width = out_h + 1, out_w + 1
    size = height * width
    span = (out_h - 1) * width + out_w
    for i in native.prange(images):
        phases = np.empty((channels_in, 4 * size), x.dtype)   # (each thread its own)
        line = np.empty(2 * width, x.dtype)
        acc = np.empty(span, x.dtype)
        _fill_image_phases(x, i, phases, line, height, width, lo_h, lo_w, index)
        for o in range(channels_out):
            b = bias[o]
            for p in range(span):
                acc[p] = b
            for c in range(channels_in):
                ee, eo = phases[c], phases[c, size:]
                oe, oo = phases[c, 2 * size:], phases[c, 3 * size:]
                _add_nine_taps(acc, w[o, c], ee, eo, ee[1:], oe, oo, oe[1:], ee[width:],
                               eo[width:], ee[width + 1:], span)
            plane = out[i, o]
            for y in range(out_h):
                row, wide = plane[y], acc[y * width:]
                for j in range(out_w):
                    row[j] = wide[j]


@native.kernel(fastmath=REORDER)
def _weight3x3_stride2(x, g, gw, zero, first, stop, lo_h, lo_w, index):
    """gw[first:stop] (O, C, 3, 3), float64: `_weight3x3` at stride 2, the taps read from
    each input channel's phase planes (split once per image for all the output channels
    of the range), the gradient laid out in their rows."""
    images, channels_in = x.shape[0], x.shape[1]
    out_h, out_w = g.shape[2], g.shape[3]
    height, width = out_h + 1, out_w + 1
    size = height * width
    span = (out_h - 1) * width + out_w
    phases = np.empty((channels_in, 4 * size), x.dtype)
    line = np.empty(2 * width, x.dtype)
    wide = np.zeros(span, g.dtype)
    totals = np.zeros((stop - first, channels_in, 9))
    for i in range(images):
        _fill_image_phases(x, i, phases, line, height, width, lo_h, lo_w, index)
        for o in range(first, stop):
            _widen_rows(g[i, o], wide, width)
            for c in range(channels_in):
                ee, eo = phases[c], phases[c, size:]
                oe, oo = phases[c, 2 * size:], phases[c, 3 * size:]
                add_nine_dots(totals[o - first, c], ee, eo, ee[1:], oe, oo, oe[1:], ee[width:],
                              eo[width:], ee[width + 1:], wide, span, zero)
    for o in range(first, stop):
        for c in range(channels_in):
            for t in range(9):
                gw[o, c, t // 3, t % 3] = totals[o - first, c, t]


def conv_forward_strided(x, w, geo, bias=None):
    """The 3x3 correlation at stride 2 of `x` (N, C, H, W), zero padded as `geo` says,
    with `w` (O, C, 3, 3), plus `bias`; batches cut over ember's threads by images."""
    dtype = np.result_type(x, w)
    a = np.ascontiguousarray(x, dtype)
    k = np.ascontiguousarray(w, dtype)
    b = np.zeros(k.shape[0], dtype) if bias is None else np.ascontiguousarray(bias, dtype)
    out_h, out_w = geo.out((3, 3))
    out = np.empty((a.shape[0], k.shape[0], out_h, out_w), dtype)
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
