"""An LSTM layer's forward and backward time loops on all of ember's threads at once
(float32).

`LSTMSequence` (rnn.py) otherwise runs each time step as one recurrent product, split
over the threads, and then the gate math on the calling thread: per step two hand-offs
and a serial pass over (batch, 4H) gates.  Here each thread owns a share of the hidden
units for the whole sequence.  It keeps the rows of W_hh that feed its units (the four
gates of each), and at every step computes its share of the recurrent product (a CBLAS
call from numba, no GIL) and then the gate math of its own units.  The threads meet once
per step: a step's product needs the whole hidden state of the step before.

    thread k, step t:  wait until every other thread has finished step t-1
                       rec_k = W_k @ h_t^T                 (4 * units_k, batch)
                       gates, c, h_{t+1} of units_k        (xw + rec_k, activations)
                       announce: step t done

The backward loop shares the units the same way: at each step (last to first) a thread
computes its units' gate gradients, waits until every thread has, then computes its
units' columns of ``dh = dgates @ W_hh`` (which reads every unit's gate gradients).

The hidden state lives in two buffers used in turn (step t reads one, writes the other),
so a thread that finishes early cannot overwrite what another is still reading; no
thread is ever more than one step ahead.  The cell state needs no such care: each
thread only touches its own units' columns.

NOTE: measured on the 2-core test VM (2026-12-04, three alternations), the benchmark
LSTM's forward (2 layers of 256, seq 35, batch 20, float32) took 15.4-15.7 ms with the
per-step loop and 13.6-14.1 ms so; PyTorch's (oneDNN's fused RNN) ~10.5 ms.  A step of
a 128-unit share costs ~110 us on one thread: its product ~70 us, the gate math the
rest.  The product is computed as (batch, 4 * units), so that a row's gates are read
contiguously: the forward then took 12.4-13.2 ms against 13.0-14.1 with (4 * units,
batch) read at a stride (medians of 40 calls, four alternations, 2026-12-04).  Each
gate's activation is written straight into `gates` (no scratch row and copies out of
it): 11.2-11.4 against 11.9-12.2 ms, the same bits (8 alternated blocks of 10 calls;
in a slow phase of the host 16.0-16.6 against 17.4-18.1).
The backward loop of one layer (no weight gradient) took 4.8-5.0 ms with the per-step
loop and 4.0-4.3 ms so; a 128-unit share alone takes 2.9 ms, two of them side by side without
meeting 2.9-3.2 ms: the rest is the threads waiting for each other at every step.
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import _native as native
from . import _parallel, _workers
from ._native_activation import _sigmoid32, _tanh32
from ._native_rnn import cell_gradients, cell_update

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS's enums
_STRIDE = 8           # int64s between two threads' step counters (their own cache lines)
_ABORT = 0            # flags[0]: set when a thread failed, so that no other waits forever

# Fewer hidden units than this per thread and the steps are too small to share (a
# judgement, not a measurement: such a share's product is a few microseconds).
MIN_UNITS = 32


@native.kernel(fastmath={"contract"})
def _lstm_share(xw, w_share, w_flag, hbuf, c, h_last, gates, h_prev, c_prev, tanh_c, out,
                rec, starts, sizes, j0, me, parts, flags, sgemm, pause):
    """Thread `me`'s share (hidden units j0 .. j0 + units) of every step; see the module
    docstring.  `w_share` holds W_hh's rows of those units, gate by gate: as they are,
    (4 * units, H), with `w_flag` CBLAS's transpose flag, or transposed, (H, 4 * units),
    with its no-transpose flag (`_weight_share`); `rec` is this thread's scratch."""
    hidden = c.shape[1]
    units = w_share.size // (4 * hidden)
    ldw = hidden if w_flag == _TRANS else 4 * units
    for t in range(starts.size):
        s, bs = starts[t], sizes[t]
        cur, nxt = hbuf[t % 2], hbuf[(t + 1) % 2]
        for other in range(parts):   # every other thread has finished step t - 1
            if other != me:
                while flags[(other + 1) * _STRIDE] < t and flags[_ABORT] == 0:
                    pause()
        if flags[_ABORT] != 0:
            return
        # rec (bs, 4 * units) = cur[:bs] @ (W_hh's rows of the share)^T
        sgemm(_ROW_MAJOR, _NO_TRANS, w_flag, bs, 4 * units, hidden, np.float32(1),
              cur.ctypes.data, hidden, w_share.ctypes.data, ldw, np.float32(0),
              rec.ctypes.data, 4 * units)
        # NOTE: one short loop per quantity over row views, as in _native_rnn's step: a
        # loop touching many arrays is not vectorized
        for b in range(bs):
            row = s + b
            x, r, z = xw[row], rec[b * 4 * units:(b + 1) * 4 * units], gates[row]
            for q in range(4):   # each gate's activation, straight into `gates`
                xq, rq = x[q * hidden + j0:q * hidden + j0 + units], r[q * units:(q + 1) * units]
                zq = z[q * hidden + j0:q * hidden + j0 + units]
                if q == 2:
                    for u in range(units):
                        zq[u] = _tanh32(xq[u] + rq[u])
                else:
                    for u in range(units):
                        zq[u] = _sigmoid32(xq[u] + rq[u])
            a0, a1, a2, a3 = j0, hidden + j0, 2 * hidden + j0, 3 * hidden + j0  # gate offsets
            i, f, g, o = z[a0:a0 + units], z[a1:a1 + units], z[a2:a2 + units], z[a3:a3 + units]
            j1 = j0 + units
            cell, tc, h = c[b, j0:j1], tanh_c[row, j0:j1], out[row, j0:j1]
            hp, cp, hc = h_prev[row, j0:j1], c_prev[row, j0:j1], cur[b, j0:j1]
            for u in range(units):
                hp[u] = hc[u]
            for u in range(units):
                cp[u] = cell[u]
            cell_update(i, f, g, o, cell, tc, h)
            nx, hl = nxt[b, j0:j1], h_last[b, j0:j1]
            for u in range(units):
                nx[u] = h[u]
            for u in range(units):
                hl[u] = h[u]
        pause()  # (a call: the stores above are not moved past the announcement)
        flags[(me + 1) * _STRIDE] = t + 1


