"""The softmax of scaled, masked scores as one op: ``softmax(where(mask, value, x *
scale), dim)``, attention's.  Eagerly that is three ops, three passes over the scores
forward and three backward; this is one row kernel each way (ops/_native_rows.py
`masked_softmax`).  On a (32, 4, 64, 64) float32 batch of scores (the benchmark GPT's),
two threads, 2-core Intel Xeon: forward ~290 us against ~830 for the three ops, backward
~140 against ~670.

`scaled_dot_product_attention` uses it for causal attention; ``ember.compile`` swaps it in
for the sequence of three ops where it finds them (_compile/patterns.py).
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import _make
from . import _kernels, _native_rows
from . import _native as native
from ._util import xp_of
from .activation import _softmax_arrays


class ScaledMaskedSoftmax(Function):
    """``softmax(where(mask, value, x * scale), dim)``; `mask` a bool array broadcasting
    to x.  Its gradient: ``scale * y * (g - sum(g * y, dim))``, 0 where masked."""

    _name = "CompiledMaskedSoftmaxBackward0"

    @staticmethod
    def forward(ctx, x, scale, value, mask, dim):
        ctx.scale, ctx.mask, ctx.dim = scale, mask, dim
        rows = _rows(x, dim)
        if rows is not None:
            full = _full_mask(mask, x.shape)
            y = _native_rows.masked_softmax(rows, full, scale, value).reshape(x.shape)
        else:
            xp = xp_of(x)
            z = xp.where(mask, value, x * scale).astype(x.dtype, copy=False)
            y = _softmax_arrays(z, dim, log=False)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        mask = ctx.mask
        if STATE.enabled:  # create_graph: differentiable tensor formulas (as Softmax's)
            gz = y * (grad - (grad * y).sum(ctx.dim, keepdim=True))
            return gz.masked_fill(_make(mask), 0) * ctx.scale, None, None
        g, yd = grad._data, y._data
        rows = _rows(yd, ctx.dim)
        if rows is not None and type(g) is np.ndarray and g.dtype == yd.dtype:
            g_rows = np.ascontiguousarray(g).reshape(rows.shape)
            out = _native_rows.masked_softmax_backward(g_rows, rows,
                                                       _full_mask(mask, yd.shape), ctx.scale)
            return _make(out.reshape(yd.shape)), None, None
        # (Softmax's, MaskedFill's and Mul's backward formulas on the arrays, in order)
        gz = g * yd
        gz = (g - _kernels.sum_last(gz, ctx.dim)) * yd
        gz = xp_of(g).where(mask, 0, gz) * ctx.scale
        return _make(gz.astype(yd.dtype, copy=False)), None, None


def _rows(x, dim):
    """`x` as 2-D rows when the softmax runs over its last dim and the row kernels take
    it; else None."""
    if type(x) is not np.ndarray or x.ndim == 0 or dim not in (-1, x.ndim - 1) \
            or not x.flags.c_contiguous:
        return None
    rows = x.reshape(-1, x.shape[-1])
    return rows if _native_rows.supports(rows) else None


def _full_mask(mask, shape: tuple) -> np.ndarray:
    """The mask broadcast to `shape`, C-contiguous, as 2-D rows (a causal (T, T) mask for
    a (32, 4, 64, 64) batch: ~9 us)."""
    full = np.ascontiguousarray(mask if mask.shape == shape else np.broadcast_to(mask, shape),
                                dtype=bool)
    return native.writable(full).reshape(-1, shape[-1])
