"""Function: the one mechanism every differentiable op goes through.

A built-in op is a subclass with two static methods:

* ``forward(ctx, *args, **params)`` receives backend arrays (NumPy/CuPy) in place
  of tensors and returns an array (or a tuple of arrays);
* ``backward(ctx, *grads)`` receives ember tensors and returns one gradient per
  positional argument of forward (None where there is none), written with ember
  ops, so the same formula serves first-order gradients (run under no-grad) and
  higher-order ones (recorded when ``create_graph=True``).

The instance `ctx` *is* the graph node (``y.grad_fn``, a `Node`): `apply` runs forward,
wraps the results in tensors and, when an input requires grad in grad mode,
`record_node` fills in the node's edges (``next_functions``) and turns what forward
saved into saved entries.  Users' ``autograd.Function`` subclasses share the node class
and `record_node`; only their `apply` differs (their forward sees tensors), see
``ember/autograd/function.py``.  In-place and view ops take a longer path through
views_inplace.py.
"""

from __future__ import annotations

import numpy as np

from .accumulate import edge_of
from .dtype import DIFFERENTIABLE_NUMPY
from .grad_mode import PROCESS, STATE
from .node import Node, next_sequence_nr, saved_entry
from .tensor import Tensor, _make
from .views_inplace import check_inplace, finish_inplace, mark_views, write_inplace

# (one set with the dtype tables: bfloat16 joins it when ml_dtypes is first loaded)
DIFFERENTIABLE_DTYPES = DIFFERENTIABLE_NUMPY


def as_array(value):
    """Backend results of 0-dim ops can be NumPy scalars; make them 0-dim arrays."""
    if type(value) is np.ndarray:
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if hasattr(value, "__cuda_array_interface__"):
        return value
    return np.asarray(value)


class Function(Node):
    """Base class of built-in ops (forward on arrays, backward on tensors)."""

    _inplace = False

    @staticmethod
    def forward(ctx, *args, **params):
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # One flag for `apply` to test: in-place and view ops take its longer path.
        cls._plain = not (cls._inplace or cls._is_view)
        if cls._reuses_grad:  # a new array, or the engine's own one overwritten
            cls._fresh_grads = True
        cls._may_hand_over = (cls._fresh_grads or cls._is_view or cls._grads_are_slices
                              or cls._passes_grad)  # (for the engine)

    @classmethod
    def apply(cls, *args, **params):
        """Run forward on the arguments' arrays and record a node when grad is needed."""
        # NOTE: this is the hot path of every op; keep it short.
        observer = PROCESS.observer
        if observer is not None:  # profiling or selective checkpointing
            return observer.op(cls, args, params)
        arrays = []
        record = False
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a._data)
                if a._requires_grad:
                    record = True
            else:
                arrays.append(a)
        if record:
            if not STATE.enabled:  # (this thread's grad mode)
                record = False
            elif len(arrays) > 2 or (len(arrays) == 2 and arrays[0] is arrays[1]):
                _separate_shared_arrays(args, arrays)
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
                record_node(ctx, args, arrays, (result,))
            return result
        if type(out) is tuple:
            results = [_make(_as_output(ctx, o)) for o in out]
            if record:
                record_node(ctx, args, arrays, results)
            return tuple(results)
        result = _make(_as_output(ctx, out))
        if record:
            record_node(ctx, args, arrays, (result,))
        return result


def _separate_shared_arrays(args, arrays: list) -> None:
    """Give each of two tensors that hold the same array object (``x.detach()`` twice,
    ``from_numpy(a)`` twice) a view object of its own, so that an array the forward saves
    names its tensor unambiguously (else a second-order gradient reaches the wrong one)."""
    for i in range(1, len(arrays)):
        a = arrays[i]
        if type(a) in _PLAIN_VALUES:  # (an op's parameter: no array to share)
            continue
        for j in range(i):
            if arrays[j] is a and args[j] is not args[i]:
                arrays[i] = a.view()
                break


_PLAIN_VALUES = frozenset({int, float, bool, complex, str, type(None)})
_new_object = object.__new__
_ndarray = np.ndarray
Function._plain = True


