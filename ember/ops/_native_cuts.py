"""Kernels cut over two threads as native parts (ops/_native_parts.py): the worker's half
runs without the GIL (`run_cut`); and the same entry points run one share per thread on
numba's threads where more threads take the work (`run_threaded`).

`native.run(kernel, size, *args, cut=..., part=FAMILY)` hands a cut kernel here.  A
family says how the kernel's arguments sit in the part's block and which types they
have, so that numba can compile, once per kernel and dtype, a C entry point that
rebuilds them and calls the kernel's serial build on a share:

- ``flat2`` / ``flat3``: two or three 1-D arrays of the dtype, all cut (activations);
  ``flat1_1``: one such array and a number (a fill, ops/_native_fill.py);
  ``flat2_N`` / ``flat3_N``: the same followed by N numbers of the dtype (hardtanh's
  bounds, leaky relu's slope, softplus, elu, the pointwise losses' gradients: their
  kernels take the arrays first);
- ``select``, ``select_number_a``, ``select_number_b``: a bool condition and arrays of
  the dtype, or a number in place of one operand (where, masked_fill);
- ``rows2_flag`` / ``rows3_flag``: two or three 2-D arrays cut by rows, and a bool
  (softmax and its gradient);
- ``rows2_flag_int`` / ``rows3_flag_int``: the same and an integer (softmax over a
  middle dim and its gradient: rows of (C, inner) blocks, the integer inner);
- ``halves2`` / ``halves3``: rows of 2n-wide arrays and of an n-wide one (the gated
  linear unit's halves and its output or gradient: ops/_native_glu.py);
- ``rows_affine``: rows of an array, a scale and a shift per row, rows of the result
  (batch norm at inference, ops/_native_batchnorm.py);
- ``rows_sums``: a 2-D array cut by rows and its rows' float64 sums (_native_sums.py);
- ``pick_rows``: rows of a table, of int64 indices into them and of the values picked or
  added, the indices' row length, an integer mode, and a count per row
  (_native_scatter.py);
- ``dropout``, ``dropout_grad``, ``dropout_grad_into``: dropout's kernels;
- ``layer_norm``, ``layer_norm_grad``: the layer-norm kernels (the gradient's cut by
  blocks of rows, the rows' arrays passed whole);
- ``group_norm``, ``group_norm_grad``: group norm's kernels (rows of (image, group),
  with their weight and bias as rows of the group's channels);
- ``cross_entropy``, ``cross_entropy_grad``: cross-entropy's kernels (rows of logits,
  per-row targets and coefficients);
- ``masked_softmax``, ``masked_softmax_grad``: the softmax of scaled, masked rows (a bool
  mask of the rows' shape) and its gradient;
- ``plane_gather``, ``plane_scatter``: a map of planes' last two axes by index (padding
  by reflection, replication or wrapping) and its transpose (ops/_native_axis_map.py);
- ``depthwise``: images of (N, C, h, w) arrays, the filters (C, kh, kw), an int64 array
  of the geometry and sizes and one of a plane's places in the phase planes
  (ops/_native_depthwise.py);
- ``sgd``, ``adam``, ``adadelta``: the fused optimizer steps' range kernels
  (optim/_fused.py), whose state arrays a step without them replaces by whole
  one-element stand-ins.

The block (int64s): 0 the share's first-dimension length, 1 the cut arrays' second
dimension (2-D families), from `ARGS` one slot per argument in order: an array's
address (a cut array's at the share's first row), an integer or bool as is, a float's
float64 bits; from `LENGTHS` the length of each whole (uncut) 1-D array.

NOTE: measured on the 2-core test VM (2026-12-04): exact GELU on 1M float32 elements,
alternating call by call: 360-392 us so, 423-540 us with the worker's half posted as a
Python part (which waits for the GIL), 606-682 us on one thread.
"""

from __future__ import annotations

import functools
import struct

import numpy as np
from numba import carray

from . import _native as native
from . import _parallel, _workers
from ._native_parts import (BLOCK_SIZE, array_at, block_at, call_address, compile_bound,
                            pointer_to)

ARGS, LENGTHS = 2, 18  # (a block holds BLOCK_SIZE = 32 int64s)

