"""`trace`: record a module or function once, and the objects that replay the record.

A `TracedModule` shares the traced module's submodules, parameters and buffers (as
PyTorch's does), so an optimizer stepping either one moves both; its ``forward`` replays
the graph (see ``_graph.py``) instead of running the Python code.  A `ScriptFunction`
replays a traced function.  Both show their graph with ``.graph`` and ``.code``.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from .._core.grad_mode import no_grad
from .._core.tensor import Tensor
from ..nn.modules.module import Module
from ..onnx import _trace as tracing
from ..onnx._converters.functions import FUNCTIONS as ONNX_FUNCTIONS
from ..ops import sampling as _sampling
from ..autograd.function import Function as AutogradFunction
from ..ops import dropout, shape
from . import _save
from ._graph import Graph

_STATE = {"tracing": 0}


def _marker(fn) -> type:
    """A `TracedFunction` marker class standing for whole calls of `fn`."""
    return type(f"{fn.__name__}_call", (tracing.TracedFunction,), {"function": fn})


# Functions recorded as one call each and replayed by calling them again:
# - those that cut their work on the host (embedding_bag, packing: from ember.onnx);
# - the shape functions, whose ops would bake in the batch size of the example
#   (flatten(x, 1) is a view to (2, 144));
# - dropout and the samplers, whose random numbers are drawn outside any op, so that a
#   replay draws new ones;
# - custom autograd Functions, so that a replay runs their own forward and backward;
# - ``detach()`` and ``.data``, which make a tensor of the same memory without an op: a
#   replay must cut the graph there too, else gradients flow through the detached path.
_WHOLE_CALLS = [
    Tensor.detach, Tensor.data.fget,
    shape.flatten, shape.view, shape.reshape,
    dropout.dropout, dropout.dropout1d, dropout.dropout2d, dropout.dropout3d,
    dropout.alpha_dropout, dropout.feature_alpha_dropout,
    _sampling.rand, _sampling.randn, _sampling.randint, _sampling.randperm,
    _sampling.rand_like, _sampling.randn_like, _sampling.randint_like, _sampling.normal,
    _sampling.bernoulli, _sampling.multinomial, _sampling.poisson,
    AutogradFunction.apply.__func__,
]
FUNCTIONS = {**ONNX_FUNCTIONS, **{fn.__code__: _marker(fn) for fn in _WHOLE_CALLS}}


class TracerWarning(Warning):
    """The traced graph may not generalize (its replay differs from the eager run)."""


class _JitTracer(tracing.Tracer):
    """The ONNX tracer, without its refusal of in-place writes into views: a replay runs
    real ops on real views, so such writes reach their base as in the eager run."""

    def _check_inplace_view(self, cls, target) -> None:
        return None


def _record(fn, args: tuple, named: dict, module_names: dict, tracer_cls=None):
    """Run ``fn(*args)`` once under the tracer (a `_JitTracer`, or `tracer_cls`, which
    ``ember.compile`` extends); returns the Trace and what fn returned."""
    inputs = tracing.flatten_tensors(list(args))
    if not inputs:
        raise ValueError("jit.trace: example_inputs must hold at least one tensor")
    tracer = (tracer_cls or _JitTracer)(inputs, named, module_names, lambda *a: None,
                                        FUNCTIONS)
    profiler = sys.getprofile()
    tracer.install()
    sys.setprofile(tracer.profile)
    _STATE["tracing"] += 1
    try:
        # (in the caller's grad mode: under no_grad some functions pick inference-only
        # ops, such as max pooling without indices, which a training replay cannot use)
        returned = fn(*args)
    finally:
        _STATE["tracing"] -= 1
        sys.setprofile(profiler)
        tracer.uninstall()
    outputs = tracing.flatten_tensors(returned)
    if not outputs:
        raise RuntimeError("jit.trace: the traced function returned no tensor")
    sources = [tracer.source(t) for t in outputs]
    trace = tracing.Trace(tracer.records, inputs, outputs, sources, tracer.keep)
    return trace, returned


def is_tracing() -> bool:
    """True while `ember.jit.trace` runs the code it records."""
    return _STATE["tracing"] > 0


class ScriptModule(Module):
    """Base class of modules that run a recorded graph instead of Python code."""

    graph_: Graph

    @property
    def graph(self) -> str:
        """The recorded ops, one a line (``%3 = Mm(%x0, %fc1.weight)``)."""
        return self.graph_.describe()

    @property
    def code(self) -> str:
        """The same listing as `graph` (ember records ops, it does not generate code)."""
        return self.graph_.describe()

    def forward(self, *inputs):
        """Replay the graph on `inputs` with this module's current parameters and buffers."""
        named = dict(self.named_parameters(remove_duplicate=False))
        named.update((k, v) for k, v in self.named_buffers(remove_duplicate=False)
                     if v is not None)
        return self.graph_.run(tracing.flatten_tensors(list(inputs)), named)

    def save(self, f) -> None:
        """Write this module with `ember.jit.save`."""
        _save.save(self, f)


