"""numba kernels of depthwise 2-D convolutions (one filter per channel: ``groups`` equal
to the channels, weight (C, 1, kh, kw)), MobileNet's and ConvNeXt's: the forward, the
adjoint in the input (the input's gradient, or a transposed convolution's forward) and
the weight's gradient, each one task per channel-plane.

NOTE: why.  The general path (conv_arrays.py) makes a column matrix per group and runs
one product per group: for depthwise convolutions those are C products of one row each.
(8, 64, 32, 32) float32 with a 3x3 filter, forward and backward, took 5.2 ms against
PyTorch's 1.15 (forward 1.43 against 0.29; 2-core Intel Xeon, 2026-12-06).

Each plane is first copied into a zero-padded one whose rows are the output's plus the
filter's reach (at stride s, into s x s phase planes: every s-th row and column from
each offset).  In that plane's flat memory the tap (a, b) of every output is a fixed
offset away, so each tap is one long loop over the whole plane (`_correlate`,
`_weight_grad`), not a short loop per output row.  The input's gradient is, at stride 1,
the same correlation of the output's gradient with the filter flipped; at larger strides
it is the forward's reads transposed (`_spread`): each tap adds the gradient into the
phase planes where it read, which are then put back in place.  (8, 64, 32, 32)
float32, 3x3, one thread: forward 1.33 -> 0.39 ms, weight gradient 2.42 -> 0.80-1.0 ms
(AMD EPYC, 2026-12-06).  Sums are in the data's dtype, in tap order (the weight
gradient's in float64, vectorized).

The long loops also run over the columns between a plane's rows, where one factor is a
zero: a non-finite filter (the input's gradient) or input (the weight's gradient) would
give NaN there.  Those cases go to the general path (conv_arrays.py), as PyTorch's sums
of real products only.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _native as native
from . import _parallel

FUSED_MULTIPLY_ADD = {"contract"}
REORDER = {"reassoc", "contract"}  # (the weight gradient's sums: vectorized, reordered)
# The planes are dealt out in at most this many runs, each with its own buffers: a plane's
# work is ~1 us, and allocating its buffers afresh took 8-15% of a forward.
RUNS = 64


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


@native.kernel
def _fill_phases(src, flat, line, height, width, sh, sw, lo_h, lo_w):
    """`flat` = the plane `src` read at stride (sh, sw) from (-lo_h, -lo_w), zero outside
    it, as sh * sw phase planes of (height, width), one after the other: phase (ph, pw)
    holds ``src[r * sh + ph - lo_h, q * sw + pw - lo_w]`` at (r, q).  At stride 1 that
    is one plane, `src` with `lo` zero rows and columns before it (a negative `lo` crops
    it).

    NOTE: called, not inlined: a call copies a whole plane, so it costs nothing
    measurable ((8, 64, 32, 32) 3x3 forward and weight gradient within 1-5% either way,
    in one process), while inlining its three copy loops into both kernels took 3-4 s
    more of compiling from a cold cache (float32 and float64 builds: 13.0-13.8 against
    9.0-10.1 s)."""
    in_h, in_w = src.shape
    flat[:] = 0
    if sh == 1 and sw == 1:  # (the phase loops below, specialized: 5-10% faster)
        r0, r1 = max(0, lo_h), min(height, in_h + lo_h)
        c0, c1 = max(0, lo_w), min(width, in_w + lo_w)
        for r in range(r0, r1):
            into, row = flat[r * width + c0:r * width + c1], src[r - lo_h, c0 - lo_w:c1 - lo_w]
            for k in range(c1 - c0):
                into[k] = row[k]
        return
    if sw == 2:
        # each row copied into a zero-padded line, then its even and odd elements into
        # their two planes in one loop: LLVM vectorizes that pair of reads, while one
        # read at a stride it does not know stays scalar (the copy was most of a 3x3
        # stride-2 forward: 0.87 -> 0.52 ms for (8, 64, 32, 32) float32)
        c0, c1 = max(0, lo_w), min(2 * width, in_w + lo_w)
        line[:c0] = 0
        line[c1:] = 0
        for ph in range(sh):
            r0, r1 = _span(height, in_h, sh, ph - lo_h)
            for r in range(r0, r1):
                part, into = src[r * sh + ph - lo_h, c0 - lo_w:c1 - lo_w], line[c0:c1]
                for k in range(c1 - c0):
                    into[k] = part[k]
                even = flat[2 * ph * height * width + r * width:]
                odd = flat[(2 * ph + 1) * height * width + r * width:]
                for q in range(width):
                    even[q] = line[2 * q]
                    odd[q] = line[2 * q + 1]
        return
    for ph in range(sh):
        r0, r1 = _span(height, in_h, sh, ph - lo_h)
        for pw in range(sw):
            c0, c1 = _span(width, in_w, sw, pw - lo_w)
            base = (ph * sw + pw) * height * width
            for r in range(r0, r1):
                row, into = src[r * sh + ph - lo_h], flat[base + r * width:]
                if sw == 1:  # (contiguous: the loop vectorizes)
                    part, into = row[c0 + pw - lo_w:c1 + pw - lo_w], into[c0:c1]
                    for k in range(c1 - c0):
                        into[k] = part[k]
                else:
                    for q in range(c0, c1):
                        into[q] = row[q * sw + pw - lo_w]


@native.kernel(inline=True)
def _tap_offset(a, b, dh, dw, sh, sw, height, width):
    """Where filter tap (a, b)'s reads start in `_fill_phases`'s planes: the phase plane
    of its offset, and the offset's whole strides in that plane."""
    rows, cols = a * dh, b * dw
    return ((rows % sh) * sw + cols % sw) * height * width + (rows // sh) * width + cols // sw


@native.kernel
def _widen_rows(plane, wide, width):
    """The 2-D `plane`'s rows into the 1-D `wide`, each `width` after the last (what lies
    between them is left as it is: the callers keep zeros there)."""
    for y in range(plane.shape[0]):
        row, into = plane[y], wide[y * width:]
        for j in range(plane.shape[1]):
            into[j] = row[j]


@native.kernel(inline=True)
def add_nine_dots(totals, t0, t1, t2, t3, t4, t5, t6, t7, t8, wide, span, zero):
    """``totals[k] +=`` the dot product of `tk` with `wide` over `span` elements, for k
    = 0..8, in one pass that reads `wide` once (a 3x3 filter's weight gradient), each
    summed from `zero` (its type: the sums' dtype)."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = s8 = zero
    for p in range(span):
        v = wide[p]
        s0 += t0[p] * v
        s1 += t1[p] * v
        s2 += t2[p] * v
        s3 += t3[p] * v
        s4 += t4[p] * v
        s5 += t5[p] * v
        s6 += t6[p] * v
        s7 += t7[p] * v
        s8 += t8[p] * v
    totals[0] += s0
    totals[1] += s1
    totals[2] += s2
    totals[3] += s3
    totals[4] += s4
    totals[5] += s5
    totals[6] += s6
    totals[7] += s7
    totals[8] += s8


@native.kernel
def _move_by_index(plane, flat, index, to_phases):
    """Between a plane and its phase planes in `flat` by a map (`phase_index`: each
    element's place there, -1 where no window reads it): to them (`_fill_phases`, `flat`
    zeroed first) or back (`_unfill_phases`: zero where no window reaches)."""
    if to_phases:
        flat[:] = 0
    k = 0
    for r in range(plane.shape[0]):
        row = plane[r]
        for q in range(plane.shape[1]):   # (`to_phases` is the same all along: LLVM
            at = index[k]                 # takes the branch out of the loop)
            k += 1
            if to_phases:
                if at >= 0:
                    flat[at] = row[q]
            else:
                v = flat[at]   # (read first, -1 reading the last element: see _native_select)
                row[q] = v if at >= 0 else 0


@native.kernel(inline=True)
def to_phases(plane, flat, line, height, width, sh, sw, lo_h, lo_w, index):
    """`plane` into its phase planes in `flat` (`_fill_phases`): by the map `index`
    where there is one (small strided planes, `phase_index`), else row by row."""
    if index.size:
        _move_by_index(plane, flat, index, True)
    else:
        _fill_phases(plane, flat, line, height, width, sh, sw, lo_h, lo_w)


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _correlate(x, w, out, geometry, index):
    """out[i, c] = the correlation of x[i, c] with w[c] (C, kh, kw):
    ``out[y, j] = sum over taps of w[a, b] * x[y*sh + a*dh - lo_h, j*sw + b*dw - lo_w]``,
    x read as zero outside itself (`geometry`: see `_geometry`); one task per (image,
    channel) plane."""
    sh, sw, dh, dw, lo_h, lo_w = geometry[0], geometry[1], geometry[2], geometry[3], \
        geometry[4], geometry[5]
    images, channels, out_h, out_w = out.shape
    kh, kw = w.shape[1], w.shape[2]
    height, width = out_h + (kh - 1) * dh // sh, out_w + (kw - 1) * dw // sw
    span = (out_h - 1) * width + out_w   # a phase plane, up to its last output
    tasks = images * channels
    runs = min(tasks, RUNS)
    for run in native.prange(runs):
        flat = np.empty(sh * sw * height * width, x.dtype)
        line = np.empty(2 * width, x.dtype)
        acc = np.empty(span, x.dtype)
        for task in range(run * tasks // runs, (run + 1) * tasks // runs):
            i, c = task // channels, task % channels
            to_phases(x[i, c], flat, line, height, width, sh, sw, lo_h, lo_w, index)
            if kh == 3 and kw == 3 and sh == 1 and sw == 1 and dh == 1 and dw == 1:
                # all nine taps in one pass (3x3, the common filter: 0.58 -> 0.39 ms)
                f = w[c]
                w0, w1, w2 = f[0, 0], f[0, 1], f[0, 2]
                w3, w4, w5 = f[1, 0], f[1, 1], f[1, 2]
                w6, w7, w8 = f[2, 0], f[2, 1], f[2, 2]
                r0 = flat
                r1, r2 = flat[width:], flat[2 * width:]
                for p in range(span):
                    acc[p] = (w0 * r0[p] + w1 * r0[p + 1] + w2 * r0[p + 2]
                              + w3 * r1[p] + w4 * r1[p + 1] + w5 * r1[p + 2]
                              + w6 * r2[p] + w7 * r2[p + 1] + w8 * r2[p + 2])
            elif kh == 3 and kw == 3 and sh == 2 and sw == 2 and dh == 1 and dw == 1:
                # stride 2 (MobileNet's downsampling): the nine taps read four phase
                # planes, (even, odd) rows x (even, odd) columns, the third tap of a row or
                # column one step on in the first phase; all in one pass (0.32-0.41 ms a
                # pass a tap, (8, 64, 32, 32) float32 forward)
                f = w[c]
                w0, w1, w2 = f[0, 0], f[0, 1], f[0, 2]
                w3, w4, w5 = f[1, 0], f[1, 1], f[1, 2]
                w6, w7, w8 = f[2, 0], f[2, 1], f[2, 2]
                size = height * width
                ee, eo = flat, flat[size:]
                oe, oo = flat[2 * size:], flat[3 * size:]
                ee_down, eo_down = flat[width:], flat[size + width:]
                for p in range(span):
                    acc[p] = (w0 * ee[p] + w1 * eo[p] + w2 * ee[p + 1]
                              + w3 * oe[p] + w4 * oo[p] + w5 * oe[p + 1]
                              + w6 * ee_down[p] + w7 * eo_down[p] + w8 * ee_down[p + 1])
            else:
                # at stride 1 a row's taps are dw apart: a row of 5 or 7 (EfficientNet's and
                # ConvNeXt's filters) is one pass (7x7: 1.5-1.7x faster than a pass a tap,
                # which stores into acc seven times as often)
                acc[:] = 0
                for a in range(kh):
                    row = flat[_tap_offset(a, 0, dh, dw, sh, sw, height, width):]
                    f = w[c, a]
                    if sw == 1 and kw == 7:
                        w0, w1, w2, w3, w4, w5, w6 = f[0], f[1], f[2], f[3], f[4], f[5], f[6]
                        t1, t2, t3 = row[dw:], row[2 * dw:], row[3 * dw:]
                        t4, t5, t6 = row[4 * dw:], row[5 * dw:], row[6 * dw:]
                        for p in range(span):
                            acc[p] += (w0 * row[p] + w1 * t1[p] + w2 * t2[p] + w3 * t3[p]
                                       + w4 * t4[p] + w5 * t5[p] + w6 * t6[p])
                    elif sw == 1 and kw == 5:
                        w0, w1, w2, w3, w4 = f[0], f[1], f[2], f[3], f[4]
                        t1, t2, t3, t4 = row[dw:], row[2 * dw:], row[3 * dw:], row[4 * dw:]
                        for p in range(span):
                            acc[p] += (w0 * row[p] + w1 * t1[p] + w2 * t2[p] + w3 * t3[p]
                                       + w4 * t4[p])
                    else:
                        for b in range(kw):
                            weight = f[b]
                            tap = flat[_tap_offset(a, b, dh, dw, sh, sw, height, width):]
                            for p in range(span):
                                acc[p] += tap[p] * weight
            plane = out[i, c]
            for y in range(out_h):
                row, wide = plane[y], acc[y * width:]
                for j in range(out_w):
                    row[j] = wide[j]


@native.kernel
def _unfill_phases(flat, dst, line, height, width, sh, sw, lo_h, lo_w):
    """The adjoint of `_fill_phases`: the plane `dst` from the phase planes in `flat`,
    each input position taking the one phase element that holds it (zero where no
    window reaches)."""
    in_h, in_w = dst.shape
    dst[:] = 0
    if sw == 2:
        # a row's even and odd phases interleaved into one line, in one loop LLVM
        # vectorizes (a store at a stride it does not know stays scalar), then copied
        c0, c1 = max(0, lo_w), min(2 * width, in_w + lo_w)
        for ph in range(sh):
            r0, r1 = _span(height, in_h, sh, ph - lo_h)
            for r in range(r0, r1):
                even = flat[2 * ph * height * width + r * width:]
                odd = flat[(2 * ph + 1) * height * width + r * width:]
                for q in range(width):
                    line[2 * q] = even[q]
                    line[2 * q + 1] = odd[q]
                part, into = line[c0:c1], dst[r * sh + ph - lo_h, c0 - lo_w:c1 - lo_w]
                for k in range(c1 - c0):
                    into[k] = part[k]
        return
    for ph in range(sh):
        r0, r1 = _span(height, in_h, sh, ph - lo_h)
        for pw in range(sw):
            c0, c1 = _span(width, in_w, sw, pw - lo_w)
            base = (ph * sw + pw) * height * width
            for r in range(r0, r1):
                row, src = dst[r * sh + ph - lo_h], flat[base + r * width:]
                for q in range(c0, c1):
                    row[q * sw + pw - lo_w] = src[q]


@native.kernel(parallel=True, fastmath=FUSED_MULTIPLY_ADD)
def _spread(g, w, gx, geometry, index):
    """The adjoint of `_correlate` in its input: each output gradient of g[i, c], times
    each tap of w[c], added into the phase plane position that tap read, and the phase
    planes put back into gx[i, c] (`_unfill_phases`); one task per plane."""
    sh, sw, dh, dw, lo_h, lo_w = geometry[0], geometry[1], geometry[2], geometry[3], \
        geometry[4], geometry[5]
    images, channels, out_h, out_w = g.shape
    kh, kw = w.shape[1], w.shape[2]
    height, width = out_h + (kh - 1) * dh // sh, out_w + (kw - 1) * dw // sw
    span = (out_h - 1) * width + out_w
    tasks = images * channels
    runs = min(tasks, RUNS)
    for run in native.prange(runs):
        flat = np.empty(sh * sw * height * width, g.dtype)
        line = np.empty(2 * width, g.dtype)
        wide = np.zeros(span, g.dtype)   # g's plane in rows of `width` (zeros after each)
        for task in range(run * tasks // runs, (run + 1) * tasks // runs):
            flat[:] = 0
            i, c = task // channels, task % channels
            _widen_rows(g[i, c], wide, width)
            for a in range(kh):
                for b in range(kw):
                    weight = w[c, a, b]
                    tap = flat[_tap_offset(a, b, dh, dw, sh, sw, height, width):]
                    for p in range(span):
                        tap[p] += weight * wide[p]
            if index.size:
                _move_by_index(gx[i, c], flat, index, False)
            else:
                _unfill_phases(flat, gx[i, c], line, height, width, sh, sw, lo_h, lo_w)


@native.kernel(parallel=True, fastmath=REORDER)
def _weight_grad(x, g, gw, sh, sw, dh, dw, lo_h, lo_w, index):
    """gw[c, a, b] = the sum over images and outputs of g times the input its tap (a, b)
    read: per image, one dot product per tap over `_fill_phases`' planes (the gradient
    laid out in their rows, zeros in the columns past the outputs)."""
    images, channels, out_h, out_w = g.shape
    kh, kw = gw.shape[1], gw.shape[2]
    height, width = out_h + (kh - 1) * dh // sh, out_w + (kw - 1) * dw // sw
    span = (out_h - 1) * width + out_w
    for c in native.prange(channels):
        totals = np.zeros(kh * kw)
        flat = np.empty(sh * sw * height * width, x.dtype)
        line = np.empty(2 * width, x.dtype)
        wide = np.zeros(span, g.dtype)
        for i in range(images):
            to_phases(x[i, c], flat, line, height, width, sh, sw, lo_h, lo_w, index)
            _widen_rows(g[i, c], wide, width)
            if kh == 3 and kw == 3:
                # the nine dot products in one pass, reading the gradient once (3x3, any
                # stride: one pass per tap took 1.65 against 1.12 us a 32x32 plane)
                t0 = flat[_tap_offset(0, 0, dh, dw, sh, sw, height, width):]
                t1 = flat[_tap_offset(0, 1, dh, dw, sh, sw, height, width):]
                t2 = flat[_tap_offset(0, 2, dh, dw, sh, sw, height, width):]
                t3 = flat[_tap_offset(1, 0, dh, dw, sh, sw, height, width):]
                t4 = flat[_tap_offset(1, 1, dh, dw, sh, sw, height, width):]
                t5 = flat[_tap_offset(1, 2, dh, dw, sh, sw, height, width):]
                t6 = flat[_tap_offset(2, 0, dh, dw, sh, sw, height, width):]
                t7 = flat[_tap_offset(2, 1, dh, dw, sh, sw, height, width):]
                t8 = flat[_tap_offset(2, 2, dh, dw, sh, sw, height, width):]
                add_nine_dots(totals, t0, t1, t2, t3, t4, t5, t6, t7, t8, wide, span, 0.0)
                continue
            for a in range(kh):
                for b in range(kw):
                    tap = flat[_tap_offset(a, b, dh, dw, sh, sw, height, width):]
                    total = 0.0
                    for p in range(span):
                        total += tap[p] * wide[p]
                    totals[a * kw + b] += total
        for t in range(kh * kw):
            gw[c, t // kw, t % kw] = totals[t]


def _geometry(geo) -> tuple:
    """The kernels' geometry arguments: stride, dilation and the low padding, (h, w) each."""
    return (*geo.stride, *geo.dilation, *geo.lo)


