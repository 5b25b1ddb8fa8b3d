"""An LSTM layer's forward time loop on all of ember's threads at once (float32).

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

The hidden state lives in two buffers used in turn (step t reads one, writes the other),
so a thread that finishes early cannot overwrite what another is still reading; no
thread is ever more than one step ahead.  The cell state needs no such care: each
thread only touches its own units' columns.

NOTE: measured on the 2-core test VM (2026-12-04, three alternations), the benchmark
LSTM's forward (2 layers of 256, seq 35, batch 20, float32) took 15.4-15.7 ms with the
per-step loop and 13.6-14.1 ms so; PyTorch's (oneDNN's fused RNN) ~10.5 ms.  A step of
a 128-unit share costs ~110 us on one thread: its product ~70 us, the gate math the
rest, most of it reading `rec` across its rows (a transposed copy first was slower).
"""

from __future__ import annotations

import numpy as np

from . import _native as native
from . import _parallel, _workers
from ._native_activation import _tanh32
from ._native_rnn import _activate32

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112  # CBLAS's enums
_STRIDE = 8           # int64s between two threads' step counters (their own cache lines)
_ABORT = 0            # flags[0]: set when a thread failed, so that no other waits forever

# Fewer hidden units than this per thread and the steps are too small to share.
MIN_UNITS = 32


@native.kernel(fastmath={"contract"})
def _lstm_share(xw, w_share, hbuf, c, h_last, gates, h_prev, c_prev, tanh_c, out, rec, z,
                starts, sizes, j0, me, parts, flags, sgemm, pause):
    """Thread `me`'s share (hidden units j0 .. j0 + units) of every step; see the module
    docstring.  `w_share` (4 * units, H) holds W_hh's rows of those units, gate by gate;
    `rec` and `z` are this thread's scratch."""
    hidden = c.shape[1]
    units = w_share.shape[0] // 4
    for t in range(starts.size):
        s, bs = starts[t], sizes[t]
        cur, nxt = hbuf[t % 2], hbuf[(t + 1) % 2]
        for other in range(parts):   # every other thread has finished step t - 1
            if other != me:
                while flags[(other + 1) * _STRIDE] < t and flags[_ABORT] == 0:
                    pause()
        if flags[_ABORT] != 0:
            return
        # rec (4 * units, bs) = w_share @ cur[:bs]^T
        sgemm(_ROW_MAJOR, _NO_TRANS, _TRANS, 4 * units, bs, hidden, np.float32(1),
              w_share.ctypes.data, hidden, cur.ctypes.data, hidden, np.float32(0),
              rec.ctypes.data, bs)
        # NOTE: one short loop per quantity over row views, as in _native_rnn's step: a
        # loop touching many arrays is not vectorized
        for b in range(bs):
            row = s + b
            for q in range(4):
                x = xw[row, q * hidden + j0:q * hidden + j0 + units]
                for u in range(units):
                    z[q * units + u] = x[u] + rec[(q * units + u) * bs + b]
            _activate32(z, units)
            for q in range(4):
                gates[row, q * hidden + j0:q * hidden + j0 + units] = z[q * units:(q + 1) * units]
            i, f = z[:units], z[units:2 * units]
            g, o = z[2 * units:3 * units], z[3 * units:]
            cell, tc, h = c[b, j0:j0 + units], tanh_c[row, j0:j0 + units], out[row, j0:j0 + units]
            h_prev[row, j0:j0 + units] = cur[b, j0:j0 + units]
            c_prev[row, j0:j0 + units] = cell
            for u in range(units):
                cell[u] = f[u] * cell[u] + i[u] * g[u]
            for u in range(units):
                tc[u] = _tanh32(cell[u])
            for u in range(units):
                h[u] = o[u] * tc[u]
            nxt[b, j0:j0 + units] = h
            h_last[b, j0:j0 + units] = h
        pause()  # (a call: the stores above are not moved past the announcement)
        flags[(me + 1) * _STRIDE] = t + 1


def forward(xw, w_hh, h0, c0, steps, gates, h_prev, c_prev, tanh_c, out) -> tuple | None:
    """The forward loop of `LSTMSequence` for float32 NumPy arrays, on every thread: fills
    gates, h_prev, c_prev, tanh_c and out, returns (h_n, c_n); None, with nothing
    computed, where it cannot run (one thread, no CBLAS poll loops, too few units)."""
    loops = _workers._compiled_loops()
    hidden = c0.shape[1]
    parts = _parallel.threads()
    if loops is None or parts < 2 or hidden < MIN_UNITS * parts or xw.dtype != np.float32:
        return None
    workers = _parallel._claim()
    if workers is None:
        return None
    try:
        return _run(loops, workers, xw, w_hh, h0, c0, steps, gates, h_prev, c_prev, tanh_c,
                    out, parts)
    finally:
        _parallel._release()


def _run(loops, workers, xw, w_hh, h0, c0, steps, gates, h_prev, c_prev, tanh_c, out, parts):
    sgemm, _, pause = loops._functions
    batch, hidden = c0.shape
    starts = np.array([s for s, _, _ in steps], np.int64)
    sizes = np.array([bs for _, _, bs in steps], np.int64)
    hbuf = np.empty((2, batch, hidden), np.float32)
    hbuf[:] = h0   # (both: in reverse, a packed batch grows, and a row joining reads h0)
    c, h_last = c0.copy(), h0.copy()
    flags = np.zeros((parts + 1) * _STRIDE, np.int64)
    w = w_hh.reshape(4, hidden, hidden)
    shares = _parallel.split(hidden, parts)

    # NOTE: past the first call, the build's entry point (see `_workers._entry_point`):
    # the dispatcher types the two ctypes functions anew on every call, ~140 us each
    kernel = _workers._entry_point(_lstm_share) if _lstm_share.has_run() else _lstm_share

    def share(k):
        j = shares[k]
        units = j.stop - j.start
        w_share = np.ascontiguousarray(w[:, j].reshape(4 * units, hidden))
        rec = np.empty(4 * units * batch, np.float32)
        z = np.empty(4 * units, np.float32)
        try:
            kernel(xw, w_share, hbuf, c, h_last, gates, h_prev, c_prev, tanh_c, out,
                   rec, z, starts, sizes, j.start, k, parts, flags, sgemm, pause)
        except BaseException:
            flags[_ABORT] = 1
            raise

    posted = list(zip(workers, range(1, parts)))
    for worker, k in posted:
        worker.post(share, k)
    try:
        share(0)
    finally:
        for worker, _ in posted:
            worker.join()
    return h_last, c
