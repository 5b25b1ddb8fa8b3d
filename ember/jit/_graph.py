"""A traced graph: the ops one run of a model called, in order, ready to run again.

`ember.jit.trace` runs the model once under the tracer of ``ember/onnx/_trace.py``, which
records each op call with where each tensor argument came from (a graph input, a
parameter or buffer by name, an earlier op's output, or a constant made inside
``forward``).  `Graph.from_trace` keeps of each record only what a replay needs: the
Function class and, per argument, either a literal value or a `Source`.

`Graph.run` replays the ops through ``Function.apply`` on new inputs and the module's
current parameters, so a traced module trains as the original does (autograd records
the replayed ops), while the Python code of ``forward`` is not run: control flow and
numbers read from tensors (``x.size(0)``, ``t.item()``) are the ones of the traced run.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field

from .._core.grad_mode import no_grad
from .._core.tensor import Tensor, _make
from ..onnx._trace import Source, TracedFunction, flatten_tensors
from .._core.nested import map_nested


@dataclass(frozen=True)
class Literal:
    """An argument that is not a tensor (a number, a shape, a dtype, ...), kept as is."""

    value: object


@dataclass(frozen=True)
class Sequence:
    """A tuple or list argument holding tensors: each item is a Literal, Source or Sequence."""

    kind: type
    items: tuple


@dataclass(frozen=True)
class ArrayOf:
    """A backend array argument that is the memory of a tracked tensor (batch norm's running
    statistics, updated in place): the replay passes that tensor's array."""

    source: Source


def sources(spec):
    """The `Source`s an argument spec reads (inside sequences and array wrappers too)."""
    if isinstance(spec, Sequence):
        for item in spec.items:
            yield from sources(item)
    elif isinstance(spec, ArrayOf):
        yield spec.source
    elif isinstance(spec, Source):
        yield spec


def node_sources(node):
    """The `Source`s a graph node reads, from its arguments and its parameters."""
    for spec in list(node.args) + list(node.params.values()):
        yield from sources(spec)


@dataclass(frozen=True)
class Node:
    """One op of the graph: ``fn.apply(*args, **params)`` (or a whole-function call)."""

    fn: type
    args: tuple
    params: dict
    n_outputs: int
    where: str
    grad: bool = True  # False: the op ran under no_grad inside the traced code


