"""Capture, guard and replay: what a call of a compiled module or function does.

The first call with a given `signature` (the inputs' shapes, dtypes and
``requires_grad``, the grad mode, every submodule's ``training`` flag and the
parameters' shapes and dtypes) runs the model eagerly under the jit tracer
(``ember/jit/``), so that call's result *is* the eager result, and keeps the recorded
ops as a `CompiledGraph`: known sequences of ops replaced by fused ones
(``patterns.py``), elementwise chains fused into generated kernels (``fusion.py``),
every op a line of one generated replay function (``replay.py``) that calls
``Function.apply``, so autograd records the replayed ops and ``backward()`` runs their
backward formulas and the fused ops' own backward kernels.  A call that needs gradients
runs the training replay instead where it can (``graph_node.py``): the ops on arrays,
under one autograd node for the whole graph.  Later calls with the same signature
replay the graph without running the Python code of ``forward``.

Where a graph cannot stand for the code, the call runs as written (``runner.py``):
keyword arguments, arguments that are neither tensors nor plain numbers, no tensor
argument, module hooks, an active profiler or autocast region; and, found while
capturing, a tensor's values read into Python (``item()``, ``if t.sum() > 0``: control
flow that a graph would freeze), a closure's tensor that requires grad, an in-place
write into a tensor made inside the call, or no tensor returned.
"""

from __future__ import annotations

import inspect
import os
import warnings

import numpy as np

from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Tensor
from ..jit._graph import ArrayOf, Graph, Literal, Node, Sequence, _fill
from ..jit._script_module import _JitTracer, _marker, _record
from ..nn.modules._hooks import any_hooks
from ..onnx._trace import Source, flatten_tensors
from ..ops import _native as native
from ..ops import creation
from ..ops.activation import _rrelu_noise
from ..ops.attention import multi_head_attention_forward
from ..ops.indexing import mask_positions
from ..ops.loss_margin import ctc_loss
from ..random import default_generator
from .fusion import FusedElementwise, find_chains
from .graph_node import WholeGraph, why_not_whole
from .patterns import find_inference_batch_norm, find_linear, find_masked_softmax
from .replay import Replay

EAGER = "eager"  # a cache entry: this signature runs the Python code

# Tensor methods that hand a tensor's values to Python: seen while tracing, they mean
# the code may branch on data, which a recorded graph cannot follow.
_VALUE_READS = frozenset(getattr(Tensor, name).__code__ for name in (
    "item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__"))
# ember functions that compute from tensor values outside any op, which a graph would
# freeze: ctc_loss's lengths and alignments, rrelu's random slopes in training, a boolean
# mask's positions in an index (their own code: ctc_loss's decorator, which every loss
# shares, is not a value read)
_VALUE_READS |= frozenset(inspect.unwrap(fn).__code__
                          for fn in (ctc_loss, _rrelu_noise, mask_positions))
# Where the functions whose results `_CompileTracer` checks live (ember's ops), and those of
# them whose new tensors depend on their arguments' shapes, dtypes and devices only.
_OPS_DIR = os.path.dirname(inspect.getfile(_rrelu_noise))
_SHAPE_ONLY = frozenset(inspect.unwrap(fn).__code__ for fn in (
    creation._filled_like, creation.zeros_like, creation.ones_like, creation.empty_like,
    creation.full_like, creation.new_zeros))
_RESULTS = (Tensor, tuple, list)


