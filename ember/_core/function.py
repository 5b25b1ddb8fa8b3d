"""Function: the one mechanism every differentiable op goes through.

A built-in op is a subclass with two static methods:

* ``forward(ctx, *args, **params)`` receives backend arrays (NumPy/CuPy) in place
  of tensors and returns an array (or a tuple of arrays);
* ``backward(ctx, *grads)`` receives ember tensors and returns one gradient per
  positional argument of forward (None where there is none), written with ember
  ops, so the same formula serves first-order gradients (run under no-grad) and
  higher-order ones (recorded when ``create_graph=True``).

The instance `ctx` *is* the graph node (``y.grad_fn``): `apply` fills in its edges
(``next_functions``) and the tensors it saved.  Users' ``autograd.Function``
subclasses share this node class; only their `apply` differs (their forward sees
tensors), see ``ember/autograd/function.py``.

In-place ops and views: an op class with ``_inplace = True`` writes its result into
its first argument and moves that tensor onto the new node; an op with
``_is_view = True`` returns arrays sharing memory with its first argument, which
share its version counter and remember how to be re-made from their base.  An
in-place write into a view rebases the view's base onto a `CopySlices` node, the
way PyTorch's view tracking does.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from .grad_mode import STATE, enable_grad
from .tensor import HookDict, RemovableHandle, Tensor, ViewInfo, _extra, _make

_sequence = itertools.count()

DIFFERENTIABLE_DTYPES = frozenset(
    np.dtype(name) for name in ("float16", "float32", "float64", "complex64", "complex128"))
try:
    import ml_dtypes

    DIFFERENTIABLE_DTYPES = DIFFERENTIABLE_DTYPES | {np.dtype(ml_dtypes.bfloat16)}
except ImportError:  # pragma: no cover
    pass

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


def as_array(value):
    """Backend results of 0-dim ops can be NumPy scalars; make them 0-dim arrays."""
    if type(value) is np.ndarray:
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if hasattr(value, "__cuda_array_interface__"):
        return value
    return np.asarray(value)


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
        what = (f", which is output {output_nr} of {_short_node_name(node)}," if tensor is None
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
    return f", which is output {t._output_nr} of {_short_node_name(fn)}," if fn else ""


def _short_node_name(node: Node) -> str:
    """'MulBackward0' -> 'Mul', the way PyTorch names a node in the version error."""
    name = node.name()
    head = name.rstrip("0123456789")
    return head[: -len("Backward")] if head.endswith("Backward") else name


def _type_name(np_dtype) -> str:
    from .dtype import from_numpy_dtype

    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
             "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor"}
    name = from_numpy_dtype(np_dtype).name
    return "torch." + names.get(name, name)


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
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def needs_input_grad(self) -> tuple:
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
            return tuple(_unpack_hooked(s, self) if s is not None and len(s) == 6 else
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
        with enable_grad() if STATE.enabled else _NullContext():
            result = type(self).backward(self, *grads)
        return result

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(f"{type(ctx).__name__} does not implement backward")


class _NullContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class Function(Node):
    """Base class of built-in ops (forward on arrays, backward on tensors)."""

    _inplace = False
    _is_view = False

    @staticmethod
    def forward(ctx, *args, **params):
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # One flag for `apply` to test: in-place and view ops take its longer path.
        cls._plain = not (cls._inplace or cls._is_view)

    @classmethod
    def apply(cls, *args, **params):
        """Run forward on the arguments' arrays and record a node when grad is needed."""
        # NOTE: this is the hot path of every op; keep it short.
        state = STATE
        if state.observer is not None:  # profiling or selective checkpointing
            return state.observer.op(cls, args, params)
        arrays = []
        record = False
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a._data)
                if a._requires_grad:
                    record = True
            else:
                arrays.append(a)
        if record and not state.enabled:
            record = False
        ctx = _new_object(cls)
        ctx._to_save = None
        if not cls._plain:
            return _apply_special(cls, ctx, args, arrays, params, record)
        try:
            # NOTE: a call with the arguments spelled out costs ~0.1 us less than one with
            # `*arrays`; most ops take one or two.
            if params:
                out = cls.forward(ctx, *arrays, **params)
            elif len(arrays) == 2:
                out = cls.forward(ctx, arrays[0], arrays[1])
            elif len(arrays) == 1:
                out = cls.forward(ctx, arrays[0])
            else:
                out = cls.forward(ctx, *arrays)
        except ValueError as exc:  # NumPy's broadcasting errors, in PyTorch's words
            raise _shape_error(ctx, arrays, exc) from None
        if type(out) is _ndarray:  # the usual case: one new array
            result = _make(out)
            if record:
                _record(ctx, args, arrays, (result,))
            return result
        if type(out) is tuple:
            results = [_make(_as_output(ctx, o)) for o in out]
            if record:
                _record(ctx, args, arrays, results)
            return tuple(results)
        result = _make(_as_output(ctx, out))
        if record:
            _record(ctx, args, arrays, (result,))
        return result