# Strided planes of at most this many elements are split into their phase planes by a
# map (`phase_index`, one scattered store an element) rather than row by row.  NOTE: the
# row copies and even/odd splits are short loops on small planes.  3x3 stride 2, float32,
# medians of 8 alternations in one process, 2 threads: (32, 128, 8, 8) forward 0.60 ->
# 0.41 ms, forward + backward 2.37 -> 1.78; (32, 96, 16, 16) 0.80 -> 0.73 and 3.16 ->
# 2.92 (AMD EPYC, 2026-12-07).  A standalone copy of the forward was on par at 32x32
# (1185 against 1103 us) and lost at 64x64 and 112x112 (506 -> 608, 338 -> 563 us).
SMALL_PLANE = 16 * 16
_NO_INDEX = np.empty(0, np.int64)


def phase_index(plane: tuple, out: tuple, kernel: tuple, geometry: tuple) -> np.ndarray:
    """Where each element of an input plane of shape `plane` goes in `_fill_phases`'
    phase planes for outputs of shape `out` (-1 where no window reads it), for strided
    small planes; an empty array otherwise (the kernels then split rows themselves).
    (Kept per geometry: making one took ~20-40 us, a tenth of a small forward.)"""
    if tuple(geometry[:2]) == (1, 1) or plane[0] * plane[1] > SMALL_PLANE:
        return _NO_INDEX
    return _phase_index(tuple(plane), tuple(out), tuple(kernel), tuple(geometry))


