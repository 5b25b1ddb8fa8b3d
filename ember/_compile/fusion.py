"""Fusing chains of elementwise ops of a captured graph into one generated kernel.

`find_chains` walks the graph's nodes in order and grows groups: an elementwise op of
`codegen.ELEMENTWISE` joins the group of an argument computed by another such op when
that argument has the same shape and dtype, nothing else reads it (so the members'
intermediate results never need to exist as arrays) and no in-place op runs between
them.  The group's other operands, its leaves, may broadcast to its shape.  A group of
two or more ops becomes one `FusedElementwise` call at the place of its last op.

`FusedElementwise` is an ordinary `Function`: its forward runs the chain's generated
kernel, it saves only the chain's leaves, and its backward runs the generated backward
kernel (recomputing the intermediates) -- or, when the backward itself is recorded
(``create_graph=True``), replays the member ops with ember ops so that the result can
be differentiated again.  With numba off (or on another device) it runs the member ops'
own forwards and backwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE, enable_grad
from .._core.tensor import _make
from ..autograd import grad as autograd_grad
from ..jit._graph import Literal
from ..onnx._trace import Source
from ..ops import _native as native
from ..ops._broadcast import broadcasts_to
from ..ops.recompute import stand_ins
from .codegen import ELEMENTWISE, ChainKernel, Member, operands
from .memory import BufferPool

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@dataclass
class Chain:
    """A group found in the graph: its member node indices (in order), the specs of its
    leaves (Sources), and the kernel built from it."""

    nodes: list
    leaves: list
    kernel: ChainKernel
    pool: BufferPool
    shape: tuple  # the output's (every member's); leaves may broadcast to it

    def __repr__(self) -> str:
        return "chain[" + ", ".join(m.fn.__name__ for m in self.kernel.members) + "]"


def find_chains(nodes: list, meta, uses: dict) -> list:
    """The fusable groups of `nodes` (jit graph nodes), as `Chain`s.

    `meta(spec)` gives the (shape, dtype) a Source stands for; `uses` counts how many
    times each op output ``(record, output)`` is read (graph outputs included).
    """
    group_of: dict[int, list] = {}
    # A chain runs where its last member was: members never move past an in-place op,
    # which could change what they read.  (Ops between two in-place ones share a segment.)
    segment, segment_of = 0, []
    for i, node in enumerate(nodes):
        segment += node.fn._inplace
        segment_of.append(segment)
        if not _elementwise(node, i, meta):
            continue
        group = [i]
        shape = meta(Source("op", (i, 0)))[0]
        for arg in operands(node.fn, node.args, node.params):
            if (isinstance(arg, Source) and arg.kind == "op" and arg.ref[0] in group_of
                    and uses.get(arg.ref, 0) == 1 and meta(arg)[0] == shape
                    and segment_of[arg.ref[0]] == segment
                    and group_of[arg.ref[0]] is not group):
                old = group_of[arg.ref[0]]
                group = old + [j for j in group if j not in old]
        group.sort()
        for j in group:
            group_of[j] = group
    groups, seen = [], set()
    for group in group_of.values():
        if len(group) > 1 and id(group) not in seen:
            seen.add(id(group))
            groups.append(_chain(group, nodes, meta))
    return groups


def _elementwise(node, index: int, meta) -> bool:
    if node.fn not in ELEMENTWISE or node.n_outputs != 1 or not node.grad:
        return False  # (an op run under no_grad in the model is left as it is)
    values = operands(node.fn, node.args, node.params)
    if values is None:
        return False
    shape, dtype = meta(Source("op", (index, 0)))
    if dtype not in FLOAT_DTYPES:
        return False
    for arg in values:
        if isinstance(arg, Literal):
            if not isinstance(arg.value, (int, float)) or isinstance(arg.value, bool):
                return False
        elif not isinstance(arg, Source) or meta(arg)[1] != dtype or not broadcasts_to(
                meta(arg)[0], shape):
            return False
    return True


def _chain(group: list, nodes: list, meta) -> Chain:
    position = {j: m for m, j in enumerate(group)}
    leaves: list = []
    members = []
    for j in group:
        args = []
        for arg in operands(nodes[j].fn, nodes[j].args, nodes[j].params):
            if isinstance(arg, Literal):
                args.append(("number", arg.value))
            elif arg.kind == "op" and arg.ref[0] in position:
                args.append(("member", position[arg.ref[0]]))
            else:
                if arg not in leaves:
                    leaves.append(arg)
                args.append(("leaf", leaves.index(arg)))
        members.append(Member(nodes[j].fn, tuple(args)))
    shape = meta(Source("op", (group[-1], 0)))[0]
    flat = all(meta(leaf)[0] == shape for leaf in leaves)
    shapes = None if flat else [shape] + [meta(leaf)[0] for leaf in leaves]
    kernel = ChainKernel(tuple(members), len(leaves), shapes, str(meta(leaves[0])[1]))
    return Chain(group, leaves, kernel, BufferPool(), shape)


class FusedElementwise(Function):
    """One fused chain (see the module docstring); ``chain`` is its `Chain`."""

    _name = "CompiledFusedBackward0"

    @staticmethod
    def forward(ctx, *leaves, chain):
        ctx.chain = chain
        ctx.save_for_backward(*leaves)
        if not (native.enabled() and native.is_cpu_array(*leaves)):
            return _member_forwards(chain.kernel.members, leaves)
        out = chain.pool.take(chain.shape, leaves[0].dtype)
        if chain.kernel.ndim is None:
            done = chain.kernel.forward(out.reshape(-1), [_flat(x) for x in leaves])
        else:
            done = chain.kernel.forward(out, [_contiguous(x) for x in leaves])
        return out if done else _member_forwards(chain.kernel.members, leaves)

    @staticmethod
    def backward(ctx, grad):
        leaves = ctx.saved_tensors
        chain = ctx.chain
        arrays = [x._data for x in leaves]
        g = grad._data
        if (STATE.enabled or chain.kernel.broken is not None
                or not (native.enabled() and native.is_cpu_array(g, *arrays))):
            # create_graph (a backward that can be differentiated again), numba off or
            # another device: the member ops' own backwards
            return _recorded_backward(chain, leaves, grad, STATE.enabled, ctx.needs_input_grad)
        full: list = []
        for k, same in enumerate(chain.kernel.same):   # (one array for leaves that share)
            full.append(full[same] if same != k else chain.pool.take(chain.shape, g.dtype))
        if chain.kernel.ndim is None:
            done = chain.kernel.backward(_flat(g), [_flat(x) for x in arrays],
                                         [f.reshape(-1) for f in full])
            grads = full
        else:
            done = chain.kernel.backward(_contiguous(g), [_contiguous(x) for x in arrays],
                                         full)
            grads = [_sum_to(f, x.shape) for f, x in zip(full, arrays)]
        if not done:
            return _recorded_backward(chain, leaves, grad, False, ctx.needs_input_grad)
        return tuple(_make(g) if edge[0] is not None else None
                     for g, edge in zip(grads, ctx._edges))


def _contiguous(x: np.ndarray) -> np.ndarray:
    # (not np.ascontiguousarray: it turns a 0-d array into a 1-d one)
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _flat(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).reshape(-1)


def _sum_to(full: np.ndarray, shape: tuple) -> np.ndarray:
    """The gradient of a broadcast operand: `full` summed over the broadcast dims."""
    if full.shape == shape:
        return full
    lead = full.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + d for d, n in enumerate(shape)
                                      if n == 1 and full.shape[lead + d] != 1)
    return full.sum(axis=axes, keepdims=True).reshape(shape)


def _member_forwards(members, leaves):
    """The chain on backend arrays through each member's own forward (no numba)."""
    values = []
    for member in members:
        args = [leaves[ref] if kind == "leaf" else values[ref] if kind == "member" else ref
                for kind, ref in member.args]
        ctx = member.fn.__new__(member.fn)
        ctx._to_save = None
        values.append(member.fn.forward(ctx, *args))
    return values[-1]


