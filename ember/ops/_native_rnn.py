"""numba kernels of one LSTM time step with the gates fused: after the recurrent matrix
product, one pass computes the four activations, the new cell and hidden state (forward),
or the four gate gradients and the carried cell gradient (backward).

rnn.py's `LSTMSequence` calls them once per step in place of a dozen NumPy calls on
(batch, 4H) arrays (~3-5 us each at a batch of 20).  The recurrent product arrives
transposed, (4H, batch): OpenBLAS computes that orientation faster for a short batch,
and the kernel reads it as it is (no strided add in NumPy).  Serial kernels: a step
holds ~5k-20k elements, less than a parallel launch is worth.

float32 steps take the float32 exp of _native_activation.py (vectorized); float64 steps
take libm's tanh, with the NumPy path's sigmoid ``(1 + tanh(x / 2)) / 2``.
"""

from __future__ import annotations

import math

import numpy as np

from . import _native as native
from ._native_activation import FUSED_MULTIPLY_ADD, _sigmoid32, _tanh32

# float32 constants keep float32 steps in float32 (a Python number would promote them to
# float64) and promote harmlessly in float64 steps
_HALF, _ONE = np.float32(0.5), np.float32(1.0)


def supports(*arrays) -> bool:
    """True when the step kernels can take these arrays: numba on, NumPy float32/float64
    arrays of one dtype, all C-contiguous."""
    first = arrays[0]
    return (native.enabled() and native.is_cpu_array(*arrays)
            and first.dtype in (np.float32, np.float64)
            and all(a.dtype == first.dtype and a.flags.c_contiguous for a in arrays))


@native.kernel(fastmath=FUSED_MULTIPLY_ADD)
def _activate32(z, hidden):
    """The four gate activations of one float32 row z (4H,) in place: sigmoid, sigmoid,
    tanh, sigmoid."""
    for k in range(2 * hidden):
        z[k] = _sigmoid32(z[k])
    g, o = z[2 * hidden:3 * hidden], z[3 * hidden:]
    for k in range(hidden):
        g[k] = _tanh32(g[k])
    for k in range(hidden):
        o[k] = _sigmoid32(o[k])


@native.kernel(fastmath=FUSED_MULTIPLY_ADD)
def _activate64(z, hidden):
    """`_activate32` for float64, with libm's tanh (the NumPy path's sigmoid formula)."""
    for k in range(2 * hidden):
        z[k] = _HALF * math.tanh(_HALF * z[k]) + _HALF
    g, o = z[2 * hidden:3 * hidden], z[3 * hidden:]
    for k in range(hidden):
        g[k] = math.tanh(g[k])
    for k in range(hidden):
        o[k] = _HALF * math.tanh(_HALF * o[k]) + _HALF


@native.kernel(fastmath=FUSED_MULTIPLY_ADD)
def _tanh_row(src, dst):
    if src.itemsize == 4:
        for k in range(src.size):
            dst[k] = _tanh32(src[k])
    else:
        for k in range(src.size):
            dst[k] = math.tanh(src[k])


@native.kernel(fastmath=FUSED_MULTIPLY_ADD)
def lstm_forward_step(xw, rec_t, h, c, gates, h_prev, c_prev, tanh_c, out):
    """One step for the first ``bs`` rows: xw (bs, 4H) input projections, rec_t (4H, bs)
    ``W_hh @ h^T``; h and c (bs, H) states, updated in place after their old values are
    copied to h_prev and c_prev; gates (bs, 4H) get the activated i, f, g, o, tanh_c the
    tanh of the new cell, out the new hidden state."""
    # NOTE: one short loop per quantity over row views, and the float32/float64 choice
    # made outside the loops: a loop touching all nine arrays, or choosing per element,
    # is not vectorized (10x slower).
    bs, hidden = c.shape
    # (element loops, not ``h_prev[...] = h``: numba's array assignment took ~3 s of the
    # kernel's 3.5 s first compile, for its shape checks and their messages)
    _copy_rows(h, h_prev)
    _copy_rows(c, c_prev)
    for b in range(bs):
        z, rec = gates[b], rec_t[:, b]
        x = xw[b]
        for k in range(4 * hidden):
            z[k] = x[k] + rec[k]
        if z.itemsize == 4:
            _activate32(z, hidden)
        else:
            _activate64(z, hidden)
        i, f, g, o = z[:hidden], z[hidden:2 * hidden], z[2 * hidden:3 * hidden], z[3 * hidden:]
        cell_update(i, f, g, o, c[b], tanh_c[b], out[b])
    _copy_rows(out, h)


@native.kernel(inline=True)
def _copy_rows(src, dst):
    for b in range(src.shape[0]):
        row, into = src[b], dst[b]
        for k in range(row.shape[0]):
            into[k] = row[k]


@native.kernel(inline=True, fastmath=FUSED_MULTIPLY_ADD)
def cell_update(i, f, g, o, cell, tc, h):
    """One row's new cell state (in place), its tanh and the new hidden state, from the
    activated gates.  (Rows of units: the whole row, or a thread's share.)"""
    for k in range(cell.shape[0]):
        cell[k] = f[k] * cell[k] + i[k] * g[k]
    _tanh_row(cell, tc)
    for k in range(cell.shape[0]):
        h[k] = o[k] * tc[k]


@native.kernel(fastmath=FUSED_MULTIPLY_ADD)
def lstm_backward_step(gout, dh_next, dc_next, gates, tanh_c, c_prev, dgates):
    """The gate gradients of one step for the first ``bs`` rows: dh = gout + dh_next;
    dgates (bs, 4H) gets d(i, f, g, o) before activation; dc_next (bs, H) becomes the cell
    gradient carried to the previous step (dh_next is left for the caller's product)."""
    bs, hidden = gout.shape
    for b in range(bs):
        z, dz = gates[b], dgates[b]
        i, f, g, o = z[:hidden], z[hidden:2 * hidden], z[2 * hidden:3 * hidden], z[3 * hidden:]
        di, df = dz[:hidden], dz[hidden:2 * hidden]
        dg, do = dz[2 * hidden:3 * hidden], dz[3 * hidden:]
        cell_gradients(gout[b], dh_next[b], dc_next[b], tanh_c[b], c_prev[b], i, f, g, o,
                       di, df, dg, do)


@native.kernel(inline=True, fastmath=FUSED_MULTIPLY_ADD)
def cell_gradients(dout, dh_carry, dc, tc, cp, i, f, g, o, di, df, dg, do):
    """One row's gate gradients (di, df, dg, do) over its units, from the output gradient
    `dout` plus the carried `dh_carry`; `dc` (the carried cell gradient) is updated to
    the previous step's.  (Rows of units: the whole row, or a thread's share.)"""
    for k in range(dout.shape[0]):  # dc = dh * o * tanh'(c) + the carried dc
        dh = dout[k] + dh_carry[k]
        do[k] = dh * tc[k] * o[k] * (_ONE - o[k])
        dc[k] = dh * o[k] * (_ONE - tc[k] * tc[k]) + dc[k]
    for k in range(dout.shape[0]):
        di[k] = dc[k] * g[k] * i[k] * (_ONE - i[k])
        df[k] = dc[k] * cp[k] * f[k] * (_ONE - f[k])
        dg[k] = dc[k] * i[k] * (_ONE - g[k] * g[k])
        dc[k] = dc[k] * f[k]
