"""Observers: objects that see every op call, backward node and module call.

``Function.apply``, the engine and ``Module.__call__`` each test one slot,
``PROCESS.observer``, and hand the call to the observer when one is installed (a
single branch when none is, the usual case).  Two kinds exist: the profiler's
recorder and selective checkpointing's op cache.  Observers chain: a new one keeps
the previous one as ``prev`` and passes each call on to it, so that the profiler
still times ops that selective checkpointing intercepts.

This sits with the ops (below autograd, the profiler and nn): it knows modules only as
objects with a ``_call_impl`` method, so nothing here imports nn.

The innermost observer sees a call first; the last one of the chain runs it.
``PROCESS`` is process-wide: ops run by other threads while an observer is installed
are seen too (the profiler records their thread id), except while an op is running:
the slot is cleared for the op's duration, so a concurrent op may go unseen.
"""

from __future__ import annotations

from .._core.grad_mode import PROCESS


class Observer:
    """Base class: passes every call on unchanged.  Subclasses override what they watch."""

    prev = None

    def install(self) -> None:
        """Make this observer the innermost one."""
        self.prev = PROCESS.observer
        PROCESS.observer = self

    def uninstall(self) -> None:
        """Take this observer out of the chain (wherever it is in it)."""
        if PROCESS.observer is self:
            PROCESS.observer = self.prev
        else:
            outer = PROCESS.observer
            while outer is not None and outer.prev is not self:
                outer = outer.prev
            if outer is not None:
                outer.prev = self.prev
        self.prev = None

    def op(self, cls, args, params):
        """An op's ``Function.apply(*args, **params)``; returns its result."""
        return run_op(self.prev, cls, args, params)

    def node(self, node, grads):
        """A backward node's ``backward(node, *grads)``; returns its gradients."""
        return run_node(self.prev, node, grads)

    def module(self, module, args, kwargs):
        """``module(*args, **kwargs)``; returns its output."""
        return run_module(self.prev, module, args, kwargs)


def run_op(prev, cls, args, params):
    """Pass an op on to `prev`, or run it (with the observers off: an op's forward works on
    arrays and calls no other op, so nothing is missed)."""
    if prev is not None:
        return prev.op(cls, args, params)
    installed = PROCESS.observer
    PROCESS.observer = None
    try:
        return cls.apply(*args, **params)
    finally:
        PROCESS.observer = installed


def run_node(prev, node, grads):
    """Pass a backward node on to `prev`, or run its backward (ops inside it are seen)."""
    if prev is not None:
        return prev.node(node, grads)
    return type(node).backward(node, *grads)


def run_module(prev, module, args, kwargs):
    """Pass a module call on to `prev`, or run it as ``Module.__call__`` does past its
    observer branch (``Module._call_impl``: forward with the module's hooks)."""
    if prev is not None:
        return prev.module(module, args, kwargs)
    return module._call_impl(*args, **kwargs)
