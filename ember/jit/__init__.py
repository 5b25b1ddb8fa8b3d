"""Graph mode: `trace` records the ops a module or function runs, and the result replays
them without the Python code; `save`/`load` store a traced graph safely.

ember records graphs by tracing only: `script`, which compiles Python source, raises
NotImplementedError.  The decorators that steer the TorchScript compiler (`ignore`,
`unused`, `export`) return their function unchanged, which is what they do in eager
PyTorch too.
"""

from __future__ import annotations

from ._script_module import (
    ScriptFunction, ScriptModule, TracedModule, TracerWarning, freeze, is_tracing, trace,
)
from ._load import load
from ._save import save

__all__ = ["trace", "trace_module", "script", "save", "load", "freeze", "ScriptModule",
           "ScriptFunction", "TracedModule", "TracerWarning", "is_tracing", "is_scripting",
           "ignore", "unused", "export", "optimize_for_inference", "annotate",
           "script_if_tracing"]


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Not supported: ember has no TorchScript compiler.  Use `ember.jit.trace`."""
    raise NotImplementedError("ember.jit.script is not supported: ember records graphs by "
                              "tracing; use ember.jit.trace(model, example_inputs)")


def trace_module(mod, inputs: dict, *args, **kwargs):
    """Trace `mod.forward` with ``inputs["forward"]`` (other methods are not supported)."""
    extra = set(inputs) - {"forward"}
    if extra:
        raise NotImplementedError(f"jit.trace_module: only 'forward' can be traced, not "
                                  f"{sorted(extra)}")
    return trace(mod, inputs["forward"], *args, **kwargs)


def optimize_for_inference(mod, other_methods=None):
    """A frozen copy of a traced module in eval mode (see `freeze`); ember applies no
    further rewrites."""
    return freeze(mod)


def is_scripting() -> bool:
    """False: ember never compiles Python code to TorchScript."""
    return False


def ignore(drop=False, **kwargs):
    """Marks a function for the TorchScript compiler to leave alone: returned unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """Marks a method for the TorchScript compiler to skip: returned unchanged."""
    return fn


def export(fn):
    """Marks a method for the TorchScript compiler to compile: returned unchanged."""
    return fn


def annotate(the_type, the_value):
    """A type hint for the TorchScript compiler: returns `the_value`."""
    return the_value


def script_if_tracing(fn):
    """Compiles `fn` with TorchScript when traced in PyTorch; ember traces through it, so
    `fn` is returned unchanged."""
    return fn
