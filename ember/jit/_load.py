"""`jit.load`: a module or function from a file written by `jit.save` (``_save.py``).

Loading looks each op name up in a table of ember's own Function classes, so a file can
only run ember ops on its tensors: no code is read from it.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from .._core import dtype as dtypes
from .._core.device import device as Device
from .._core.function import Function
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..onnx._trace import Source
from ..serialization import load as load_file
from ._graph import ArrayOf, Graph, Literal, Node, Sequence, Slot
from ._save import FORMAT, _qualified
from ._script_module import FUNCTIONS, ScriptFunction, ScriptModule


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
                    int(doc["n_outputs"]), str(doc["where"]), bool(doc.get("grad", True)))

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

