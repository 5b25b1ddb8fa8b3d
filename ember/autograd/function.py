"""``autograd.Function``: users' custom ops, on the same node class as built-in ops.

Unlike built-in ops, a user's ``forward(ctx, *args)`` receives tensors (run with
grad recording off) and returns tensors.  Both the classic style (forward takes
``ctx``) and the ``setup_context`` style are supported.
"""

from __future__ import annotations

import functools

from .._core.function import Node, _record, rebase_inplace
from .._core.grad_mode import STATE, no_grad
from .._core.tensor import Tensor, _make


class FunctionCtx:
    """Marker base for ctx objects (the node is the ctx in ember)."""


class Function(Node):
    """Base class for custom differentiable operations.

    Subclass it, write ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)``
    as static methods, and call ``MyFn.apply(*args)``.  backward returns one
    gradient per forward argument (None for non-tensors or where none is needed).
    """

    _pad_grads = False

    def name(self) -> str:
        return type(self).__name__ + "Backward"

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("forward-mode AD (jvp) of custom Functions is not supported")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward with recording off, then connect the outputs to a new node."""
        requires = any(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = requires and STATE.enabled
        ctx = object.__new__(cls)
        ctx._to_save = None
        uses_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            if uses_setup:
                output = cls.forward(*args, **kwargs)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if uses_setup:
            cls.setup_context(ctx, args, output)
        multi = isinstance(output, tuple)
        outputs = output if multi else (output,)
        dirty = ctx._dirty or ()
        results = []
        for out in outputs:
            if not isinstance(out, Tensor):
                results.append(out)
                continue
            if any(out is d for d in dirty):
                results.append(out)
            elif any(out is a for a in args):
                alias = _make(out._data)  # an output that is an input: a new tensor object
                alias._version = out._version
                results.append(alias)
            else:
                results.append(out)
        tensors = [r for r in results if isinstance(r, Tensor)]
        if record:
            _check_dirty(dirty)
            arrays = [a._data if isinstance(a, Tensor) else a for a in args]
            fresh = [r if not any(r is d for d in dirty) else _make(r._data) for r in tensors]
            for f, r in zip(fresh, tensors):
                f._version = r._version
            ctx._non_differentiable = tuple(
                t._data for t in (ctx._non_differentiable or ()))
            _record(ctx, args, arrays, fresh)
            ctx._output_positions = [i for i, r in enumerate(results) if isinstance(r, Tensor)]
            for f, r in zip(fresh, tensors):
                if f is not r:  # a dirty input: it moves onto this node
                    if f._grad_fn is ctx:
                        rebase_inplace(r, ctx)
                    r._version.value += 0
            for d in dirty:
                d._version.value += 1
        else:
            for d in dirty:
                d._version.value += 1
        return tuple(results) if multi else results[0]


def _check_dirty(dirty) -> None:
    for t in dirty:
        if t._requires_grad and t._grad_fn is None and t._view_info is None:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation."
            )


def once_differentiable(fn):
    """Decorate a backward that cannot itself be differentiated (runs without recording)."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not STATE.enabled:
            return outputs
        if any(isinstance(a, Tensor) and a._requires_grad for a in args):
            raise RuntimeError(
                "trying to differentiate twice a function that was marked with "
                "@once_differentiable"
            )
        return outputs
    return wrapper


class InplaceFunction(Function):
    """Kept for compatibility with old code: a Function with an ``inplace`` flag."""

    def __init__(self, inplace: bool = False):
        self.inplace = inplace


class NestedIOFunction(Function):
    """Not supported: a legacy PyTorch API."""

    @classmethod
    def apply(cls, *args, **kwargs):
        raise NotImplementedError("autograd.function.NestedIOFunction is not supported")
