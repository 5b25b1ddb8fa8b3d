"""A linear layer, with or without the ReLU after it, as one op: ``relu(x @ weight.T +
bias)``.  ``ember.compile`` swaps it in for the ops an ``nn.Linear`` (and an ``nn.ReLU``
after it) records, ``weight.t()``, ``addmm`` and ``relu`` (_compile/patterns.py); eager
code keeps the separate ops.

What one op saves over three: the transposed weight's node and the ReLU's node each way,
the ReLU's output array (the product's is made non-negative in place) and its gradient
array (the incoming gradient is masked where the op owns it), and the bias gradient's
separate pass (summed while masking, `_native_activation.relu_grad_and_sums`).  The
weight's gradient comes out in the weight's own layout, with no transposed view to undo.
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import _make
from . import _native_activation as _native_act
from . import _parallel
from ._kernels import sum_leading
from .elementwise import ReluBackward


class FusedLinear(Function):
    """``input @ weight.T + bias`` for a 2-D input, through ReLU when `relu`.  Its
    gradients: with ``d = grad`` masked where the output is not positive (NaN outputs pass
    it, as relu's do), ``d @ weight`` for the input, ``d.T @ input`` for the weight and
    d's column sums for the bias."""

    _name = "CompiledLinearBackward0"
    _reuses_grad = True  # (the mask is written over an incoming gradient the op owns)

    @staticmethod
    def forward(ctx, input, weight, bias, relu=False):
        # (the bias added and the relu applied by the threads computing the product's
        # parts, each to its own part while it is in that core's cache)
        y = _parallel.matmul(input, weight.T, bias=bias, relu=relu)
        ctx.save_for_backward(input, weight, y if relu else None)  # (no y: no relu)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, w, y = ctx.saved_tensors
        edges = ctx._edges
        need_x, need_w, need_b = (edges[0][0] is not None, edges[1][0] is not None,
                                  edges[2][0] is not None)
        if STATE.enabled:  # create_graph: the same gradients as differentiable ops
            d = grad if y is None else ReluBackward.apply(grad, y)
            return (d @ w if need_x else None, d.t() @ x if need_w else None,
                    d.sum(0) if need_b else None)
        d, summed = _masked(ctx, grad._data, None if y is None else y._data, need_b)
        gx = gw = None
        if need_x and need_w:
            gx, gw = _parallel.matmul_pair(d, w._data, d.T, x._data)
        elif need_x:
            gx = _parallel.matmul(d, w._data)
        elif need_w:
            gw = _parallel.matmul(d.T, x._data)
        return (None if gx is None else _make(gx), None if gw is None else _make(gw),
                None if summed is None else _make(summed))


# Up to this many elements the mask and the bias sums are one pass on the calling thread
# (`relu_grad_and_sums`); larger gradients take relu's threaded backward kernel and the
# bias sums' threaded product (`sum_leading`).  NOTE: the MLP's 128 x 512 gradient: one
# pass ~6-16 us after a product, against ~40 us for relu's backward op and a sum.
ONE_PASS_MAX = 1 << 18


def _masked(ctx, g, y, need_b: bool) -> tuple:
    """(the gradient of the product's output, its column sums or None): `g` itself
    without ReLU; masked by ``y > 0`` (into `g` where the op owns it) with ReLU."""
    if y is None:
        return g, (_column_sums(g) if need_b else None)
    owned = ctx._owns_grad and g.flags.c_contiguous and g.flags.writeable
    if not _native_act.supports(y, g):
        d = np.asarray(ReluBackward.forward(None, g, y))
    elif y.size <= ONE_PASS_MAX and y.flags.c_contiguous and g.flags.c_contiguous:
        d = g if owned else g.copy()
        summed = np.empty(y.shape[1], y.dtype)  # (cheap enough to sum when unneeded)
        _native_act.relu_grad_and_sums(d, y, summed)
        return d, (summed if need_b else None)
    else:
        d = _native_act.backward("relu", g, y, overwrite=owned)
    return d, (_column_sums(d) if need_b else None)


def _column_sums(d):
    """The bias gradient: d's sums over its rows (in order, in d's precision)."""
    summed = sum_leading(d, (0,), False)
    return d.sum(axis=0) if summed is None else summed
