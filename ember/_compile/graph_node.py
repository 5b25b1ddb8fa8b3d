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

A graph keeps the op-by-op replay when this could differ from eager code: an in-place
op, a user's ``autograd.Function``, an op taking tensors in a list or as keywords, an
output that is an input or a view (in-place writes to it must reach what it views), or
a graph on another device than the CPU.
"""

from __future__ import annotations

import inspect

import numpy as np

from .._core.accumulate import edge_of
from .._core.engine import _unshared, _validate, add_gradient, run_backward
from .._core.function import DIFFERENTIABLE_DTYPES, _as_output, _new_object
from .._core.grad_mode import STATE, enable_grad
from .._core.node import FREED, FREED_MESSAGE, Node, _raise_version_error, next_sequence_nr
from .._core.tensor import Tensor, _make
from ..autograd import grad as autograd_grad
from ..autograd.function import Function as UserFunction
from ..jit._graph import ArrayOf, Literal, Sequence, sources
from ..onnx._trace import Source, TracedFunction, flatten_tensors, is_array
from ..ops import shape
from ..random import default_generator


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


class _Island(Node):
    """An inner node standing for a whole call of a function that the tracer keeps as
    one record (dropout, which draws its mask outside any op): the call runs eagerly on
    tensors wrapping the arrays, recording its ops, and its backward runs the engine
    over what it recorded.  It keeps no tensor of the call: the result's arrays are
    freed when the graph is done with them, as in eager code (held on, they kept later
    ops from reusing that memory while it is in the caches: the GPT's layer norms took
    95-101 us instead of 66-70)."""

    # (the one node a call like dropout records may write over its incoming gradient)
    _reuses_grad = True

    @staticmethod
    def backward(ctx, *grads):
        if ctx._saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        if ctx._single is not None and len(grads) == 1:
            return _run_single(ctx, ctx._single, grads[0])
        roots, root_grads = [], []
        for root, g in zip(ctx._roots, grads):
            if root is not None and g is not None:
                fn, nr, shape, dtype = root
                # (a stand-in with the result's place in the recorded graph, and no memory)
                t = _make(np.broadcast_to(np.zeros((), dtype), shape), True)
                t._grad_fn, t._output_nr = fn, nr
                roots.append(t)
                root_grads.append(g)
        sink = ctx._sink
        sink.grads = ()
        if roots:
            run_backward(roots, root_grads, STATE.retain_graph, False)
        got = sink.grads
        return tuple(got[k] if k < len(got) else None for k in range(len(ctx._edges)))

    def _release(self) -> None:
        self._saved = FREED
        self._roots = self._sink = self._single = None


def _run_single(ctx: _Island, node: Node, grad) -> tuple:
    """An island's backward when its call recorded one node, which reads only the
    call's arguments (dropout): that node's backward, without a pass of the engine
    (~50 us each for the GPT's dropouts)."""
    if type(node)._reuses_grad:
        node._owns_grad = ctx._owns_grad
    result = type(node).backward(node, grad)
    if type(result) is not tuple:
        result = tuple(result) if isinstance(result, list) else (result,)
    result = _validate(node, result)
    if not STATE.retain_graph:
        node._release()
    got = [None] * len(ctx._edges)
    for (child, k), g in zip(node._edges, result):
        if child is not None:
            got[k] = g
    return tuple(got)


def _single_node(outputs: list, sink) -> Node | None:
    """The node a call recorded when it is the only one: its one output's grad_fn, every
    edge of which leads to a distinct argument (or nowhere), with no hook on it."""
    if len(outputs) != 1 or not outputs[0]._requires_grad or outputs[0]._view_info is not None:
        return None
    node = outputs[0]._grad_fn
    if node is None or node is sink or node._hooks or node._prehooks:
        return None
    slots = [k for child, k in node._edges if child is not None]
    if any(child is not None and child is not sink for child, _ in node._edges) or len(
            slots) != len(set(slots)):
        return None
    return node


class _Sink(Node):
    """Where the gradients of an island's arguments arrive: the node its argument
    tensors hang from (output k: argument k).  Made before the call, it runs last."""

    _materialize_grads = False

    @staticmethod
    def backward(ctx, *grads):
        ctx.grads = grads
        return ()


def _run_island(ctx, function, args: tuple, checks: tuple, needs: tuple, params: dict):
    """Run a traced function's call on arrays (see `_Island`); its result arrays."""
    sink = _new_object(_Sink)
    sink._to_save = sink._saved = None
    sink._edges = ()
    sink._sequence_nr = next_sequence_nr()
    metas, tensors = [], []
    for k, (a, check, need) in enumerate(zip(args, checks, needs)):
        if not is_array(a):
            tensors.append(a)
            metas.append(((), None))
            continue
        t = _make(a, need)
        if need:
            t._grad_fn, t._output_nr = sink, k
        if check is not None:
            t._version = check._version  # (an input's array: its writes count here too)
        tensors.append(t)
        metas.append((a.shape, a.dtype))
    sink._out_meta = tuple(metas)
    with enable_grad():
        out = function(*tensors, **params)
    outputs = flatten_tensors(out)
    ctx._name = function.__name__
    ctx._roots = [edge_of(t) + (t._data.shape, t._data.dtype) if t._requires_grad else None
                  for t in outputs]
    ctx._sink = sink
    ctx._single = _single_node(outputs, sink)
    ctx._saved = ()
    arrays = [t._data for t in outputs]
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


class _Reshaped(Node):
    """An inner node standing for a traced call of flatten, view or reshape that only
    changes the shape: its gradient is the incoming one seen with the input's shape."""

    _is_view = True  # (its gradient is a view of the incoming one, as a view node's)

    @staticmethod
    def backward(ctx, grad):
        node, nr = ctx._edges[0]
        return (None if node is None else grad.reshape(node._out_meta[nr][0]),)


def _run_reshaped(function, array, rest: tuple, params: dict):
    """A traced flatten/view/reshape call on an array (nothing records: the tensor it
    wraps does not require grad); the result's array, a view where eager code's is."""
    return function(_make(array), *rest, **params)._data


def _call_class(i: int, node, meta) -> type:
    """The inner node class of traced function call `i`: `_Reshaped` for a shape change
    of one tensor, else `_Island`."""
    if (node.fn.function in _VIEWING and node.n_outputs == 1 and node.args
            and isinstance(node.args[0], Source) and node.args[0].kind != "const"
            and all(isinstance(a, Literal) for a in node.args[1:])
            and all(isinstance(v, Literal) for v in node.params.values())):
        (shape_in, dtype_in), (shape_out, dtype_out) = (meta(node.args[0]),
                                                         meta(Source("op", (i, 0))))
        if dtype_in == dtype_out and np.prod(shape_in) == np.prod(shape_out):
            return _Reshaped
    return _Island


class _Meta:
    """Stands for the node at the other end of an inner op's edge: all that the ops'
    backward formulas read there is the shapes and dtypes of its outputs."""

    __slots__ = ("_out_meta",)

    def __init__(self, out_meta: tuple):
        self._out_meta = out_meta


def why_not_whole(graph, on_cpu: bool, input_grads: list, param_grads: dict) -> str | None:
    """Why `graph` must keep the op-by-op replay for training, or None.  (An in-place op
    may only write into an input or buffer that needs no gradient: batch norm's count
    of batches.)"""
    if not on_cpu:
        return "not on the CPU"
    for node in graph.nodes:
        if issubclass(node.fn, TracedFunction):
            if node.fn.function is _user_apply():
                return "a user's autograd.Function"  # (it may write in place: mark_dirty)
            if _writes_in_place(node):
                return "a function call writes in place"
        if node.fn._inplace and not _writes_a_buffer(node, input_grads, param_grads):
            return "an in-place op"
        if not all(_array_sequence(a) for a in list(node.args) + list(node.params.values())
                   if isinstance(a, Sequence)):
            return "an op takes tensors in a list"
        if any(_sources(v) for v in node.params.values()):
            return "an op takes a tensor as a keyword"
    for spec in graph.outputs:
        if not (isinstance(spec, Source) and spec.kind == "op"):
            return "an output is not made by an op of the graph"
        fn = graph.nodes[spec.ref[0]].fn
        if fn._is_view or issubclass(fn, TracedFunction):
            return "an output may be a view"
    return None


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
    return not needs and all(not _sources(a) for a in node.args[1:])


def _user_apply():
    """The function behind ``autograd.Function.apply`` (how the tracer records a call of
    a user's Function)."""
    return UserFunction.apply.__func__


def _writes_in_place(node) -> bool:
    """Whether a whole-function call's ``inplace`` argument is set (dropout's)."""
    names = list(inspect.signature(node.fn.function).parameters)
    if "inplace" not in names:
        return False
    at = names.index("inplace")
    spec = node.args[at] if at < len(node.args) else node.params.get("inplace")
    return not (spec is None or isinstance(spec, Literal) and not spec.value)


def _sources(spec) -> list:
    # (an ArrayOf is an array argument: no gradient flows through it)
    return [spec] if isinstance(spec, Source) and spec.kind != "const" else []


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
                if not node.grad:  # (run under no_grad in the model: no gradient flows)
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
        # the node class whose backward runs (a traced function call's: see `_call_class`)
        self.classes = [_call_class(i, node, meta) if issubclass(node.fn, TracedFunction)
                        else node.fn for i, node in enumerate(nodes)]
        # per node, what its backward step reads (one tuple, unpacked in the hot loop)
        self.steps = [(cls, self.routes[i], self.out_meta[i], cls._reuses_grad,
                       cls._fresh_grads, cls._is_view) for i, cls in enumerate(self.classes)]
        self._forward = _generate(graph, positions, self)

    # forward -------------------------------------------------------------------

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
        ext = [inputs[k] if kind == "input" else tensors[k] for kind, k in self.externals]
        node._edges = tuple(edge_of(t) for t in ext)
        node._out_meta = self.node_out_meta
        node._sequence_nr = next_sequence_nr()
        node._start = (inputs, tensors, [t._version.value for t in ext], state)
        for k, t in enumerate(outputs):
            if self.slot_carries[k] and not _non_differentiable(inner, self.slots[k],
                                                                  t._data):
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
        ext = [inputs[k] if kind == "input" else tensors[k] for kind, k in self.externals]
        for t, version in zip(ext, versions):
            if t._version.value != version:
                _raise_version_error(t._data.shape, t._data.dtype, "", t._version.value,
                                     version)
        # (the copy must not update batch norm's statistics a second time)
        written = [(t, t._data.copy(), t._version.value) for t in
                   (inputs[k] if kind == "input" else tensors[k] for kind, k in self.written)]
        with enable_grad():
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


def _non_differentiable(nodes: list, slot: tuple, array) -> bool:
    marked = nodes[slot[0]]._non_differentiable
    return marked is not None and any(array is m for m in marked)


def _save(ctx, arrays: tuple, checks: tuple) -> None:
    """Turn what `ctx`'s forward saved into saved entries, as recording does.  `arrays`
    are its outputs' and arguments' arrays; `checks` says for each which tensor's
    version an in-place write is checked against: the input, parameter or graph output
    it is (or views), or None for an intermediate result, which no code outside reaches."""
    saved = []
    for item in ctx._to_save:
        entry = None
        if item is None or isinstance(item, Tensor):
            entry = item if item is None else (item, item._data, item._version,
                                               item._version.value, -1)
        else:
            for arr, check in zip(arrays, checks):
                if arr is item:
                    if check is not None:
                        counter = check._version
                        entry = (check if check._data is item else _make(item), item,
                                 counter, counter.value, -1)
                    break
        if entry is None and item is not None:
            entry = ((item, None, None, 0, -1) if type(item) in _SCALARS
                     else (_make(_as_array(item)), item, None, 0, -1))
        saved.append(entry)
    ctx._to_save = None
    ctx._saved = saved


_SCALARS = frozenset({int, float, bool, complex, str})


def _as_array(item):
    return item if isinstance(item, np.ndarray) else np.asarray(item)


def _generate(graph, positions: dict, plan: WholeGraph):
    """The generated forward of `plan`: ``forward(X, P) -> (inner nodes, output tensors)``
    (see the module docstring).  An op's result is dropped after its last reader, as
    eager code drops it: the next results then reuse memory that is still in the caches."""
    literals: list = []
    scope = {"L": literals, "K": plan.classes, "E": plan.edges, "new": _new_object,
             "nd": np.ndarray, "out1": _as_output, "outn": _outputs, "make": _make,
             "save": _save, "island": _run_island, "reshaped": _run_reshaped,
             "write": _write,
             "FN": [getattr(node.fn, "function", None) for node in graph.nodes]}
    slot_of = {s: k for k, s in enumerate(plan.slots)}
    lines = ["def forward(X, P):"]
    n_inputs = len(graph.input_shapes)
    if n_inputs:
        lines.append(f"    {', '.join(f'x{i}' for i in range(n_inputs))}, = X")
        lines += [f"    a{i} = x{i}._data" for i in range(n_inputs)]
    used = sorted({positions[s.ref] for node in graph.nodes for spec in
                   list(node.args) + list(node.params.values())
                   for s in _param_sources(spec)})
    for j in used:
        lines.append(f"    p{j} = P[{j}]; q{j} = p{j}._data")
    lines.append("    C = []")

    def literal(value) -> str:
        for k, known in enumerate(literals):
            if known is value:
                return f"L[{k}]"
        literals.append(value)
        return f"L[{len(literals) - 1}]"

    def array(spec) -> str:
        if isinstance(spec, Literal):
            return literal(spec.value)
        if isinstance(spec, ArrayOf):
            return array(spec.source)
        if isinstance(spec, Sequence):  # (of arrays: `_array_sequence`)
            items = [array(item) for item in spec.items]
            return tuple_of(items) if spec.kind is tuple else f"[{', '.join(items)}]"
        kind, ref = spec
        if kind == "input":
            return f"a{ref}"
        if kind == "param":
            return f"q{positions[ref]}"
        if kind == "op":
            return result(*ref)
        return literal(ref)  # a constant: its array

    def result(i: int, nr: int) -> str:
        return f"o{i}" if graph.nodes[i].n_outputs == 1 else f"o{i}[{nr}]"

    def check(spec) -> str:
        """The tensor whose version a saved argument is checked against (see `_save`)."""
        if isinstance(spec, Source):
            if spec.kind == "input":
                return f"x{spec.ref}"
            if spec.kind == "param":
                return f"p{positions[spec.ref]}"
            if spec.kind == "op" and spec.ref in slot_of:
                return f"T{slot_of[spec.ref]}"
            if spec.kind == "op" and _may_view(graph.nodes[spec.ref[0]].fn):
                return check(graph.nodes[spec.ref[0]].args[0])  # (a view shares its base's)
        return "None"

    def tuple_of(items: list) -> str:
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    dying = _last_reads(graph)
    for i, node in enumerate(graph.nodes):
        cls = plan.classes[i]
        args = [array(a) for a in node.args]
        params = [(k, array(v)) for k, v in node.params.items()]
        lines.append(f"    c{i} = new(K[{i}]); c{i}._to_save = None; c{i}._saved = None; "
                     f"c{i}._edges = E[{i}]; C.append(c{i})")
        keywords = "{" + ", ".join(f"{k!r}: {v}" for k, v in params) + "}"
        if cls is _Reshaped:
            lines.append(f"    o{i} = reshaped(FN[{i}], {args[0]}, {tuple_of(args[1:])}, "
                         f"{keywords})  # {node.fn.function.__name__}")
        elif cls is _Island:
            needs = [str(e[0] is not None) for e in plan.edges[i]]
            lines.append(f"    o{i} = island(c{i}, FN[{i}], {tuple_of(args)}, "
                         f"{tuple_of([check(a) for a in node.args])}, {tuple_of(needs)}, "
                         f"{keywords})  # {node.fn.function.__name__}")
        elif node.fn._inplace:  # (into an input or buffer: `_writes_a_buffer`)
            call = ", ".join([f"c{i}"] + args + [f"{k}={v}" for k, v in params])
            lines.append(f"    o{i} = write(K[{i}].forward({call}), {check(node.args[0])})"
                         f"  # {node.fn.__name__}")
            continue
        else:
            call = ", ".join([f"c{i}"] + args + [f"{k}={v}" for k, v in params])
            lines.append(f"    o{i} = K[{i}].forward({call})  # {node.fn.__name__}")
            if node.n_outputs == 1:
                lines.append(f"    if type(o{i}) is not nd: o{i} = out1(c{i}, o{i})")
            else:
                lines.append(f"    o{i} = outn(c{i}, o{i})")
        for nr in range(node.n_outputs):
            if (i, nr) in slot_of:
                lines.append(f"    T{slot_of[(i, nr)]} = make({result(i, nr)})")
        if cls is node.fn:
            outs = [result(i, nr) for nr in range(node.n_outputs)]
            base = check(node.args[0]) if node.fn._is_view and node.args else "None"
            own = [f"T{slot_of[(i, nr)]}" if (i, nr) in slot_of else base
                   for nr in range(node.n_outputs)]
            lines.append(f"    if c{i}._to_save is not None: save(c{i}, "
                         f"{tuple_of(outs + args)}, "
                         f"{tuple_of(own + [check(a) for a in node.args])})")
        if dying.get(i):
            lines.append(f"    del {', '.join(dying[i])}")
    outputs = ", ".join(f"T{k}" for k in range(len(plan.slots)))
    lines.append(f"    return C, [{outputs}]")
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<ember.compile training replay>", "exec"), scope)
    plan.source = source
    return scope["forward"]


def _write(result, target: Tensor):
    """An in-place op's `result` written into `target`, whose version moves on (what
    eager code does, without a node: nothing here needs a gradient); its array."""
    data = target._data
    if result is not data:
        data[...] = result
    target._version.value += 1
    return data


def _last_reads(graph) -> dict:
    """Op index -> the op results (local names) nothing reads after it."""
    last: dict = {}
    for i, node in enumerate(graph.nodes):
        last.setdefault(i, i)  # (a result nothing reads: dropped at once)
        for spec in list(node.args) + list(node.params.values()):
            for src in sources(spec):
                if src.kind == "op":
                    last[src.ref[0]] = i
    dying: dict = {}
    for j, i in last.items():
        dying.setdefault(i, []).append(f"o{j}")
    return dying


def _may_view(fn) -> bool:
    """Whether an op's output may be a view of its first argument that shares its version
    counter (so that an in-place write to the base is seen by what saved the view)."""
    if issubclass(fn, TracedFunction):
        return fn.function in _VIEWING or fn.function is Tensor.detach
    return fn._is_view


_VIEWING = {shape.flatten, shape.view, shape.reshape}  # (shape changes: `_Reshaped`)


def _outputs(ctx, out) -> tuple:
    """A multi-output forward's results as a tuple of arrays."""
    return tuple(o if type(o) is np.ndarray else _as_output(ctx, o) for o in out)


def _param_sources(spec) -> list:
    """The parameter Sources an argument spec reads (through ArrayOf too)."""
    return [s for s in sources(spec) if s.kind == "param"]
