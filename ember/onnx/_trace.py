"""Tracing: run the model once while an observer records every op call.

The tracer is an ``Observer`` (see ``ember/ops/_observer.py``): ``Function.apply``
and ``Module.__call__`` hand it every op and module call while it is installed.  For
each op it keeps a `Record`: the Function class, its arguments and parameters, its
outputs, where in the user's code it was called and inside which module.  Each tensor
argument is tagged with its `Source`: a graph input, a parameter or buffer (by its
name in ``named_parameters()``/``named_buffers()``), an output of an earlier record,
or a constant (a tensor made inside ``forward`` without a traced op).

Python control flow runs once and is baked in, as with any tracer.  Modules that have
a module-level converter (an LSTM: one ONNX node instead of its unrolled steps) are
run with recording paused and kept as one record of kind ``"module"``.

A few ember functions compute part of their work on the host from tensor values
(``embedding_bag`` cuts bags at the offsets, ``pack_padded_sequence`` reads the
lengths), which no record of their ops could follow.  They are watched by code object
with a profile hook (``sys.setprofile``, for the trace's duration, however the user
imported them): a call runs with recording paused and becomes one record of kind
``"op"`` whose class is a `TracedFunction` marker and whose arguments are the call's.
"""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .._core.grad_mode import STATE as GRAD
from .._core.grad_mode import no_grad
from .._core.tensor import Tensor
from ..ops._observer import Observer, run_module, run_op
from .errors import UnsupportedOperatorError

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

STATE = {"exporting": False}


class Source(NamedTuple):
    """Where a tensor argument comes from.

    kind: ``"input"`` (ref: the input's position), ``"param"`` (ref: its name), ``"op"``
    (ref: (record index, output index)) or ``"const"`` (ref: the backend array).
    """

    kind: str
    ref: object


@dataclass
class Record:
    """One traced op (kind ``"op"``) or module call with a module converter (``"module"``)."""

    index: int
    kind: str
    cls: type
    args: tuple
    params: dict
    outputs: tuple
    sources: list
    param_sources: dict
    where: str
    scope: str
    scope_type: str
    module: object = None
    grad: bool = True  # grad mode when the op ran (False inside no_grad in the model)

    def describe(self) -> str:
        """The op, where it was called and inside which module (for error messages)."""
        what = self.cls.__name__ if self.kind == "op" else f"module {self.cls.__name__}"
        if issubclass(self.cls, TracedFunction):
            what = f"{self.cls.function.__name__}()"
        return f"{what} (called at {self.where}{self.inside()})"

    def inside(self) -> str:
        return f" inside '{self.scope}' ({self.scope_type})" if self.scope else ""


class TracedFunction:
    """Marks a record that stands for a whole call of a watched ember function (see the
    module docstring); subclasses name the function in ``function``."""

    _inplace = False
    _is_view = False
    _marks_outputs = False
    function = None


@dataclass
class Trace:
    """What one run of the model recorded."""

    records: list
    inputs: list            # the input tensors, in order
    outputs: list           # the output tensors, flattened
    output_sources: list
    keep: list = field(default_factory=list)  # keeps traced objects (and their ids) alive


def is_array(obj) -> bool:
    """A backend array (NumPy or CuPy)."""
    return hasattr(obj, "__array_interface__") or hasattr(obj, "__cuda_array_interface__")