def _apply_special(cls, ctx, args, arrays, params, record: bool):
    """`Function.apply` for in-place ops and views."""
    if cls._inplace:
        target = args[0]
        check_inplace(target)
        out = cls.forward(ctx, *arrays, **params)
        output = write_inplace(ctx, target, out, record)
        if record:
            record_node(ctx, args, arrays, [output])
            finish_inplace(ctx, target)
        return target
    try:
        out = cls.forward(ctx, *arrays, **params)
    except ValueError as exc:
        raise _shape_error(ctx, arrays, exc) from None
    multi = type(out) is tuple
    results = [_make(_as_output(ctx, o)) for o in out] if multi else [_make(_as_output(ctx, out))]
    mark_views(cls, args, params, results, multi)
    if record:
        record_node(ctx, args, arrays, results)
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


# ---------------------------------------------------------------------------
# recording

_NO_EDGE = (None, 0)
_NOT_AN_ARRAY = object()


def record_node(ctx: Node, args, arrays, results) -> None:
    """Connect the node to its inputs and outputs once forward has run."""
    # NOTE: hot path.  An input's shape and dtype (to check its gradient against)
    # need not be stored: they are the `_out_meta` of the node its edge points to.
    edges = []
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            if a._view_info is None:  # (a view's grad_fn may need re-deriving: edge_of)
                fn = a._grad_fn
                if fn is not None:
                    edges.append((fn, a._output_nr))
                    continue
                ref = a._accum_ref  # a leaf seen before: its AccumulateGrad, without a call
                fn = ref() if ref is not None else None
                if fn is not None:
                    edges.append((fn, 0))
                    continue
            edges.append(edge_of(a))
        else:
            edges.append(_NO_EDGE)
    ctx._edges = tuple(edges)
    ctx._sequence_nr = next_sequence_nr()
    if PROCESS.anomaly:
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
    out_data = _NOT_AN_ARRAY if out is None else out._data
    saved = []
    for item in items:
        # NOTE: the usual cases first, the output's or an input's array, found with plain
        # loops (3x faster than `_pack`'s zip and isinstance tests: this runs per saved item).
        if item is out_data:
            counter = out._version
            saved.append((None, item, counter, counter.value, 0))
            continue
        i = 0
        for arr in arrays:
            if arr is item:
                a = args[i]
                if a is not item:  # (a Python scalar argument falls through to _pack)
                    counter = a._version
                    saved.append((a, item, counter, counter.value, -1))
                    break
            i += 1
        else:
            saved.append(_pack(item, args, arrays, results))
    if STATE.saved_hooks is not None:  # saved_tensors_hooks: pass them through pack
        saved = pack_hooked(ctx, saved)
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


def pack_hooked(ctx: Node, saved: list) -> list:
    """Pass each saved tensor through the active pack hook (``saved_tensors_hooks``).

    A hooked entry is (packed, edge, version_counter, version, output_nr, (shape, dtype)):
    the version snapshot stays, so in-place checks still work; `edge` is where the
    gradient of a saved input flows, so that the unpacked tensor can be re-attached.
    """
    pack, unpack = STATE.saved_hooks
    ctx._unpack_hook = unpack
    out = []
    # NOTE: as in PyTorch, pack runs with grad mode off: an op inside it (``t * 2``) must not
    # record a node, which would save its inputs through pack again, without end.
    enabled, STATE.enabled = STATE.enabled, False
    try:
        for e in saved:
            if e is None or e[1] is None:  # a Python scalar argument
                out.append(e)
                continue
            tensor, data, counter, version, nr = e
            if tensor is None:  # the node's own output: hand the hook an alias, not the output
                tensor, edge = _make(data), None  # (holding the output would make a cycle)
                tensor._version = counter
            else:
                edge = edge_of(tensor) if tensor._requires_grad else None
            out.append((pack(tensor), edge, counter, version, nr, (data.shape, data.dtype)))
    finally:
        STATE.enabled = enabled
    return out


# ---------------------------------------------------------------------------
# a hook for a check from above: the graph-leak warning (ember/autograd/_graph_leak.py)

_graph_leak_check = None


def set_graph_leak_check(check) -> None:
    """Install ``check(out, accumulator)``, called by `check_graph_leak` (None: no check)."""
    global _graph_leak_check
    _graph_leak_check = check


def check_graph_leak(out: Tensor, accumulator: type) -> None:
    """Called by ``add``/``add_`` with each 0-dim result that carries a graph (`accumulator`:
    the node class of a sum): hands it to the installed check, if any."""
    check = _graph_leak_check
    if check is not None:
        check(out, accumulator)
