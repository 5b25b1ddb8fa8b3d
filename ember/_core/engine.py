"""The backward engine: ``backward()`` and ``grad()``.

1. From the roots, walk the graph once and count, for every node, how many edges
   lead into it (its dependencies).
2. Run nodes in ready order: a node runs once every node that feeds it has run;
   among ready nodes the most recently created goes first, as in PyTorch.
3. A node's incoming gradients are summed per output before it runs; its backward
   returns one gradient per input, which is checked against the input's shape and
   dtype (broadcast inputs are summed back) and passed along its edges.
4. Leaves (AccumulateGrad nodes) add into ``.grad``; with ``autograd.grad`` the
   gradients of the requested inputs are captured instead, and only the part of
   the graph that leads to them runs.  A leaf keeps a gradient as its ``.grad``
   without a copy only when the engine owns that array and no hook has seen it:
   the engine made it in this pass (a sum of several gradients, the implicit root
   gradient), a built-in node declared it freshly allocated, or a view's node handed
   on a view of an owned gradient.  See `_add_to_buffer` and `_hands_over`.
5. A node whose class declares ``_reuses_grad`` (an activation's elementwise gradient)
   may write its result over its incoming gradient when the engine owns that array and
   nothing else can see it (`_may_overwrite`): one activation-sized array less per layer
   at the peak of the pass.
6. Unless ``retain_graph``, each node frees its saved tensors after it ran.
"""

from __future__ import annotations

import heapq
import operator

import numpy as np

from .backend import module_of
from . import accumulate as accumulate_grad
from .accumulate import AccumulateGrad, edge_of
from .node import Node
from .grad_mode import PROCESS, STATE
from .tensor import Tensor, _make, size_str


def _root_grads(outputs, grad_outputs, create_graph):
    """The gradient of each output: the caller's, or ones for a scalar; and, per output,
    whether the engine made it (the caller's tensor must never become a ``.grad``)."""
    grads, made = [], []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"backward: expected a Tensor, got {type(out).__name__}")
        if not out._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        g = None if grad_outputs is None else grad_outputs[i]
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._data.dtype.kind != "f" and out.dtype.name != "bfloat16":
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{out.dtype}"
                )
            xp = _xp(out._data)
            g = _make(xp.ones(out._data.shape, dtype=out._data.dtype))
            made.append(True)
            grads.append(g)
            continue
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradient must be a Tensor or None, got {type(g).__name__}")
        elif g._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {size_str(g._data.shape)} "
                f"and output[{i}] has a shape of {size_str(out._data.shape)}."
            )
        if g._data.dtype != out._data.dtype:
            # as in PyTorch, the backward runs in the output's dtype: a float32 gradient
            # of a float64 output is cast first, not rounded with each formula's result
            g = g.to(out.dtype)
        if not create_graph:
            g = g.detach()
        made.append(False)
        grads.append(g)
    return grads, made


def _xp(array):
    return np if type(array) is np.ndarray else module_of(array)


def _count_dependencies(roots) -> dict:
    """Number of edges leading into each node reachable from the roots."""
    deps = {}
    seen = set()
    stack = [node for node in roots]
    for node in roots:
        seen.add(node)
    while stack:
        node = stack.pop()
        for child, _ in node._edges:
            if child is None:
                continue
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return deps