# Stand-ins for the names each compiled entry point binds: the kernel's serial build and
# the dtype of its float arrays (see `_entry`).
KERNEL = DTYPE = None


@native.kernel(inline=True)
def _rows_at(address, rows, cols, dtype):
    return carray(pointer_to(address, dtype), (rows, cols))


def flat2(address):
    ints, _ = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE))


def flat3(address):
    ints, _ = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           array_at(ints[ARGS + 2], n, DTYPE))


def flat1_1(address):   # (a, number): one array cut, a number (a fill)
    ints, numbers = block_at(address)
    KERNEL(array_at(ints[ARGS], ints[0], DTYPE), DTYPE(numbers[ARGS + 1]))


def flat2_1(address):   # (a, b, number): two arrays cut, a number (leaky relu)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           DTYPE(numbers[ARGS + 2]))


def flat2_2(address):   # (a, b, number, number) (hardtanh, softplus)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           DTYPE(numbers[ARGS + 2]), DTYPE(numbers[ARGS + 3]))


def flat2_3(address):   # (a, b, number, number, number) (elu)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           DTYPE(numbers[ARGS + 2]), DTYPE(numbers[ARGS + 3]), DTYPE(numbers[ARGS + 4]))


def flat3_1(address):   # (a, b, c, number): three arrays cut, a number
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           array_at(ints[ARGS + 2], n, DTYPE), DTYPE(numbers[ARGS + 3]))


def flat3_2(address):   # (a, b, c, number, number)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           array_at(ints[ARGS + 2], n, DTYPE), DTYPE(numbers[ARGS + 3]),
           DTYPE(numbers[ARGS + 4]))


def flat3_3(address):   # (a, b, c, number, number, number)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           array_at(ints[ARGS + 2], n, DTYPE), DTYPE(numbers[ARGS + 3]),
           DTYPE(numbers[ARGS + 4]), DTYPE(numbers[ARGS + 5]))


def flat3_4(address):   # (a, b, c, number, number, number, number) (the Huber slope)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, DTYPE),
           array_at(ints[ARGS + 2], n, DTYPE), DTYPE(numbers[ARGS + 3]),
           DTYPE(numbers[ARGS + 4]), DTYPE(numbers[ARGS + 5]), DTYPE(numbers[ARGS + 6]))


def select(address):   # (condition, a, b, out): a bool array, then three of the dtype
    ints, _ = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, np.bool_), array_at(ints[ARGS + 1], n, DTYPE),
           array_at(ints[ARGS + 2], n, DTYPE), array_at(ints[ARGS + 3], n, DTYPE))


def select_number_a(address):   # (condition, number, b, out)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, np.bool_), DTYPE(numbers[ARGS + 1]),
           array_at(ints[ARGS + 2], n, DTYPE), array_at(ints[ARGS + 3], n, DTYPE))


def select_number_b(address):   # (condition, a, number, out)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, np.bool_), array_at(ints[ARGS + 1], n, DTYPE),
           DTYPE(numbers[ARGS + 2]), array_at(ints[ARGS + 3], n, DTYPE))


def rows2_flag(address):
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c, DTYPE),
           ints[ARGS + 2] != 0)


def rows_affine(address):   # (x, scale, shift, out): rows of x and out, a number a row each
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), array_at(ints[ARGS + 1], r, DTYPE),
           array_at(ints[ARGS + 2], r, DTYPE), _rows_at(ints[ARGS + 3], r, c, DTYPE))


def halves2(address):   # (x, out): rows of x, 2n wide, and of out, n wide (glu)
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c // 2, DTYPE))


def halves3(address):   # (x, g, out): rows of x and out, 2n wide, of g, n wide (glu's gradient)
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c // 2, DTYPE),
           _rows_at(ints[ARGS + 2], r, c, DTYPE))


def rows2_flag_int(address):   # (a, b, flag, int): rows of (C, inner) blocks, inner
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c, DTYPE),
           ints[ARGS + 2] != 0, ints[ARGS + 3])


def rows3_flag_int(address):   # (a, b, c, flag, int)
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c, DTYPE),
           _rows_at(ints[ARGS + 2], r, c, DTYPE), ints[ARGS + 3] != 0, ints[ARGS + 4])


def rows_sums(address):   # (rows, sums): a 2-D array cut by rows, a float64 sum per row
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), array_at(ints[ARGS + 1], r, np.float64))


