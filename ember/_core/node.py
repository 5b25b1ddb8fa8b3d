"""Node: the class of every backward-graph node (what ``tensor.grad_fn`` returns).

A node knows where the gradients of its inputs flow (``_edges``, PyTorch's
``next_functions``), the shape and dtype of each of its outputs (``_out_meta``), what
forward saved for backward (``_saved``) and the hooks registered on it.  Built-in ops
and users' ``autograd.Function`` subclasses are nodes: the ctx their forward receives
is the node itself (function.py records it; the leaf node is in accumulate.py).

A saved tensor is kept as an *entry*: the tensor (or, for the node's own output, only
its array, see `saved_entry`) plus the value of its version counter when it was
saved, so that unpacking it after an in-place write raises PyTorch's error.
"""

from __future__ import annotations

import itertools

from .tensor import HookDict, RemovableHandle, Tensor, _make

# next_sequence_nr() -> a number larger than that of every node recorded so far (creation
# order: the engine runs the most recent ready node first).  A bound C method: it runs per op.
next_sequence_nr = itertools.count().__next__


FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class _Freed(tuple):
    """The type of `FREED`."""


# What a node's `_saved` becomes once backward freed it: empty and false, like "nothing saved"
# to code that only reads it, but told apart by `saved_tensors`.  (A marker rather than a
# second attribute: setting one would give every node a __dict__.)
FREED = _Freed()


# ---------------------------------------------------------------------------
# saved-tensor entries

def saved_entry(tensor, data, counter, output_nr: int = -1) -> tuple:
    """A tensor saved for backward, with the version it had when saved.

    A plain tuple (tensor, data, version_counter, version, output_nr), cheap to make.
    Outputs of the node itself are kept as data (not as the tensor object) and
    re-wrapped with ``grad_fn=node`` when unpacked: holding the output tensor would
    make a reference cycle node -> output -> node.
    """
    return (tensor, data, counter, 0 if counter is None else counter.value, output_nr)


def unpack_saved(entry: tuple, node: Node):
    """The saved tensor, after checking that no in-place write happened since."""
    tensor, data, counter, version, output_nr = entry
    if counter is not None and counter.value != version:
        what = (node._describe_output(output_nr) if tensor is None
                else _describe_origin(tensor))
        _raise_version_error(data.shape if tensor is None else tensor._data.shape,
                             data.dtype, what, counter.value, version)
    if tensor is not None:
        return tensor
    out = _make(data, True)
    out._grad_fn = node
    out._output_nr = output_nr
    out._version = counter
    return out


def unpack_hooked(entry: tuple, node: Node) -> Tensor:
    """A saved tensor packed by ``saved_tensors_hooks`` (see function.py `pack_hooked`):
    the version check, the unpack hook, then the result re-attached to the graph where
    the saved tensor was."""
    packed, edge, counter, version, nr, (shape, dtype) = entry
    if counter is not None and counter.value != version:
        if nr >= 0:
            what = node._describe_output(nr)
        else:
            what = "" if edge is None else edge[0]._describe_output(edge[1])
        _raise_version_error(shape, dtype, what, counter.value, version)
    value = node._unpack_hook(packed)
    if not isinstance(value, Tensor):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type(value).__name__}")
    if nr >= 0:  # the node's own output
        out = _make(value._data, True)
        out._grad_fn, out._output_nr, out._version = node, nr, counter
        return out
    if edge is None:  # an input that needs no gradient
        return value.detach() if value._requires_grad else value
    return edge[0]._attach(value, edge[1])


def _raise_version_error(shape, np_dtype, what: str, now: int, expected: int):
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [{_type_name(np_dtype)} {list(shape)}]{what} is at "
        f"version {now}; expected version {expected} instead. Hint: "
        "enable anomaly detection to find the operation that failed to compute its "
        "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )


def _describe_origin(t: Tensor) -> str:
    fn = t._grad_fn
    return fn._describe_output(t._output_nr) if fn else ""


def _type_name(np_dtype) -> str:
    from .dtype import from_numpy_dtype

    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor"}
    name = from_numpy_dtype(np_dtype).name
    return "torch." + names.get(name, name)


# ---------------------------------------------------------------------------
# the node

