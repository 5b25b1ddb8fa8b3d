"""The generated forward of the training replay (graph_node.py): each op's
``forward`` called on arrays, what it saved turned into saved entries, and each result
dropped after its last reader.  `WholeGraph.source` holds the generated text."""

from __future__ import annotations

import numpy as np

from .._core.function import _as_output, _new_object
from .._core.tensor import Tensor, _make
from ..jit._graph import ArrayOf, Literal, Sequence, sources
from ..onnx._trace import Source
from .traced_calls import Island, Reshaped, run_island, run_reshaped, view_base


def generate_forward(graph, positions: dict, plan, saving: bool = True):
    """The generated forward of `plan` (a `WholeGraph`): ``forward(X, P) -> (inner nodes,
    output tensors)``.  An op's result is dropped after its last reader, as eager code
    drops it: the next results then reuse memory that is still in the caches.  Without
    `saving` (a call that records nothing: `WholeGraph.run_unrecorded`) nothing an op
    saves is kept and no inner node is listed."""
    literals: list = []
    scope = {"L": literals, "K": plan.classes, "E": plan.edges, "new": _new_object,
             "nd": np.ndarray, "out1": _as_output, "outn": _outputs, "make": _make,
             "save": _save, "island": run_island, "reshaped": run_reshaped,
             "write": _write if saving else _write_unsaved,
             "FN": [getattr(node.fn, "function", None) for node in graph.nodes]}
    slot_of = {s: k for k, s in enumerate(plan.slots)}
    # Every output that is, or views, one op result shares the first one's version
    # counter, and what saved that result or a view of it is checked against it: an
    # in-place write into an output is seen there, as eagerly (a view shares its base's).
    shared = {}  # base op result -> the first output slot that is or views it
    for k, ref in enumerate(plan.slots):
        shared.setdefault(view_base(graph, Source("op", ref)).ref, k)
    # the tensor whose version counter stands for a base: an output's, or, for a result
    # that an in-place op writes into, one of its own (V), bumped by the write
    counters = {base: f"T{k}" for base, k in shared.items()}
    for node in graph.nodes:
        target = node.args[0] if node.fn._inplace and node.args else None
        if isinstance(target, Source) and target.kind == "op":
            counters.setdefault(view_base(graph, target).ref, f"V{len(counters)}")

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
    for k, ref in enumerate(plan.slots):  # (made first: saved entries check their counters)
        lines.append(f"    T{k} = make(None)")
        owner = shared[view_base(graph, Source("op", ref)).ref]
        if owner != k:
            lines.append(f"    T{k}._version = T{owner}._version")
    for name in counters.values():
        if name.startswith("V"):
            lines.append(f"    {name} = make(None)")

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
            if spec.kind == "op":
                spec = view_base(graph, spec)
                if spec.kind == "op":
                    return counters.get(spec.ref, "None")
            if spec.kind == "input":
                return f"x{spec.ref}"
            if spec.kind == "param":
                return f"p{positions[spec.ref]}"
        return "None"

    def tuple_of(items: list) -> str:
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    dying = _last_reads(graph)
    for i, node in enumerate(graph.nodes):
        cls = plan.classes[i]
        args = [array(a) for a in node.args]
        params = [(k, array(v)) for k, v in node.params.items()]
        lines.append(f"    c{i} = new(K[{i}]); c{i}._to_save = None; c{i}._saved = None; "
                     f"c{i}._edges = E[{i}]" + (f"; C.append(c{i})" if saving else ""))
        keywords = "{" + ", ".join(f"{k!r}: {v}" for k, v in params) + "}"
        if cls is Reshaped:
            lines.append(f"    o{i} = reshaped(FN[{i}], {args[0]}, {tuple_of(args[1:])}, "
                         f"{keywords})  # {node.fn.function.__name__}")
        elif cls is Island:
            needs = [str(e[0] is not None) for e in plan.edges[i]]
            lines.append(f"    o{i} = island(c{i}, FN[{i}], {tuple_of(args)}, "
                         f"{tuple_of([check(a) for a in node.args])}, {tuple_of(needs)}, "
                         f"{keywords})  # {node.fn.function.__name__}")
        elif node.fn._inplace:  # (into a buffer, or a result of the graph: why_not_whole)
            call = ", ".join([f"c{i}"] + args + [f"{k}={v}" for k, v in params])
            checks = [check(Source("op", (i, 0)))] + [check(a) for a in node.args]
            lines.append(f"    o{i} = write(c{i}, K[{i}].forward({call}), "
                         f"{tuple_of([args[0]] + args)}, {tuple_of(checks)})"
                         f"  # {node.fn.__name__}")
        else:
            call = ", ".join([f"c{i}"] + args + [f"{k}={v}" for k, v in params])
            lines.append(f"    o{i} = K[{i}].forward({call})  # {node.fn.__name__}")
            if node.n_outputs == 1:
                lines.append(f"    if type(o{i}) is not nd: o{i} = out1(c{i}, o{i})")
            else:
                lines.append(f"    o{i} = outn(c{i}, o{i})")
        for nr in range(node.n_outputs):
            if (i, nr) in slot_of:
                lines.append(f"    T{slot_of[(i, nr)]}._data = {result(i, nr)}")
        if saving and cls is node.fn and not node.fn._inplace:  # (`_write` saves its own)
            outs = [result(i, nr) for nr in range(node.n_outputs)]
            own = [check(Source("op", (i, nr))) for nr in range(node.n_outputs)]
            lines.append(f"    if c{i}._to_save is not None: save(c{i}, "
                         f"{tuple_of(outs + args)}, "
                         f"{tuple_of(own + [check(a) for a in node.args])})")
        if dying.get(i):
            lines.append(f"    del {', '.join(dying[i])}")
    outputs = ", ".join(f"T{k}" for k in range(len(plan.slots)))
    lines.append(f"    return C, [{outputs}]")
    source = "\n".join(lines) + "\n"
    if not saving:
        exec(compile(source, "<ember.compile unrecorded replay>", "exec"), scope)
        return scope["forward"]
    exec(compile(source, "<ember.compile training replay>", "exec"), scope)
    plan.source = source
    return scope["forward"]


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
                        # (a tensor of its own: the output itself would make a cycle,
                        # output -> graph node -> this entry -> output)
                        counter = check._version
                        entry = (_make(item), item, counter, counter.value, -1)
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