_new_object = object.__new__
_ndarray = np.ndarray
Function._plain = True


def _apply_special(cls, ctx, args, arrays, params, record: bool):
    """`Function.apply` for in-place ops and views."""
    if cls._inplace:
        _check_inplace(args[0], record)
        out = cls.forward(ctx, *arrays, **params)
        return _finish_inplace(ctx, args, arrays, out, record)
    try:
        out = cls.forward(ctx, *arrays, **params)
    except ValueError as exc:
        raise _shape_error(ctx, arrays, exc) from None
    multi = type(out) is tuple
    results = [_make(_as_output(ctx, o)) for o in out] if multi else [_make(_as_output(ctx, out))]
    _mark_views(cls, args, params, results, multi)
    if record:
        _record(ctx, args, arrays, results)
    return tuple(results) if multi else results[0]


def _shape_error(ctx: Node, arrays, exc: ValueError) -> Exception:
    """A RuntimeError naming the op and the shapes when operands do not broadcast."""
    shapes = [a.shape for a in arrays if hasattr(a, "shape") and hasattr(a, "dtype")]
    if "broadcast" not in str(exc) or len(shapes) < 2:
        return exc
    a, b = shapes[0], shapes[1]
    for i in range(1, min(len(a), len(b)) + 1):
        if a[-i] != b[-i] and 1 not in (a[-i], b[-i]):
            return RuntimeError(
                f"The size of tensor a ({a[-i]}) must match the size of tensor b ({b[-i]}) at "
                f"non-singleton dimension {max(len(a), len(b)) - i} ({ctx.name()[:-9]} of "
                f"shapes {list(a)} and {list(b)})")
    return RuntimeError(f"{ctx.name()[:-9]}: shapes {[list(s) for s in shapes]} do not "
                        f"broadcast ({exc})")


def _as_output(ctx: Node, value):
    """An output as an array; a saved NumPy scalar output is swapped for the array too,
    so that it is still recognized as the node's output (for double backward)."""
    array = as_array(value)
    if array is not value and ctx._to_save is not None:
        ctx._to_save = tuple(array if item is value else item for item in ctx._to_save)
    return array


def _check_inplace(target, record: bool) -> None:
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


def _edge(t: Tensor) -> tuple:
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


def accumulator_of(t: Tensor) -> AccumulateGrad:
    """The AccumulateGrad node of a leaf tensor that requires grad."""
    return _edge(t)[0]


_NO_EDGE = (None, 0)


def _record(ctx: Node, args, arrays, results) -> None:
    """Connect the node to its inputs and outputs once forward has run."""
    # NOTE: hot path.  An input's shape and dtype (to check its gradient against)
    # need not be stored: they are the `_out_meta` of the node its edge points to.
    edges = []
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            fn = a._grad_fn
            if fn is not None and a._view_info is None:
                edges.append((fn, a._output_nr))
            else:
                edges.append(_edge(a))
        else:
            edges.append(_NO_EDGE)
    ctx._edges = tuple(edges)
    ctx._sequence_nr = next(_sequence)
    if STATE.anomaly:
        import traceback

        ctx._anomaly_trace = "".join(traceback.format_stack()[:-3])
    nondiff = ctx._non_differentiable
    if len(results) == 1 and nondiff is None:  # the usual case, without the loop below
        t = results[0]
        data = t._data
        dt = data.dtype
        ctx._out_meta = ((data.shape, dt),)
        if dt in DIFFERENTIABLE_DTYPES:  # integer/bool outputs never carry gradients
            t._grad_fn = ctx
            t._output_nr = 0
            t._requires_grad = True
    else:
        out_meta = []
        for i, t in enumerate(results):
            data = t._data
            dt = data.dtype
            out_meta.append((data.shape, dt))
            if dt not in DIFFERENTIABLE_DTYPES:
                continue
            if nondiff is not None and any(data is n for n in nondiff):
                continue
            t._grad_fn = ctx
            t._output_nr = i
            t._requires_grad = True
        ctx._out_meta = tuple(out_meta)
    items = ctx._to_save
    if items is None:
        ctx._saved = None
        return
    ctx._to_save = None
    out = results[0] if len(results) == 1 else None
    saved = []
    for item in items:
        entry = None
        if out is not None and item is not None and not isinstance(item, Tensor):
            # the usual cases, found without the loops of `_pack`: the output or an input array
            if item is out._data:
                counter = out._version
                entry = (None, item, counter, counter.value, 0)
            else:
                for a, arr in zip(args, arrays):
                    if arr is item and a is not item:  # (a Python scalar falls through)
                        counter = a._version
                        entry = (a, item, counter, counter.value, -1)
                        break
        saved.append(entry if entry is not None else _pack(item, args, arrays, results))
    if STATE.saved_hooks is not None:  # saved_tensors_hooks: pass them through pack
        saved = _pack_hooked(ctx, saved)
    ctx._saved = saved


