"""AccumulateGrad: the node at a leaf tensor, which adds gradients into ``.grad``.

A leaf that requires grad gets its AccumulateGrad node when an op first records it as
an input (`edge_of`); the tensor holds it by weak reference only, so the node lives as
long as some graph leads to it.
"""

from __future__ import annotations

import operator
import weakref

from .grad_mode import STATE
from .node import Node
from .tensor import Tensor, _make


# How a gradient is added into an existing ``.grad`` array: NumPy's ``a += b`` until the
# ops layer installs its own (engine.set_gradient_sum: large arrays cut over the threads).
add_into = operator.iadd
# How a gradient that someone else holds is copied into a new ``.grad`` (a C-contiguous
# array): NumPy's copy until the ops layer installs its own (`set_gradient_copy`).
copy_array = operator.methodcaller("copy")


def set_gradient_copy(copy) -> None:
    """Make AccumulateGrad copy the gradients it must not keep with ``copy(array)``, which
    returns a new C-contiguous array."""
    global copy_array
    copy_array = copy


class AccumulateGrad(Node):
    """The node at a leaf: adds the incoming gradient into ``variable.grad``."""

    def __init__(self, variable: Tensor):
        self.variable = variable
        self._saved = None
        self._edges = ()
        self._out_meta = ((variable._data.shape, variable._data.dtype),)
        self._sequence_nr = 2 ** 62  # leaves run as soon as they are ready

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"  # (PyTorch's name for it, namespace too)

    def _attach(self, value: Tensor, output_nr: int) -> Tensor:
        if value is self.variable:
            return value
        out = _make(value._data, True)
        out._accum_ref = weakref.ref(self)
        return out

    def _describe_output(self, output_nr: int) -> str:
        return ""  # PyTorch names no node for a leaf

    def run_hooks(self, grad: Tensor) -> Tensor:
        """The leaf's ``register_hook`` hooks, each may replace the gradient."""
        extra = self.variable._extra
        if extra is not None:
            for hook in tuple(extra.hooks.values()):
                new = hook(grad)
                if new is not None:
                    grad = new
        return grad

    def accumulate(self, grad: Tensor, create_graph: bool, owned: bool = False) -> None:
        """Add `grad` into the leaf's ``.grad``, then call post-accumulate hooks.

        `owned`: the engine made `grad` in this backward pass and nothing else holds it, so
        the first gradient is kept as it is.  Any other gradient (the caller's, a node's
        result that may also reach another leaf, one a hook returned) is copied: ``.grad``
        is written in place later (accumulation, optimizers, clipping) and must not alias
        memory that someone else reads.
        """
        var = self.variable
        extra = var._extra
        old = var._grad
        if old is None:
            if owned or grad.is_sparse:  # a sparse gradient is stored as is
                var._grad = grad
            elif create_graph:
                var._grad = grad.clone()  # (recorded: the copy stays differentiable)
            else:
                var._grad = _make(copy_array(grad._data))
        elif create_graph or STATE.enabled or old.is_sparse or grad.is_sparse:
            # NOTE: only dense + sparse is defined (sparse + dense raises, as in PyTorch)
            var._grad = grad + old if old.is_sparse and not grad.is_sparse else old + grad
        else:
            add_into(old._data, grad._data)
            old._version.value += 1
        if extra is not None:
            for hook in tuple(extra.post_accumulate_hooks.values()):
                hook(var)


def edge_of(t: Tensor) -> tuple:
    """Where the gradient of `t` goes: (its grad_fn, output_nr) or its AccumulateGrad."""
    fn = t._grad_fn if t._view_info is None else t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    ref = t._accum_ref
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._accum_ref = weakref.ref(acc)
    return (acc, 0)
