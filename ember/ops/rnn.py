"""The time loops of recurrent layers: one Function per cell type (LSTM, GRU, Elman RNN)
runs one direction of one layer over a whole sequence, on arrays.

The caller computes the input projections ``x @ W_ih^T + b`` of all time steps with one
matmul before the loop; each step then does one matmul ``h @ W_hh^T`` and the gate math
in place.  Backward runs the loop in reverse on arrays, keeps the gate gradients of all
steps and ends with one matmul for the gradient of ``W_hh``.

Sequences are *flat*, as in a PackedSequence: the rows of every step one after another,
step t holding the first ``batch_sizes[t]`` sequences (batch sizes never grow with t; a
padded batch is the case where they are all equal).  A sequence that ends early keeps its
last state, which is what ``h_n`` reports for it.  ``reverse=True`` runs from the last
step to the first; shorter sequences then start at their own last step.

Double backward: when backward is itself recorded (``create_graph=True``), it recomputes
the outputs with ember ops (``*_composite``, a plain step-by-step loop that autograd can
differentiate to any order) and differentiates that instead.

The cell functions ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell`` and ``rnn_relu_cell``
are the one-step case.
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import Tensor, _make
from . import _native_lstm_threads, _native_rnn, _parallel
from ._util import xp_of
from .joining import cat
from .linalg import addmm, matmul
from .recompute import recomputed_grads

__all__ = ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


def _starts(batch_sizes) -> list:
    starts, total = [], 0
    for b in batch_sizes:
        starts.append(total)
        total += b
    return starts


def _steps(batch_sizes, reverse: bool):
    """(first row, end row, batch size) of each step, in the order the recurrence visits
    them."""
    steps = [(s, s + b, b) for s, b in zip(_starts(batch_sizes), batch_sizes)]
    return steps[::-1] if reverse else steps


def _sigmoid_(xp, a) -> None:
    # NOTE: sigmoid(x) = (1 + tanh(x / 2)) / 2 never overflows, unlike 1 / (1 + exp(-x)).
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5


class _SequenceFunction(Function):
    """Base of the sequence Functions: their work arrays go when the graph is freed."""

    def _release(self) -> None:
        super()._release()
        self.arrays = None


def _recurrent(xp, w_hh, h):
    """``h @ w_hh^T`` (bs, G), as the transpose of ``w_hh @ h^T``.

    NOTE: for a short batch (bs of ~20 rows) OpenBLAS computes the (G, bs) product about
    a third faster than the (bs, G) one; the result is read transposed by the next op.
    """
    return _parallel.matmul(w_hh, h.T).T


def _state_arrays(xp, xw, h0, w_hh) -> tuple:
    """The work arrays of a forward pass: h_prev and out (a row per sequence row, filled
    step by step), the running state h (a copy of h0), and w_hh made contiguous."""
    n, hidden = xw.shape[0], h0.shape[1]
    h_prev = xp.empty((n, hidden), dtype=xw.dtype)
    out = xp.empty((n, hidden), dtype=xw.dtype)
    return h_prev, out, h0.copy(), xp.ascontiguousarray(w_hh)


def _grads_by_recompute(ctx, composite, inputs, grads, **params):
    """Gradients for double backward: differentiate the ember-op composite (recorded)."""
    return recomputed_grads(composite, inputs, ctx.needs_input_grad, grads, **params)


# ----------------------------------------------------------------------
# LSTM


class LSTMSequence(_SequenceFunction):
    """One LSTM direction over a flat sequence: (xw, h0, c0, w_hh[, w_hr]) -> (out, h_n, c_n).

    xw (N, 4H) holds the input projections with both biases; the gates are ordered
    input, forget, cell, output as in PyTorch's weights.  With a projection w_hr (P, H)
    the hidden state is ``(o * tanh(c)) @ w_hr^T``.
    """

    @staticmethod
    def forward(ctx, xw, h0, c0, w_hh, w_hr=None, batch_sizes=(), reverse=False):
        xp = xp_of(xw)
        n, hidden = xw.shape[0], c0.shape[1]
        gates = xp.empty_like(xw)  # activated i, f, g, o of every row
        tanh_c = xp.empty((n, hidden), dtype=xw.dtype)
        c_prev = xp.empty((n, hidden), dtype=xw.dtype)
        h_prev, out, h, w_rec = _state_arrays(xp, xw, h0, w_hh)
        h_raw = None if w_hr is None else xp.empty((n, hidden), dtype=xw.dtype)
        c = c0.copy()
        scratch = xp.empty_like(c)
        w_hr_t = None if w_hr is None else xp.ascontiguousarray(w_hr.T)
        two, three = 2 * hidden, 3 * hidden
        fused = w_hr is None and _native_rnn.supports(xw, h, c, w_rec)
        steps = _steps(batch_sizes, reverse)
        # every thread at once, each on its own hidden units (_native_lstm_threads.py)
        if fused and _native_lstm_threads.forward(xw, w_rec, h, c, steps, gates, h_prev,
                                                  c_prev, tanh_c, out) is not None:
            steps = ()
        for s, e, bs in steps:
            hp, cp, tmp = h[:bs], c[:bs], scratch[:bs]
            if fused:  # the gate math of the lines below, in one native pass
                _native_rnn.lstm_forward_step(xw[s:e], _parallel.matmul(w_rec, hp.T), hp, cp,
                                              gates[s:e], h_prev[s:e], c_prev[s:e],
                                              tanh_c[s:e], out[s:e])
                continue
            h_prev[s:e] = hp
            c_prev[s:e] = cp
            g = gates[s:e]
            xp.add(xw[s:e], _recurrent(xp, w_rec, hp), out=g)
            # One sigmoid pass over all four gates (fewer small calls), with the cell
            # candidate's tanh taken first and put back after.
            cell = g[:, two:three]
            xp.tanh(cell, out=tmp)
            _sigmoid_(xp, g)
            cell[...] = tmp
            cp *= g[:, hidden:two]  # c' = f * c + i * g, in the state array itself
            xp.multiply(g[:, :hidden], cell, out=tmp)
            cp += tmp
            tc = tanh_c[s:e]
            xp.tanh(cp, out=tc)
            if w_hr is None:
                xp.multiply(g[:, three:], tc, out=out[s:e])
            else:
                xp.multiply(g[:, three:], tc, out=h_raw[s:e])
                _parallel.matmul(h_raw[s:e], w_hr_t, out=out[s:e])
            h[:bs] = out[s:e]
        ctx.save_for_backward(xw, h0, c0, w_hh, w_hr)
        ctx.arrays = (gates, tanh_c, c_prev, h_prev, h_raw)
        ctx.batch_sizes, ctx.reverse = batch_sizes, reverse
        return out, h, c

    @staticmethod
    def backward(ctx, gout, ghn, gcn):
        xw, h0, c0, w_hh, w_hr = ctx.saved_tensors
        if STATE.enabled:
            return _grads_by_recompute(ctx, lstm_composite, (xw, h0, c0, w_hh, w_hr),
                                       (gout, ghn, gcn), batch_sizes=ctx.batch_sizes,
                                       reverse=ctx.reverse)
        gates, tanh_c, c_prev, h_prev, h_raw = ctx.arrays
        # (a bidirectional layer's output gradient is a strided half of the concatenation's)
        g = gout._data if type(gout._data) is not np.ndarray else np.ascontiguousarray(gout._data)
        if w_hr is None and _native_rnn.supports(gates, g, ghn._data, gcn._data):
            return _lstm_backward_fused(ctx, g, ghn._data, gcn._data, w_hh._data)
        xp = xp_of(gates)
        n, hidden = c_prev.shape
        two, three = 2 * hidden, 3 * hidden
        i, f, g, o = gates[:, :hidden], gates[:, hidden:two], gates[:, two:three], gates[:, three:]
        # The factors that do not depend on the recurrence, for all steps at once:
        # dc = dh * to_c, d(o) = dh * to_o, and (d(i), d(f), d(g)) = dc * to_ifg.
        to_c = o * (1 - tanh_c * tanh_c)
        to_o = tanh_c * o * (1 - o)
        to_ifg = xp.empty((n, 3, hidden), dtype=gates.dtype)
        xp.multiply(g * i, 1 - i, out=to_ifg[:, 0])
        xp.multiply(c_prev * f, 1 - f, out=to_ifg[:, 1])
        xp.multiply(i, 1 - g * g, out=to_ifg[:, 2])
        by_gate = xp.empty((n, 4, hidden), dtype=gates.dtype)
        dgates, dgates_ifg = by_gate.reshape(n, 4 * hidden), by_gate[:, :3]  # views of one array
        dh_next, dc_next = ghn._data.copy(), gcn._data.copy()
        gout = gout._data
        whh, whr = w_hh._data, None if w_hr is None else w_hr._data
        dh_out = None if whr is None else xp.empty_like(gout)
        dc = xp.empty_like(dc_next)
        for s, e, bs in reversed(_steps(ctx.batch_sizes, ctx.reverse)):
            dh = gout[s:e] + dh_next[:bs]
            if whr is not None:
                dh_out[s:e] = dh
                dh = _parallel.matmul(dh, whr)
            dcs = dc[:bs]
            xp.multiply(dh, to_c[s:e], out=dcs)
            dcs += dc_next[:bs]
            xp.multiply(dh, to_o[s:e], out=dgates[s:e, three:])
            xp.multiply(to_ifg[s:e], dcs[:, None, :], out=dgates_ifg[s:e])
            xp.multiply(dcs, f[s:e], out=dc_next[:bs])
            _parallel.matmul(dgates[s:e], whh, out=dh_next[:bs])
        need = ctx.needs_input_grad
        gw_hh = _make(_parallel.matmul(dgates.T, h_prev)) if need[3] else None
        gw_hr = _make(_parallel.matmul(dh_out.T, h_raw)) if whr is not None and need[4] else None
        return (_make(dgates), _make(dh_next) if need[1] else None,
                _make(dc_next) if need[2] else None, gw_hh, gw_hr)


def _lstm_backward_fused(ctx, gout, ghn, gcn, whh):
    """`LSTMSequence.backward` without projection, each step's gate math one native pass."""
    gates, tanh_c, c_prev, h_prev, _ = ctx.arrays
    steps = _steps(ctx.batch_sizes, ctx.reverse)
    dgates = np.empty_like(gates)
    dh_next, dc_next = ghn.copy(), gcn.copy()
    # every thread at once, each on its own hidden units (_native_lstm_threads.py)
    if _native_lstm_threads.backward(gout, dh_next, dc_next, gates, tanh_c, c_prev, dgates,
                                     whh, steps) is not None:
        steps = ()
    for s, e, bs in reversed(steps):
        _native_rnn.lstm_backward_step(gout[s:e], dh_next[:bs], dc_next[:bs], gates[s:e],
                                       tanh_c[s:e], c_prev[s:e], dgates[s:e])
        _parallel.matmul(dgates[s:e], whh, out=dh_next[:bs])
    need = ctx.needs_input_grad
    return (_make(dgates), _make(dh_next) if need[1] else None,
            _make(dc_next) if need[2] else None,
            _make(_parallel.matmul(dgates.T, h_prev)) if need[3] else None,
            None)


