"""``autograd.Function``: users' custom ops, on the same node class as built-in ops.

Unlike built-in ops, a user's ``forward`` receives tensors (run with grad recording
off) and returns tensors.  Both styles PyTorch has are supported:

* ``forward(ctx, *args)``, saving what backward needs on `ctx`;
* ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``.

``backward(ctx, *grad_outputs)`` receives one gradient per output of forward (None
for outputs that are not tensors) and returns one per input.  The node made by
``apply`` *is* the ctx, as for built-in ops; it is named ``<ClassName>Backward``.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from .._core.function import Function as _OpFunction
from .._core.function import record_node
from .._core.node import Node
from .._core.views_inplace import rebase_inplace
from .._core.grad_mode import PROCESS, STATE, no_grad
from .._core.tensor import Tensor, _make

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "NestedIOFunction",
           "once_differentiable"]


class FunctionCtx:
    """Base of the ctx objects custom Functions receive (in ember: the graph node itself)."""

    __slots__ = ()


def _backward_entry(user_backward):
    """Wrap a subclass's backward: gradients of non-tensor outputs are always None."""

    @functools.wraps(user_backward)
    def backward(ctx, *grads):
        gaps = getattr(ctx, "_non_tensor_outputs", None)
        if gaps:
            grads = list(grads)
            for i in gaps:
                grads[i] = None
        return user_backward(ctx, *grads)

    backward._ember_user_backward = user_backward
    return staticmethod(backward)


class Function(Node, FunctionCtx):
    """Base class for custom differentiable operations.

    Subclass it, write ``forward`` and ``backward`` as static methods, and call
    ``MyFn.apply(*args)``::

        class Square(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad

    backward returns one gradient per forward argument (None for non-tensors or
    where none is needed; ``ctx.needs_input_grad`` tells which are).  Write it with
    ember ops and it can itself be differentiated (double backward).

    As in PyTorch, the node (and ctx) of ``Square`` is an instance of a class named
    ``SquareBackward``, made with the subclass (a subclass of it, with ``_forward_cls``
    pointing back).
    """

    _pad_grads = False
    _needs_input_grad = ()
    _non_tensor_outputs = None
    _legacy_instance = False
    _forward_cls = None  # on a node class: the Function it was made for
    _node_cls = None  # on a Function: the class of its nodes

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_forward_cls" in cls.__dict__:  # the node class made below
            return
        cls._node_cls = type(cls.__name__ + "Backward", (cls,), {
            "_forward_cls": cls, "__module__": __name__,
            "__qualname__": cls.__name__ + "Backward", "__slots__": ()})
        own = cls.__dict__.get("backward")
        if own is None:
            own = cls.__dict__.get("vjp")  # PyTorch accepts `vjp` as the name of backward
        if own is None:
            return
        fn = own.__func__ if isinstance(own, staticmethod) else own
        if getattr(fn, "_ember_user_backward", None) is None:
            cls.backward = _backward_entry(fn)

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.",
            DeprecationWarning, stacklevel=2)
        self._legacy_instance = True

    def __call__(self, *args, **kwargs):
        if self._legacy_instance:
            raise RuntimeError(
                "Legacy autograd function with non-static forward method is deprecated. "
                "Please use new-style autograd function with static forward method. "
                "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
            )
        return super().__call__(*args, **kwargs)

    def name(self) -> str:
        if self._forward_cls is not None:
            return type(self).__name__
        return type(self).__name__ + "Backward"

    # ctx API (beyond what Node provides) ---------------------------------

    @property
    def needs_input_grad(self) -> tuple:
        """One bool per forward argument: does it require a gradient?"""
        return self._needs_input_grad

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for backward; read them back with ``ctx.saved_tensors``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Forward-mode AD is not supported by ember."""
        raise NotImplementedError("forward-mode AD (save_for_forward) is not supported")

    # what subclasses write -----------------------------------------------

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
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("forward-mode AD (jvp) of custom Functions is not supported")

    # apply ---------------------------------------------------------------

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward with recording off, then connect the outputs to a new node."""
        uses_setup = cls.setup_context is not Function.setup_context
        if uses_setup:
            args, kwargs = _bind_defaults(cls.forward, args, kwargs)
        ctx = object.__new__(cls._node_cls or cls)
        ctx._to_save = None
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx._needs_input_grad = needs
        record = STATE.enabled and any(needs)
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
        for d in dirty:
            if not any(d is o for o in outputs):
                raise RuntimeError(
                    "Some elements marked as dirty during the forward method were not returned "
                    "as output. The inputs that are modified inplace must all be outputs of the "
                    "Function."
                )
        results = [_alias_if_input(o, args, dirty) for o in outputs]
        if record:
            _check_dirty(dirty)
        for d in dirty:
            d._version.value += 1
        if record:
            _connect(ctx, args, results, dirty)
            if PROCESS.anomaly:
                import traceback

                ctx._anomaly_trace = "".join(traceback.format_stack()[:-1])
        return tuple(results) if multi else results[0]


