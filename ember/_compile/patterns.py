"""Rewrites of a captured graph that replace a known sequence of ops by one fused op.

Two patterns:

- attention's scores: ``softmax(masked_fill(x * scale, mask, value), dim=-1)``, with the
  multiplication optional, becomes one `ScaledMaskedSoftmax` (ops/masked_softmax.py:
  one row kernel each way instead of three ops);
- a linear layer on a matrix, ``addmm(bias, x, weight.t())``, with a ``relu`` after it
  or not, becomes one `FusedLinear` (ops/fused_linear.py: one node instead of two or
  three, no transposed weight, the relu and the bias gradient folded in).

`find_masked_softmax` and `find_linear` find the sequences; program.py swaps them in
before fusing elementwise chains.  A rewrite needs the intermediate results to be read
by nothing else, and no in-place op between the first op and the last (it could change
what the moved ops read).
"""

from __future__ import annotations

import numpy as np

from ..jit._graph import Literal, Node
from ..onnx._trace import Source
from ..ops.activation import Softmax
from ..ops.arithmetic import Mul
from ..ops.elementwise import Relu
from ..ops.fused_linear import FusedLinear
from ..ops.indexing import MaskedFill
from ..ops.linalg import AddProduct
from ..ops.masked_softmax import ScaledMaskedSoftmax
from ..ops.shape import T

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
        if any(nodes[k].fn._inplace for k in range(min(absorbed), i)) or not _one_mode(
                nodes, absorbed + [i]):
            continue
        found[i] = (absorbed, Node(ScaledMaskedSoftmax,
                                   (x, Literal(scale), Literal(value.value)),
                                   {"mask": mask, "dim": Literal(dim.value)}, 1, node.where,
                                   node.grad))
    return found


def find_linear(nodes: list, meta, uses: dict) -> dict:
    """``{index of the last op: (indices of the ops it absorbs, the fused Node)}`` for each
    ``addmm(bias, x, weight.t())`` of `nodes` with beta and alpha 1 (what ``nn.Linear``
    records for a matrix), taking the ``relu`` after it where that is the product's one
    reader (`meta` and `uses` as `find_masked_softmax` takes them).  x and the weight are
    float32 or float64 matrices of one dtype, the bias a row of the product's width."""
    found = {}
    for i, node in enumerate(nodes):
        if node.fn is not AddProduct or node.n_outputs != 1 or len(node.args) != 3:
            continue
        params = {k: v.value for k, v in node.params.items() if isinstance(v, Literal)}
        if params != {"kind": "addmm", "beta": 1, "alpha": 1}:
            continue
        bias, x, weight_t = node.args
        transpose = _sole_producer(weight_t, nodes, uses, T)
        if transpose is None or not all(isinstance(a, Source) for a in (bias, x)):
            continue
        (weight,) = nodes[transpose].args
        if not isinstance(weight, Source):
            continue
        (rows, width), dtype = meta(Source("op", (i, 0)))
        x_shape, x_dtype = meta(x)
        if (dtype not in FLOAT_DTYPES or x_dtype != dtype or len(x_shape) != 2
                or meta(weight) != ((width, x_shape[1]), dtype)
                or meta(bias) != ((width,), dtype)):
            continue
        relu = _sole_reader(Source("op", (i, 0)), nodes, uses, Relu, after=i)
        absorbed, last = ([transpose], i) if relu is None else ([transpose, i], relu)
        if any(nodes[k].fn._inplace for k in range(min(absorbed), last)) or not _one_mode(
                nodes, absorbed + [last]):
            continue
        found[last] = (absorbed, Node(FusedLinear, (x, weight, bias),
                                      {"relu": Literal(relu is not None)}, 1,
                                      nodes[last].where, nodes[last].grad))
    return found


def _one_mode(nodes: list, indices: list) -> bool:
    """Whether the ops at `indices` all ran in one grad mode (a call under no_grad fuses
    its ops as a training call does; a model's own no_grad block around some of them
    keeps them apart)."""
    return len({nodes[k].grad for k in indices}) == 1


def _sole_reader(spec: Source, nodes: list, uses: dict, fn, after: int) -> int | None:
    """The index of the `fn` op that reads `spec` (an op's one output) as its one argument,
    when nothing else reads it."""
    if uses.get(spec.ref, 0) != 1:
        return None
    for k in range(after + 1, len(nodes)):
        node = nodes[k]
        if spec in node.args or spec in node.params.values():
            ok = (node.fn is fn and node.n_outputs == 1 and node.args == (spec,)
                  and not node.params)
            return k if ok else None
    return None


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
