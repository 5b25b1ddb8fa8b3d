"""Calls of whole functions inside the training replay (graph_node.py).

The tracer records some calls as one op each rather than as the ops they run (see
``ember/jit/_script_module.py``): dropout, which draws its mask outside any op; the
shape functions; ``detach()`` and ``.data``.  In the training replay, which runs every
other op on arrays, such a call becomes one inner node:

- `Reshaped`, for a flatten, view or reshape that only changes the shape: the call on a
  plain tensor, and the incoming gradient reshaped back;
- `Island`, for any other: the call runs eagerly on tensors wrapping the arrays,
  recording its own ops, and its backward runs those (directly when the call recorded
  one node, as dropout does; else through the engine).
"""

from __future__ import annotations

import inspect

import numpy as np

from .._core.accumulate import edge_of
from .._core.engine import _validate, run_backward
from .._core.function import _new_object
from .._core.grad_mode import STATE, enable_grad
from .._core.node import FREED, FREED_MESSAGE, Node, next_sequence_nr
from .._core.tensor import Tensor, _make
from ..autograd.function import Function as UserFunction
from ..jit._graph import Literal
from ..onnx._trace import Source, TracedFunction, flatten_tensors, is_array
from ..ops import shape


class Island(Node):
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
                fn, nr, size, dtype = root
                # (a stand-in with the result's place in the recorded graph, and no memory)
                t = _make(np.broadcast_to(np.zeros((), dtype), size), True)
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


def _run_single(ctx: Island, node: Node, grad) -> tuple:
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


def run_island(ctx, function, args: tuple, checks: tuple, needs: tuple, params: dict):
    """Run a traced function's call on arrays (see `Island`); its result arrays."""
    sink = _new_object(_Sink)
    sink._to_save = sink._saved = None
    sink._edges = ()
    sink._sequence_nr = next_sequence_nr()
    metas, tensors = [], []
    plain: dict = {}   # id of an array needing no gradient -> its tensor
    for k, (a, check, need) in enumerate(zip(args, checks, needs)):
        if not is_array(a):
            tensors.append(a)
            metas.append(((), None))
            continue
        if not need and id(a) in plain:
            # (one tensor for one array passed twice, as the traced call got one: the
            # function may tell them apart, as attention packs its projections when
            # query, key and value are the same tensor)
            tensors.append(plain[id(a)])
            metas.append((a.shape, a.dtype))
            continue
        t = _make(a, need)
        if not need:
            plain[id(a)] = t
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


class Reshaped(Node):
    """An inner node standing for a traced call of flatten, view or reshape that only
    changes the shape: its gradient is the incoming one seen with the input's shape."""

    _is_view = True  # (its gradient is a view of the incoming one, as a view node's)

    @staticmethod
    def backward(ctx, grad):
        node, nr = ctx._edges[0]
        return (None if node is None else grad.reshape(node._out_meta[nr][0]),)


def run_reshaped(function, array, rest: tuple, params: dict):
    """A traced flatten/view/reshape call on an array (nothing records: the tensor it
    wraps does not require grad); the result's array, a view where eager code's is."""
    return function(_make(array), *rest, **params)._data


def call_class(i: int, node, meta) -> type:
    """The inner node class of traced function call `i`: `Reshaped` for a shape change
    of one tensor, else `Island`."""
    if (node.fn.function in _VIEWING and node.n_outputs == 1 and node.args
            and isinstance(node.args[0], Source) and node.args[0].kind != "const"
            and all(isinstance(a, Literal) for a in node.args[1:])
            and all(isinstance(v, Literal) for v in node.params.values())):
        (shape_in, dtype_in), (shape_out, dtype_out) = (meta(node.args[0]),
                                                         meta(Source("op", (i, 0))))
        if dtype_in == dtype_out and np.prod(shape_in) == np.prod(shape_out):
            return Reshaped
    return Island


def writes_in_place(node) -> bool:
    """Whether a whole-function call's ``inplace`` argument is set (dropout's)."""
    names = list(inspect.signature(node.fn.function).parameters)
    if "inplace" not in names:
        return False
    at = names.index("inplace")
    spec = node.args[at] if at < len(node.args) else node.params.get("inplace")
    return not (spec is None or isinstance(spec, Literal) and not spec.value)


def cuts_graph(fn) -> bool:
    """Whether an op is a traced ``detach()`` or ``.data`` (no gradient flows through)."""
    return issubclass(fn, TracedFunction) and fn.function in (Tensor.detach,
                                                              Tensor.data.fget)


def may_view(fn) -> bool:
    """Whether an op's output may be a view of its first argument that shares its version
    counter (so that an in-place write to the base is seen by what saved the view)."""
    if issubclass(fn, TracedFunction):
        return fn.function in _VIEWING or fn.function is Tensor.detach
    return fn._is_view


_VIEWING = {shape.flatten, shape.view, shape.reshape}  # (shape changes: `Reshaped`)
# the function behind ``autograd.Function.apply``: how the tracer records a call of a
# user's Function
USER_APPLY = UserFunction.apply.__func__


def view_base(graph, spec):
    """The Source whose memory op output `spec` is, following view ops and in-place ops
    back to what they view or wrote into (`spec` itself when it is neither)."""
    while isinstance(spec, Source) and spec.kind == "op":
        node = graph.nodes[spec.ref[0]]
        if not ((may_view(node.fn) or node.fn._inplace) and node.args
                and isinstance(node.args[0], Source)):
            break
        spec = node.args[0]
    return spec