@native.kernel(fastmath={"contract"})
def _lstm_backward_share(gout, dh_next, dc_next, gates, tanh_c, c_prev, dgates, w_cols,
                         starts, sizes, j0, me, parts, flags, sgemm, pause):
    """Thread `me`'s share (hidden units j0 .. j0 + units) of the backward loop, steps in
    the order given (the forward's, reversed): the gate gradients of its units (as
    `_native_rnn.lstm_backward_step`), then, once every thread has written its units'
    gate gradients of the step, its units' columns of ``dh_next = dgates @ W_hh``
    (`w_cols`: W_hh's columns of those units, (4H, units))."""
    hidden = dh_next.shape[1]
    units = w_cols.shape[1]
    for t in range(starts.size):
        s, bs = starts[t], sizes[t]
        for b in range(bs):
            row = s + b
            z, dz = gates[row], dgates[row]
            a0, a1, a2, a3 = j0, hidden + j0, 2 * hidden + j0, 3 * hidden + j0  # gate offsets
            i, f, g, o = z[a0:a0 + units], z[a1:a1 + units], z[a2:a2 + units], z[a3:a3 + units]
            di, df = dz[a0:a0 + units], dz[a1:a1 + units]
            dg, do = dz[a2:a2 + units], dz[a3:a3 + units]
            cell_gradients(gout[row, j0:j0 + units], dh_next[b, j0:j0 + units],
                           dc_next[b, j0:j0 + units], tanh_c[row, j0:j0 + units],
                           c_prev[row, j0:j0 + units], i, f, g, o, di, df, dg, do)
        pause()  # (a call: the stores above are not moved past the announcement)
        flags[(me + 1) * _STRIDE] = t + 1
        for other in range(parts):   # every thread has written the step's gate gradients
            if other != me:
                while flags[(other + 1) * _STRIDE] <= t and flags[_ABORT] == 0:
                    pause()
        if flags[_ABORT] != 0:
            return
        # dh_next[:bs, j0:j0 + units] = dgates[s:s + bs] @ w_cols
        sgemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, bs, units, 4 * hidden, np.float32(1),
              dgates[s:].ctypes.data, 4 * hidden, w_cols.ctypes.data, units, np.float32(0),
              dh_next[0, j0:].ctypes.data, hidden)


# From this many steps up, a thread's weight share is transposed for its products.
# NOTE: one thread's 20x256 @ 256x512 step product took 45 us on MKL and 82 on OpenBLAS
# (SkylakeX kernels) with the share as W_hh's rows, passed transposed, against 32 and 50
# with the share transposed once (2-core Intel Xeon, 2026-12-05); the transposing copy
# costs ~70 us a thread, the rows' copy ~11.
TRANSPOSE_MIN_STEPS = 8


@native.kernel
def _transposed_rows(w_hh, j0, units, out):
    """out (H, 4 * units) = W_hh's rows of hidden units j0 .. j0 + units, gate by gate,
    transposed, copied in 16x16 blocks (a transposing NumPy copy took twice as long)."""
    hidden = w_hh.shape[1]
    for q in range(4):
        for u0 in range(0, units, 16):
            for k0 in range(0, hidden, 16):
                for u in range(u0, min(u0 + 16, units)):
                    row = w_hh[q * hidden + j0 + u]
                    for k in range(k0, min(k0 + 16, hidden)):
                        out[k, q * units + u] = row[k]


def _weight_share(w_hh, units: slice, steps: int) -> tuple:
    """(a thread's share of W_hh for the forward loop, its CBLAS transpose flag): the
    rows of hidden units `units`, gate by gate, transposed when `steps` are enough to
    repay the copy (see TRANSPOSE_MIN_STEPS)."""
    hidden = w_hh.shape[1]
    count = units.stop - units.start
    if steps >= TRANSPOSE_MIN_STEPS:
        out = np.empty((hidden, 4 * count), np.float32)
        _transposed_rows(w_hh, units.start, count, out)
        return out, _NO_TRANS
    rows = w_hh.reshape(4, hidden, hidden)[:, units]
    return np.ascontiguousarray(rows.reshape(4 * count, hidden)), _TRANS