@functools.lru_cache(maxsize=64)
def _phase_index(plane: tuple, out: tuple, kernel: tuple, geometry: tuple) -> np.ndarray:
    sh, sw, dh, dw, lo_h, lo_w = geometry
    height, width = out[0] + (kernel[0] - 1) * dh // sh, out[1] + (kernel[1] - 1) * dw // sw
    rows = np.arange(plane[0])[:, None] + lo_h
    cols = np.arange(plane[1])[None, :] + lo_w
    r, q = rows // sh, cols // sw   # (a negative padding crops: r or q below 0)
    index = (((rows % sh) * sw + cols % sw) * height + r) * width + q
    inside = (r >= 0) & (r < height) & (q >= 0) & (q < width)
    return np.where(inside, index, -1).reshape(-1).astype(np.int64)


def _run_planes(kernel, src, filters, out, *geometry) -> None:
    """`kernel` (`_correlate` or `_spread`) of `src` into `out`, cut over ember's
    threads by images (the worker's share a native part, family ``depthwise``), or by
    channels for one image (whose channel slices are C-contiguous too).  The kernels
    take their `geometry` numbers, then the planes' and filters' sizes, as one int64
    array (what the family rebuilds the arrays' shapes from).

    NOTE: the images' halves had run as Python parts, the worker waiting for the GIL:
    (8, 64, 32, 32) float32, 3x3 stride 2, 2 threads, forward 0.24-0.38 ms against
    0.32-0.36 on one thread and 0.15 for each half alone (AMD EPYC, 2026-12-07)."""
    work = min(src.size, out.size) * filters.shape[1] * filters.shape[2]
    numbers = np.array(geometry + src.shape[1:] + out.shape[2:] + filters.shape[1:], np.int64)
    # (the plane read through the phase planes: the input's, or for `_spread` the output's)
    planes, outputs = (out, src) if kernel is _spread else (src, out)
    index = phase_index(planes.shape[2:], outputs.shape[2:], filters.shape[1:], geometry)
    if src.shape[0] == 1 < src.shape[1] and native.cuts(work):
        _parallel.run_parts(
            lambda chans: kernel.serial(src[:, chans], filters[chans], out[:, chans],
                                        numbers, index),
            _parallel.split(src.shape[1], 2))
    else:
        native.run(kernel, work, src, filters, out, numbers, index, cut=(0, 2),
                   part="depthwise")