class Node:
    """A node of the backward graph (what ``tensor.grad_fn`` returns)."""

    # The fields every recorded node sets live in slots (fast to set); the rarely
    # used ones are class-level defaults, overridden per instance when needed.
    __slots__ = ("_to_save", "_edges", "_out_meta", "_sequence_nr", "_saved",
                 "__dict__", "__weakref__")
    _hooks = None
    _prehooks = None
    _tensor_prehooks = None
    _retained = None
    _materialize_grads = True
    _anomaly_trace = None
    _non_differentiable = None
    _dirty = None
    _metadata = None
    _unpack_hook = None  # set on nodes recorded under saved_tensors_hooks
    _name = None  # set on a class whose node name is not <ClassName>Backward0
    # Built-in backwards may omit trailing gradients of non-tensor arguments.
    _pad_grads = True
    # A built-in backward that allocates every gradient it returns (never returns an
    # incoming gradient's memory as another's, saved data, or one array twice): the
    # engine may then let a leaf keep it as .grad without a copy (engine.py).
    _fresh_grads = False
    # A built-in backward that may write its input's gradient over its incoming one (an
    # activation's elementwise gradient): before the call the engine sets `_owns_grad`
    # on the node when it owns that incoming gradient and nothing else can see it.  Its
    # result is otherwise a new array: the class counts as `_fresh_grads` too.
    _reuses_grad = False
    _owns_grad = False
    _is_view = False
    # A built-in backward whose gradients are disjoint slices of its incoming one (cat's,
    # stack's): where the engine owns that array, it owns each C-contiguous slice too, and
    # a leaf may keep one as .grad without a copy (as PyTorch's does for cat along dim 0).
    _grads_are_slices = False
    # A built-in backward that returns its incoming gradient itself as an input's gradient
    # and new arrays for the others (add's, sub's): where the engine owns the incoming
    # array and it goes to one input only, that input owns it, and a leaf keeps it as
    # .grad without a copy (PyTorch's ``x - target`` hands its gradient on likewise).
    _passes_grad = False
    # A built-in op whose forward marks an output of a float dtype non-differentiable
    # (ember.compile's training replay, which knows outputs' gradients ahead of the
    # forward, leaves graphs holding one to the op-by-op replay).
    _marks_outputs = False
    _may_hand_over = False  # _fresh_grads, _is_view, _grads_are_slices or _passes_grad

    def name(self) -> str:
        """The PyTorch-style name of this node, e.g. ``'MulBackward0'``."""
        return self._name or type(self).__name__ + "Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self) -> tuple:
        """((node, input_nr), ...) for each input: where the gradients flow next."""
        return self._edges

    @property
    def metadata(self) -> dict:
        """A dict for the user's own annotations of this node."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def needs_input_grad(self) -> tuple:
        """One bool per input: does a gradient flow into it?"""
        return tuple(e[0] is not None for e in self._edges)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, checked against in-place writes."""
        saved = getattr(self, "_saved", None)
        if saved is None:
            return ()
        if saved is FREED:
            raise RuntimeError(FREED_MESSAGE)
        if self._unpack_hook is not None:
            return tuple(unpack_hooked(s, self) if s is not None and len(s) == 6 else
                         None if s is None else unpack_saved(s, self) for s in saved)
        out = []
        for entry in saved:
            # the usual case, an input not written to since, without calling unpack_saved
            if entry is not None and entry[0] is not None and (
                    entry[2] is None or entry[2].value == entry[3]):
                out.append(entry[0])
            else:
                out.append(None if entry is None else unpack_saved(entry, self))
        return tuple(out)

    def save_for_backward(self, *items) -> None:
        """Keep arrays/tensors for backward (only kept when the graph is recorded)."""
        self._to_save = items

    def mark_non_differentiable(self, *outputs) -> None:
        """Declare outputs that get no gradient (e.g. the indices of ``max``)."""
        self._non_differentiable = outputs

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place."""
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self._materialize_grads = bool(value)

    # where gradients flow ----------------------------------------------

    def _attach(self, value: Tensor, output_nr: int) -> Tensor:
        """`value`'s data as a tensor whose gradient flows into output `output_nr` of this
        node (`value` itself when it already is one)."""
        if value._grad_fn is self and value._output_nr == output_nr:
            return value
        out = _make(value._data, True)
        out._grad_fn, out._output_nr = self, output_nr
        return out

    def _describe_output(self, output_nr: int) -> str:
        """How the version error names a tensor made by this node."""
        name = self.name()
        head = name.rstrip("0123456789")  # 'MulBackward0' -> 'Mul', as PyTorch names it
        short = head[: -len("Backward")] if head.endswith("Backward") else name
        return f", which is output {output_nr} of {short},"

    # hooks -------------------------------------------------------------

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node ran; may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = HookDict()
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        if self._prehooks is None:
            self._prehooks = HookDict()
        return RemovableHandle(self._prehooks, fn)

    def _add_tensor_prehook(self, output_nr: int, hook):
        if self._tensor_prehooks is None:
            self._tensor_prehooks = {}
        hooks = self._tensor_prehooks.get(output_nr)
        if hooks is None:
            hooks = self._tensor_prehooks[output_nr] = HookDict()
        return RemovableHandle(hooks, hook)

    def _add_retained(self, output_nr: int, ref) -> None:
        if self._retained is None:
            self._retained = {}
        self._retained[output_nr] = ref

    def _release(self) -> None:
        """Free saved tensors after a backward without ``retain_graph``."""
        if getattr(self, "_saved", None) is not None:
            self._saved = FREED

    def __call__(self, *grads):
        return type(self).backward(self, *grads)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(f"{type(ctx).__name__} does not implement backward")