def lstm_composite(xw, h0, c0, w_hh, w_hr=None, batch_sizes=(), reverse=False):
    """LSTMSequence written with ember ops, step by step (differentiable to any order)."""
    h, c = h0, c0
    outs = {}
    for t_index, (s, e, bs) in zip(_time_indices(batch_sizes, reverse),
                                _steps(batch_sizes, reverse)):
        gates = xw[s:e] + h[:bs].matmul(w_hh.t())
        i, f, g, o = gates.chunk(4, 1)
        cn = f.sigmoid() * c[:bs] + i.sigmoid() * g.tanh()
        hn = o.sigmoid() * cn.tanh()
        if w_hr is not None:
            hn = hn.matmul(w_hr.t())
        h, c = _merge(hn, h), _merge(cn, c)
        outs[t_index] = hn
    return _join(outs), h, c


def _time_indices(batch_sizes, reverse: bool):
    order = list(range(len(batch_sizes)))
    return order[::-1] if reverse else order


def _merge(new: Tensor, state: Tensor) -> Tensor:
    """The state after a step that updated only its first rows."""
    if new.shape[0] == state.shape[0]:
        return new
    return cat([new, state[new.shape[0]:]])


def _join(outs: dict) -> Tensor:
    return cat([outs[t] for t in range(len(outs))])