class _CompileTracer(_JitTracer):
    """The jit tracer, also noting what a graph could not replay faithfully: reads of
    tensor values into Python (and tensors made from them outside any op), and tensors
    from outside the call that require grad (a closure's weights: a graph would hold them
    as constants)."""

    value_reads = 0
    outside_grad = 0
    single_tuples = 0  # ops that returned a tuple of one tensor (see `op`)

    def __init__(self, *args, **kwargs):
        self._bound: list = []  # (array, Source) of every traced tensor, for `source`
        super().__init__(*args, **kwargs)

    def profile(self, frame, event, arg) -> None:
        if event == "call" and frame.f_code in _VALUE_READS and not self._paused:
            self.value_reads += 1
        elif (event == "return" and not self._paused and isinstance(arg, _RESULTS)
              and frame.f_code.co_filename.startswith(_OPS_DIR)
              and frame.f_code not in _SHAPE_ONLY and self._untracked_from_tracked(frame, arg)):
            # an ember function made a tensor from the values of a traced one outside any
            # op (argsort, unique, bincount: integer results that need no gradient): a
            # graph would hold it as a constant computed from the first call's values
            self.value_reads += 1
        super().profile(frame, event, arg)

    def op(self, cls, args, params):
        out = super().op(cls, args, params)
        if type(out) is tuple and len(out) == 1:
            # (the graph records one output, and the replay would hand on the tuple)
            self.single_tuples += 1
        return out

    def _bind(self, t: Tensor, src: Source) -> None:
        super()._bind(t, src)
        self._bound.append((t._data, src))

    def source(self, obj):
        """As the jit tracer's, except for an array made outside the ops that is a traced
        one seen anew, the same elements in the same memory (``index.reshape(-1)`` of a
        vector, as index ops pass their indices): it stands for the traced array, so that
        a replay reads each call's.  (Other views are left as they were: an op's result
        may be a view of a buffer the op made, as the LSTM's final states are.)"""
        src = super().source(obj)
        if type(src) is Source and src.kind == "const":
            array = obj._data if isinstance(obj, Tensor) else obj
            if type(array) is np.ndarray and array.base is not None:
                for traced, traced_src in self._bound:
                    if (type(traced) is np.ndarray and np.may_share_memory(array, traced)
                            and array.__array_interface__ == traced.__array_interface__):
                        return traced_src
        return src

    def _untracked_from_tracked(self, frame, result) -> bool:
        """Whether `result` (a tensor, or a tuple or list of them) holds a new tensor that
        is not traced while an argument of `frame`'s function is traced (an input, a
        parameter, an op's result).  (An argument handed back as it is is no new one.)"""
        code = frame.f_code
        arguments = [frame.f_locals.get(name) for name in
                     code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]]
        if not any(type(a) is Tensor and self._traced(a) for a in arguments):
            return False
        results = result if isinstance(result, (tuple, list)) else (result,)
        return any(type(r) is Tensor and not self._traced(r)
                   and not any(r is a for a in arguments) for r in results)

    def _traced(self, t: Tensor) -> bool:
        return id(t) in self._ids or id(t._data) in self._arrays

    def _snapshot(self, t: Tensor):
        if t._requires_grad:
            self.outside_grad += 1
        return super()._snapshot(t)


class UnsupportedGraphError(Exception):
    """The traced code cannot be replayed as a graph (the message says why)."""


class CompiledGraph:
    """A captured graph ready to replay, with its fused chains."""

    def __init__(self, trace, returned, named: dict, tensors: list, fuse: bool = True,
                 random: bool = False, grad_enabled: bool = True):
        graph = Graph.from_trace(trace, returned)
        for node in graph.nodes:
            target = node.args[0] if node.args else None
            if node.fn._inplace and isinstance(target, Source) and target.kind == "const":
                # (the replay would write into the one array every call shares)
                raise UnsupportedGraphError(f"{node.fn.__name__} writes in place into a "
                                            f"tensor made inside the call ({node.where})")
        meta = _metas(trace, named)
        for find in (find_masked_softmax, find_linear, find_inference_batch_norm) if fuse else ():
            found = find(graph.nodes, meta, _uses(graph))
            if found:
                graph, index = _rewritten(
                    graph, {i: node for i, (_, node) in found.items()},
                    {j for absorbed, _ in found.values() for j in absorbed})
                meta = _renumbered(meta, index)
        fuse = fuse and native.enabled()
        self.chains = find_chains(graph.nodes, meta, _uses(graph)) if fuse else []
        self.graph, index = _with_chains(graph, self.chains)
        meta = _renumbered(meta, index)
        position = {}
        for i, t in enumerate(tensors):
            position.setdefault(id(t), i)
        positions = {name: position[id(t)] for name, t in named.items()}
        self.replay = Replay(self.graph, positions, grad_enabled)
        self.whole = None  # the training replay as one node (graph_node.py), when it can be
        self.unrecorded = None  # that replay without saving, for a call that records nothing
        input_grads = [t._requires_grad for t in trace.inputs]
        param_grads = {name: t._requires_grad for name, t in named.items()}
        self.eager_training = why_not_whole(self.graph, _on_cpu(trace, named), input_grads,
                                            param_grads)
        if self.eager_training is None:
            whole = WholeGraph(self.graph, positions, meta, input_grads, param_grads,
                               self.replay._fn, random)
            if whole.wants_grad:
                self.whole = whole
            else:
                self.unrecorded = whole

    def run(self, inputs: list, tensors: list):
        """Replay on `inputs` (flat tensors) with `tensors` (the module's parameters and
        buffers, as `module_state` lists them)."""
        if (self.whole is not None and STATE.enabled and STATE.saved_hooks is None
                and not PROCESS.anomaly):
            return _fill(self.graph.template, self.whole.run(inputs, tensors))
        if self.unrecorded is not None:
            return _fill(self.graph.template, self.unrecorded.run_unrecorded(inputs, tensors))
        return self.replay(inputs, tensors)

    def describe(self) -> str:
        """The replay's generated source: one line per op, fused chains as
        ``FusedElementwise`` calls."""
        return self.replay.source