def _nodes_needed(roots, targets: set) -> set:
    """Nodes from which some target node can be reached (the part of the graph to run)."""
    needed = set()
    state = {}  # node -> True once all children are visited
    for root in roots:
        if root in state:
            continue
        stack = [(root, iter(root._edges))]
        state[root] = False
        while stack:
            node, children = stack[-1]
            advanced = False
            for child, _ in children:
                if child is None or child in state:
                    if child is not None and child in needed:
                        needed.add(node)
                    continue
                state[child] = False
                stack.append((child, iter(child._edges)))
                advanced = True
                break
            if advanced:
                continue
            stack.pop()
            state[node] = True
            if node in targets or any(c in needed for c, _ in node._edges if c is not None):
                needed.add(node)
    # A node runs when its gradient flows on towards a target.  A target itself runs only
    # when another target lies beyond it: as in PyTorch, capturing a non-leaf's gradient
    # neither runs nor frees its grad_fn.
    return {n for n in state if any(c in needed for c, _ in n._edges if c is not None)}


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 accumulate=True, allow_unused=False):
    """The engine.  Returns the captured gradients of `inputs` when ``accumulate`` is False."""
    outputs = tuple(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads, made = _root_grads(outputs, grad_outputs, create_graph)
    root_edges = [edge_of(out) for out in outputs]

    # What to capture: for each input, the node (and output slot) its gradient reaches.
    captures = None
    if inputs is not None:
        captures = {}
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"inputs must be Tensors, got {type(t).__name__}")
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            captures.setdefault(edge_of(t), []).append(i)

    buffers: dict = {}
    owned: set = set()  # see _add_to_buffer
    for (node, nr), g, own in zip(root_edges, grads, made):
        _add_to_buffer(buffers, owned, node, nr, g, own)
    roots = list(dict.fromkeys(node for node, _ in root_edges))
    deps = _count_dependencies(roots)
    needed = None
    if captures is not None:
        needed = _nodes_needed(roots, {node for node, _ in captures})

    captured = [None] * (len(inputs) if inputs is not None else 0)
    prev_enabled, prev_retain = STATE.enabled, STATE.retain_graph
    STATE.enabled, STATE.retain_graph = create_graph, retain_graph
    try:
        ready = [(-n._sequence_nr, id(n), n) for n in roots if deps.get(n, 0) == 0]
        heapq.heapify(ready)
        heappop, heappush = heapq.heappop, heapq.heappush  # (locals: this loop is hot)
        while ready:
            _, _, node = heappop(ready)
            node_grads = buffers.pop(node, None)
            if node_grads is None:
                node_grads = [None] * max(len(node._out_meta), 1)
            if node._tensor_prehooks or node._retained:
                node_grads = _run_tensor_hooks(node, node_grads)
            is_leaf = type(node) is AccumulateGrad
            if captures is not None and not is_leaf:
                for nr, g in enumerate(node_grads):
                    for i in captures.get((node, nr), ()):
                        captured[i] = g
            if is_leaf:
                g = node_grads[0]
                if g is None:
                    continue
                own = (node, 0) in owned
                extra = node.variable._extra
                if extra is not None and extra.hooks:  # the user's code sees `g`
                    g = node.run_hooks(g)
                    own = False
                if captures is not None:
                    for i in captures.get((node, 0), ()):
                        captured[i] = g
                        own = False
                if accumulate and (captures is None or (node, 0) in captures):
                    node.accumulate(g, create_graph, own)
                continue
            if needed is not None and node not in needed:
                continue
            if node._reuses_grad:
                node._owns_grad = _may_overwrite(node, owned, create_graph, captures)
            in_grads = _call_node(node, node_grads, retain_graph)
            hands_over = node._may_hand_over and captures is None \
                and _hands_over(node, node_grads, owned, in_grads)
            for (child, nr), g in zip(node._edges, in_grads):
                if child is None:
                    continue
                if g is not None:  # _add_to_buffer, with the usual case (a first gradient) inline
                    slots = buffers.get(child)
                    if slots is None:
                        slots = buffers[child] = _new_slots(child, nr)
                    if slots[nr] is None:
                        slots[nr] = g
                        if hands_over and _unshared(g, node_grads, node._is_view
                                                    or node._owns_grad or node._passes_grad,
                                                    node._grads_are_slices):
                            owned.add((child, nr))
                    else:
                        _sum_into(slots, owned, child, nr, g)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    heappush(ready, (-child._sequence_nr, id(child), child))
    finally:
        STATE.enabled, STATE.retain_graph = prev_enabled, prev_retain

    if captures is not None and not accumulate:
        for i, g in enumerate(captured):
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
        return captured
    if captures is not None:
        # backward(inputs=...) on non-leaf inputs accumulates into their .grad, and from
        # then on they retain their grad (as in PyTorch); retained ones were filled above.
        for t, g in zip(inputs, captured):
            if g is not None and t._grad_fn is not None and not t.retains_grad:
                if t._grad is not None:
                    t._grad = t._grad + g
                else:  # a copy: `g` may be the caller's gradient, or reach other tensors
                    t._grad = g.clone() if create_graph else _make(g._data.copy())
                t.retain_grad()
    return None


