"""`jit.save` / `jit.load`: a traced graph and its tensors in one ``ember.save`` file.

The file holds the graph as JSON (each op named by its Function class, e.g.
``ember.ops.linalg.Mm``), the parameters and buffers by name, and the constants.  Loading
looks each op name up in a table of ember's own Function classes, so a file can only
run ember ops on its tensors: no code is read from it, and a graph that calls a user's
``autograd.Function`` cannot be saved.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from .._core import dtype as dtypes
from .._core.device import device as Device
from .._core.function import Function
from .._core.tensor import Tensor, _make
from ..autograd.function import Function as AutogradFunction
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..onnx._trace import Source, TracedFunction
from ..serialization import load as load_file
from ..serialization import save as save_file
from ._graph import ArrayOf, Graph, Literal, Node, Sequence, Slot
from ._script_module import FUNCTIONS, ScriptFunction, ScriptModule

FORMAT = "ember.jit/1"


def save(m, f, _extra_files=None) -> None:
    """Write a traced module or function (from `ember.jit.trace`) to `f`, a path (written
    atomically) or a binary file."""
    if not isinstance(m, (ScriptModule, ScriptFunction)):
        raise RuntimeError(f"jit.save: expected a traced module or function (from "
                           f"ember.jit.trace), but got {type(m).__name__}")
    if _extra_files:
        raise NotImplementedError("jit.save: _extra_files is not supported")
    writer = _Writer()
    graph = m.graph_
    doc = {
        "nodes": [writer.node(n) for n in graph.nodes],
        "input_shapes": [list(shape) for shape in graph.input_shapes],
        "outputs": [writer.spec(s) for s in graph.outputs],
        "template": writer.output_template(graph.template),
    }
    payload = {"format": FORMAT, "graph": json.dumps(doc), "constants": writer.constants}
    if isinstance(m, ScriptModule):
        params = dict(m.named_parameters())
        buffers = {k: v for k, v in m.named_buffers() if v is not None}
        first_name = {id(v): k for k, v in list(params.items()) + list(buffers.items())}
        aliases = {k: first_name[id(v)] for k, v in
                   list(m.named_parameters(remove_duplicate=False))
                   + list(m.named_buffers(remove_duplicate=False))
                   if v is not None and first_name[id(v)] != k}  # tied weights
        payload.update(kind="module", training=m.training,
                       parameters={k: v.detach() for k, v in params.items()},
                       frozen=[k for k, v in params.items() if not v.requires_grad],
                       buffers=buffers, aliases=aliases)
    else:
        payload.update(kind="function", name=m.name)
    save_file(payload, f)


def load(f, map_location=None, _extra_files=None):
    """Read a file written by `ember.jit.save`: a module or function that replays the
    traced graph.  Runs no code from the file."""
    if _extra_files:
        raise NotImplementedError("jit.load: _extra_files is not supported")
    payload = load_file(f, map_location=map_location, weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise RuntimeError("jit.load: the file was not written by ember.jit.save")
    reader = _Reader(payload["constants"])
    doc = json.loads(payload["graph"])
    graph = Graph([reader.node(n) for n in doc["nodes"]],
                  [tuple(int(d) for d in shape) for shape in doc["input_shapes"]],
                  [reader.spec(s) for s in doc["outputs"]], reader.value(doc["template"]))
    if payload["kind"] == "function":
        return ScriptFunction(graph, payload["name"])
    module = ScriptModule()
    module.graph_ = graph
    frozen = set(payload["frozen"])
    for name, t in payload["parameters"].items():
        owner, leaf = _owner(module, name)
        owner.register_parameter(leaf, Parameter(t, requires_grad=name not in frozen))
    for name, t in payload["buffers"].items():
        owner, leaf = _owner(module, name)
        owner.register_buffer(leaf, t)
    for name, target in payload["aliases"].items():
        owner, leaf = _owner(module, name)
        target_owner, target_leaf = _owner(module, target)
        if target in payload["parameters"]:
            owner.register_parameter(leaf, getattr(target_owner, target_leaf))
        else:
            owner.register_buffer(leaf, getattr(target_owner, target_leaf))
    return module.train(payload["training"])


def _owner(module: Module, name: str):
    """The submodule that holds the tensor called `name` (made on the way) and its leaf name."""
    *path, leaf = name.split(".")
    for part in path:
        child = module._modules.get(part)
        if child is None:
            child = Module()
            module.add_module(part, child)
        module = child
    return module, leaf


# ---------------------------------------------------------------------------
# the ops a file may name


def _function_classes() -> dict:
    """name -> class for every Function subclass defined inside ember, and the markers of
    whole-function records."""
    table, todo = {}, [Function]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("ember."):
            table[_qualified(cls)] = cls
    for marker in FUNCTIONS.values():
        table[_qualified(marker)] = marker
    return table


def _named_tuple_type(name: str) -> type:
    """An ember named tuple class by its qualified name, from the modules already imported
    (nothing is imported or run on behalf of a file)."""
    module_name, _, qualname = name.rpartition(".")
    cls = getattr(sys.modules.get(module_name), qualname, None) if module_name.startswith(
        "ember.") else None
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
        raise RuntimeError(f"jit.load: the file names {name!r}, which is not a record type "
                           "of this version of ember")
    return cls


def _qualified(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class _Writer:
    """Turns graph parts into JSON values; arrays go to `constants`."""

    def __init__(self):
        self.constants: dict[str, Tensor] = {}
        self.op = ""

    def node(self, node: Node) -> dict:
        fn = node.fn
        self.op = fn.__name__
        if not _qualified(fn).startswith("ember.") or (
                not issubclass(fn, TracedFunction) and fn.__qualname__ != fn.__name__):
            raise RuntimeError(f"jit.save: the graph calls {_qualified(fn)}, which is not an "
                               "ember op (a custom autograd.Function cannot be saved)")
        return {"op": _qualified(fn), "args": [self.spec(a) for a in node.args],
                "params": {k: self.spec(v) for k, v in node.params.items()},
                "n_outputs": node.n_outputs, "where": node.where}

    def spec(self, spec):
        if isinstance(spec, Literal):
            return {"lit": self.value(spec.value)}
        if isinstance(spec, Sequence):
            if spec.kind not in (tuple, list):
                raise RuntimeError(f"jit.save: {self.op} takes a {spec.kind.__name__} of "
                                   "tensors, which a saved graph cannot hold")
            return {"seq": spec.kind.__name__, "items": [self.spec(s) for s in spec.items]}
        if isinstance(spec, ArrayOf):
            return {"array_of": self.spec(spec.source)}
        ref = self._array(spec.ref) if spec.kind == "const" else spec.ref
        return {"src": spec.kind, "ref": ref}

    def _array(self, array) -> str:
        key = f"c{len(self.constants)}"
        self.constants[key] = _make(array)
        return key

    def output_template(self, template):
        self.op = "the returned value"
        return self.value(template)

    def value(self, v):
        """A literal argument as JSON (tagged where JSON has no such type)."""
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return v if np.isfinite(v) else {"float": repr(v)}
        if isinstance(v, Slot):
            return {"slot": v.index}
        if isinstance(v, tuple) and hasattr(v, "_fields"):  # ember's Geometry records
            if not type(v).__module__.startswith("ember."):
                raise RuntimeError(f"jit.save: {self.op} has an argument of type "
                                   f"{type(v).__name__}, which a saved graph cannot hold")
            return {"namedtuple": [_qualified(type(v)), [self.value(x) for x in v]]}
        if isinstance(v, tuple):
            return {"tuple": [self.value(x) for x in v]}
        if isinstance(v, list):
            return {"list": [self.value(x) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[self.value(k), self.value(x)] for k, x in v.items()]}
        if isinstance(v, slice):
            return {"slice": [self.value(v.start), self.value(v.stop), self.value(v.step)]}
        if v is Ellipsis:
            return {"ellipsis": True}
        if isinstance(v, complex):
            return {"complex": [v.real, v.imag]}
        if isinstance(v, dtypes.dtype):
            return {"dtype": v.name}
        if isinstance(v, np.dtype):
            return {"np_dtype": v.str}
        if isinstance(v, Device):
            return {"device": str(v)}
        if isinstance(v, np.generic):
            return {"np_scalar": [v.dtype.str, self.value(v.item())]}
        if isinstance(v, np.ndarray):
            return {"array": self._array(v)}
        if isinstance(v, type) and issubclass(v, AutogradFunction):
            raise RuntimeError(f"jit.save: the graph calls the custom autograd.Function "
                               f"{v.__qualname__}, which is not an ember op and cannot be saved")
        raise RuntimeError(f"jit.save: {self.op} has an argument of type "
                           f"{type(v).__name__}, which a saved graph cannot hold")


class _Reader:
    """The inverse of `_Writer`, against the table of ember's ops."""

    def __init__(self, constants: dict):
        self.constants = constants
        self.ops = _function_classes()

    def node(self, doc: dict) -> Node:
        fn = self.ops.get(doc["op"])
        if fn is None:
            raise RuntimeError(f"jit.load: the file calls {doc['op']!r}, which is not an op "
                               "of this version of ember")
        return Node(fn, tuple(self.spec(a) for a in doc["args"]),
                    {k: self.spec(v) for k, v in doc["params"].items()},
                    int(doc["n_outputs"]), str(doc["where"]))

    def spec(self, doc: dict):
        if "lit" in doc:
            return Literal(self.value(doc["lit"]))
        if "array_of" in doc:
            return ArrayOf(self.spec(doc["array_of"]))
        if "seq" in doc:
            kind = {"tuple": tuple, "list": list}[doc["seq"]]
            return Sequence(kind, tuple(self.spec(s) for s in doc["items"]))
        kind, ref = doc["src"], doc["ref"]
        if kind == "const":
            return Source("const", self._array(ref))
        if kind == "op":
            return Source("op", (int(ref[0]), int(ref[1])))
        if kind not in ("input", "param"):
            raise RuntimeError(f"jit.load: unknown tensor source {kind!r}")
        return Source(kind, ref)

    def _array(self, key: str):
        return self.constants[key]._data

    def value(self, doc):
        if not isinstance(doc, dict):
            return doc
        (tag, v), = doc.items()
        if tag == "float":
            return float(v)
        if tag == "slot":
            return Slot(int(v))
        if tag in ("tuple", "list"):
            items = [self.value(x) for x in v]
            return tuple(items) if tag == "tuple" else items
        if tag == "namedtuple":
            return _named_tuple_type(v[0])(*(self.value(x) for x in v[1]))
        if tag == "dict":
            return {self.value(k): self.value(x) for k, x in v}
        if tag == "slice":
            return slice(*(self.value(x) for x in v))
        if tag == "ellipsis":
            return Ellipsis
        if tag == "complex":
            return complex(*v)
        if tag == "dtype":
            return dtypes._dtype_by_name(v)
        if tag == "np_dtype":
            return np.dtype(v)
        if tag == "device":
            return Device(v)
        if tag == "np_scalar":
            return np.dtype(v[0]).type(self.value(v[1]))
        if tag == "array":
            return self._array(v)
        raise RuntimeError(f"jit.load: unknown value tag {tag!r}")