def forward(x, w, geo, bias=None):
    """The depthwise convolution of `x` with `w` (plus a per-channel `bias`), the images
    (or one image's channels) dealt to ember's threads."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape[:2] + geo.out(w.shape[2:]), x.dtype)
    _run_planes(_correlate, x, np.ascontiguousarray(w[:, 0]), out, *_geometry(geo))
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1).astype(out.dtype, copy=False)
    return out


def adjoint(g, w, geo, bias=None):
    """The adjoint in the input: each output of `g` (N, C, *out) added back, times its
    filter tap, into the input positions it read; (N, C, *geo.size) (plus `bias`).

    At stride 1 that is the correlation of `g` with the filter flipped, from
    ``(k - 1) d - lo`` before it (cropped where negative): ``x[u] = sum_a w[a] g[u + lo
    - a d]``.  At larger strides `_spread` adds each tap into the phase planes the
    forward read, the transpose of the forward's reads (no zeros put between the
    gradient's elements, which made the work stride x stride times larger)."""
    g = np.ascontiguousarray(g)
    gx = np.empty(g.shape[:2] + tuple(geo.size), g.dtype)
    if tuple(geo.stride) != (1, 1):
        _run_planes(_spread, g, np.ascontiguousarray(w[:, 0]), gx, *_geometry(geo))
    else:
        reach = [d * (k - 1) - lo for k, d, lo in zip(w.shape[2:], geo.dilation, geo.lo)]
        _run_planes(_correlate, g, np.ascontiguousarray(w[:, 0, ::-1, ::-1]), gx, 1, 1,
                    *geo.dilation, *reach)
    if bias is not None:
        gx += bias.reshape(1, -1, 1, 1).astype(gx.dtype, copy=False)
    return gx