def _add_to_buffer(buffers: dict, owned: set, node: Node, nr: int, g: Tensor,
                   made_here: bool = False) -> None:
    """Add gradient `g` into output `nr` of `node`'s buffer.

    `owned` holds the (node, nr) slots whose gradient the engine made itself in this pass
    (`made_here`, or a sum of two gradients), which nothing outside the engine holds: the
    next gradient is added into it in place, and a leaf may keep it as its ``.grad``
    without a copy.  Every other gradient (a node's result, the caller's, a hook's) may
    be held elsewhere too, and is never written to.
    """
    slots = buffers.get(node)
    if slots is None:
        slots = buffers[node] = _new_slots(node, nr)
    add_gradient(slots, owned, node, nr, g, made_here)


def add_gradient(slots: list, owned: set, key, nr: int, g: Tensor, made_here: bool) -> None:
    """Put `g` into ``slots[nr]``, or add it to the gradient already there; `key` names
    the slots' node in `owned` (see `_add_to_buffer`)."""
    if slots[nr] is None:
        slots[nr] = g
        if made_here:
            owned.add((key, nr))
    else:
        _sum_into(slots, owned, key, nr, g)


def _hands_over(node: Node, grads: list, owned: set, results: tuple) -> bool:
    """Whether the engine owns the gradients `node` just returned (`results`; see
    `_unshared`).

    Two kinds of built-in nodes hand the engine arrays nobody else holds: a node whose
    class declares ``_fresh_grads`` (its backward allocates each input's gradient) and a
    view's node, whose gradient is a view of its incoming one when the engine owned that
    (as is the incoming array a ``_reuses_grad`` node wrote over).  A
    ``_grads_are_slices`` node (cat, stack) hands on disjoint slices of its incoming one
    likewise, and a ``_passes_grad`` node (add, sub) its incoming one where a single input
    receives it and no graph of the backward is recorded.  Hooks on the node, or on the
    tensors it made, may keep what they see: none then.
    """
    if node._hooks or node._prehooks or node._tensor_prehooks or node._retained:
        return False
    if node._fresh_grads:
        return True
    for nr, g in enumerate(grads):  # a view: every incoming gradient must be the engine's
        if g is not None and (node, nr) not in owned:
            return False
    if node._passes_grad:
        return not STATE.enabled and _each_once(results, node._edges)
    return True


def _each_once(results: tuple, edges: tuple) -> bool:
    """Whether no two of the gradients that go somewhere share an array (``a + b`` hands
    its one incoming gradient to both inputs: neither may then own it)."""
    roots = []
    for (child, _), g in zip(edges, results):
        if child is not None and g is not None:
            data = g._data
            root = data if data.base is None else data.base
            if any(root is r for r in roots):
                return False
            roots.append(root)
    return True


def _may_overwrite(node: Node, owned: set, create_graph: bool, captures) -> bool:
    """Whether `node`'s backward may write over its incoming gradient: the engine made or
    was handed that array (see `_add_to_buffer`), no hook or retained grad has seen it,
    nothing captures it, and no graph of the backward is recorded (which would save it)."""
    return ((node, 0) in owned and not create_graph and captures is None
            and not (node._hooks or node._prehooks or node._tensor_prehooks
                     or node._retained))


def _unshared(g: Tensor, incoming: list, is_view: bool, slices: bool = False) -> bool:
    """`g` may become the engine's: a writable NumPy array (not a broadcast view) that, for
    a ``_fresh_grads`` node, shares no memory with a gradient the node received; for a
    ``_grads_are_slices`` node (`slices`), a C-contiguous one."""
    data = g._data
    if type(data) is not np.ndarray:
        return False
    if not data.flags.writeable:
        return False
    if is_view:
        return True
    if slices:
        return data.flags.c_contiguous
    root = data if data.base is None else data.base
    for x in incoming:
        if x is not None:
            other = x._data
            if root is other or root is other.base:
                return False
    return True