class Tracer(Observer):
    """Records op calls (see the module docstring)."""

    def __init__(self, inputs, named_tensors: dict, module_names: dict, module_converter,
                 functions: dict | None = None):
        self.records: list[Record] = []
        self._functions = functions or {}   # code object -> TracedFunction subclass
        self._calls: list = []              # (frame, marker, args, sources) being run
        self.keep: list = []
        self._ids: dict[int, Source] = {}
        self._arrays: dict[int, Source] = {}
        for i, t in enumerate(inputs):
            self._bind(t, Source("input", i))
        for name, t in named_tensors.items():
            if id(t) not in self._ids:
                self._bind(t, Source("param", name))
        self._module_names = module_names
        self._module_converter = module_converter
        self._scopes: list[tuple[str, str]] = []
        self._paused = 0
        self._snapshots: dict = {}

    def _bind(self, t: Tensor, src: Source) -> None:
        self._ids[id(t)] = src
        self._arrays[id(t._data)] = src
        self.keep.append(t)

    # sources -------------------------------------------------------------

    def source(self, obj):
        """The Source of a tensor/array argument, a list of them for a sequence holding
        tensors, None for anything else (numbers, shapes, flags)."""
        if isinstance(obj, Tensor):
            src = self._ids.get(id(obj)) or self._arrays.get(id(obj._data))
            if src is None:
                src = Source("const", self._snapshot(obj))
            return src
        if is_array(obj) and not isinstance(obj, (type, np.generic)):  # (numbers are not)
            src = self._arrays.get(id(obj))
            if src is None:
                self.keep.append(obj)
                src = Source("const", obj)
            return src
        if isinstance(obj, (tuple, list)) and any(
                isinstance(e, (Tensor, tuple, list)) or is_array(e) for e in obj):
            return [self.source(e) for e in obj]
        return None

    def _snapshot(self, t: Tensor):
        """The values of a constant tensor as they are now (an in-place op later in forward
        must not change what an earlier op read); one copy per version of the tensor."""
        key = (id(t._data), t._version.value)
        snap = self._snapshots.get(key)
        if snap is None:
            snap = self._snapshots[key] = t._data.copy()
            self.keep.append(t)
        return snap

    # observer hooks ----------------------------------------------------------

    def op(self, cls, args, params):
        if self._paused:
            return self._run_unwatched(cls, args, params)
        if cls._inplace and args and isinstance(args[0], Tensor):
            self._check_inplace_view(cls, args[0])
        sources = [self.source(a) for a in args]
        param_sources = {k: s for k, v in params.items() if (s := self.source(v)) is not None}
        out = self._run_unwatched(cls, args, params)
        self._record("op", cls, None, args, params, sources, param_sources, out)
        return out

    def _run_unwatched(self, cls, args, params):
        """Run an op with this tracer's profile hook off.  An op's forward works on arrays
        and calls no watched function, but it may compile a numba kernel on its first
        call, and numba's compiler (Python code) ran ~4x slower with the hook seeing its
        every call (a depthwise convolution's first forward in an export: 14.6 s under
        the hook, 4.5 s without it)."""
        hook = sys.getprofile()
        if hook != self.profile:
            return run_op(self.prev, cls, args, params)
        sys.setprofile(None)
        try:
            return run_op(self.prev, cls, args, params)
        finally:
            sys.setprofile(hook)

    def module(self, module, args, kwargs):
        if self._paused:
            return run_module(self.prev, module, args, kwargs)
        name = self._module_names.get(id(module), "")
        if self._module_converter(module, args, kwargs) is not None:
            sources = [self.source(a) for a in args]
            param_sources = {k: s for k, v in kwargs.items()
                             if (s := self.source(v)) is not None}
            self._paused += 1
            try:
                out = run_module(self.prev, module, args, kwargs)
            finally:
                self._paused -= 1
            self._scopes.append((name, type(module).__name__))
            try:
                self._record("module", type(module), module, args, kwargs, sources,
                             param_sources, out)
            finally:
                self._scopes.pop()
            return out
        self._scopes.append((name, type(module).__name__))
        try:
            return run_module(self.prev, module, args, kwargs)
        finally:
            self._scopes.pop()

    def profile(self, frame, event, arg) -> None:
        """The ``sys.setprofile`` hook: a call of a watched function becomes one record."""
        if event == "call":
            marker = self._functions.get(frame.f_code)
            if marker is None or self._paused:
                return
            code = frame.f_code
            names = code.co_varnames[:code.co_argcount]
            args = tuple(frame.f_locals.get(n) for n in names)
            extra = code.co_argcount + code.co_kwonlyargcount
            if code.co_flags & inspect.CO_VARARGS:  # view(input, *shape): the shape too
                args += tuple(frame.f_locals.get(code.co_varnames[extra]))
                extra += 1
            kwargs = {n: frame.f_locals.get(n)
                      for n in code.co_varnames[code.co_argcount:][:code.co_kwonlyargcount]}
            if code.co_flags & inspect.CO_VARKEYWORDS:
                kwargs.update(frame.f_locals.get(code.co_varnames[extra]) or {})
            param_sources = {k: s for k, v in kwargs.items() if (s := self.source(v)) is not None}
            self._calls.append((frame, marker, args, [self.source(a) for a in args], kwargs,
                                param_sources))
            self._paused += 1
        elif event == "return" and self._calls and self._calls[-1][0] is frame:
            _, marker, args, sources, kwargs, param_sources = self._calls.pop()
            self._paused -= 1
            if arg is not None:  # (None: the call raised; the error propagates)
                self._record("op", marker, None, args, kwargs, sources, param_sources, arg)

    def _check_inplace_view(self, cls, target: Tensor) -> None:
        """An in-place write into a view changes its base too, which a graph of values
        cannot express; refuse it unless the base is a constant made inside forward."""
        # (views carry no view info under no_grad: follow the recorded view ops instead)
        src = self._ids.get(id(target))
        is_view = False
        while src is not None and src.kind == "op":
            rec = self.records[src.ref[0]]
            if rec.kind != "op" or not rec.cls._is_view:
                break
            is_view = True
            src = rec.sources[0]
        if is_view and src is not None and src.kind != "const":
            scope = self._scopes[-1] if self._scopes else ("", "")
            inside = f" inside '{scope[0]}' ({scope[1]})" if scope[0] else ""
            raise UnsupportedOperatorError(
                f"ONNX export: {cls.__name__} (called at {user_location()}{inside}) writes in "
                "place into a view of a tensor of the graph (like x[:, 0] = v or "
                "x[1:].add_(1)); write it out of place (torch.where, cat, index_put) instead")

    def _record(self, kind, cls, module, args, params, sources, param_sources, out) -> None:
        outputs = tuple(flatten_tensors(out))
        scope, scope_type = self._scopes[-1] if self._scopes else ("", "")
        rec = Record(len(self.records), kind, cls, tuple(args), dict(params), outputs,
                     sources, param_sources, user_location(), scope, scope_type, module,
                     GRAD.enabled)
        self.records.append(rec)
        for j, t in enumerate(outputs):
            self._bind(t, Source("op", (rec.index, j)))


