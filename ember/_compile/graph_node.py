"""A captured graph replayed for training as one autograd node.

The plain replay (``replay.py``) calls each op's ``Function.apply``: every op wraps its
result in a tensor and records a node, and ``backward()`` walks those nodes through the
engine.  When the call needs gradients, `WholeGraph` replays the graph instead as one
generated function on arrays, calling each op's ``forward`` directly, and records a
single node for the whole graph (`GraphNode`, ``CompiledFunctionBackward`` as in
PyTorch).  Its backward runs the ops' own backward formulas in reverse graph order
with the gradient bookkeeping of the engine (sums, broadcast gradients summed back,
activations writing over gradients nobody else holds) but none of its graph walking::

    def forward(X, P):
        x0, = X
        a0 = x0._data
        p0 = P[0]; q0 = p0._data
        p1 = P[1]; q1 = p1._data
        C = []
        c0 = new(K[0]); c0._to_save = None; c0._saved = None; c0._edges = E[0]; C.append(c0)
        o0 = K[0].forward(c0, q0)  # T
        ...
        o1 = K[1].forward(c1, q1, a0, o0, L[0], L[1], L[1])  # AddProduct
        if c1._to_save is not None: save(c1, (o1, q1, a0, o0, ...), (None, p1, x0, p0, ...))
        del o0
        ...
        return C, [T0]

What stays as eager code does it: in-place checks of the inputs and parameters an op
saved (their version counters), ``retain_graph``, ``autograd.grad`` with respect to
inputs, hooks on the inputs, parameters and outputs.  A second-order backward
(``create_graph=True``) replays the graph op by op again (restoring the random state
the first run started from, so that dropout draws the same masks) and differentiates
that recorded copy.

The generated forward is made in ``training_forward.py``; calls of whole functions
(dropout, view) become the inner nodes of ``traced_calls.py``.

A graph keeps the op-by-op replay when this could differ from eager code (`why_not_whole`
names the reason): an in-place op into a view or through one (other in-place ops, into
results or buffers, are replayed: ``training_forward.py``), a user's
``autograd.Function``, an op taking tensors in a list or as keywords, an output that is
or views an input or parameter (in-place writes to it must reach what it views), or a
graph on another device than the CPU.  Outputs that view a result of the graph share
its version counter (``training_forward.py``).
"""

from __future__ import annotations

import numpy as np

from .._core.accumulate import edge_of
from .._core.engine import _unshared, _validate, add_gradient
from .._core.function import DIFFERENTIABLE_DTYPES, _new_object
from .._core.grad_mode import STATE, enable_grad
from .._core.node import Node, _raise_version_error, next_sequence_nr
from .._core.tensor import _make
from ..autograd import grad as autograd_grad
from ..jit._graph import ArrayOf, Literal, Sequence, sources
from ..ops.recompute import stand_ins
from ..onnx._trace import Source, TracedFunction
from ..random import default_generator
from .traced_calls import (USER_APPLY, call_class, cuts_graph, may_view, view_base,
                           writes_in_place)
from .training_forward import generate_forward


class GraphNode(Node):
    """The autograd node of one replayed graph (``CompiledFunctionBackward``)."""

    _name = "CompiledFunctionBackward"
    # every gradient it returns is an array it made (`WholeGraph.backward` copies others)
    _fresh_grads = True
    _may_hand_over = True

    @staticmethod
    def backward(ctx, *grads):
        return ctx._plan.backward(ctx, grads)

    def _release(self) -> None:
        for inner in self._inner:
            inner._release()


class _Meta:
    """Stands for the node at the other end of an inner op's edge: all that the ops'
    backward formulas read there is the shapes and dtypes of its outputs."""

    __slots__ = ("_out_meta",)

    def __init__(self, out_meta: tuple):
        self._out_meta = out_meta


