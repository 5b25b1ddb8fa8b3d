"""numba kernels of 2-d max pooling: the window maxima with their argmax in one pass, and
the scatter that adds gradients back at those positions.

The NumPy path (pooling.py) loops over the k*k kernel offsets, each a strided pass over
the whole batch with a blend for the argmax; here each (image, channel) plane is one task
of a `native.prange` loop that visits each window once.  The semantics are the NumPy
path's (PyTorch's): padding never wins, a NaN wins its window (the last NaN), ties keep
the first position, and a window of -inf points at its first position inside the input.
"""

from __future__ import annotations

import numpy as np

from . import _native as native
from ._native_activation import run  # (small inputs on the calling thread alone)
from ._native_depthwise import _span

# NOTE: no size below which the NumPy path is taken: since `run` keeps small inputs on
# the calling thread (a serial build), the kernels are faster at every size measured:
# MNIST's batch-1 pooling (1x64x24x24) 22 us against the NumPy path's 42; (1, 2, 4, 4)
# 13 us against 18; with backward, 76-112 us against 106-211.  (Through numba's parallel
# launch the batch-1 pooling had taken 63 us.)


def supports(x) -> bool:
    """True when the kernels can take the (N, C, H, W) array `x`."""
    return (native.enabled() and native.is_cpu_array(x) and x.ndim == 4
            and x.dtype in (np.float32, np.float64))


@native.kernel(parallel=True)
def _max_pool2d(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw, with_index):
    # NOTE: the maximum by selects, then its place by a second look: a branch taken when
    # a value wins mispredicts on random data (ResNet's 3x3/2 pooling of (8, 64, 56, 56)
    # float32 took 16.7 ms on 2 threads, PyTorch 8.4; AMD EPYC, 2026-12-06)
    planes, height, width = x.shape[0], x.shape[1], x.shape[2]
    out_h, out_w = out.shape[1], out.shape[2]
    rows, cols = np.empty((out_h, 2), np.int64), np.empty((out_w, 2), np.int64)
    for oy in range(out_h):     # the taps inside the input, once (a division each)
        rows[oy, 0], rows[oy, 1] = _span(kh, height, dh, oy * sh - ph)
    for ox in range(out_w):
        cols[ox, 0], cols[ox, 1] = _span(kw, width, dw, ox * sw - pw)
    for p in native.prange(planes):
        plane = x[p]
        for oy in range(out_h):
            top = oy * sh - ph
            i0, i1 = rows[oy, 0], rows[oy, 1]
            for ox in range(out_w):
                left = ox * sw - pw
                j0, j1 = cols[ox, 0], cols[ox, 1]
                if i0 >= i1 or j0 >= j1:   # (no tap inside the input: -inf, no place)
                    out[p, oy, ox] = -np.inf
                    if with_index:
                        idx[p, oy, ox] = -1
                    continue
                best = _window_max(plane, top, left, i0, i1, j0, j1, dh, dw)
                out[p, oy, ox] = best
                if with_index:
                    idx[p, oy, ox] = _place(plane, best, top, left, i0, i1, j0, j1, dh, dw)


@native.kernel(inline=True)
def _window_max(plane, top, left, i0, i1, j0, j1, dh, dw):
    """The maximum of a window's taps (i0..i1, j0..j1: those inside the input): the first
    starts it (a window of -inf points there), a NaN always wins."""
    best = plane[top + i0 * dh, left + j0 * dw]
    for i in range(i0, i1):
        for j in range(j0, j1):
            v = plane[top + i * dh, left + j * dw]
            best = v if _wins(v, best) else best
    return best


