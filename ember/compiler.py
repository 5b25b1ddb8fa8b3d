"""``torch.compile`` and ``torch.compiler``: capture a model's ops, fuse, replay.

`compile(model)` returns an object that, on the first call with given input shapes,
dtypes, ``requires_grad``, grad mode and ``training`` flags, runs the model eagerly while
recording its ops, and keeps them as a graph: chains of elementwise ops become one
generated numba kernel each (forward and backward), whose buffers are reused across
calls.  Later calls with the same signature replay the graph without the Python code
of ``forward``; autograd records the replayed ops, so ``backward()`` and optimizers
work as they do eagerly.  The machinery is in ``ember/_compile/`` and docs/compile.md.

Backends: ``"inductor"`` (the default) and ``"cudagraphs"`` capture and fuse;
``"aot_eager"`` captures and replays without fusing (to tell a fusion problem from a
capture one); ``"eager"`` runs the model as written.  For a module the result is an
`OptimizedModule` wrapping the original under ``_orig_mod``, as in PyTorch, so
state-dict keys and attribute access look the same.  A custom backend (a callable
taking an FX graph) cannot be honoured and raises.
"""

from __future__ import annotations

import functools

from ._compile import program
from ._compile.runner import CompiledFunction, reset_all
from .nn.modules.module import Module

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "disable", "reset",
           "list_backends", "OptimizedModule"]

_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")


class OptimizedModule(Module):
    """What `compile` returns for a module: the original as ``_orig_mod``, called through
    captured graphs (or as is, for the ``"eager"`` backend); attributes it does not have
    are looked up on the original."""

    def __init__(self, mod: Module, compiled: CompiledFunction | None = None):
        super().__init__()
        self._orig_mod = mod
        self._compiled = compiled

    def forward(self, *args, **kwargs):
        if self._compiled is None:
            return self._orig_mod(*args, **kwargs)
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend="inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False, **kwargs):
    """`model` (a Module or a function) compiled: a wrapper that captures and replays its
    ops (see the module docstring).  Without `model`, a decorator.  `fullgraph=True`
    raises where the code cannot be captured instead of running it eagerly; `dynamic`,
    `mode` and `options` are accepted and ignored (every new shape is captured anew)."""
    if callable(backend) and not isinstance(backend, str):
        raise NotImplementedError("compile: custom backends are not supported (ember has no "
                                  "FX graphs to hand them); use a backend name")
    name = "inductor" if backend is None else backend
    if name not in _BACKENDS:
        raise RuntimeError(f"Invalid backend: {name!r}, see `ember.compiler.list_backends()` "
                           "for available backends.")
    if mode not in (None, "default", "reduce-overhead", "max-autotune",
                    "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: default, "
                           "reduce-overhead, max-autotune, max-autotune-no-cudagraphs")
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic,
                                 backend=backend, mode=mode, options=options, disable=disable)
    if disable:
        return model
    if not callable(model):
        raise RuntimeError("compile: expected a callable or an nn.Module, but got "
                           f"{type(model).__name__}")
    runner = None
    if name != "eager":
        runner = CompiledFunction(model, model if isinstance(model, Module) else None,
                                  fuse=name != "aot_eager", fullgraph=fullgraph)
    if isinstance(model, Module):
        return OptimizedModule(model, runner)
    call = model if runner is None else runner

    @functools.wraps(model)
    def compiled(*args, **kw):
        return call(*args, **kw)

    compiled._compiled = runner
    return compiled


def is_compiling() -> bool:
    """True while `compile` runs a model to capture its graph."""
    return program.CAPTURING[0] > 0


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Marks `fn` to stay out of compilation: returned unchanged.  (ember captures the ops a
    call runs, so a disabled function called inside a compiled model is captured too.)"""
    if fn is None:
        return lambda f: f
    return fn


def reset() -> None:
    """Forget every compiled object's captured graphs (they are captured again)."""
    reset_all()


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backend names `compile` accepts (see the module docstring)."""
    return sorted(_BACKENDS)