def pick_rows(address):   # (table, index, values, picks, mode, outside): rows of a table
    ints, _ = block_at(address)   # and of its int64 indices and values (`picks` a row)
    r, c, k = ints[0], ints[1], ints[ARGS + 3]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, k, np.int64),
           _rows_at(ints[ARGS + 2], r, k, DTYPE), k, ints[ARGS + 4],
           array_at(ints[ARGS + 5], r, np.int64))


def rows3_flag(address):
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c, DTYPE),
           _rows_at(ints[ARGS + 2], r, c, DTYPE), ints[ARGS + 3] != 0)


def dropout(address):   # (x, words, threshold, scale, out, keep)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, np.uint32),
           ints[ARGS + 2], DTYPE(numbers[ARGS + 3]), array_at(ints[ARGS + 4], n, DTYPE),
           array_at(ints[ARGS + 5], n, np.bool_))


def dropout_grad(address):   # (grad, keep, scale, out)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, np.bool_),
           DTYPE(numbers[ARGS + 2]), array_at(ints[ARGS + 3], n, DTYPE))


def dropout_grad_into(address):   # (grad, keep, scale)
    ints, numbers = block_at(address)
    n = ints[0]
    KERNEL(array_at(ints[ARGS], n, DTYPE), array_at(ints[ARGS + 1], n, np.bool_),
           DTYPE(numbers[ARGS + 2]))


@native.kernel(inline=True)
def _flat_at(ints, i, n, dtype):
    """Argument `i` as a 1-D array: a cut one of the share's `n` elements, or a whole one
    of its own length (an optimizer's ``unused`` stand-in)."""
    length = ints[LENGTHS + i]
    return array_at(ints[ARGS + i], length if length > 0 else n, dtype)


def sgd(address):   # (p, g, buf, start, stop, 5 numbers, first, nesterov)
    ints, numbers = block_at(address)
    n, k = ints[0], ARGS + 5
    KERNEL(_flat_at(ints, 0, n, DTYPE), _flat_at(ints, 1, n, DTYPE),
           _flat_at(ints, 2, n, DTYPE), ints[ARGS + 3], ints[ARGS + 4], DTYPE(numbers[k]),
           DTYPE(numbers[k + 1]), DTYPE(numbers[k + 2]), DTYPE(numbers[k + 3]),
           DTYPE(numbers[k + 4]), ints[k + 5] != 0, ints[k + 6] != 0)


def adam(address):   # (p, g, m, v, vmax, start, stop, 7 numbers, amsgrad)
    ints, numbers = block_at(address)
    n, k = ints[0], ARGS + 7
    KERNEL(_flat_at(ints, 0, n, DTYPE), _flat_at(ints, 1, n, DTYPE),
           _flat_at(ints, 2, n, DTYPE), _flat_at(ints, 3, n, DTYPE),
           _flat_at(ints, 4, n, DTYPE), ints[ARGS + 5], ints[ARGS + 6], DTYPE(numbers[k]),
           DTYPE(numbers[k + 1]), DTYPE(numbers[k + 2]), DTYPE(numbers[k + 3]),
           DTYPE(numbers[k + 4]), DTYPE(numbers[k + 5]), DTYPE(numbers[k + 6]),
           ints[k + 7] != 0)


def adadelta(address):   # (p, g, v, u, start, stop, 6 numbers)
    ints, numbers = block_at(address)
    n, k = ints[0], ARGS + 6
    KERNEL(_flat_at(ints, 0, n, DTYPE), _flat_at(ints, 1, n, DTYPE),
           _flat_at(ints, 2, n, DTYPE), _flat_at(ints, 3, n, DTYPE), ints[ARGS + 4],
           ints[ARGS + 5], DTYPE(numbers[k]), DTYPE(numbers[k + 1]), DTYPE(numbers[k + 2]),
           DTYPE(numbers[k + 3]), DTYPE(numbers[k + 4]), DTYPE(numbers[k + 5]))