@native.kernel(parallel=True)
def _max_pool2d_k3s2(x, out, idx, ph, pw, with_index):
    # ResNet's 3x3 windows at stride 2: a window wholly inside the input reads its nine
    # taps from three rows, with no bounds tests or loops, and finds its winner's place
    # from equalities (5.4 -> 1.1 ms for (512, 32, 32) float32 planes with indices, one
    # thread, AMD EPYC); a window over the padding goes the general way
    planes, height, width = x.shape[0], x.shape[1], x.shape[2]
    out_h, out_w = out.shape[1], out.shape[2]
    for p in native.prange(planes):
        plane = x[p]
        for oy in range(out_h):
            top = 2 * oy - ph
            i0, i1 = _span(3, height, 1, top)
            values, where = out[p, oy], idx[p, oy] if with_index else idx[0, 0]
            for ox in range(out_w):
                left = 2 * ox - pw
                if i1 - i0 == 3 and left >= 0 and left + 3 <= width:
                    r0, r1, r2 = plane[top], plane[top + 1], plane[top + 2]
                    a0, a1, a2 = r0[left], r0[left + 1], r0[left + 2]
                    b0, b1, b2 = r1[left], r1[left + 1], r1[left + 2]
                    c0, c1, c2 = r2[left], r2[left + 1], r2[left + 2]
                    best = a1 if _wins(a1, a0) else a0
                    best = a2 if _wins(a2, best) else best
                    best = b0 if _wins(b0, best) else best
                    best = b1 if _wins(b1, best) else best
                    best = b2 if _wins(b2, best) else best
                    best = c0 if _wins(c0, best) else best
                    best = c1 if _wins(c1, best) else best
                    best = c2 if _wins(c2, best) else best
                    values[ox] = best
                    if with_index and best == best:   # the first tap equal to best
                        n0, n1 = np.int64(a0 != best), np.int64(a1 != best)
                        n2, n3 = np.int64(a2 != best), np.int64(b0 != best)
                        n4, n5 = np.int64(b1 != best), np.int64(b2 != best)
                        n6, n7 = np.int64(c0 != best), np.int64(c1 != best)
                        k = n0 * (1 + n1 * (1 + n2 * (1 + n3 * (1 + n4 * (1 + n5 * (
                            1 + n6 * (1 + n7)))))))
                        row = n0 * n1 * n2 * (1 + n3 * n4 * n5)
                        where[ox] = (top + row) * width + left + k - 3 * row
                    elif with_index:   # (rare) a NaN won: the last NaN
                        where[ox] = _place(plane, best, top, left, 0, 3, 0, 3, 1, 1)
                    continue
                j0, j1 = _span(3, width, 1, left)
                if i0 >= i1 or j0 >= j1:   # (no tap inside the input: -inf, no place)
                    values[ox] = -np.inf
                    if with_index:
                        where[ox] = -1
                    continue
                best = _window_max(plane, top, left, i0, i1, j0, j1, 1, 1)
                values[ox] = best
                if with_index:
                    where[ox] = _place(plane, best, top, left, i0, i1, j0, j1, 1, 1)


