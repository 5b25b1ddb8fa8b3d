"""`CompiledFunction`: the callable behind ``ember.compile``, holding one graph per
signature (see ``program.py`` for what a signature guards)."""

from __future__ import annotations

import weakref

from .._core.tensor import Tensor
from ..nn.modules.module import Module
from . import program

RECOMPILE_LIMIT = 8  # signatures per compiled object; past it new ones run eagerly

_ALL: weakref.WeakSet = weakref.WeakSet()  # every CompiledFunction, for `reset`
_PLAIN = (int, float, bool, str, type(None))
_CONTAINERS = (list, dict, set)


class CompiledFunction:
    """Calls `fn` (a function, or a module's ``__call__`` when `module` is given) through
    captured graphs: the first call of a signature captures, later ones replay.

    `fuse`: fuse elementwise chains into generated kernels (when numba is enabled);
    `fullgraph`: raise where the code cannot be captured as a graph, instead of running
    it eagerly.
    """

    def __init__(self, fn, module: Module | None = None, *, fuse: bool = True,
                 fullgraph: bool = False):
        self.fn = fn
        self.module = module
        self.fuse = fuse
        self.fullgraph = fullgraph
        self.graphs: dict = {}  # signature -> CompiledGraph, or program.EAGER
        self.captures = 0       # how many times this object traced (for tests, reports)
        _ALL.add(self)

    def __call__(self, *args, **kwargs):
        reason = "keyword arguments are not captured" if kwargs else program.eager_reason()
        if reason is not None:
            return self._eager(reason, args, kwargs)
        tensors, state = ([], ()) if self.module is None else program.module_state(self.module)
        if tensors is None:
            return self._eager("a module has hooks", args, kwargs)
        key = program.signature(args, state, tensors)
        # (the graph's inputs: `signature` lets through tensors and plain values only)
        inputs = [a for a in args if isinstance(a, Tensor)]
        if key is None or not inputs:
            return self._eager("no tensor argument, or one that is neither a tensor nor a "
                               "number", args, kwargs)
        graph = self.graphs.get(key)
        if graph is None:
            if len(self.graphs) >= RECOMPILE_LIMIT:
                return self._eager(f"more than {RECOMPILE_LIMIT} signatures were compiled",
                                   args, kwargs)
            self.captures += 1
            before = self._plain_attributes()
            returned, graph = program.capture(self.fn, args, *self._names(), tensors,
                                              fuse=self.fuse)
            if not isinstance(graph, str) and self._reassigned(tensors):
                graph = ("it assigns new tensors to parameters or buffers (self.buf = ...), "
                         "which a replay would not do")
            elif not isinstance(graph, str) and self._plain_attributes() != before:
                graph = ("it changes a module's attributes (self.calls += 1, "
                         "self.outputs.append(h)), which a replay would not do")
            if isinstance(graph, str):
                if self.fullgraph:
                    raise RuntimeError(f"ember.compile(fullgraph=True): {graph}")
                program.warn_eager(self._what(), graph)
                graph = program.EAGER
            self.graphs[key] = graph
            return returned
        if graph is program.EAGER:
            return self.fn(*args)
        return graph.run(inputs, tensors)

    def _names(self) -> tuple:
        """(name -> parameter or buffer, id(module) -> name): what the tracer names."""
        if self.module is None:
            return {}, {}
        named = dict(self.module.named_parameters(remove_duplicate=False))
        named.update((k, v) for k, v in self.module.named_buffers(remove_duplicate=False)
                     if v is not None)
        return named, {id(m): name for name, m in self.module.named_modules()}

    def _plain_attributes(self) -> list:
        """Each submodule's attributes that are plain numbers, strings or None, and the
        lengths of its lists, dicts and sets (``self.outputs.append(h)``)."""
        if self.module is None:
            return []
        return [{k: (type(v), len(v)) if type(v) in _CONTAINERS else v
                 for k, v in m.__dict__.items() if type(v) in _PLAIN or type(v) in _CONTAINERS}
                for _, m in self.module.named_modules()]

    def _reassigned(self, before: list) -> bool:
        """Whether the captured call replaced a parameter or buffer of the module."""
        if self.module is None:
            return False
        after, _ = program.module_state(self.module)
        return after is None or len(after) != len(before) or any(
            a is not b for a, b in zip(after, before))

    def _eager(self, reason: str, args: tuple, kwargs: dict):
        return self.fn(*args, **kwargs)

    def _what(self) -> str:
        if self.module is not None:
            return type(self.module).__name__
        return getattr(self.fn, "__name__", "the function")

    def reset(self) -> None:
        """Forget every captured graph."""
        self.graphs.clear()

    def __getstate__(self) -> dict:
        # Pickled or deep-copied without its graphs (generated code, numba kernels):
        # the copy captures its own on its first calls.
        return {**self.__dict__, "graphs": {}}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        _ALL.add(self)


def reset_all() -> None:
    """Forget the graphs of every compiled object."""
    for compiled in list(_ALL):
        compiled.reset()
