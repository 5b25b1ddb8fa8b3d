"""A lone image's Winograd convolution on two threads (batch-1 inference's 3x3 layers).

`_native_winograd.conv_forward` deals whole images to the threads, so a batch of one ran
on one thread: its filter transform, tile transform, 36 products and back-transform one
after the other.  Here each thread takes half of the image's tile rows (bands) through
all four steps in one native call (`_entry_template`).  Both threads transform all the
filters, which the products need: a wait for the other thread's half inside a native
call could hang on a worker that fell asleep as its share was posted (it is woken only
once the caller's share returns), and for up to 16K filters the transform is cheaper
than the bands it shares out (`_native_winograd.supports` sends a lone image with more
to im2col).  Then each thread transforms its bands' tiles, runs their 36 products through
the CBLAS function of ember's threads and writes its bands of the output.  The worker's
share starts from one compiled hand-over (`_workers.native_halves`), without the GIL.

NOTE: why.  MNIST's conv2 (32 -> 64 channels, 26x26 input) alone on one thread took
~128 us on the 2-core Intel Xeon (2026-12-07): filter transform 22, tiles 28, products
31, back-transform 31; PyTorch's oneDNN convolution on two threads 121.

This module imports numba (through ops/_native_parts.py): `_native_winograd` imports it
only where the native path can run.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from numba import carray

from . import _native as native
from . import _native_cuts, _parallel, _workers
from ._native_parts import (array_at, as_type_of, block_at, call_gemm, compile_bound,
                            pointer_to)
from ._native_winograd import (G32, POSITIONS, _filter_kernel, _transform_tiles,
                               _untransform_tiles)

_ROW_MAJOR, _NO_TRANS = 101, 111   # CBLAS's enums

# A share's block (int64s): its first and last band, then from slot 2 the addresses of
# x, w, bias, G, u, taps, half, v, prod, out, check and `sizes`, and the CBLAS sgemm's;
# `sizes` (int64) holds C, H, W, O, the output's height and width, the tiles down and
# across, and the padding above and to the left.
_X, _W, _BIAS, _G, _U, _TAPS, _HALF, _V, _PROD, _OUT, _CHECK, _SIZES, _GEMM = range(2, 15)
_SIZE_COUNT = 10


def _entry_template(address):
    """The C entry point: one share, bands first..last-1 of the lone image x (1, C, H, W)
    convolved with w (O, C, 3, 3) into out (1, O, oh, ow).  The filters are transformed
    into u (36, C*O), the bands' tiles into v (36, bands, tw*C), their products into prod
    (36, bands, tw*O) by the CBLAS sgemm, then written back with the bias (and `check`
    filled, as `_untransform_tiles` does).  (One build: the steps written here, not in a
    kernel of their own, which numba would build, linking the helpers, a second time.)"""
    ints, _ = block_at(address)
    sizes = array_at(ints[_SIZES], _SIZE_COUNT, np.int64)
    c, h, width, o, out_h, out_w = sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5]
    th, tw, lo_h, lo_w = sizes[6], sizes[7], sizes[8], sizes[9]
    first, last = ints[0], ints[1]
    bands = last - first
    f32 = np.float32
    x = carray(pointer_to(ints[_X], f32), (1, c, h, width))
    w = carray(pointer_to(ints[_W], f32), (o, c, 3, 3))
    u = carray(pointer_to(ints[_U], f32), (POSITIONS, c * o))
    taps = carray(pointer_to(ints[_TAPS], f32), (9, c * o))
    v = carray(pointer_to(ints[_V], f32), (POSITIONS, bands, tw * c))
    prod = carray(pointer_to(ints[_PROD], f32), (POSITIONS, bands, tw * o))
    for k in range(9):   # taps[k, (c, o)] = w[o, c, k // 3, k % 3]
        row = taps[k]
        for ci in range(c):
            for oi in range(o):
                row[ci * o + oi] = w[oi, ci, k // 3, k % 3]
    _filter_kernel(carray(pointer_to(ints[_G], f32), (6, 3)), taps,
                   carray(pointer_to(ints[_HALF], f32), (18, c * o)), u, 0)
    _transform_tiles(x, lo_h, lo_w, th, tw, v, first, last)
    gemm, ints64 = ints[_GEMM], np.int64(0)
    rows = bands * tw
    one, zero = np.float32(1), np.float32(0)
    order, plain = np.int32(_ROW_MAJOR), np.int32(_NO_TRANS)
    for p in range(POSITIONS):   # prod[p] (rows, O) = v[p] (rows, C) @ u[p] (C, O)
        call_gemm(gemm, order, plain, plain, as_type_of(ints64, rows),
                  as_type_of(ints64, o), as_type_of(ints64, c), one, v[p].ctypes.data,
                  as_type_of(ints64, c), u[p].ctypes.data, as_type_of(ints64, o), zero,
                  prod[p].ctypes.data, as_type_of(ints64, o))
    _untransform_tiles(prod, array_at(ints[_BIAS], o, f32), th, tw,
                       carray(pointer_to(ints[_OUT], f32), (1, o, out_h, out_w)),
                       array_at(ints[_CHECK], th, f32), first, last)


@functools.cache
def _callable(address: int):
    """The entry point at `address` as a ctypes function (which lets go of the GIL)."""
    return ctypes.CFUNCTYPE(None, ctypes.c_int64)(address)


@functools.cache
def _entry() -> int:
    """The address of the compiled entry point (built on first use, then cached on disk
    under a name that changes with the kernels it calls: numba checks a cached entry
    point against this file only)."""
    name = f"winograd_lone_{native.kernel_digest(_entry_template)}"
    return compile_bound(_entry_template, name)


class _Plan:
    """The scratch arrays and blocks of one geometry's two shares, made once and reused
    (a call under `_parallel._claim`, which one thread holds at a time, fills in the
    addresses of its own x, w, bias, out and check)."""

    def __init__(self, c: int, h: int, w: int, o: int, tiles: tuple, lo: tuple,
                 gemm: int):
        (out_h, out_w), th, tw = tiles
        self.shape = (1, o, out_h, out_w)
        self.sizes = np.array([c, h, w, o, out_h, out_w, th, tw, lo[0], lo[1]], np.int64)
        self.blocks = np.zeros((2, 32), np.int64)
        self.scratch = []
        for block, (first, last) in zip(self.blocks, ((0, th // 2), (th // 2, th))):
            bands = last - first
            scratch = [np.empty((POSITIONS, c * o), np.float32),
                       np.empty((9, c * o), np.float32), np.empty((18, c * o), np.float32),
                       np.empty((POSITIONS, bands, tw * c), np.float32),
                       np.empty((POSITIONS, bands, tw * o), np.float32)]
            block[0], block[1] = first, last
            block[_G] = G32.ctypes.data
            block[_U:_OUT] = [a.ctypes.data for a in scratch]
            block[_SIZES], block[_GEMM] = self.sizes.ctypes.data, gemm
            self.scratch.append(scratch)

    def bytes(self) -> int:
        """The size of its scratch arrays."""
        return sum(a.nbytes for scratch in self.scratch for a in scratch)

    def fill(self, x, w, bias, out, check) -> None:
        """Point both blocks at this call's arrays."""
        at = _native_cuts._address
        self.blocks[:, _X] = at(x)
        self.blocks[:, _W] = at(w)
        self.blocks[:, _BIAS] = at(bias)
        self.blocks[:, _OUT] = at(out)
        self.blocks[:, _CHECK] = at(check)


