"""Rewrites of a captured graph that replace a known sequence of ops by one fused op.

Three patterns:

- attention's scores: ``softmax(masked_fill(x * scale, mask, value), dim=-1)``, with the
  multiplication optional, becomes one `ScaledMaskedSoftmax` (ops/masked_softmax.py:
  one row kernel each way instead of three ops);
- a linear layer on a matrix, ``addmm(bias, x, weight.t())``, with a ``relu`` after it
  or not, becomes one `FusedLinear` (ops/fused_linear.py: one node instead of two or
  three, no transposed weight, the relu and the bias gradient folded in);
- batch norm with given statistics (eval mode), in a graph captured under no_grad: the
  ten ops of ``normalization._affine_running`` (the scale ``rsqrt(var + eps) * weight``,
  the shift ``-mean * scale + bias``, both reshaped to broadcast over the channels, and
  ``x * scale + shift``) become one `InferenceBatchNorm` (the arrays' path of eager
  inference).

`find_masked_softmax`, `find_linear` and `find_inference_batch_norm` find the
sequences; program.py swaps them in before fusing elementwise chains.  A rewrite needs
the intermediate results to be read by nothing else, and no in-place op between the
first op and the last (it could change what the moved ops read).
"""

from __future__ import annotations

import numpy as np

from ..jit._graph import Literal, Node
from ..onnx._trace import Source, TracedFunction
from ..ops import shape
from ..ops.activation import Softmax
from ..ops.arithmetic import Add, Mul, Neg
from ..ops.elementwise import Relu, Rsqrt
from ..ops.fused_linear import FusedLinear
from ..ops.indexing import MaskedFill
from ..ops.linalg import AddProduct
from ..ops.masked_softmax import ScaledMaskedSoftmax
from ..ops.normalization import InferenceBatchNorm
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


def find_inference_batch_norm(nodes: list, meta, uses: dict) -> dict:
    """``{index of the last Add: (indices of the ops it absorbs, the fused Node)}`` for each
    batch norm with given statistics in `nodes` that ran under no_grad (`meta` and `uses`
    as `find_masked_softmax` takes them): ``x * reshape(scale) + reshape(shift)`` with
    the scale ``rsqrt(var + eps)`` (times a weight) and the shift ``-mean * scale`` (plus
    a bias), every intermediate read by the pattern alone, float32 or float64."""
    found = {}
    for i, node in enumerate(nodes):
        if node.fn is not Add or node.grad or not _plain_node(node, 2):
            continue
        product = _sole_producer(node.args[0], nodes, uses, Mul)
        shift_view = _sole_reshape(node.args[1], nodes, uses)
        if product is None or shift_view is None or not _plain_node(nodes[product], 2):
            continue
        x, scale_view_spec = nodes[product].args
        scale_view = _sole_reshape(scale_view_spec, nodes, uses)
        if scale_view is None:
            continue
        scale_spec, view_shape = nodes[scale_view].args
        shift_spec, shift_shape = nodes[shift_view].args
        if not (isinstance(view_shape, Literal) and isinstance(shift_shape, Literal)
                and view_shape.value == shift_shape.value and isinstance(x, Source)):
            continue
        scale = _scale(scale_spec, nodes, uses)
        shift = _shift(shift_spec, scale_spec, nodes, uses)
        if scale is None or shift is None:
            continue
        (var, eps, weight, scale_ops), (mean, bias, shift_ops) = scale, shift
        (x_shape, dtype), (channels, _) = meta(x), meta(var)
        if (dtype not in FLOAT_DTYPES or len(x_shape) < 2 or channels != (x_shape[1],)
                or tuple(view_shape.value) != (-1,) + (1,) * (len(x_shape) - 2)
                or any(meta(t) != (channels, dtype) for t in (mean, var, weight, bias)
                       if t is not None)):
            continue
        absorbed = scale_ops + shift_ops + [scale_view, product, shift_view]
        if (any(nodes[k].fn._inplace for k in range(min(absorbed), i))
                or any(nodes[k].grad for k in absorbed)):
            continue
        none = Literal(None)
        found[i] = (absorbed, Node(InferenceBatchNorm,
                                   (x, mean, var, none if weight is None else weight,
                                    none if bias is None else bias, eps),
                                   {}, 1, node.where, node.grad))
    return found


def _scale(spec, nodes: list, uses: dict):
    """(var, eps, weight or None, the op indices) of ``rsqrt(var + eps) [* weight]``
    whose result `spec` is (read twice: by the shift and by its reshape), or None."""
    k = _read_output(spec, uses, 2)
    if k is None:
        return None
    weight, ops = None, []
    if nodes[k].fn is Mul and _plain_node(nodes[k], 2):
        root, weight = nodes[k].args
        ops.append(k)
        k = _sole_producer(root, nodes, uses, Rsqrt)
        if k is None or not isinstance(weight, Source) or weight.kind == "op":
            return None
    if nodes[k].fn is not Rsqrt or not _plain_node(nodes[k], 1):
        return None
    ops.append(k)
    k = _sole_producer(nodes[k].args[0], nodes, uses, Add)
    if k is None or not _plain_node(nodes[k], 2):
        return None
    var, eps = nodes[k].args
    if not (isinstance(var, Source) and var.kind != "op" and isinstance(eps, Literal)
            and _number(eps.value)):
        return None
    return var, eps, weight, ops + [k]


def _shift(spec, scale_spec, nodes: list, uses: dict):
    """(mean, bias or None, the op indices) of ``-mean * scale [+ bias]`` whose result
    `spec` is, the scale being `scale_spec`, or None."""
    k = _sole_producer(spec, nodes, uses, Add)
    bias, ops = None, []
    if k is not None:
        if not _plain_node(nodes[k], 2):
            return None
        spec, bias = nodes[k].args
        if not isinstance(bias, Source) or bias.kind == "op":
            return None
        ops.append(k)
    k = _sole_producer(spec, nodes, uses, Mul)
    if k is None or not _plain_node(nodes[k], 2) or nodes[k].args[1] != scale_spec:
        return None
    ops.append(k)
    negated = _sole_producer(nodes[k].args[0], nodes, uses, Neg)
    if negated is None or not _plain_node(nodes[negated], 1):
        return None
    (mean,) = nodes[negated].args
    if not isinstance(mean, Source) or mean.kind == "op":
        return None
    return mean, bias, ops + [negated]


def _sole_reshape(spec, nodes: list, uses: dict) -> int | None:
    """The index of the traced ``reshape`` call (of a tensor to a shape) whose one
    output `spec` is, when nothing else reads it."""
    index = _read_output(spec, uses, 1)
    if index is None:
        return None
    node = nodes[index]
    if not (issubclass(node.fn, TracedFunction) and node.fn.function is shape.reshape
            and _plain_node(node, 2)):
        return None
    return index


def _read_output(spec, uses: dict, reads: int) -> int | None:
    """The index of the op whose first output `spec` is, where `reads` readers read it."""
    if not (isinstance(spec, Source) and spec.kind == "op" and spec.ref[1] == 0
            and uses.get(spec.ref, 0) == reads):
        return None
    return spec.ref[0]


def _plain_node(node, count: int) -> bool:
    """Whether `node` has one output, `count` positional arguments and no parameters."""
    return node.n_outputs == 1 and len(node.args) == count and not node.params


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
    index = _read_output(spec, uses, 1)
    if index is None or nodes[index].fn is not fn or nodes[index].n_outputs != 1:
        return None
    return index


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