def _write(ctx, result, arrays: tuple, checks: tuple):
    """An in-place op's `result` written into its target, ``arrays[0]`` (a buffer, or an
    array of the graph's results), as eager code writes it: what the op saved of the
    target's old value is copied first, what it saved of its result is the written
    array, and the version of that memory, ``checks[0]``'s, moves on, so that whatever
    saved the old value raises in backward.  Returns the target's array."""
    data = arrays[0]
    items = ctx._to_save
    if items is not None:
        # (as eager code's write_inplace: the result saved is the written array, the input
        # saved is its old value)
        ctx._to_save = tuple(data if item is result else data.copy() if item is data else item
                             for item in items)
    if result is not data:
        data[...] = result
    checks[0]._version.value += 1
    if items is not None:
        _save(ctx, arrays, checks)
    return data


def _write_unsaved(ctx, result, arrays: tuple, checks: tuple):
    """`_write` for a call that records nothing: `result` into its target, whose
    version moves on; nothing saved."""
    data = arrays[0]
    if result is not data:
        data[...] = result
    checks[0]._version.value += 1
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


def _outputs(ctx, out) -> tuple:
    """A multi-output forward's results as a tuple of arrays."""
    return tuple(o if type(o) is np.ndarray else _as_output(ctx, o) for o in out)


def _param_sources(spec) -> list:
    """The parameter Sources an argument spec reads (through ArrayOf too)."""
    return [s for s in sources(spec) if s.kind == "param"]