def why_not_whole(graph, on_cpu: bool, input_grads: list, param_grads: dict) -> str | None:
    """Why `graph` must keep the op-by-op replay for training, or None.  (An in-place op
    may write into an input or buffer that needs no gradient, batch norm's count of
    batches, or into a result of the graph that nothing views: `_writes_a_result`.)"""
    if not on_cpu:
        return "not on the CPU"
    for i, node in enumerate(graph.nodes):
        if issubclass(node.fn, TracedFunction):
            if node.fn.function is USER_APPLY:
                return "a user's autograd.Function"  # (it may write in place: mark_dirty)
            if writes_in_place(node):
                return "a function call writes in place"
        if node.fn._inplace and not (_writes_a_buffer(node, input_grads, param_grads)
                                     or _writes_a_result(graph, i)):
            return "an in-place op"
        if node.fn._marks_outputs:
            return "an op with an output that takes no gradient (nextafter, slogdet's sign)"
        if not all(_array_sequence(a) for a in list(node.args) + list(node.params.values())
                   if isinstance(a, Sequence)):
            return "an op takes tensors in a list"
        if any(_tensor_argument(v) for v in node.params.values()):
            return "an op takes a tensor as a keyword"
    for spec in graph.outputs:
        if not (isinstance(spec, Source) and spec.kind == "op"):
            return "an output is not made by an op of the graph"
        fn = graph.nodes[spec.ref[0]].fn
        if issubclass(fn, TracedFunction) and not may_view(fn):
            return "an output is a function call's (it may return its argument)"
        if view_base(graph, spec).kind != "op":
            return "an output is a view of an input or parameter"
    return None


def _writes_a_result(graph, i: int) -> bool:
    """Whether in-place op `i` writes into a result of the graph (or into another in-place
    op's, ReLU after ``out += x``) that nothing views and that no op reads after the
    write under an older name: then the graph says what eager code does (a write into a
    view, or through one, would need eager code's rebasing of views)."""
    target = graph.nodes[i].args[0] if graph.nodes[i].args else None
    if not (isinstance(target, Source) and target.kind == "op"):
        return False
    base = view_base(graph, target)
    if base.kind != "op":
        return False
    for j, node in enumerate(graph.nodes):
        for spec in list(node.args) + list(node.params.values()):
            for src in sources(spec):
                if src.kind != "op" or view_base(graph, src) != base:
                    continue
                if may_view(node.fn):
                    return False  # (a view of that memory)
                if j > i and src.ref[0] < i:
                    return False  # (its old value read after the write)
    return True


def _written(node) -> list:
    """The input and parameter Sources `node` may write into: its array arguments and,
    for an in-place op, its target."""
    found = [s for spec in list(node.args) + list(node.params.values())
             if isinstance(spec, (ArrayOf, Sequence))
             for s in sources(spec) if s.kind in ("input", "param")]
    target = node.args[0] if node.fn._inplace and node.args else None
    if isinstance(target, Source) and target.kind in ("input", "param"):
        found.append(target)
    return found


def _array_sequence(spec: Sequence) -> bool:
    """A tuple or list of arrays and plain values (batch norm's running statistics),
    through which no gradient flows."""
    return spec.kind in (tuple, list) and all(
        isinstance(item, (ArrayOf, Literal)) for item in spec.items)


def _writes_a_buffer(node, input_grads: list, param_grads: dict) -> bool:
    """Whether in-place op `node` writes into an input, parameter or buffer that needs no
    gradient, with plain arguments otherwise (its result then carries none either)."""
    target = node.args[0] if node.args else None
    if not (isinstance(target, Source) and target.kind in ("input", "param")):
        return False
    needs = input_grads[target.ref] if target.kind == "input" else param_grads[target.ref]
    return not needs and not any(_tensor_argument(a) for a in node.args[1:])


def _tensor_argument(spec) -> bool:
    """Whether an argument spec is a tensor of the graph (an ArrayOf is an array argument,
    through which no gradient flows; a constant is a constant)."""
    return isinstance(spec, Source) and spec.kind != "const"