def weight_grad(x, g, kernel, geo):
    """The gradient of the filters (C, 1, kh, kw) from the input `x` and the output's
    gradient `g` (windows outside the padded input read zeros); None where it is not
    finite (the caller's general path then computes it).  Large ones are summed
    over two halves of the images at once on ember's two threads (one image: its
    channels are halved)."""
    x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
    size = g.size * kernel[0] * kernel[1]
    images, channels = x.shape[:2]
    gw = np.empty((channels,) + tuple(kernel))   # (float64: the kernel's sums)
    geometry = _geometry(geo)
    args = (*geometry, phase_index(x.shape[2:], g.shape[2:], tuple(kernel), geometry))
    if native.cuts(size) and images > 1:
        other = np.empty_like(gw)
        halves = _parallel.split(images, 2)
        _parallel.run_parts(lambda part: _weight_grad.serial(x[halves[part]], g[halves[part]],
                                                             (gw, other)[part], *args),
                            [0, 1])
        gw += other
    elif native.cuts(size) and channels > 1:
        _parallel.run_parts(lambda chans: _weight_grad.serial(x[:, chans], g[:, chans],
                                                              gw[chans], *args),
                            _parallel.split(channels, 2))
    else:
        native.run(_weight_grad, size, x, g, gw, *args)
    if not np.isfinite(gw).all():
        # the dot products also multiply the input by the zeros between the gradient's
        # rows: an inf input gives NaN there, where the sums of real products may not
        return None
    return gw.astype(x.dtype, copy=False).reshape((channels, 1) + tuple(kernel))