_plans: dict = {}


def conv_forward(x, w, geo, bias, tiles: tuple):
    """`_native_winograd.conv_forward` of a lone image (x: (1, C, H, W); w: (O, C, 3, 3);
    computed in float32) on this thread and a worker, half the bands
    each; `tiles` is `_native_winograd._tiles(geo)`.  (out, check), or None where the two
    threads cannot take it (no free worker, a BLAS with 32-bit integers), nothing
    computed; `check` is NaN for a band whose outputs are not all finite."""
    loops = _workers._compiled_loops()
    if loops is None or loops.ints.dtype != np.int64 or x.shape[0] != 1 or tiles[1] < 2:
        return None
    o, c = w.shape[0], w.shape[1]
    x = np.ascontiguousarray(x, dtype=np.float32)
    w = np.ascontiguousarray(w, dtype=np.float32)
    bias = _zeros(o) if bias is None else np.ascontiguousarray(bias, np.float32)
    workers = _parallel._claim()
    if workers is None:
        return None
    try:
        key = (c, x.shape[2], x.shape[3], o, tiles, geo.lo)
        plan = _plans.get(key)
        if plan is None:
            plan = _Plan(*key, int(loops.functions[_workers._SGEMM_AT]))
            _keep(key, plan)
        out = np.empty(plan.shape, np.float32)
        check = np.empty(tiles[1], np.float32)
        plan.fill(x, w, bias, out, check)
        entry = _entry()
        mine, theirs = plan.blocks[0], plan.blocks[1]
        keep = (x, w, bias, out, check, plan)
        if not _workers.native_halves(workers[0], entry, theirs, mine, keep):
            # (the worker was asleep: post its share, which wakes it, and run ours)
            if not workers[0].post_native(entry, theirs, keep):
                return None
            try:
                _callable(entry)(mine.ctypes.data)
            finally:
                workers[0].join()
    finally:
        _parallel._release()
    return out, check


# The scratch arrays kept between calls, at most (MNIST's conv2: 1.5 MB, 64 -> 64 at
# 56x56: 5.7 MB; 128 -> 128 at 28x28 needs more, made afresh for each ~0.9 ms call).
_KEPT_BYTES = 8 << 20


def _keep(key: tuple, plan: _Plan) -> None:
    """Keep `plan` for `key`'s later calls when its scratch fits in `_KEPT_BYTES` with
    the others' (else the others are dropped first; a plan larger than that is not
    kept)."""
    size = plan.bytes()
    if size > _KEPT_BYTES:
        return
    if size + sum(p.bytes() for p in _plans.values()) > _KEPT_BYTES:
        _plans.clear()
    _plans[key] = plan


@functools.cache
def _zeros(n: int) -> np.ndarray:
    return np.zeros(n, np.float32)