CAPTURING = [0]  # > 0 while `capture` runs (``ember.compiler.is_compiling``)

# Functions a capture under no_grad records as one call each (replayed by calling them),
# for the inference paths they take on the arrays when nothing records, which their ops
# one by one would not: multi-head attention's (~20 ops; a transformer encoder layer's
# replay took 930 us through them, 781 eagerly; 2-core Intel Xeon, 2026-12-08).
_INFERENCE_CALLS = {fn.__code__: _marker(fn) for fn in (multi_head_attention_forward,)}


def capture(fn, args: tuple, named: dict, module_names: dict, tensors: list,
            fuse: bool = True):
    """Run ``fn(*args)`` eagerly under the tracer; returns (its result, a CompiledGraph or
    the reason it cannot be replayed)."""
    tracers = []

    def make_tracer(*a):
        if not grad_enabled:   # (the last argument: the watched functions)
            a = a[:-1] + ({**a[-1], **_INFERENCE_CALLS},)
        tracers.append(_CompileTracer(*a))
        return tracers[-1]

    results = []

    def run(*a):
        results.append(fn(*a))
        return results[-1]

    CAPTURING[0] += 1
    rng_before = default_generator.get_state()._data
    grad_enabled = STATE.enabled
    try:
        trace, returned = _record(run, args, named, module_names, tracer_cls=make_tracer)
    except RuntimeError:
        if not results or flatten_tensors(results[0]):
            raise  # (an error of the model itself, as eagerly)
        return results[0], "it returns no tensor"
    finally:
        CAPTURING[0] -= 1
    tracer = tracers[0]
    if tracer.value_reads:
        return returned, "the code reads tensor values into Python (item(), bool(), ...)"
    if tracer.outside_grad:
        return returned, ("it uses a tensor that requires grad but is neither an argument "
                          "nor a parameter or buffer of the module")
    if tracer.single_tuples:
        return returned, ("an op returns a tuple of one tensor (unbind or split into one "
                          "piece), which the replay does not hand on")
    if any(_hooked(t) for rec in trace.records for t in rec.outputs):
        return returned, ("it registers hooks on tensors it computes (register_hook, "
                          "retain_grad), which a replay would not")
    random = not np.array_equal(rng_before, default_generator.get_state()._data)
    try:
        return returned, CompiledGraph(trace, returned, named, tensors, fuse, random,
                                       grad_enabled)
    except UnsupportedGraphError as exc:
        return returned, str(exc)


def _hooked(t: Tensor) -> bool:
    """Whether the call registered a hook on `t` or on its node (or retained its grad)."""
    node = t._grad_fn
    return node is not None and bool(node._tensor_prehooks or node._retained
                                     or node._hooks or node._prehooks)


def signature(args: tuple, state: tuple, tensors: list = ()):
    """What a graph is valid for (see the module docstring), `state` being the module's
    (from `module_state`) and `tensors` its parameters and buffers; None when the
    arguments cannot be guarded (then the call runs eagerly).

    It also tells which tensor arguments are the same tensor, or one of the module's
    own: a graph captured from ``f(x, x)`` reads one tensor where ``f(x, y)`` reads two.
    """
    parts = [STATE.enabled, state]
    first = {}   # id of a tensor argument -> its first position
    own = None   # id of each of the module's tensors -> its position
    for k, a in enumerate(args):
        if isinstance(a, Tensor):
            data = a._data
            if own is None:
                own = {id(t): i for i, t in enumerate(tensors)}
            same = first.setdefault(id(a), k)
            parts.append((type(data), data.shape, data.dtype, a._requires_grad, same,
                          own.get(id(a))))
        elif a is None or isinstance(a, (bool, int, float, str)):
            parts.append((type(a), a))
        else:
            return None
    return tuple(parts)