# ----------------------------------------------------------------------
# GRU


class GRUSequence(_SequenceFunction):
    """One GRU direction over a flat sequence: (xw, h0, w_hh, b_hh) -> (out, h_n).

    xw (N, 3H) holds ``x @ W_ih^T + b_ih``; the gates are ordered reset, update, new as in
    PyTorch: ``n = tanh(x_n + r * (h @ W_hn^T + b_hn))``, ``h' = (1 - z) * n + z * h``.
    """

    @staticmethod
    def forward(ctx, xw, h0, w_hh, b_hh=None, batch_sizes=(), reverse=False):
        xp = xp_of(xw)
        n, hidden = xw.shape[0], h0.shape[1]
        two = 2 * hidden
        gates = xp.empty_like(xw)  # activated r, z, n of every row
        hn_part = xp.empty((n, hidden), dtype=xw.dtype)
        h_prev, out, h, w_rec = _state_arrays(xp, xw, h0, w_hh)
        for s, e, bs in _steps(batch_sizes, reverse):
            hp = h[:bs]
            h_prev[s:e] = hp
            hw = _recurrent(xp, w_rec, hp)
            if b_hh is not None:
                hw = hw + b_hh
            g = gates[s:e]
            xp.add(xw[s:e, :two], hw[:, :two], out=g[:, :two])
            _sigmoid_(xp, g[:, :two])
            hn_part[s:e] = hw[:, two:]
            nt = g[:, two:]
            xp.multiply(g[:, :hidden], hw[:, two:], out=nt)
            nt += xw[s:e, two:]
            xp.tanh(nt, out=nt)
            o = out[s:e]
            xp.subtract(hp, nt, out=o)
            o *= g[:, hidden:two]
            o += nt
            h[:bs] = o
        ctx.save_for_backward(xw, h0, w_hh, b_hh)
        ctx.arrays = (gates, hn_part, h_prev)
        ctx.batch_sizes, ctx.reverse = batch_sizes, reverse
        return out, h

    @staticmethod
    def backward(ctx, gout, ghn):
        xw, h0, w_hh, b_hh = ctx.saved_tensors
        if STATE.enabled:
            return _grads_by_recompute(ctx, gru_composite, (xw, h0, w_hh, b_hh), (gout, ghn),
                                       batch_sizes=ctx.batch_sizes, reverse=ctx.reverse)
        gates, hn_part, h_prev = ctx.arrays
        xp = xp_of(gates)
        hidden = h_prev.shape[1]
        two = 2 * hidden
        r, z, nt = gates[:, :hidden], gates[:, hidden:two], gates[:, two:]
        # Factors independent of the recurrence, for all steps at once: d(n) = dh * to_n,
        # d(r) = d(n) * to_r, d(z) = dh * to_z.
        to_n = (1 - z) * (1 - nt * nt)
        to_r = hn_part * r * (1 - r)
        to_z = (h_prev - nt) * z * (1 - z)
        dx = xp.empty_like(gates)
        dhw = xp.empty_like(gates)
        dh_next = ghn._data.copy()
        gout = gout._data
        whh = w_hh._data
        for s, e, bs in reversed(_steps(ctx.batch_sizes, ctx.reverse)):
            dh = gout[s:e] + dh_next[:bs]
            dxs, dhs = dx[s:e], dhw[s:e]
            dn = dxs[:, two:]
            xp.multiply(dh, to_n[s:e], out=dn)
            xp.multiply(dn, r[s:e], out=dhs[:, two:])
            xp.multiply(dn, to_r[s:e], out=dxs[:, :hidden])
            xp.multiply(dh, to_z[s:e], out=dxs[:, hidden:two])
            dhs[:, :two] = dxs[:, :two]
            dh *= z[s:e]
            dh += _parallel.matmul(dhs, whh)
            dh_next[:bs] = dh
        need = ctx.needs_input_grad
        return (_make(dx), _make(dh_next) if need[1] else None,
                _make(_parallel.matmul(dhw.T, h_prev)) if need[2] else None,
                _make(dhw.sum(axis=0)) if b_hh is not None and need[3] else None)