def user_location() -> str:
    """``file:line`` of the innermost frame outside ember (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_EMBER_DIR):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def flatten_tensors(obj) -> list:
    """The tensors in a (nested) tuple/list/dict structure, in order."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in flatten_tensors(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in flatten_tensors(item)]
    return []


def trace(model, args: tuple, kwargs: dict, named_tensors: dict, module_names: dict,
          module_converter, functions: dict | None = None) -> Trace:
    """Run ``model(*args, **kwargs)`` once under a `Tracer`, without building a graph.

    `functions` maps the code objects of watched functions to their `TracedFunction`
    markers.  (A profiler installed with ``sys.setprofile`` is suspended meanwhile.)
    """
    inputs = flatten_tensors(list(args) + list(kwargs.values()))
    tracer = Tracer(inputs, named_tensors, module_names, module_converter, functions)
    tracer.install()
    previous = STATE["exporting"]
    STATE["exporting"] = True
    profiler = sys.getprofile()
    if functions:
        sys.setprofile(tracer.profile)
    try:
        with no_grad():
            out = model(*args, **kwargs)
    finally:
        if functions:
            sys.setprofile(profiler)
        STATE["exporting"] = previous
        tracer.uninstall()
    outputs = flatten_tensors(out)
    if not outputs:
        raise RuntimeError("ONNX export: the model returned no tensor")
    sources = [tracer.source(t) for t in outputs]
    return Trace(tracer.records, inputs, outputs, sources, tracer.keep)