class WholeGraph:
    """A graph's training replay: one generated forward on arrays, one `GraphNode`.

    `positions`: parameter or buffer name -> index in the call's tensor list; `meta`:
    ``meta(source) -> (shape, dtype)``; `input_grads` / `param_grads`: which inputs and
    parameters (by name) require grad in this signature; `replay_fn`: the op-by-op
    replay (for second-order gradients); `random`: whether the graph draws random
    numbers (then each call keeps the generator's state it started from).
    """

    def __init__(self, graph, positions: dict, meta, input_grads: list, param_grads: dict,
                 replay_fn, random: bool):
        self.graph = graph
        self.replay_fn = replay_fn
        self.generator = default_generator if random else None
        nodes = graph.nodes
        # which op outputs carry gradients, and where each argument's gradient goes
        self.out_meta = []     # per node: ((shape, dtype), ...)
        carries = []           # per node: per output, whether it requires grad
        self.routes = []       # per node: per positional arg, None | ("op", i, nr) | ("ext", k)
        self.edges = []        # per node: the inner node's static `_edges`
        externals: dict = {}   # ("input", k) | ("param", position) -> external index
        for i, node in enumerate(nodes):
            metas = tuple(meta(Source("op", (i, nr))) for nr in range(node.n_outputs))
            self.out_meta.append(metas)
            routes, edges = [], []
            for spec in node.args:
                route, edge = None, (None, 0)
                if not node.grad or cuts_graph(node.fn):  # (no_grad, detach: none flows)
                    pass
                elif isinstance(spec, Source) and spec.kind == "op":
                    j, nr = spec.ref
                    if carries[j][nr]:
                        route, edge = ("op", j, nr), (_Meta(self.out_meta[j]), nr)
                elif isinstance(spec, Source) and spec.kind in ("input", "param"):
                    needs = (input_grads[spec.ref] if spec.kind == "input"
                             else param_grads[spec.ref])
                    if needs:
                        key = (spec.kind, spec.ref if spec.kind == "input"
                               else positions[spec.ref])
                        k = externals.setdefault(key, len(externals))
                        route, edge = ("ext", k), (_Meta((meta(spec),)), 0)
                routes.append(route)
                edges.append(edge)
            self.routes.append(tuple(routes))
            self.edges.append(tuple(edges))
            flows = any(r is not None for r in routes)
            carries.append(tuple(flows and dt in DIFFERENTIABLE_DTYPES for _, dt in metas))
        self.externals = list(externals)  # (kind, index), in the GraphNode's edge order
        # the inputs and buffers the graph writes into (batch norm's statistics, its count)
        self.written = list(dict.fromkeys(
            (src.kind, src.ref if src.kind == "input" else positions[src.ref])
            for node in nodes for src in _written(node)))
        self.slots = list(dict.fromkeys(s.ref for s in graph.outputs))  # unique (i, nr)
        self.slot_carries = [carries[i][nr] for i, nr in self.slots]
        self.output_slot = [self.slots.index(s.ref) for s in graph.outputs]
        self.node_out_meta = tuple(self.out_meta[i][nr] for i, nr in self.slots)
        self.wants_grad = any(self.slot_carries)
        # the node class whose backward runs (a traced function call's: see `call_class`)
        self.classes = [call_class(i, node, meta) if issubclass(node.fn, TracedFunction)
                        else node.fn for i, node in enumerate(nodes)]
        # per node, what its backward step reads (one tuple, unpacked in the hot loop)
        self.steps = [(cls, self.routes[i], self.out_meta[i], cls._reuses_grad,
                       cls._fresh_grads, cls._is_view) for i, cls in enumerate(self.classes)]
        self._forward = generate_forward(graph, positions, self)
        self._positions = positions
        self._unrecorded = None   # (`run_unrecorded`'s forward, made on its first call)

    # forward -------------------------------------------------------------------

    def run_unrecorded(self, inputs: list, tensors: list) -> list:
        """The graph's outputs (as `run` lists them) for a call that records nothing
        (under ``no_grad``, or with nothing that requires grad): the same ops on arrays,
        nothing saved, no node.

        NOTE: why not the op-by-op replay there: every op's ``Function.apply`` and its
        result's tensor cost more than eager code's paths for inference (a convolution
        or batch norm goes straight to its arrays there): the CIFAR ResNet-like network's
        batch-1 inference took 1409 us compiled against 1194 eagerly (PyTorch 985;
        2-core Intel Xeon, 2026-12-08)."""
        forward = self._unrecorded
        if forward is None:
            forward = self._unrecorded = generate_forward(self.graph, self._positions, self,
                                                          saving=False)
        _, outputs = forward(inputs, tensors)
        return [outputs[k] for k in self.output_slot]

    def run(self, inputs: list, tensors: list) -> list:
        """The graph's outputs (a flat list, graph order) on `inputs` and `tensors`,
        connected to one new `GraphNode`."""
        state = self.generator.get_state() if self.generator is not None else None
        inner, outputs = self._forward(inputs, tensors)
        node = _new_object(GraphNode)
        node._to_save = None
        node._saved = None
        node._plan = self
        node._inner = inner
        ext = _pick(inputs, tensors, self.externals)
        node._edges = tuple(edge_of(t) for t in ext)
        node._out_meta = self.node_out_meta
        node._sequence_nr = next_sequence_nr()
        node._start = (inputs, tensors, [t._version.value for t in ext], state)
        for k, t in enumerate(outputs):
            if self.slot_carries[k]:  # (no op of the graph marks a float output: why_not_whole)
                t._grad_fn = node
                t._output_nr = k
                t._requires_grad = True
        return [outputs[k] for k in self.output_slot]

    # backward ------------------------------------------------------------------

    def backward(self, node: GraphNode, grads: tuple) -> tuple:
        """The gradients of the graph's inputs and parameters that require grad."""
        if STATE.enabled:  # create_graph=True: differentiate a recorded replay
            return self._recorded_backward(node, grads)
        inner = node._inner
        held: list = [None] * len(inner)  # per inner node: its outputs' gradients
        owned: set = set()  # (i, nr) / ("ext", k): gradients made here, held nowhere else
        for k, g in enumerate(grads):
            if g is not None:
                i, nr = self.slots[k]
                add_gradient(self._held(held, i), owned, i, nr, g, False)
        ext: list = [None] * len(self.externals)
        retain = STATE.retain_graph
        for i in range(len(inner) - 1, -1, -1):
            incoming = held[i]
            if incoming is None:
                continue
            held[i] = None
            ctx = inner[i]
            cls, routes, metas, reuses, fresh, is_view = self.steps[i]
            # (a node's one output always has its gradient: it is why the node runs)
            if len(incoming) > 1 and ctx._materialize_grads and any(
                    g is None for g in incoming):
                incoming = [_make(np.zeros(m[0], m[1])) if g is None else g
                            for g, m in zip(incoming, metas)]
            if reuses:
                ctx._owns_grad = (i, 0) in owned
            result = cls.backward(ctx, *incoming)
            if type(result) is not tuple:
                result = tuple(result) if isinstance(result, list) else (result,)
            result = _validate(ctx, result)
            if not retain:
                ctx._release()  # (as the engine frees each node: its saved arrays go now)
            # as the engine's `_hands_over`: which results are arrays nobody else holds
            if is_view:
                fresh = all(g is None or (i, nr) in owned for nr, g in enumerate(incoming))
            mine = is_view or ctx._owns_grad
            for route, g in zip(routes, result):
                if g is None or route is None:
                    continue
                new = fresh and _unshared(g, incoming, mine)
                if route[0] == "op":
                    _, j, nr = route
                    add_gradient(self._held(held, j), owned, j, nr, g, new)
                else:
                    add_gradient(ext, owned, "ext", route[1], g, new)
        # (a leaf may keep what this returns as its .grad: only arrays made here)
        return tuple(g if g is None or ("ext", k) in owned else g.clone()
                     for k, g in enumerate(ext))

    def _held(self, held: list, i: int) -> list:
        slots = held[i]
        if slots is None:
            slots = held[i] = [None] * len(self.out_meta[i])
        return slots

    def _recorded_backward(self, node: GraphNode, grads: tuple) -> tuple:
        """create_graph=True: replay the graph op by op with recording (from the random
        state the forward started from) and differentiate that copy."""
        inputs, tensors, versions, state = node._start
        ext = _pick(inputs, tensors, self.externals)
        for t, version in zip(ext, versions):
            if t._version.value != version:
                _raise_version_error(t._data.shape, t._data.dtype, "", t._version.value,
                                     version)
        # (the copy must not update batch norm's statistics a second time)
        written = [(t, t._data.copy(), t._version.value)
                   for t in _pick(inputs, tensors, self.written)]
        with enable_grad():
            # (an input may be another's ancestor, or the same tensor: model(x, x))
            inputs, tensors = stand_ins(inputs), stand_ins(tensors)
            ext = _pick(inputs, tensors, self.externals)
            if state is not None:
                now = self.generator.get_state()
                self.generator.set_state(state)
            try:
                outs = self.replay_fn(inputs, tensors)
            finally:
                if state is not None:
                    self.generator.set_state(now)
                for t, before, version in written:
                    t._data[...] = before
                    t._version.value = version
            firsts = [outs[self.output_slot.index(k)] for k in range(len(self.slots))]
            pairs = [(o, g) for o, g in zip(firsts, grads) if g is not None and o.requires_grad]
            got = autograd_grad([o for o, _ in pairs], ext, [g for _, g in pairs],
                                create_graph=True, allow_unused=True)
            return tuple(None if g is None else g.clone() for g in got)


def _pick(inputs: list, tensors: list, keys: list) -> list:
    """The call's tensors named by `keys`: ("input", k) or ("param", position)."""
    return [inputs[k] if kind == "input" else tensors[k] for kind, k in keys]