def _pack(item, args, arrays, results):
    """Turn a saved array/tensor into a saved entry tied to an input or an output."""
    if item is None:
        return None
    is_tensor = isinstance(item, Tensor)
    for i, t in enumerate(results):
        if (t is item) if is_tensor else (t._data is item):
            return saved_entry(None, t._data, t._version, i)
    for a, arr in zip(args, arrays):
        if (a is item) if is_tensor else (arr is item):
            if not isinstance(a, Tensor):  # a Python scalar argument: kept as it is
                return (a, None, None, 0, -1)
            return saved_entry(a, a._data, a._version)
    if is_tensor:
        return saved_entry(item, item._data, item._version)
    return saved_entry(_make(as_array(item)), item, None)


def _pack_hooked(ctx: Node, saved: list) -> list:
    """Pass each saved tensor through the active pack hook (``saved_tensors_hooks``).

    A hooked entry is (packed, edge, version_counter, version, output_nr, (shape, dtype)):
    the version snapshot stays, so in-place checks still work; `edge` is where the
    gradient of a saved input flows, so that the unpacked tensor can be re-attached.
    """
    pack, unpack = STATE.saved_hooks
    ctx._unpack_hook = unpack
    out = []
    for e in saved:
        if e is None or e[1] is None:  # a Python scalar argument
            out.append(e)
            continue
        tensor, data, counter, version, nr = e
        if tensor is None:  # the node's own output: hand the hook an alias, not the output
            tensor, edge = _make(data), None  # (holding the output would make a cycle)
            tensor._version = counter
        else:
            edge = _edge(tensor) if tensor._requires_grad else None
        out.append((pack(tensor), edge, counter, version, nr, (data.shape, data.dtype)))
    return out


def _unpack_hooked(entry: tuple, node: Node) -> Tensor:
    """A hooked saved tensor: the version check, unpack_hook, then re-attach its edge."""
    packed, edge, counter, version, nr, (shape, dtype) = entry
    if counter is not None and counter.value != version:
        fn = node if nr >= 0 else (None if edge is None else edge[0])
        what = ("" if fn is None or isinstance(fn, AccumulateGrad)
                else f", which is output {nr if nr >= 0 else edge[1]} of {_short_node_name(fn)},")
        _raise_version_error(shape, dtype, what, counter.value, version)
    value = node._unpack_hook(packed)
    if not isinstance(value, Tensor):
        raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                        f"result of type {type(value).__name__}")
    if nr >= 0:
        out = _make(value._data, True)
        out._grad_fn, out._output_nr, out._version = node, nr, counter
        return out
    if edge is None:
        return value.detach() if value._requires_grad else value
    fn, fn_nr = edge
    if isinstance(fn, AccumulateGrad):
        if fn.variable is value:
            return value
        out = _make(value._data, True)
        out._accum_ref = weakref.ref(fn)
        return out
    if value._grad_fn is fn and value._output_nr == fn_nr:
        return value
    out = _make(value._data, True)
    out._grad_fn, out._output_nr = fn, fn_nr
    return out


def _mark_views(cls, args, params, results, multi: bool) -> None:
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