def gru_composite(xw, h0, w_hh, b_hh=None, batch_sizes=(), reverse=False):
    """GRUSequence written with ember ops, step by step (differentiable to any order)."""
    h = h0
    outs = {}
    for t_index, (s, e, bs) in zip(_time_indices(batch_sizes, reverse),
                                _steps(batch_sizes, reverse)):
        hp = h[:bs]
        hw = matmul(hp, w_hh.t())
        if b_hh is not None:
            hw = hw + b_hh
        xr, xz, xn = xw[s:e].chunk(3, 1)
        hr, hz, hn = hw.chunk(3, 1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        nt = (xn + r * hn).tanh()
        new = nt + z * (hp - nt)
        h = _merge(new, h)
        outs[t_index] = new
    return _join(outs), h


# ----------------------------------------------------------------------
# Elman RNN (tanh or relu)


class RNNSequence(_SequenceFunction):
    """One Elman-RNN direction: ``h' = act(xw + h @ W_hh^T)`` -> (out, h_n)."""

    @staticmethod
    def forward(ctx, xw, h0, w_hh, batch_sizes=(), reverse=False, nonlinearity="tanh"):
        xp = xp_of(xw)
        h_prev, out, h, w_rec = _state_arrays(xp, xw, h0, w_hh)
        for s, e, bs in _steps(batch_sizes, reverse):
            hp = h[:bs]
            h_prev[s:e] = hp
            o = out[s:e]
            xp.add(xw[s:e], _recurrent(xp, w_rec, hp), out=o)
            if nonlinearity == "tanh":
                xp.tanh(o, out=o)
            else:
                xp.maximum(o, 0, out=o)
            h[:bs] = o
        ctx.save_for_backward(xw, h0, w_hh)
        ctx.arrays = (out, h_prev)
        ctx.batch_sizes, ctx.reverse, ctx.nonlinearity = batch_sizes, reverse, nonlinearity
        return out, h

    @staticmethod
    def backward(ctx, gout, ghn):
        xw, h0, w_hh = ctx.saved_tensors
        if STATE.enabled:
            return _grads_by_recompute(ctx, rnn_composite, (xw, h0, w_hh), (gout, ghn),
                                       batch_sizes=ctx.batch_sizes, reverse=ctx.reverse,
                                       nonlinearity=ctx.nonlinearity)
        out, h_prev = ctx.arrays
        xp = xp_of(out)
        dpre = xp.empty_like(out)
        dh_next = ghn._data.copy()
        gout = gout._data
        whh = w_hh._data
        for s, e, bs in reversed(_steps(ctx.batch_sizes, ctx.reverse)):
            d = dpre[s:e]
            xp.add(gout[s:e], dh_next[:bs], out=d)
            o = out[s:e]
            if ctx.nonlinearity == "tanh":
                d *= 1 - o * o
            else:
                d *= o > 0
            dh_next[:bs] = _parallel.matmul(d, whh)
        need = ctx.needs_input_grad
        return (_make(dpre), _make(dh_next) if need[1] else None,
                _make(_parallel.matmul(dpre.T, h_prev)) if need[2] else None)


def rnn_composite(xw, h0, w_hh, batch_sizes=(), reverse=False, nonlinearity="tanh"):
    """RNNSequence written with ember ops, step by step (differentiable to any order)."""
    h = h0
    outs = {}
    for t_index, (s, e, bs) in zip(_time_indices(batch_sizes, reverse),
                                _steps(batch_sizes, reverse)):
        pre = xw[s:e] + h[:bs].matmul(w_hh.t())
        new = pre.tanh() if nonlinearity == "tanh" else pre.relu()
        h = _merge(new, h)
        outs[t_index] = new
    return _join(outs), h


# ----------------------------------------------------------------------
# one step: the cell functions


def _projection(input: Tensor, w_ih: Tensor, b_ih, b_hh=None) -> Tensor:
    bias = b_ih if b_hh is None else (b_hh if b_ih is None else b_ih + b_hh)
    if bias is None:
        return matmul(input, w_ih.t())
    return addmm(bias, input, w_ih.t())


def _check_cell(op: str, input: Tensor, hiddens: tuple, w_ih: Tensor, w_hh: Tensor) -> None:
    if input.dim() != 2 or any(h.dim() != 2 for h in hiddens):
        raise RuntimeError(f"{op}: expected 2-D input and hidden state, got "
                           f"{input.dim()}-D and {hiddens[0].dim()}-D")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    for k, h in enumerate(hiddens):
        if h.shape[1] != w_hh.shape[1]:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {w_hh.shape[1]}")
        if h.shape[0] != input.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} "
                               f"batch size {h.shape[0]}")
    if input.dtype != w_ih.dtype or any(h.dtype != w_ih.dtype for h in hiddens):
        raise RuntimeError(f"{op}: expected input, hidden state and weights of one dtype, got "
                           f"{input.dtype}, {hiddens[0].dtype} and {w_ih.dtype}")


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None):
    """One LSTM step on a batch: returns (h', c') from input (B, I) and hx = (h, c)."""
    h, c = hx
    _check_cell("lstm_cell", input, (h, c), w_ih, w_hh)
    xw = _projection(input, w_ih, b_ih, b_hh)
    _, h1, c1 = LSTMSequence.apply(xw, h, c, w_hh, None, batch_sizes=(input.shape[0],))
    return h1, c1


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step on a batch: h' from input (B, I) and h (B, H)."""
    _check_cell("gru_cell", input, (hx,), w_ih, w_hh)
    xw = _projection(input, w_ih, b_ih)
    return GRUSequence.apply(xw, hx, w_hh, b_hh, batch_sizes=(input.shape[0],))[1]


def _rnn_cell(op: str, nonlinearity: str, input, hx, w_ih, w_hh, b_ih, b_hh) -> Tensor:
    _check_cell(op, input, (hx,), w_ih, w_hh)
    xw = _projection(input, w_ih, b_ih, b_hh)
    return RNNSequence.apply(xw, hx, w_hh, batch_sizes=(input.shape[0],),
                             nonlinearity=nonlinearity)[1]


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step: ``tanh(input @ w_ih^T + b_ih + hx @ w_hh^T + b_hh)``."""
    return _rnn_cell("rnn_tanh_cell", "tanh", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with relu: ``relu(input @ w_ih^T + b_ih + hx @ w_hh^T + b_hh)``."""
    return _rnn_cell("rnn_relu_cell", "relu", input, hx, w_ih, w_hh, b_ih, b_hh)