def layer_norm(address):   # (x, inv_n, eps, weight, bias, affine, y, out, mean, rstd)
    ints, numbers = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), DTYPE(numbers[ARGS + 1]),
           DTYPE(numbers[ARGS + 2]), array_at(ints[ARGS + 3], ints[LENGTHS + 3], DTYPE),
           array_at(ints[ARGS + 4], ints[LENGTHS + 4], DTYPE), ints[ARGS + 5] != 0,
           _rows_at(ints[ARGS + 6], r, c, DTYPE), _rows_at(ints[ARGS + 7], r, c, DTYPE),
           array_at(ints[ARGS + 8], r, DTYPE), array_at(ints[ARGS + 9], r, DTYPE))


def layer_norm_grad(address):   # (g, y, inv_n, rstd, weight, need_x, gx, gw_parts,
    ints, numbers = block_at(address)   # gb_parts, blocks, per): the blocks are cut
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], ints[LENGTHS], c, DTYPE),
           _rows_at(ints[ARGS + 1], ints[LENGTHS + 1], c, DTYPE), DTYPE(numbers[ARGS + 2]),
           array_at(ints[ARGS + 3], ints[LENGTHS + 3], DTYPE),
           array_at(ints[ARGS + 4], ints[LENGTHS + 4], DTYPE), ints[ARGS + 5] != 0,
           _rows_at(ints[ARGS + 6], ints[LENGTHS + 6], c, DTYPE),
           _rows_at(ints[ARGS + 7], r, c, DTYPE), _rows_at(ints[ARGS + 8], r, c, DTYPE),
           array_at(ints[ARGS + 9], r, np.int64), ints[ARGS + 10])


def group_norm(address):   # (x, weight, bias, k, inv_n, eps, out, mean, rstd): weight and
    ints, numbers = block_at(address)   # bias are rows of k
    r, c, k = ints[0], ints[1], ints[ARGS + 3]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, k, DTYPE),
           _rows_at(ints[ARGS + 2], r, k, DTYPE), k, DTYPE(numbers[ARGS + 4]),
           DTYPE(numbers[ARGS + 5]), _rows_at(ints[ARGS + 6], r, c, DTYPE),
           array_at(ints[ARGS + 7], r, DTYPE), array_at(ints[ARGS + 8], r, DTYPE))


def group_norm_grad(address):   # (g, x, weight, k, mean, rstd, inv_n, need_x, gx, sums_gx,
    ints, numbers = block_at(address)   # sums_g): weight and the sums are rows of k
    r, c, k = ints[0], ints[1], ints[ARGS + 3]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c, DTYPE),
           _rows_at(ints[ARGS + 2], r, k, DTYPE), k, array_at(ints[ARGS + 4], r, DTYPE),
           array_at(ints[ARGS + 5], r, DTYPE), DTYPE(numbers[ARGS + 6]), ints[ARGS + 7] != 0,
           _rows_at(ints[ARGS + 8], r, c, DTYPE), _rows_at(ints[ARGS + 9], r, k, DTYPE),
           _rows_at(ints[ARGS + 10], r, k, DTYPE))


def cross_entropy(address):   # (x, target, coef_t, coef_u, weight, loss, shift, lse)
    ints, _ = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), array_at(ints[ARGS + 1], r, np.int64),
           array_at(ints[ARGS + 2], r, DTYPE), array_at(ints[ARGS + 3], r, DTYPE),
           array_at(ints[ARGS + 4], ints[LENGTHS + 4], DTYPE),
           array_at(ints[ARGS + 5], r, DTYPE), array_at(ints[ARGS + 6], r, DTYPE),
           array_at(ints[ARGS + 7], r, DTYPE))


def cross_entropy_grad(address):   # (g, x, shift, lse, target, coef_t, coef_u, weight,
    ints, numbers = block_at(address)   # wsum, out); x is the first cut (see `run_cut`)
    r, c = ints[0], ints[1]
    KERNEL(array_at(ints[ARGS], r, DTYPE), _rows_at(ints[ARGS + 1], r, c, DTYPE),
           array_at(ints[ARGS + 2], r, DTYPE), array_at(ints[ARGS + 3], r, DTYPE),
           array_at(ints[ARGS + 4], r, np.int64), array_at(ints[ARGS + 5], r, DTYPE),
           array_at(ints[ARGS + 6], r, DTYPE),
           array_at(ints[ARGS + 7], ints[LENGTHS + 7], DTYPE), DTYPE(numbers[ARGS + 8]),
           _rows_at(ints[ARGS + 9], r, c, DTYPE))


