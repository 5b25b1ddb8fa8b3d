"""The replay of a captured graph as one generated, straight-line Python function.

Replaying a graph node by node (``jit._graph.Graph.run``) looks up every argument of
every op through its spec at each call.  Here the lookups are done once: each op
becomes one line of a generated function, its arguments are local names (inputs
``x0``, parameters and buffers ``p0``, op results ``o3``) or constants of the graph,
and a ``del`` after an intermediate's last use frees it where eager code would.  A
call then costs one Python call per op (``Function.apply``), nothing else::

    def replay(X, P):
        x0, = X
        o0 = f0(p1, x0, L[0], L[1], L[2], L[3])   # AddProduct  (model.py:12)
        del x0
        o1 = f1(o0)                               # Relu
        ...
        return (o4,)

An op that the model ran in another grad mode than the call's (inside a ``no_grad`` or
``enable_grad`` block) is replayed inside that block.  The source stays readable
(`Replay.source`), which is how ``describe()`` shows a compiled graph.
"""

from __future__ import annotations

from .._core.grad_mode import enable_grad, no_grad
from .._core.tensor import _make
from ..jit._graph import ArrayOf, Literal, Sequence, _fill, node_sources, sources
from ..onnx._trace import TracedFunction, flatten_tensors


class Replay:
    """`graph` (a jit Graph) as a generated function of (inputs, tensors).

    `positions` maps a parameter or buffer name to its index in the `tensors` list the
    call passes.
    """

    def __init__(self, graph, positions: dict, grad_enabled: bool = True):
        self.graph = graph
        literals: list = []
        scope: dict = {"L": literals, "make": _make, "flat": flatten_tensors,
                       "no_grad": no_grad, "enable_grad": enable_grad}
        self.source = _generate(graph, positions, literals, scope, grad_enabled)
        exec(compile(self.source, "<ember.compile replay>", "exec"), scope)
        self._fn = scope["replay"]

    def __call__(self, inputs: list, tensors: list):
        """The graph's outputs, in the structure the traced call returned."""
        return _fill(self.graph.template, self._fn(inputs, tensors))


def _generate(graph, positions: dict, literals: list, scope: dict,
              grad_enabled: bool) -> str:
    names = _Names(graph, positions, literals)
    last_use = _last_uses(graph)
    n_inputs = len(graph.input_shapes)
    lines = ["def replay(X, P):"]
    if n_inputs:
        lines.append(f"    {', '.join(f'x{i}' for i in range(n_inputs))}, = X")
    used = sorted({ref for ref in names.params_used()})
    for j in used:
        lines.append(f"    p{j} = P[{j}]")
    dying: dict[int, list] = {}
    for name, i in last_use.items():
        dying.setdefault(i, []).append(name)
    for i, node in enumerate(graph.nodes):
        fn = f"f{i}"
        direct = not issubclass(node.fn, TracedFunction)
        scope[fn] = node.fn.apply if direct else node.fn.function
        args = [names.of(a) for a in node.args]
        args += [f"{k}={names.of(v)}" for k, v in node.params.items()]
        call = f"{fn}({', '.join(args)})"
        if not (direct and node.n_outputs == 1):
            call = f"flat({call})"  # (results read as o{i}[j])
        label = node.fn.function.__name__ if not direct else node.fn.__name__
        if node.grad == grad_enabled:
            lines.append(f"    o{i} = {call}  # {label}  ({node.where})")
        else:  # (the model switched grad mode around it: no_grad or enable_grad blocks)
            mode = "enable_grad" if node.grad else "no_grad"
            lines.append(f"    with {mode}():\n        o{i} = {call}  # {label}  ({node.where})")
        if dying.get(i):
            lines.append(f"    del {', '.join(sorted(dying[i]))}")
    outputs = [names.of(s) for s in graph.outputs]
    lines.append(f"    return [{', '.join(outputs)}]")
    return "\n".join(lines) + "\n"


class _Names:
    """The Python expression standing for each argument spec."""

    def __init__(self, graph, positions: dict, literals: list):
        self.graph = graph
        self.positions = positions
        self.literals = literals
        self._params: set = set()

    def params_used(self) -> set:
        # (one pass over every spec, so that the parameters' names are known up front)
        for node in self.graph.nodes:
            for spec in list(node.args) + list(node.params.values()):
                self.of(spec)
        for spec in self.graph.outputs:
            self.of(spec)
        return self._params

    def of(self, spec) -> str:
        if isinstance(spec, Literal):
            return self.literal(spec.value)
        if isinstance(spec, Sequence):
            items = [self.of(s) for s in spec.items]
            if hasattr(spec.kind, "_fields"):  # a named tuple
                return f"{self.literal(spec.kind)}({', '.join(items)})"
            inner = ", ".join(items) + ("," if len(items) == 1 else "")
            body = f"({inner})" if spec.kind is tuple else f"[{inner}]"
            return body if spec.kind in (tuple, list) else f"{self.literal(spec.kind)}({body})"
        if isinstance(spec, ArrayOf):
            return f"{self.of(spec.source)}._data"
        kind, ref = spec
        if kind == "input":
            return f"x{ref}"
        if kind == "param":
            self._params.add(self.positions[ref])
            return f"p{self.positions[ref]}"
        if kind == "op":
            record, output = ref
            node = self.graph.nodes[record]
            direct = not issubclass(node.fn, TracedFunction) and node.n_outputs == 1
            return f"o{record}" if direct else f"o{record}[{output}]"
        return f"make({self.literal(ref)})"  # a constant made inside forward: new each call

    def literal(self, value) -> str:
        if _plain(value):
            return repr(value)
        for k, known in enumerate(self.literals):
            if known is value:
                return f"L[{k}]"
        self.literals.append(value)
        return f"L[{len(self.literals) - 1}]"


def _plain(value) -> bool:
    """A value whose repr reads back as itself (written into the source as is)."""
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return value == value and abs(value) != float("inf")
    return type(value) is tuple and all(_plain(v) for v in value)


def _last_uses(graph) -> dict:
    """Local name -> index of the node after which nothing reads it (graph outputs are
    never released; inputs and op results are)."""
    last: dict = {}

    def read(source, i):
        if source.kind == "op":
            last[f"o{source.ref[0]}"] = i
        elif source.kind == "input":
            last[f"x{source.ref}"] = i

    for i, node in enumerate(graph.nodes):
        last.setdefault(f"o{i}", i)  # (a result nothing reads: dropped at once)
        for source in node_sources(node):
            read(source, i)
    for spec in graph.outputs:
        for source in sources(spec):
            read(source, len(graph.nodes))
    return {name: i for name, i in last.items() if i < len(graph.nodes)}