def _finish_inplace(ctx, args, arrays, result, record: bool):
    """Write an in-place op's result into its target and move the target onto the node."""
    target = args[0]
    data = target._data
    output = _make(data)  # stands for the target's new value while the node is recorded
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
    if record:
        _record(ctx, args, arrays, [output])
        if ctx._saved:
            # NOTE: other inputs sharing the target's memory (views of one base) were saved
            # before this write changed it: they are one version behind, as in PyTorch, so
            # that backward refuses to read them (they may overlap the written region).
            counter = target._version
            ctx._saved = [e if e is None or e[2] is not counter or e[4] >= 0
                          else e[:3] + (e[3] - 1,) + e[4:] for e in ctx._saved]
        rebase_inplace(target, ctx)
    return target


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
    base_edge = _edge(base) if base._requires_grad else (None, 0)
    copy_slices = CopySlices(base_edge, node, info.view_fn, base._data)
    base._grad_fn = copy_slices
    base._output_nr = 0
    base._requires_grad = True
    info.version = -1  # force re-derivation of the view's grad_fn
    _refresh(target)


def _refresh(view: Tensor) -> None:
    from .tensor import _refresh_view

    _refresh_view(view)


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
        self._sequence_nr = next(_sequence)

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


class AccumulateGrad(Node):
    """The node at a leaf: adds the incoming gradient into ``variable.grad``."""

    def __init__(self, variable: Tensor):
        self.variable = variable
        self._saved = None
        self._edges = ()
        self._out_meta = ((variable._data.shape, variable._data.dtype),)
        self._sequence_nr = 2 ** 62  # leaves run as soon as they are ready

    def name(self) -> str:
        return "AccumulateGrad"

    def run_hooks(self, grad: Tensor) -> Tensor:
        """The leaf's ``register_hook`` hooks, each may replace the gradient."""
        extra = self.variable._extra
        if extra is not None:
            for hook in tuple(extra.hooks.values()):
                new = hook(grad)
                if new is not None:
                    grad = new
        return grad

    def accumulate(self, grad: Tensor, create_graph: bool, steal: bool = False) -> None:
        """Add `grad` into the leaf's ``.grad``, then call post-accumulate hooks.

        `steal`: the engine knows nothing else holds `grad` or its memory, so the first
        gradient is kept as it is rather than copied.
        """
        var = self.variable
        extra = var._extra
        old = var._grad
        if old is None:
            if create_graph or grad.is_sparse or steal:  # a sparse gradient is stored as is
                var._grad = grad
            else:
                # NOTE: copy, because the same gradient tensor can reach several
                # leaves (add's backward passes it to both inputs) or be the user's.
                var._grad = _make(grad._data.copy())
        elif create_graph or STATE.enabled or old.is_sparse or grad.is_sparse:
            # NOTE: only dense + sparse is defined (sparse + dense raises, as in PyTorch)
            var._grad = grad + old if old.is_sparse and not grad.is_sparse else old + grad
        else:
            old._data += grad._data
            old._version.value += 1
        if extra is not None:
            for hook in tuple(extra.post_accumulate_hooks.values()):
                hook(var)


def tensor_hooks_of(t: Tensor) -> dict:
    """The hook dict of a leaf tensor (created on first use)."""
    return _extra(t).hooks


# ---------------------------------------------------------------------------
# the graph-leak guard: `total_loss += loss` across optimizer steps

def mark_optimizer_step() -> None:
    """Called after each optimizer step: nodes recorded before now belong to past steps."""
    STATE.step_seq = next(_sequence)


_LEAK_SITES: set = set()


def check_graph_leak(out: Tensor, accumulator: type) -> None:
    """Warn (once per line) about the classic ``total_loss += loss`` leak, which keeps every
    step's graph alive: a 0-dim sum with a graph that adds to an earlier 0-dim sum (an
    `accumulator` node) recorded before the last optimizer step.  Called by ``add``/``add_``
    on 0-dim results only.

    NOTE: only a sum of sums counts.  Adding up losses recorded before the step, as in
    ``print((loss_d + loss_g).item())`` after two optimizers stepped, keeps no graph past
    the line and is not reported.
    """
    step = STATE.step_seq
    fn = out._grad_fn
    if step < 0 or fn is None:
        return
    if not any(isinstance(child, accumulator) and child._sequence_nr < step
               and child._out_meta[0][0] == () for child, _ in fn._edges):
        return
    import os
    import sys
    import warnings

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(here):
        frame = frame.f_back
    if frame is None:
        return
    site = (frame.f_code.co_filename, frame.f_lineno)
    if site in _LEAK_SITES:
        return
    _LEAK_SITES.add(site)
    warnings.warn_explicit(
        f"{site[0]}:{site[1]}: a tensor that still carries its autograd graph is accumulated "
        "across optimizer steps (e.g. `total_loss += loss`): the graph of every step stays "
        "alive and memory grows. Accumulate `loss.item()` or `loss.detach()` instead.",
        UserWarning, site[0], site[1], module=frame.f_globals.get("__name__", "__main__"))