def masked_softmax(address):   # (x, mask, scale, value, out)
    ints, numbers = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c, np.bool_),
           DTYPE(numbers[ARGS + 2]), DTYPE(numbers[ARGS + 3]),
           _rows_at(ints[ARGS + 4], r, c, DTYPE))


def masked_softmax_grad(address):   # (g, y, mask, scale, out)
    ints, numbers = block_at(address)
    r, c = ints[0], ints[1]
    KERNEL(_rows_at(ints[ARGS], r, c, DTYPE), _rows_at(ints[ARGS + 1], r, c, DTYPE),
           _rows_at(ints[ARGS + 2], r, c, np.bool_), DTYPE(numbers[ARGS + 3]),
           _rows_at(ints[ARGS + 4], r, c, DTYPE))


@native.kernel(inline=True)
def _planes_at(address, planes, height, width, dtype):
    return carray(pointer_to(address, dtype), (planes, height, width))


def plane_gather(address):   # (x, rows, cols, geometry, out): planes of x mapped into
    ints, _ = block_at(address)   # out's (geometry: the map's run, then x's planes' size)
    r, n_rows, n_cols = ints[0], ints[LENGTHS + 1], ints[LENGTHS + 2]
    geometry = array_at(ints[ARGS + 3], ints[LENGTHS + 3], np.int64)
    KERNEL(_planes_at(ints[ARGS], r, geometry[3], geometry[4], DTYPE),
           array_at(ints[ARGS + 1], n_rows, np.int64), array_at(ints[ARGS + 2], n_cols, np.int64),
           geometry, _planes_at(ints[ARGS + 4], r, n_rows, n_cols, DTYPE))


def plane_scatter(address):   # (g, rows, cols, geometry, out): its transpose, g's planes
    ints, _ = block_at(address)   # added back into out's (of the geometry's size)
    r, n_rows, n_cols = ints[0], ints[LENGTHS + 1], ints[LENGTHS + 2]
    geometry = array_at(ints[ARGS + 3], ints[LENGTHS + 3], np.int64)
    KERNEL(_planes_at(ints[ARGS], r, n_rows, n_cols, DTYPE),
           array_at(ints[ARGS + 1], n_rows, np.int64), array_at(ints[ARGS + 2], n_cols, np.int64),
           geometry, _planes_at(ints[ARGS + 4], r, geometry[3], geometry[4], DTYPE))


def depthwise(address):   # (x, w, out, numbers, index): images of x and out cut, the
    ints, _ = block_at(address)   # filters whole; numbers: 6 of geometry, then C, x's plane,
    n = ints[0]                   # out's plane and the filter's size; index: int64, whole
    numbers = array_at(ints[ARGS + 3], ints[LENGTHS + 3], np.int64)   # (_native_depthwise)
    c, kh, kw = numbers[6], numbers[11], numbers[12]
    KERNEL(carray(pointer_to(ints[ARGS], DTYPE), (n, c, numbers[7], numbers[8])),
           carray(pointer_to(ints[ARGS + 1], DTYPE), (c, kh, kw)),
           carray(pointer_to(ints[ARGS + 2], DTYPE), (n, c, numbers[9], numbers[10])), numbers,
           array_at(ints[ARGS + 4], ints[LENGTHS + 4], np.int64))


FAMILIES = {f.__name__: f for f in (
    flat2, flat3, flat1_1, flat2_1, flat2_2, flat2_3, flat3_1, flat3_2, flat3_3, flat3_4, select,
    select_number_a, select_number_b, rows2_flag, rows3_flag, rows2_flag_int, rows3_flag_int,
    halves2, halves3, rows_affine,
    rows_sums, pick_rows, dropout, dropout_grad,
    dropout_grad_into, layer_norm, sgd, adam, adadelta, cross_entropy, cross_entropy_grad,
    masked_softmax, masked_softmax_grad, layer_norm_grad, group_norm, group_norm_grad,
    plane_gather, plane_scatter, depthwise)}


