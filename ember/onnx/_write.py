"""Build the ONNX ModelProto from the graph with the ``onnx`` package, and evaluate
nodes for constant folding with its reference implementation."""

from __future__ import annotations

import numpy as np

from ._convert import onnx_type
from ._graph import Graph, ValueInfo


def require_onnx():
    """The ``onnx`` module, or an ImportError naming the extra to install."""
    try:
        import onnx
    except ImportError:
        raise ImportError("ONNX export needs the 'onnx' package: pip install 'ember[onnx]' "
                          "(or pip install onnx onnxruntime)") from None
    return onnx


def _tensor(onnx, array: np.ndarray, name: str = ""):
    array = np.asarray(array)
    if array.dtype.name == "bfloat16":  # stored as its raw 16-bit patterns
        raw = np.array(array, order="C").view(np.uint16).tobytes()
        return onnx.helper.make_tensor(name, onnx.TensorProto.BFLOAT16, array.shape, raw,
                                       raw=True)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
        array = array.copy(order="C")
    return onnx.numpy_helper.from_array(array, name)


def _attribute(onnx, key: str, value):
    if isinstance(value, np.ndarray):
        return onnx.helper.make_attribute(key, _tensor(onnx, value))
    if isinstance(value, (np.integer, np.bool_)):
        value = int(value)
    elif isinstance(value, np.floating):
        value = float(value)
    elif isinstance(value, (list, tuple)):
        value = [int(v) if isinstance(v, (np.integer, bool)) else
                 float(v) if isinstance(v, np.floating) else v for v in value]
    return onnx.helper.make_attribute(key, value)


def _value_info(onnx, v: ValueInfo):
    dims = [d if isinstance(d, str) else int(d) for d in v.shape]
    return onnx.helper.make_tensor_value_info(v.name, onnx_type(v.dtype), dims)


def build_model(graph: Graph, keep_initializers_as_inputs: bool, producer_version: str):
    """The ModelProto of `graph`."""
    onnx = require_onnx()
    helper = onnx.helper
    nodes = []
    for n in graph.nodes:
        node = helper.make_node(n.op_type, n.inputs, n.outputs, name=n.name)
        node.attribute.extend(_attribute(onnx, k, v) for k, v in sorted(n.attrs.items()))
        nodes.append(node)
    initializers = [_tensor(onnx, array, name) for name, array in graph.initializers.items()]
    inputs = [_value_info(onnx, v) for v in graph.inputs]
    if keep_initializers_as_inputs:
        declared = {v.name for v in graph.inputs}
        inputs += [_value_info(onnx, ValueInfo(name, a.dtype, a.shape))
                   for name, a in graph.initializers.items() if name not in declared]
    outputs = [_value_info(onnx, v) for v in graph.outputs]
    proto = helper.make_graph(nodes, "main_graph", inputs, outputs, initializers)
    opset = helper.make_opsetid("", graph.opset)
    model = helper.make_model(proto, opset_imports=[opset], producer_name="ember",
                              producer_version=producer_version)
    model.ir_version = helper.find_min_ir_version_for([opset])
    return model


class NodeEvaluator:
    """Computes one node from constant inputs with onnx's reference implementation
    (constant folding); None when it cannot."""

    def __init__(self, opset: int):
        self.opset = opset

    def __call__(self, node, arrays):
        onnx = require_onnx()
        from onnx.reference import ReferenceEvaluator

        helper = onnx.helper
        names = [f"in{i}" if a is not None else "" for i, a in enumerate(arrays)]
        outs = [f"out{i}" for i in range(len(node.outputs))]
        proto = helper.make_node(node.op_type, names, outs)
        proto.attribute.extend(_attribute(onnx, k, v) for k, v in sorted(node.attrs.items()))
        feeds = {n: a for n, a in zip(names, arrays) if n}
        try:
            evaluator = ReferenceEvaluator(proto, opsets={"": self.opset})
            values = evaluator.run(None, feeds)
        except Exception:  # noqa: BLE001 - folding is an optimization: leave the node
            return None
        return [np.asarray(v) for v in values]