@native.kernel(inline=True)
def _place(plane, best, top, left, i0, i1, j0, j1, dh, dw):
    """The flat index in `plane` of the window's winner `best`: the first value equal to
    it (counted without a branch: the taps before the first match), or the last NaN
    where it is NaN (rare: a loop of its own)."""
    cols = j1 - j0
    before, found, last_nan = 0, 0, 0
    for i in range(i0, i1):
        for j in range(j0, j1):
            equal = np.int64(plane[top + i * dh, left + j * dw] == best)
            before += (1 - found) * (1 - equal)
            found |= equal
    if best != best:
        for i in range(i0, i1):
            row = plane[top + i * dh]
            for j in range(j0, j1):
                if row[left + j * dw] != row[left + j * dw]:
                    last_nan = (i - i0) * cols + j - j0
        before = last_nan
    return (top + (i0 + before // cols) * dh) * plane.shape[1] + left + (
        j0 + before % cols) * dw


@native.kernel(inline=True)
def _wins(v, best):
    """Whether `v` replaces the running maximum `best` (a NaN always does); no branch."""
    return (v > best) | (v != v)


@native.kernel(parallel=True)
def _max_pool2d_k2s2(x, out, idx, with_index):
    # the common 2x2 window with stride 2 and no padding: four reads, no bounds tests,
    # and selects instead of branches (which random data mispredicts half the time)
    planes, width = x.shape[0], x.shape[2]
    out_h, out_w = out.shape[1], out.shape[2]
    for p in native.prange(planes):
        for oy in range(out_h):
            top, bottom = x[p, 2 * oy], x[p, 2 * oy + 1]
            row = 2 * oy * width
            values, where = out[p, oy], idx[p, oy] if with_index else idx[0, 0]
            for ox in range(out_w):
                left = 2 * ox
                a, b = top[left], top[left + 1]
                c, d = bottom[left], bottom[left + 1]
                best = b if _wins(b, a) else a
                best = c if _wins(c, best) else best
                best = d if _wins(d, best) else best
                values[ox] = best
                if with_index:
                    # NOTE: the winner's place from equalities, not from the selects'
                    # conditions: selects of the index on those were compiled to branches,
                    # which random data mispredicts (9.1 ms against 3.3 for (4096, 24,
                    # 24) float32 on one thread, AMD EPYC; the values alone: 0.65 ms)
                    ea, eb, ec = np.int64(a == best), np.int64(b == best), np.int64(c == best)
                    k = (1 - ea) * (1 + (1 - eb) * (1 + (1 - ec)))   # the first equal to best
                    if best != best:   # (rare) a nan wins: the last nan
                        k = 3 if d != d else (2 if c != c else (1 if b != b else 0))
                    where[ox] = row + left + (k & 1) + (k >> 1) * width


def max_pool2d(x, geo, with_index: bool):
    """(values, flat indices or None) of 2-d max pooling of the (N, C, H, W) `x`.  The
    indices are int32 (planes under 2**31 elements: the caller checks), half the memory
    of int64 ones; a caller who hands them on widens them.  One index type means one
    build per value dtype (each ~0.4-1.2 s to compile from a cold cache)."""
    x = np.ascontiguousarray(x)
    n, c, height, width = x.shape
    planes = x.reshape(n * c, height, width)
    out = np.empty((n * c,) + tuple(geo.out), dtype=x.dtype)
    # (without indices, a stand-in of the same type: both share one build)
    idx = np.empty(out.shape if with_index else (1, 1, 1), np.int32)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geo.kernel, geo.stride, geo.pad, geo.dilation
    # (the planes cut over ember's threads; the stand-in index array is not cut)
    cut = (0, 1, 2) if with_index else (0, 1)
    if (kh, kw, sh, sw, ph, pw, dh, dw) == (2, 2, 2, 2, 0, 0, 1, 1):
        run(_max_pool2d_k2s2, x.size, planes, out, idx, with_index, cut=cut)
    elif (kh, kw, sh, sw, dh, dw) == (3, 3, 2, 2, 1, 1):
        run(_max_pool2d_k3s2, x.size, planes, out, idx, ph, pw, with_index, cut=cut)
    else:
        run(_max_pool2d, x.size, planes, out, idx, kh, kw, sh, sw, ph, pw, dh, dw, with_index,
            cut=cut)
    shape = (n, c) + tuple(geo.out)
    return out.reshape(shape), idx.reshape(shape) if with_index else None


@native.kernel(parallel=True)
def _scatter_planes(g, idx, out, outside):
    """Each plane p of g added into out[p] at the flat indices idx[p]; outside[p] counts
    the indices of plane p that lie off the plane (left out)."""
    size = out.shape[1]
    for p in native.prange(g.shape[0]):
        target = out[p]
        missed = 0
        for k in range(g.shape[1]):
            at = idx[p, k]
            if 0 <= at < size:
                target[at] += g[p, k]
            else:
                missed += 1
        outside[p] = missed


def scatter_supported(g, idx) -> bool:
    """True when `scatter` can take the gradient `g` and int64 or int32 indices `idx`
    (same shape)."""
    return (native.enabled() and native.is_cpu_array(g, idx) and g.ndim >= 3
            and g.dtype in (np.float32, np.float64) and idx.dtype in (np.int64, np.int32)
            and idx.shape == g.shape)


def scatter(g, idx, size: tuple):
    """g (N, C, *out) added into zeros (N, C, *size) at flat spatial indices `idx`, or
    None when an index lies outside the plane (the caller's NumPy path says which)."""
    n, c = g.shape[:2]
    out = np.zeros((n * c, int(np.prod(size))), dtype=g.dtype)
    outside = np.empty(n * c, np.int64)
    # (the planes cut over the threads: below PARALLEL_MIN the scatter ran on one)
    run(_scatter_planes, out.size, np.ascontiguousarray(g).reshape(n * c, -1),
        np.ascontiguousarray(idx).reshape(n * c, -1), out, outside, cut=(0, 1, 2, 3))
    if outside.any():
        return None
    return out.reshape((n, c) + tuple(size))
