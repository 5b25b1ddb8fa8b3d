"""``torch.compile`` and ``torch.compiler``: ember runs every program eagerly.

PyTorch's compiler captures Python code into graphs and generates kernels; where it cannot
(a "graph break") it runs the code eagerly, and its ``backend="eager"`` runs everything
eagerly.  ember has no code generator, so `compile` behaves as PyTorch's eager backend for
every backend name PyTorch accepts: the result computes exactly what the model computes,
at eager speed.  For a module it is an `OptimizedModule` wrapping the original under
``_orig_mod``, as in PyTorch, so state-dict keys and attribute access look the same.
A custom backend (a callable taking an FX graph) cannot be honoured and raises.
"""

from __future__ import annotations

import functools

from .nn.modules.module import Module

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "disable", "reset",
           "list_backends", "OptimizedModule"]

_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")


class OptimizedModule(Module):
    """What `compile` returns for a module: the original as ``_orig_mod``, called as is;
    attributes it does not have are looked up on the original."""

    def __init__(self, mod: Module):
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend="inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False, **kwargs):
    """`model` prepared for compilation; in ember, a wrapper that runs it eagerly (see the
    module docstring).  Without `model`, a decorator."""
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
    if isinstance(model, Module):
        return OptimizedModule(model)
    if not callable(model):
        raise RuntimeError("compile: expected a callable or an nn.Module, but got "
                           f"{type(model).__name__}")

    @functools.wraps(model)
    def compiled(*args, **kw):
        return model(*args, **kw)

    return compiled


def is_compiling() -> bool:
    """False: ember never traces code for a compiler."""
    return False


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Keeps `fn` out of compilation: returned unchanged (ember compiles nothing)."""
    if fn is None:
        return lambda f: f
    return fn


def reset() -> None:
    """Clears the compiler's caches; ember keeps none."""


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backend names `compile` accepts (each runs the program eagerly in ember)."""
    return sorted(_BACKENDS)