@functools.cache
def _entry(family: str, kernel, dtype) -> int:
    """The address of `family`'s entry point bound to `kernel`'s serial build and `dtype`
    (compiled on first use, then cached on disk under a name of its own, which changes
    with the kernel's code: numba checks a cached entry point against this file only)."""
    if kernel.parallel:
        build = kernel._serial or kernel._compile(parallel=False)
    else:
        build = kernel._compiled or kernel._compile()
    name = f"{family}_{kernel.__name__}_{dtype.name}_{native.kernel_digest(kernel)}"
    return compile_bound(FAMILIES[family], name, KERNEL=build, DTYPE=dtype.type)


@native.kernel
def _address(a):
    """The address of `a`'s first element (read by numba: `a.ctypes.data` took ~0.8 us)."""
    return a.ctypes.data


# A float argument goes into its block slot as its float64 bits.
_DOUBLE, _INT64 = struct.Struct("<d"), struct.Struct("<q")


def _blocks(args: tuple, cut: tuple, shares: list):
    """One argument block per share (a slice of the first dimension of the arrays at
    positions `cut`; see the module's docstring), as the rows of an int64 array; None
    when an array to cut is not C-contiguous or the arguments do not fit in a block.

    NOTE: filled as Python lists and converted once: writing each slot into a NumPy
    array cost ~1 us a slot, ~10 us of group norm's ~90 us cut forward (nine arguments)."""
    if len(args) > LENGTHS - ARGS:
        return None
    first = args[cut[0]]
    columns = first.shape[1] if first.ndim == 2 else 0
    table = [[share.stop - share.start, columns] + [0] * (BLOCK_SIZE - 2) for share in shares]
    for i, a in enumerate(args):
        slot = ARGS + i
        if type(a) is np.ndarray:
            address = _address(a)
            if i in cut:
                if not a.flags.c_contiguous:
                    return None
                step = a.strides[0]
                for row, share in zip(table, shares):
                    row[slot] = address + share.start * step
            else:
                for row in table:
                    row[slot], row[LENGTHS + i] = address, a.shape[0]
        elif isinstance(a, (float, np.floating)):
            bits = _INT64.unpack(_DOUBLE.pack(a))[0]
            for row in table:
                row[slot] = bits
        else:  # (an integer or a bool)
            for row in table:
                row[slot] = int(a)
    return np.array(table, np.int64)


def run_cut(kernel, family: str, args: tuple, cut: tuple) -> bool:
    """``kernel(*args)`` with the arrays at positions `cut` halved along their first
    dimension: the second halves on a worker (a native part), the first on this thread.
    (The first array named in `cut` gives the block's row length: put a 2-D one first.)
    False, and nothing run, when no worker is free, an array is not C-contiguous or the
    arguments do not fit in a block."""
    items = args[cut[0]].shape[0]
    half = items // 2
    # the caller's share as a block too, for the entry point: both shares then start
    # from one compiled call (_workers.native_halves), without Python between them
    blocks = _blocks(args, cut, [slice(0, half), slice(half, items)])
    if blocks is None:
        return False
    own, block = blocks[0], blocks[1]
    workers = _parallel._claim()
    if workers is None:
        return False
    try:
        entry = _entry(family, kernel, args[cut[0]].dtype)
        if _workers.native_halves(workers[0], entry, block, own, args):
            return True
        if not workers[0].post_native(entry, block, args):
            return False
        try:
            kernel.serial(*[a[:half] if i in cut else a for i, a in enumerate(args)])
        finally:
            workers[0].join()
        return True
    finally:
        _parallel._release()


@native.kernel(parallel=True)
def _run_blocks(entry, blocks):
    for k in native.prange(blocks.shape[0]):
        call_address(entry, blocks[k].ctypes.data)


def run_threaded(kernel, family: str, args: tuple, cut: tuple, threads: int) -> bool:
    """``kernel(*args)`` on numba's `threads` threads, one share of the arrays at positions
    `cut` each, every share run by `family`'s entry point (the kernel's serial build, as
    `run_cut` runs it): a kernel needs no threaded build of its own, which costs 1-4 s of
    compiling for a row kernel against ~0.2 s for this loop, shared by all.  False, and
    nothing run, where `run_cut` would say so of the arguments."""
    items = args[cut[0]].shape[0]
    blocks = _blocks(args, cut, _parallel.split(items, threads))
    if blocks is None:
        return False
    _run_blocks(_entry(family, kernel, args[cut[0]].dtype), blocks)
    return True
