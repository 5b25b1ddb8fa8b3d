"""Views and in-place writes: the bookkeeping `Function.apply` does for both.

A view op (``_is_view = True``) returns arrays sharing memory with its first argument:
each output shares that argument's version counter and remembers, in a `ViewInfo`, its
base tensor and how to re-make it from the base.

An in-place op (``_inplace = True``) computes its result, writes it into its first
argument (the *target*), bumps the version counter and moves the target onto the new
node.  A write through a view changes the view's base too: the base moves onto a
`CopySlices` node, and the view's grad_fn is re-derived from the new base, the way
PyTorch's view tracking does.
"""

from __future__ import annotations

from .accumulate import edge_of
from .grad_mode import STATE
from .node import Node, next_sequence_nr
from .tensor import Tensor, ViewInfo, _make, _refresh_view

# ---------------------------------------------------------------------------
# views


def mark_views(cls, args, params, results, multi: bool) -> None:
    """Outputs of a view op share the input's memory and version counter."""
    src = args[0]
    counter = src._version
    record_view = STATE.enabled
    info = src._view_info
    base = src if info is None else info.base
    parent_fn = None if info is None else info.view_fn
    rest = args[1:]
    for i, t in enumerate(results):
        t._version = counter
        if not record_view:
            continue
        t._view_info = ViewInfo(base, _view_replay(cls, rest, params, parent_fn,
                                                   i if multi else None), counter.value)


def _view_replay(cls, rest, params, parent_fn, index):
    """A function re-making this view from its base (composing the parent's view)."""
    def replay(base):
        src = base if parent_fn is None else parent_fn(base)
        out = cls.apply(src, *rest, **params)
        return out if index is None else out[index]
    return replay


# ---------------------------------------------------------------------------
# in-place writes

def check_inplace(target) -> None:
    """Refuse an in-place write into a leaf that requires grad (or a view of one)."""
    if not isinstance(target, Tensor):
        raise TypeError("in-place ops need a tensor as their first argument")
    if not STATE.enabled:
        return
    if target._requires_grad and target._grad_fn is None and target._view_info is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    info = target._view_info
    if info is not None and info.base._requires_grad and info.base._grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place "
            "operation."
        )


def write_inplace(ctx: Node, target: Tensor, result, record: bool) -> Tensor:
    """Write an in-place op's `result` into `target`; returns the tensor that stands for the
    target's new value while the node is recorded."""
    data = target._data
    output = _make(data)
    output._version = target._version
    to_save = ctx._to_save
    if record and to_save is not None:
        ctx._to_save = tuple(_inplace_saved(item, target, data, result, output, ctx)
                             for item in to_save)
    if result is not data:
        try:
            data[...] = result
        except ValueError as exc:  # read-only broadcast views
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing "
                f"the operation. ({exc})"
            ) from None
    target._version.value += 1
    return output


def _inplace_saved(item, target, data, result, output, ctx):
    """Map what an in-place forward saved: its old input value, or its result."""
    if item is result or item is output:
        return output
    if item is data or item is target:
        # The old value is about to be overwritten: keep a copy, attached to the
        # target's old place in the graph (so that double backward still works).
        if result is data:
            raise RuntimeError(f"{type(ctx).__name__}: forward overwrote an input it saved")
        old = _make(data.copy())
        old._grad_fn, old._output_nr = target.grad_fn, target._output_nr
        old._requires_grad = target._requires_grad
        return old
    return item


def finish_inplace(ctx: Node, target: Tensor) -> None:
    """After an in-place op's node was recorded: move the target onto it."""
    if ctx._saved:
        # NOTE: other inputs sharing the target's memory (views of one base) were saved
        # before this write changed it: they are one version behind, as in PyTorch, so
        # that backward refuses to read them (they may overlap the written region).
        counter = target._version
        ctx._saved = [e if e is None or e[2] is not counter or e[4] >= 0
                      else e[:3] + (e[3] - 1,) + e[4:] for e in ctx._saved]
    rebase_inplace(target, ctx)


def rebase_inplace(target: Tensor, node: Node) -> None:
    """Make `node` (which computed target's new value) the target's grad_fn.

    For a view, the write changes its base too: the base moves onto a CopySlices
    node, and the view's grad_fn is re-derived from the new base.
    """
    info = target._view_info
    if info is None:
        target._grad_fn = node
        target._output_nr = 0
        target._requires_grad = True
        return
    base = info.base
    base_edge = edge_of(base) if base._requires_grad else (None, 0)
    copy_slices = CopySlices(base_edge, node, info.view_fn, base._data)
    base._grad_fn = copy_slices
    base._output_nr = 0
    base._requires_grad = True
    info.version = -1  # force re-derivation of the view's grad_fn
    _refresh_view(target)


class CopySlices(Node):
    """The base of a view after an in-place write through the view.

    Gradient: the base's incoming gradient passes through unchanged outside the
    written region; inside it, it goes through the in-place op's own backward.
    """

    def __init__(self, base_edge, fn: Node, view_fn, base_data):
        self._saved = None
        self._fn = fn
        self._view_fn = view_fn
        self._edges = (base_edge,) + tuple(fn._edges[1:])
        self._out_meta = ((base_data.shape, base_data.dtype),)
        self._sequence_nr = next_sequence_nr()

    def name(self) -> str:
        return "CopySlices"

    @staticmethod
    def backward(ctx, grad):
        result = grad.clone()
        region = ctx._view_fn(result)
        fn = ctx._fn
        grads = type(fn).backward(fn, region.clone())
        if not isinstance(grads, tuple):
            grads = (grads,)
        first = grads[0]
        if first is None:
            region.copy_(region.new_zeros(()))
        else:
            if first.shape != region.shape:
                first = first.sum_to_size(*region.shape)
            region.copy_(first)
        return (result,) + tuple(grads[1:])

    def _release(self) -> None:
        self._fn._release()
