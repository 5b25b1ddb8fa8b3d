"""Rewrites of a captured graph that replace a known sequence of ops by one fused op.

One pattern so far, attention's scores: ``softmax(masked_fill(x * scale, mask, value),
dim=-1)``, with the multiplication optional, becomes one `ScaledMaskedSoftmax`
(ops/masked_softmax.py: one row kernel each way instead of three ops).

`find_masked_softmax` finds the sequences; program.py swaps them in before fusing
elementwise chains.  The rewrite needs the intermediate results to be read by nothing
else, and no in-place op between the first op and the softmax (it could change what
the moved ops read).
"""

from __future__ import annotations

import numpy as np

from ..jit._graph import Literal, Node
from ..onnx._trace import Source
from ..ops.activation import Softmax
from ..ops.arithmetic import Mul
from ..ops.indexing import MaskedFill
from ..ops.masked_softmax import ScaledMaskedSoftmax

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


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