def _usable(dtype, hidden: int):
    """(the CBLAS functions, the workers) when the loops can run on every thread now,
    else None: float32, numba's poll loops, two threads or more, `MIN_UNITS` a thread,
    and no other split work in progress (then the caller must `_parallel._release`)."""
    loops = _workers._compiled_loops()
    parts = _parallel.threads()
    if loops is None or parts < 2 or hidden < MIN_UNITS * parts or dtype != np.float32:
        return None
    workers = _parallel._claim()
    return None if workers is None else ((loops.sgemm, loops.pause), workers)


@contextlib.contextmanager
def _threads_for(dtype, hidden: int):
    """`_usable`'s answer for the block, the workers given back after it."""
    usable = _usable(dtype, hidden)
    try:
        yield usable
    finally:
        if usable is not None:
            _parallel._release()


def _loop_arrays(steps, parts: int) -> tuple:
    """(first rows, batch sizes) of `steps` in the order given, as arrays, and the
    threads' zeroed step counters (see _STRIDE, _ABORT)."""
    return (np.array([s for s, _, _ in steps], np.int64),
            np.array([bs for _, _, bs in steps], np.int64),
            np.zeros((parts + 1) * _STRIDE, np.int64))


def _on_every_thread(kernel, workers, share, flags) -> None:
    """Run ``share(k, kernel)`` for k = 0 .. len(workers) on the caller and the workers
    (a share that fails raises the abort flag, so that none waits forever for it)."""
    # NOTE: past the first call, the build's entry point (see `_workers._entry_point`):
    # the dispatcher types the two ctypes functions anew on every call, ~140 us each
    call = _workers._entry_point(kernel) if kernel.has_run() else kernel

    def run(k):
        try:
            share(k, call)
        except BaseException:
            flags[_ABORT] = 1
            raise

    posted, finished = [], False
    try:
        for k, worker in enumerate(workers, start=1):
            worker.post(run, k)
            posted.append(worker)
        run(0)
        finished = True
    finally:
        if not finished:  # (also an interrupt before share 0 started: none may wait for it)
            flags[_ABORT] = 1
        for worker in posted:
            worker.join()


def forward(xw, w_hh, h, c, steps, gates, h_prev, c_prev, tanh_c, out) -> tuple | None:
    """The forward loop of `LSTMSequence` for float32 NumPy arrays, on every thread: fills
    gates, h_prev, c_prev, tanh_c and out, and turns the running states `h` and `c` (the
    caller's copies of h0 and c0) into h_n and c_n, which it returns; None, with nothing
    computed, where it cannot run (see `_usable`)."""
    batch, hidden = c.shape
    with _threads_for(xw.dtype, hidden) as usable:
        if usable is None:
            return None
        (sgemm, pause), workers = usable
        parts = len(workers) + 1
        starts, sizes, flags = _loop_arrays(steps, parts)
        hbuf = np.empty((2, batch, hidden), np.float32)
        hbuf[:] = h   # (both: in reverse, a packed batch grows, and a row joining reads h0)
        shares = _parallel.split(hidden, parts)

        def share(k, kernel):
            j = shares[k]
            w_share, w_flag = _weight_share(w_hh, j, len(steps))
            rec = np.empty(4 * (j.stop - j.start) * batch, np.float32)
            kernel(xw, w_share, w_flag, hbuf, c, h, gates, h_prev, c_prev, tanh_c, out,
                   rec, starts, sizes, j.start, k, parts, flags, sgemm, pause)

        _on_every_thread(_lstm_share, workers, share, flags)
        return h, c


def backward(gout, dh_next, dc_next, gates, tanh_c, c_prev, dgates, w_hh,
             steps) -> tuple | None:
    """The backward loop of `LSTMSequence` (no projection) for float32 NumPy arrays, on
    every thread, `steps` in the forward's order: fills `dgates` and turns `dh_next` and
    `dc_next` (the caller's copies of the gradients of h_n and c_n) into those of h0 and
    c0; returns (dgates, dh0, dc0), or None, with nothing computed, where it cannot run
    (see `_usable`)."""
    hidden = dh_next.shape[1]
    with _threads_for(gates.dtype, hidden) as usable:
        if usable is None:
            return None
        (sgemm, pause), workers = usable
        parts = len(workers) + 1
        starts, sizes, flags = _loop_arrays(steps[::-1], parts)
        shares = _parallel.split(hidden, parts)

        def share(k, kernel):
            j = shares[k]
            w_cols = np.ascontiguousarray(w_hh[:, j])
            kernel(gout, dh_next, dc_next, gates, tanh_c, c_prev, dgates, w_cols, starts,
                   sizes, j.start, k, parts, flags, sgemm, pause)

        _on_every_thread(_lstm_backward_share, workers, share, flags)
        return dgates, dh_next, dc_next