def module_state(root) -> tuple:
    """(tensors, state) of a module: its parameters and buffers in a fixed order (what a
    replay reads), and what a graph depends on: which modules, in which order, their
    ``training`` flags, and each tensor's array type, shape, dtype and requires_grad.
    (None, None) when a module has hooks (or global module hooks are set).

    One plain walk of the ``_modules`` dicts, breadth first: ``named_parameters()`` builds
    every name anew, which costs more than a small model's replay.  NOTE: it runs on
    every call of a compiled module, right after the previous step's products have
    pushed the interpreter's data out of the core's caches: the MLP benchmark's took
    ~39 us there as three walks with a hook test per module (~10 us warm).
    """
    if any_hooks(root):
        return None, None  # (hooks are Python code that a replay would skip)
    modules = [root]
    flags, tensors, buffers = [], [], []
    for m in modules:  # (the list grows as it is walked)
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks \
                or m._backward_pre_hooks:
            return None, None
        flags.append((id(m), m.training))
        for child in m._modules.values():
            if child is not None:
                modules.append(child)
        for t in m._parameters.values():
            if t is not None:
                tensors.append(t)
        for t in m._buffers.values():
            if t is not None:
                buffers.append(t)
    tensors += buffers
    state = (tuple(flags), tuple([(type(t._data), t._data.shape, t._data.dtype,
                                   t._requires_grad) for t in tensors]))
    return tensors, state


def eager_reason() -> str | None:
    """Why calls must run eagerly right now, or None."""
    if PROCESS.observer is not None:
        return "a profiler, autocast or checkpoint region is active"
    return None


def warn_eager(what: str, reason: str) -> None:
    """Say once per compiled object that a signature runs eagerly."""
    warnings.warn(f"ember.compile: {what} runs eagerly for these inputs: {reason}",
                  RuntimeWarning, stacklevel=4)


# ---------------------------------------------------------------------------
# building the replayed graph


def _metas(trace, named: dict):
    """``meta(source) -> (shape, dtype)`` for the tensors of one trace."""
    def meta(src):
        if src.kind == "op":
            record, output = src.ref
            t = trace.records[record].outputs[output]
        elif src.kind == "input":
            t = trace.inputs[src.ref]
        elif src.kind == "param":
            t = named[src.ref]
        else:
            return (tuple(src.ref.shape), src.ref.dtype)
        return (tuple(t._data.shape), t._data.dtype)
    return meta


def _uses(graph: Graph) -> dict:
    """How many times each op output ``(record, output)`` is read, outputs included."""
    uses: dict = {}

    def visit(spec):
        if isinstance(spec, Sequence):
            for item in spec.items:
                visit(item)
        elif isinstance(spec, ArrayOf):
            visit(spec.source)
        elif isinstance(spec, Source) and spec.kind == "op":
            uses[spec.ref] = uses.get(spec.ref, 0) + 1

    for node in graph.nodes:
        for spec in list(node.args) + list(node.params.values()):
            visit(spec)
    for spec in graph.outputs:
        visit(spec)
    return uses


def _with_chains(graph: Graph, chains: list) -> tuple:
    """(`graph` with each chain's members replaced by one FusedElementwise node at the
    place of its last member, {old op index: new one})."""
    replace = {chain.nodes[-1]: Node(FusedElementwise, tuple(chain.leaves),
                                     {"chain": Literal(chain)}, 1,
                                     graph.nodes[chain.nodes[-1]].where)
               for chain in chains}
    return _rewritten(graph, replace, {j for chain in chains for j in chain.nodes[:-1]})


def _renumbered(meta, index: dict):
    """`meta` for a graph whose op indices `_rewritten` renumbered by `index`."""
    old_of = {new: old for old, new in index.items()}

    def meta_after(src):
        if src.kind == "op":
            return meta(Source("op", (old_of[src.ref[0]], src.ref[1])))
        return meta(src)
    return meta_after


def _rewritten(graph: Graph, replace: dict, dropped: set) -> tuple:
    """(`graph` with the nodes at the indices of `replace` swapped for its nodes and those
    in `dropped` left out, {old op index: new one})."""
    index: dict[int, int] = {}
    nodes = []
    for i, node in enumerate(graph.nodes):
        if i in dropped:
            continue
        index[i] = len(nodes)
        nodes.append(replace.get(i, node))

    def remap(spec):
        if isinstance(spec, Sequence):
            return Sequence(spec.kind, tuple(remap(s) for s in spec.items))
        if isinstance(spec, ArrayOf):
            return ArrayOf(remap(spec.source))
        if isinstance(spec, Source) and spec.kind == "op":
            return Source("op", (index[spec.ref[0]], spec.ref[1]))
        return spec

    nodes = [Node(n.fn, tuple(remap(a) for a in n.args),
                  {k: remap(v) for k, v in n.params.items()}, n.n_outputs, n.where, n.grad)
             for n in nodes]
    return Graph(nodes, graph.input_shapes, [remap(s) for s in graph.outputs],
                 graph.template), index


def _on_cpu(trace, named: dict) -> bool:
    """Whether every input, parameter and buffer of a trace is a NumPy array."""
    return all(type(t._data) is np.ndarray for t in list(trace.inputs) + list(named.values()))