def run_members(members, leaves: list):
    """The chain computed with ember ops on `leaves` (tensors): the eager reference."""
    values = []
    for member in members:
        args = [leaves[ref] if kind == "leaf" else values[ref] if kind == "member" else ref
                for kind, ref in member.args]
        values.append(member.fn.apply(*args))
    return values[-1]


def _recorded_backward(chain: Chain, leaves: tuple, grad, create_graph: bool,
                       needs: tuple) -> tuple:
    """The gradients of the leaves that `needs` through the member ops: recorded on the
    saved leaves themselves when the backward is (create_graph), else on detached
    copies (a saved leaf need not require grad: the training replay saves plain
    tensors, graph_node.py)."""
    if not create_graph:
        leaves = tuple(x.detach().requires_grad_() if need else x
                       for x, need in zip(leaves, needs))
    wanted = [need and x.requires_grad for x, need in zip(leaves, needs)]
    if not any(wanted):
        return (None,) * len(leaves)
    with enable_grad():
        if create_graph:  # (a leaf may be another's ancestor: l(x).tanh() * x)
            leaves = stand_ins(leaves)
        out = run_members(chain.kernel.members, list(leaves))
        got = iter(autograd_grad(out, [x for x, w in zip(leaves, wanted) if w], grad,
                                 create_graph=create_graph, allow_unused=True))
    return tuple(next(got) if w else None for w in wanted)