def _new_slots(node: Node, nr: int) -> list:
    """An empty gradient buffer for `node`: one slot per output."""
    return [None] * max(len(node._out_meta), nr + 1)


# How `_sum_into` adds two gradient arrays: ``a + b`` and ``a += b``.  NumPy's operators
# until the ops layer installs its own (ops/_native_binary.py: large arrays cut over the
# threads), through `set_gradient_sum`.
_add_arrays, _add_arrays_into = operator.add, operator.iadd


def set_gradient_sum(add, add_into) -> None:
    """Make `_sum_into` add gradient arrays with ``add(a, b)`` (a new array) and
    ``add_into(a, b)`` (into `a`), and AccumulateGrad add into ``.grad`` with the latter."""
    global _add_arrays, _add_arrays_into
    _add_arrays, _add_arrays_into = add, add_into
    accumulate_grad.add_into = add_into


def _sum_into(slots: list, owned: set, node: Node, nr: int, g: Tensor) -> None:
    """Add `g` to the gradient in slot `nr` (see `_add_to_buffer`)."""
    old = slots[nr]
    if STATE.enabled or old.is_sparse or g.is_sparse:  # create_graph, or sparse gradients
        slots[nr] = g + old if old.is_sparse and not g.is_sparse else old + g
        if not (old.is_sparse or g.is_sparse):
            owned.add((node, nr))
    elif (node, nr) in owned and old._data.dtype is g._data.dtype:
        _add_arrays_into(old._data, g._data)
    else:
        total = _add_arrays(old._data, g._data)
        if type(total) is not np.ndarray:  # 0-dim NumPy sums are scalars
            total = _xp(old._data).asarray(total)
        slots[nr] = _make(total)
        owned.add((node, nr))


def _run_tensor_hooks(node: Node, grads: list) -> list:
    """Hooks registered on non-leaf tensors, then retain_grad(), per output."""
    hooks = node._tensor_prehooks
    if hooks:
        for nr, by_id in hooks.items():
            for hook in tuple(by_id.values()):
                if grads[nr] is None:
                    continue
                new = hook(grads[nr])
                if new is not None:
                    grads[nr] = new
    retained = node._retained
    if retained:
        for nr, ref in retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                if STATE.enabled:
                    t._grad = g if t._grad is None else t._grad + g
                else:
                    t._grad = _make(g._data.copy()) if t._grad is None else _make(
                        _xp(g._data).asarray(t._grad._data + g._data))
    return grads


def _call_node(node: Node, grads: list, retain_graph: bool) -> tuple:
    if node._prehooks:
        for hook in tuple(node._prehooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    # NOTE: `is None` tests, not `grads.count(None)` or `None in grads`: those compare with
    # ==, which calls Tensor.__eq__ for every gradient.
    missing = 0
    for g in grads:
        if g is None:
            missing += 1
    if missing == len(grads):
        result = (None,) * len(node._edges)
    else:
        if missing and node._materialize_grads:
            like = next(g for g in grads if g is not None)._data
            grads = [_zeros_for(meta, like) if g is None else g
                     for g, meta in zip(grads, node._out_meta)]
        try:
            if PROCESS.observer is not None:  # the profiler records the backward as one event
                result = PROCESS.observer.node(node, grads)
            elif len(grads) == 1:  # (spelled out, the call is cheaper than with *grads)
                result = type(node).backward(node, grads[0])
            else:
                result = type(node).backward(node, *grads)
            if not isinstance(result, tuple):
                result = (result,) if not isinstance(result, list) else tuple(result)
            result = _validate(node, result)
            if PROCESS.anomaly and PROCESS.anomaly_check_nan:
                _check_nan(node, result)
        except Exception:
            if PROCESS.anomaly:  # as PyTorch: point at the forward call behind the failing node
                import warnings

                warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                              f"caused the error:\n{node._anomaly_trace or '(not recorded)'}",
                              UserWarning, stacklevel=2)
            raise
    if node._hooks:
        for hook in tuple(node._hooks.values()):
            new = hook(result, tuple(grads))
            if new is not None:
                result = tuple(new)
    if not retain_graph:
        node._release()
    return result


