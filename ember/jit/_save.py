"""`jit.save`: a traced graph and its tensors in one ``ember.save`` file.

The file holds the graph as JSON (each op named by its Function class, e.g.
``ember.ops.linalg.Mm``), the parameters and buffers by name, and the constants.  A graph
that calls a user's ``autograd.Function`` cannot be saved: `jit.load` (``_load.py``) runs
only ember's own ops.  This file knows traced objects by their ``graph_``, so that
``_script_module.py`` can import it for the ``save`` methods.
"""

from __future__ import annotations

import json

import numpy as np

from .._core import dtype as dtypes
from .._core.device import device as Device
from .._core.tensor import Tensor, _make
from ..autograd.function import Function as AutogradFunction
from ..nn.modules.module import Module
from ..onnx._trace import TracedFunction
from ..serialization import save as save_file
from ._graph import ArrayOf, Graph, Literal, Node, Sequence, Slot

FORMAT = "ember.jit/1"


def save(m, f, _extra_files=None) -> None:
    """Write a traced module or function (from `ember.jit.trace`) to `f`, a path (written
    atomically) or a binary file."""
    if not isinstance(getattr(m, "graph_", None), Graph):  # a ScriptModule or ScriptFunction
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
    if isinstance(m, Module):
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
                "n_outputs": node.n_outputs, "where": node.where, "grad": node.grad}

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
