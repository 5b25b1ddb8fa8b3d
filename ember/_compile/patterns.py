"""Rewrites of a captured graph that replace a known sequence of ops by one fused op.

One pattern so far, attention's scores: ``softmax(masked_fill(x * scale, mask, value),
dim=-1)``, with the multiplication optional.  Eagerly that is three passes over the
scores forward and three backward, each a separate op; `ScaledMaskedSoftmax` makes it
one row kernel each way (ops/_native_rows.py `masked_softmax`).  On a (32, 4, 64, 64)
float32 batch of scores (the benchmark GPT's), two threads, 2-core Intel Xeon: forward
~290 us against ~830 for the three ops, backward ~140 against ~670.

`find_masked_softmax` finds the sequences; program.py swaps them in before fusing
elementwise chains.  The rewrite needs the intermediate results to be read by nothing
else, and no in-place op between the first op and the softmax (it could change what
the moved ops read).
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import _make
from ..jit._graph import Literal, Node
from ..onnx._trace import Source
from ..ops import _kernels, _native_rows
from ..ops import _native as native
from ..ops._util import xp_of
from ..ops.activation import Softmax, _softmax_arrays
from ..ops.arithmetic import Mul
from ..ops.indexing import MaskedFill

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


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


def find_masked_softmax(nodes: list, meta, uses: dict) -> dict:
    """``{index of a Softmax node: (indices of the ops it absorbs, the fused Node)}`` for
    each ``softmax(masked_fill(x * scale, mask, value), dim=-1)`` in `nodes` (jit graph
    nodes; `meta` and `uses` as `fusion.find_chains` takes them)."""
    found = {}
    for i, node in enumerate(nodes):
        if node.fn is not Softmax or node.n_outputs != 1 or len(node.args) != 2:
            continue
        scores, dim = node.args
        shape, dtype = meta(Source("op", (i, 0)))
        if (not isinstance(dim, Literal) or dim.value not in (-1, len(shape) - 1)
                or dtype not in FLOAT_DTYPES):
            continue
        fill = _sole_producer(scores, nodes, uses, MaskedFill)
        if fill is None:
            continue
        filled, value = nodes[fill].args
        mask = nodes[fill].params.get("mask")
        if (not isinstance(value, Literal) or not _number(value.value) or mask is None
                or set(nodes[fill].params) != {"mask"}):
            continue
        absorbed, x, scale = [fill], filled, 1.0
        product = _sole_producer(filled, nodes, uses, Mul)
        if product is not None:
            left, right = nodes[product].args
            factor, other = (left, right) if isinstance(left, Literal) else (right, left)
            if (isinstance(factor, Literal) and _number(factor.value)
                    and isinstance(other, Source) and meta(other) == (shape, dtype)
                    and not nodes[product].params):
                absorbed, x, scale = [product, fill], other, factor.value
        if any(nodes[k].fn._inplace for k in range(min(absorbed), i)) or not all(
                nodes[k].grad for k in absorbed + [i]):
            continue
        found[i] = (absorbed, Node(ScaledMaskedSoftmax,
                                   (x, Literal(scale), Literal(value.value)),
                                   {"mask": mask, "dim": Literal(dim.value)}, 1, node.where))
    return found


def _sole_producer(spec, nodes: list, uses: dict, fn) -> int | None:
    """The index of the `fn` op whose one output `spec` is, when nothing else reads it."""
    if not (isinstance(spec, Source) and spec.kind == "op" and spec.ref[1] == 0):
        return None
    index = spec.ref[0]
    node = nodes[index]
    if node.fn is not fn or node.n_outputs != 1 or uses.get(spec.ref, 0) != 1:
        return None
    return index


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
