"""The intermediate graph the converters build: nodes, values and initializers.

A plain, mutable description of an ONNX graph (no ``onnx`` import here): `_write.py`
turns it into a ModelProto at the end.  Values are named by strings; an empty name
stands for an omitted optional input.  Initializers are NumPy arrays.  Besides
building, the graph knows how to drop what no output needs (`prune`) and how to
replace subgraphs that depend only on initializers by their value (`fold_constants`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# NumPy dtype name -> ONNX TensorProto.DataType (the enum values are part of the format).
ONNX_TYPES = {
    "float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
    "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13, "complex64": 14,
    "complex128": 15, "bfloat16": 16,
}


@dataclass
class Node:
    """One ONNX node: ``outputs = op_type(inputs, **attrs)``."""

    op_type: str
    inputs: list
    outputs: list
    attrs: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class ValueInfo:
    """A graph input or output: name, NumPy dtype and shape (ints, or str for a named
    symbolic dim)."""

    name: str
    dtype: np.dtype
    shape: tuple


class Graph:
    """Nodes in execution order, the graph's inputs/outputs, and its initializers."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes: list[Node] = []
        self.inputs: list[ValueInfo] = []
        self.outputs: list[ValueInfo] = []
        self.initializers: dict[str, np.ndarray] = {}
        self._taken: set[str] = set()
        self._counts: dict[str, int] = {}

    # naming -------------------------------------------------------------

    def fresh(self, base: str) -> str:
        """A value/node name not used yet, derived from `base`."""
        if base not in self._taken:
            self._taken.add(base)
            return base
        n = self._counts.get(base, 0)
        while True:
            n += 1
            name = f"{base}_{n}"
            if name not in self._taken:
                self._counts[base] = n
                self._taken.add(name)
                return name

    def reserve(self, name: str) -> None:
        """Claim a name given by the user (graph inputs/outputs, parameters)."""
        if name in self._taken:
            raise ValueError(f"ONNX export: the name '{name}' is used twice in the graph")
        self._taken.add(name)

    # building -----------------------------------------------------------

    def add_node(self, op_type: str, inputs, n_outputs: int = 1, scope: str = "",
                 **attrs) -> list:
        """Append a node and return the names of its (fresh) outputs."""
        name = self.fresh(f"{scope}/{op_type}")
        outputs = [self.fresh(f"{name}_output_{i}") for i in range(n_outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(Node(op_type, list(inputs), outputs, attrs, name))
        return outputs

    def add_initializer(self, array: np.ndarray, name: str | None = None) -> str:
        """Store `array` as an initializer, under `name` (reserved) or a fresh one."""
        if name is None:
            name = self.fresh("onnx::Constant")
        else:
            self.reserve(name)
        self.initializers[name] = np.asarray(array)
        return name

    # clean-up passes ----------------------------------------------------

    def producers(self) -> dict:
        """value name -> the node that computes it."""
        return {out: node for node in self.nodes for out in node.outputs}

    def prune(self) -> None:
        """Drop nodes and initializers that no graph output depends on."""
        needed = {v.name for v in self.outputs}
        kept = []
        for node in reversed(self.nodes):
            if any(o in needed for o in node.outputs):
                kept.append(node)
                needed.update(i for i in node.inputs if i)
        self.nodes = kept[::-1]
        graph_inputs = {v.name for v in self.inputs}
        self.initializers = {k: v for k, v in self.initializers.items()
                             if k in needed or k in graph_inputs}

    def fold_constants(self, evaluate) -> int:
        """Replace every node whose inputs are all initializers by its value.

        `evaluate(node, arrays)` computes a node's outputs (a list of arrays), or returns
        None to leave the node alone.  Returns how many nodes were folded.
        """
        graph_inputs = {v.name for v in self.inputs}
        kept, folded = [], 0
        for node in self.nodes:
            names = [i for i in node.inputs if i]
            if node.op_type in _NEVER_FOLD or any(
                    n not in self.initializers or n in graph_inputs for n in names):
                kept.append(node)
                continue
            arrays = [self.initializers[i] if i else None for i in node.inputs]
            values = evaluate(node, arrays)
            if values is None or _too_big(values, arrays):
                kept.append(node)
                continue
            for name, value in zip(node.outputs, values):
                self.initializers[name] = np.asarray(value)
            folded += 1
        self.nodes = kept
        return folded


# Ops whose output is large and cheap to recompute (or random) stay in the graph.
_NEVER_FOLD = frozenset({"ConstantOfShape", "RandomNormal", "RandomUniform",
                         "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"})


def _too_big(values, arrays) -> bool:
    """A folded value much larger than what it was computed from (an Expand of a scalar,
    a Tile) would only bloat the file."""
    out = sum(np.asarray(v).nbytes for v in values)
    src = sum(a.nbytes for a in arrays if a is not None)
    return out > max(1 << 20, 4 * src)