class TracedModule(ScriptModule):
    """A traced `nn.Module` (see the module docstring)."""

    def __init__(self, original: Module, graph: Graph):
        super().__init__()
        self._parameters.update(original._parameters)
        self._buffers.update(original._buffers)
        self._non_persistent_buffers_set.update(original._non_persistent_buffers_set)
        self._modules.update(original._modules)
        self.training = original.training
        self.graph_ = graph
        self.original_name = type(original).__name__

    def extra_repr(self) -> str:
        return f"original_name={self.original_name}"


class ScriptFunction:
    """A traced function: calling it replays the graph."""

    def __init__(self, graph: Graph, name: str):
        self.graph_ = graph
        self.__name__ = self.name = name

    @property
    def graph(self) -> str:
        """The recorded ops, one a line."""
        return self.graph_.describe()

    code = graph

    def __call__(self, *inputs):
        return self.graph_.run(tracing.flatten_tensors(list(inputs)), {})

    def save(self, f) -> None:
        """Write this function with `ember.jit.save`."""
        _save.save(self, f)


def trace(func, example_inputs=None, optimize=None, check_trace: bool = True,
          check_inputs=None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs: bool = True):
    """Run `func` (a Module or a function) once on `example_inputs` and return an object
    that replays the ops it called: a `TracedModule` or a `ScriptFunction`.

    As with any tracer, Python control flow and numbers read from tensors are fixed at
    their traced values.  With `check_trace` the replay is compared with the eager run
    on `example_inputs` (and on each of `check_inputs`), warning with `TracerWarning`
    where they differ.
    """
    if example_kwarg_inputs is not None:
        raise NotImplementedError("jit.trace: example_kwarg_inputs is not supported; pass "
                                  "the inputs positionally in example_inputs")
    if example_inputs is None:
        raise ValueError("jit.trace: example_inputs is required")
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    if isinstance(func, ScriptModule):
        return func
    if isinstance(func, Module):
        named = dict(func.named_parameters(remove_duplicate=False))
        named.update((k, v) for k, v in func.named_buffers(remove_duplicate=False)
                     if v is not None)
        module_names = {id(m): name for name, m in func.named_modules()}
        trace_, returned = _record(func, args, named, module_names)
        traced = TracedModule(func, Graph.from_trace(trace_, returned))
    elif callable(func):
        trace_, returned = _record(func, args, {}, {})
        traced = ScriptFunction(Graph.from_trace(trace_, returned),
                                getattr(func, "__name__", "traced_function"))
    else:
        raise TypeError(f"jit.trace: expected a Module or a function, but got "
                        f"{type(func).__name__}")
    if check_trace:
        for inputs in [args] + list(check_inputs or []):
            inputs = inputs if isinstance(inputs, tuple) else (inputs,)
            _check(func, traced, inputs, check_tolerance)
    return traced


def _check(func, traced, inputs: tuple, tolerance: float) -> None:
    """Warn when the replay's outputs differ from the eager run's."""
    with no_grad():
        expected = tracing.flatten_tensors(func(*inputs))
        got = tracing.flatten_tensors(traced(*inputs))
    if len(expected) != len(got):
        warnings.warn("jit.trace: the traced graph returns a different number of tensors "
                      "than the Python function on the check inputs", TracerWarning,
                      stacklevel=3)
        return
    for i, (e, g) in enumerate(zip(expected, got)):
        same = (tuple(e.shape) == tuple(g.shape) and e.dtype == g.dtype
                and np.allclose(_host(g), _host(e), rtol=tolerance, atol=tolerance,
                                equal_nan=True))
        if not same:
            warnings.warn(
                f"jit.trace: output {i} of the traced graph differs from the Python "
                "function's on the check inputs: the trace may depend on values or control "
                "flow of the example inputs, or on random numbers", TracerWarning,
                stacklevel=3)
            return


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def freeze(mod: ScriptModule, preserved_attrs=None, optimize_numerics: bool = True):
    """A copy of a traced module in eval mode whose parameters and buffers are constants
    of its graph (PyTorch requires eval mode too)."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("jit.freeze expects a ScriptModule (from ember.jit.trace)")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval "
                           "mode. Please call .eval() on your module before freezing.")
    arrays = {name: t.detach()._data.copy() for name, t in
              list(mod.named_parameters(remove_duplicate=False))
              + list(mod.named_buffers(remove_duplicate=False)) if t is not None}
    frozen = ScriptModule()
    frozen.graph_ = mod.graph_.with_constants(arrays)
    return frozen.eval()