class Slot:
    """Stands for the i-th output tensor in the output template."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


@dataclass
class Graph:
    """The traced ops, the sources of the outputs and the structure they come back in."""

    nodes: list
    input_shapes: list     # the example inputs' shapes; only the first dim may change
    outputs: list          # one Source per output tensor
    template: object       # the returned structure, tensors replaced by Slots
    _release: list | None = field(default=None, repr=False)

    @classmethod
    def from_trace(cls, trace, returned) -> Graph:
        """Keep what a replay needs of a `Trace` (``ember/onnx/_trace.py``)."""
        nodes = []
        for rec in trace.records:
            args = tuple(_spec(a, s) for a, s in zip(rec.args, rec.sources))
            params = {k: _spec(v, rec.param_sources.get(k)) for k, v in rec.params.items()}
            nodes.append(Node(rec.cls, args, params, len(rec.outputs), rec.where, rec.grad))
        counter = iter(range(len(trace.outputs)))
        return cls(nodes, [tuple(t.shape) for t in trace.inputs], list(trace.output_sources),
                   _template(returned, counter))

    def run(self, inputs: list, tensors: dict):
        """Replay on `inputs` (flat list of tensors) with `tensors` (name -> parameter or
        buffer); returns the outputs in the traced structure."""
        self.check_inputs(inputs)
        env: list[tuple] = []

        def value(spec):
            if isinstance(spec, Literal):
                return spec.value
            if isinstance(spec, Sequence):
                items = [value(item) for item in spec.items]
                return spec.kind(*items) if hasattr(spec.kind, "_fields") else spec.kind(items)
            if isinstance(spec, ArrayOf):
                return _resolve(spec.source, inputs, tensors, env)._data
            return _resolve(spec, inputs, tensors, env)

        release = self._release_after()
        for i, node in enumerate(self.nodes):
            args = [value(a) for a in node.args]
            params = {k: value(v) for k, v in node.params.items()}
            with (nullcontext() if node.grad else no_grad()):
                if issubclass(node.fn, TracedFunction):
                    out = node.fn.function(*args, **params)
                else:
                    out = node.fn.apply(*args, **params)
            env.append(tuple(flatten_tensors(out)))
            del args, params, out
            for done in release[i]:
                env[done] = ()
        results = [_resolve(src, inputs, tensors, env) for src in self.outputs]
        env.clear()  # (`value` refers to itself, a cycle that would keep env alive until gc)
        return _fill(self.template, results)

    def _release_after(self) -> list:
        """For each node, the earlier nodes whose outputs nothing after it reads: the replay
        drops them there, as eager code drops its intermediates (keeping them all would
        make every large array a fresh allocation: 1.3x slower on a small CNN)."""
        if self._release is None:
            last_use = {}
            for i, node in enumerate(self.nodes):
                for source in node_sources(node):
                    if source.kind == "op":
                        last_use[source.ref[0]] = i
                last_use.setdefault(i, i)  # (an output nothing reads: dropped at once)
            for spec in self.outputs:
                for source in sources(spec):
                    if source.kind == "op":
                        last_use[source.ref[0]] = len(self.nodes)
            self._release = [[] for _ in self.nodes]
            for record, i in last_use.items():
                if i < len(self.nodes):
                    self._release[i].append(record)
        return self._release

    def check_inputs(self, inputs: list) -> None:
        """RuntimeError unless `inputs` match the example inputs in number and in shape,
        but for the first (batch) dimension: the recorded ops may hold the other sizes."""
        if len(inputs) != len(self.input_shapes):
            raise RuntimeError(f"traced graph: expected {len(self.input_shapes)} input "
                               f"tensor(s), but got {len(inputs)}")
        for i, (t, traced) in enumerate(zip(inputs, self.input_shapes)):
            if not isinstance(t, Tensor):
                raise TypeError(f"traced graph: input {i} must be a Tensor, but got "
                                f"{type(t).__name__}")
            shape = tuple(t.shape)
            if len(shape) != len(traced) or shape[1:] != traced[1:]:
                raise RuntimeError(
                    f"traced graph: input {i} has shape {list(shape)}, but the graph was "
                    f"traced with {list(traced)}; only the first dimension may differ "
                    "(trace again with an example of the new shape)")

    def with_constants(self, arrays: dict) -> Graph:
        """This graph with each parameter or buffer replaced by a constant from `arrays`
        (name -> backend array)."""
        def swap(spec):
            if isinstance(spec, Sequence):
                return Sequence(spec.kind, tuple(swap(s) for s in spec.items))
            if isinstance(spec, ArrayOf):
                return ArrayOf(swap(spec.source))
            if isinstance(spec, Source) and spec.kind == "param":
                return Source("const", arrays[spec.ref])
            return spec

        nodes = [Node(n.fn, tuple(swap(a) for a in n.args),
                      {k: swap(v) for k, v in n.params.items()}, n.n_outputs, n.where, n.grad)
                 for n in self.nodes]
        return Graph(nodes, self.input_shapes, [swap(s) for s in self.outputs], self.template)

    def describe(self) -> str:
        """The graph as text, one op a line: ``%3 = Mm(%x0, %fc1.weight)``."""
        inputs = [f"%x{i}: {list(shape)}" for i, shape in enumerate(self.input_shapes)]
        lines = [f"graph({', '.join(inputs)}):"]
        for i, node in enumerate(self.nodes):
            outs = ", ".join(f"%{i}.{j}" if j else f"%{i}" for j in range(node.n_outputs))
            name, args = node.fn.__name__, [_text(a) for a in node.args]
            if issubclass(node.fn, TracedFunction):
                name = node.fn.function.__name__
                first = node.args[0] if node.args else None
                if isinstance(first, Literal) and isinstance(first.value, type):
                    name, args = f"{first.value.__name__}.apply", args[1:]  # a custom Function
            args += [f"{k}={_text(v)}" for k, v in node.params.items()]
            lines.append(f"  {outs or '()'} = {name}({', '.join(args)})  # {node.where}")
        lines.append(f"  return ({', '.join(_text(s) for s in self.outputs)})")
        return "\n".join(lines)


def _spec(arg, source):
    """The replay form of one traced argument."""
    if source is None:
        return Literal(arg)
    if isinstance(source, list):
        if all(s is None for s in source) and not _holds_tensors(arg):
            return Literal(arg)  # (nested tuples of numbers: a shape, a conv geometry)
        return Sequence(type(arg), tuple(_spec(a, s) for a, s in zip(arg, source)))
    if not isinstance(arg, Tensor):  # a raw backend array passed to an op
        return Literal(source.ref) if source.kind == "const" else ArrayOf(source)
    return source


def _holds_tensors(obj) -> bool:
    if isinstance(obj, (tuple, list)):
        return any(_holds_tensors(o) for o in obj)
    return isinstance(obj, Tensor)


def _resolve(src: Source, inputs: list, tensors: dict, env: list):
    if src.kind == "input":
        return inputs[src.ref]
    if src.kind == "param":
        return tensors[src.ref]
    if src.kind == "op":
        record, output = src.ref
        return env[record][output]
    return _make(src.ref)  # a constant made inside forward (a new tensor each run)


def _template(obj, counter):
    """`obj` with each tensor replaced by a `Slot` (in `flatten_tensors` order)."""
    return map_nested(obj, Tensor, lambda t: Slot(next(counter)))


def _fill(template, results: list):
    """`template` with each `Slot` replaced by its entry of `results`."""
    return map_nested(template, Slot, lambda slot: results[slot.index])


def _text(spec) -> str:
    if isinstance(spec, Literal):
        value = spec.value
        return f"<array {tuple(value.shape)}>" if hasattr(value, "shape") else repr(value)
    if isinstance(spec, ArrayOf):
        return f"{_text(spec.source)}.data"
    if isinstance(spec, Sequence):
        inner = ", ".join(_text(s) for s in spec.items)
        return f"[{inner}]" if spec.kind is list else f"({inner})"
    if spec.kind == "input":
        return f"%x{spec.ref}"
    if spec.kind == "param":
        return f"%{spec.ref}"
    if spec.kind == "op":
        record, output = spec.ref
        return f"%{record}.{output}" if output else f"%{record}"
    return f"<constant {tuple(spec.ref.shape)}>"