def _bind_defaults(forward, args, kwargs):
    """Arguments as forward's signature binds them, defaults filled in (setup_context style)."""
    try:
        bound = inspect.signature(forward).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    bound.apply_defaults()
    return tuple(bound.args), dict(bound.kwargs)


def _alias_if_input(out, args, dirty):
    """An input returned unchanged becomes a new tensor object on the same memory."""
    if not isinstance(out, Tensor) or any(out is d for d in dirty):
        return out
    if any(out is a for a in args):
        alias = _make(out._data)
        alias._version = out._version
        return alias
    return out


def _check_dirty(dirty) -> None:
    for t in dirty:
        info = t._view_info
        if t._requires_grad and t._grad_fn is None and info is None:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation."
            )
        if info is not None and info.base._requires_grad and info.base._grad_fn is None:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )


def _connect(ctx, args, results, dirty) -> None:
    """Record the node: edges to the inputs, one output slot per forward output."""
    slots = []
    non_tensor = []
    stand_ins = {}  # id(dirty input) -> the tensor standing for its new value in the node
    for i, r in enumerate(results):
        if not isinstance(r, Tensor):
            # An integer placeholder keeps output_nr equal to the position in forward's
            # outputs; integer outputs never get a grad_fn.
            non_tensor.append(i)
            slots.append(_make(np.zeros((), dtype=np.int64)))
        elif any(r is d for d in dirty):
            stand_in = _make(r._data)
            stand_in._version = r._version
            stand_ins[id(r)] = stand_in
            slots.append(stand_in)
        else:
            slots.append(r)
    if non_tensor:
        ctx._non_tensor_outputs = tuple(non_tensor)
    if ctx._non_differentiable:
        ctx._non_differentiable = tuple(t._data for t in ctx._non_differentiable)
    if stand_ins and ctx._to_save:
        ctx._to_save = tuple(stand_ins.get(id(t), t) if isinstance(t, Tensor) else t
                             for t in ctx._to_save)
    arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    record_node(ctx, args, arrays, slots)
    n_tensor_outputs = len(results) - len(non_tensor)
    for d in dirty:
        stand_in = stand_ins[id(d)]
        if stand_in._grad_fn is not ctx:
            continue  # an integer output, or marked non-differentiable
        if d._view_info is None:
            d._grad_fn = ctx
            d._output_nr = stand_in._output_nr
            d._requires_grad = True
        elif d is args[0] and n_tensor_outputs == 1:
            rebase_inplace(d, ctx)
        else:
            raise NotImplementedError(
                f"{type(ctx).__name__}: mark_dirty on a view is supported only for the first "
                "argument of a Function with a single tensor output"
            )


class _DelayedError(_OpFunction):
    """Stands between a @once_differentiable backward's result and the graph:
    differentiating through it raises."""

    _name = "Error"

    @staticmethod
    def forward(ctx, value, *grads):
        return value

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )


def once_differentiable(fn):
    """Decorate a backward that cannot itself be differentiated.

    It runs with recording off.  Under ``create_graph=True`` its results are still
    connected to the incoming gradients, so that differentiating them again raises
    a clear error instead of silently giving zero.
    """
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not STATE.enabled:
            return outputs
        needing = [a for a in args if isinstance(a, Tensor) and a._requires_grad]
        if not needing:
            return outputs
        single = not isinstance(outputs, tuple)
        items = (outputs,) if single else outputs
        items = tuple(_DelayedError.apply(o, *needing) if isinstance(o, Tensor) else o
                      for o in items)
        return items[0] if single else items
    return wrapper


class InplaceFunction(Function):
    """Kept for compatibility with old code: a Function with an ``inplace`` flag."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    """Not supported: a legacy PyTorch API."""

    @classmethod
    def apply(cls, *args, **kwargs):
        raise NotImplementedError("autograd.function.NestedIOFunction is not supported")