def _zeros_for(meta, like):
    shape, dtype = meta
    return _make(_xp(like).zeros(shape, dtype=dtype))


def _validate(node: Node, grads: tuple) -> tuple:
    """Check the count, shape and dtype of a node's gradients against its inputs."""
    edges = node._edges
    n = len(edges)
    if len(grads) != n:
        if len(grads) > n and all(g is None for g in grads[n:]):
            grads = grads[:n]
        elif len(grads) < n and node._pad_grads and all(
                e[0] is None for e in edges[len(grads):]):
            grads = grads + (None,) * (n - len(grads))
        else:
            raise RuntimeError(
                f"function {node.name()} returned an incorrect number of gradients "
                f"(expected {n}, got {len(grads)})"
            )
    # NOTE: the usual case, each gradient of its input's shape and dtype, returns `grads` as
    # it is: no call, no new tuple.
    changed = None
    i = -1
    for g, (child, nr) in zip(grads, edges):
        i += 1
        if g is None:
            continue
        if child is None:  # an input that needs no gradient
            new = None
        else:
            shape, dtype = child._out_meta[nr]
            data = g._data if isinstance(g, Tensor) else None
            if data is not None and data.dtype is dtype and data.shape == shape:
                continue
            new = _conform(node, i, g, shape, dtype)
        if changed is None:
            changed = list(grads)
        changed[i] = new
    return grads if changed is None else tuple(changed)


def _conform(node: Node, i: int, g, shape: tuple, dtype) -> Tensor:
    """Gradient `g` of input `i` summed back to the input's shape and cast to its dtype."""
    if not isinstance(g, Tensor):
        raise TypeError(f"function {node.name()} returned a gradient of type "
                        f"{type(g).__name__} at index {i}; expected a Tensor or None")
    if g._data.shape != shape:
        if _broadcastable_to(shape, g._data.shape):
            g = g.sum_to_size(*shape)
        else:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - got "
                f"{list(g._data.shape)} but expected shape compatible with {list(shape)}"
            )
    if g._data.dtype != dtype:
        g = g.to(_dtype_of(dtype))
    return g


def _dtype_of(np_dtype):
    from .dtype import from_numpy_dtype

    return from_numpy_dtype(np_dtype)


def _broadcastable_to(shape, grad_shape) -> bool:
    """True when a tensor of `shape` broadcast to `grad_shape` (so sum_to_size undoes it)."""
    if len(shape) > len(grad_shape):
        return False
    for s, g in zip(reversed(shape), reversed(grad_shape)):
        if s != g and s != 1:
            return False
    return True


def _check_nan(node: Node, grads: tuple) -> None:
    for i, g in enumerate(grads):
        if g is None or g._data.dtype.kind not in "fc":
            continue
        if bool(_xp(g._data).isnan(g._data).any()):
            trace = node._anomaly_trace or "(forward trace not recorded)\n"
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its {_ordinal(i)} output.\n"
                f"The forward call that created this node was:\n{trace}"
            )


def _ordinal(i: int) -> str:
    return f"{i}th"


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None) -> None:
    """Accumulate gradients of `tensors` into the ``.grad`` of the graph's leaves."""
    tensors = (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)
    if grad_tensors is not None:
        grad_tensors = (grad_tensors,) if isinstance(grad_tensors, Tensor) else tuple(
            grad_tensors)
        if len(grad_tensors) != len(tensors):
            raise RuntimeError(
                f"got {len(grad_tensors)} gradients for {len(tensors)} tensors"
            )
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=inputs,
                 accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """The gradients of `outputs` w.r.t. `inputs`, returned (not accumulated)."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) is not supported")
    single = isinstance(inputs, Tensor)
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if single else tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if grad_outputs is not None:
        grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(
            grad_outputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    result = run_backward(outputs, grad_outputs, retain_graph, create_graph,
                          inputs=inputs, accumulate=False, allow_unused=allow_unused)
    if materialize_grads:
        result = [(_make(_xp(t._data).zeros_like(t._data)) if g is None else g)
                  for g, t in zip(result, inputs)]
    return tuple(result)
