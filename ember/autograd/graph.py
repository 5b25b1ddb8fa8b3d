"""The autograd graph's public types and tools.

``Node`` is the class of every ``grad_fn``: ``isinstance(t.grad_fn, Node)`` holds for
built-in ops, custom Functions, ``AccumulateGrad`` (the leaf nodes) and
``CopySlices``.  A node has ``name()``, ``next_functions``, ``metadata``,
``register_hook`` and ``register_prehook``.

Saved-tensor hooks decide how the tensors an op saves for backward are kept:
inside ``saved_tensors_hooks(pack_hook, unpack_hook)`` each one is passed to
``pack_hook`` when the op is recorded and whatever it returns is stored; backward
calls ``unpack_hook`` on it to get the tensor back.  ``save_on_cpu`` moves saved
tensors to host memory; activation checkpointing drops them and recomputes.  The
version check still applies: a saved tensor modified in place after it was packed
makes backward raise (ember is stricter than PyTorch here, which skips the check for
hooked tensors).

``saved_tensor_report(loss)`` lists, per node, the memory the graph holds for backward.
"""

from __future__ import annotations

from .._core.accumulate import AccumulateGrad
from .._core.grad_mode import STATE
from .._core.node import Node
from ..profiler._table import format_memory

__all__ = ["Node", "SavedTensorReport", "disable_saved_tensors_hooks", "save_on_cpu",
           "saved_tensor_report", "saved_tensors_hooks"]


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager: pack/unpack every tensor saved for backward inside it.

    ``pack_hook(tensor) -> anything`` is called when an op saves `tensor`;
    ``unpack_hook(packed) -> Tensor`` when backward needs it back.  The innermost
    active pair applies.  For a node's own output, `pack_hook` gets a tensor sharing the
    output's data (holding the output itself would make a reference cycle).

    >>> with ember.autograd.graph.saved_tensors_hooks(lambda t: t.numpy().copy(),
    ...                                                lambda a: ember.from_numpy(a)):
    ...     y = x.exp()
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook
        self._prev = []

    def __enter__(self):
        if STATE.saved_hooks_disabled is not None:
            raise RuntimeError(STATE.saved_hooks_disabled)
        self._prev.append(STATE.saved_hooks)
        STATE.saved_hooks = (self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        STATE.saved_hooks = self._prev.pop()
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Keep tensors saved for backward in CPU memory, moving them back when needed.

    A tensor already on the CPU is kept as it is (no copy).  `pin_memory` is accepted for
    compatibility; ember does not pin host memory.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(tensor):
            return (tensor.device, tensor if tensor.device.type == "cpu" else tensor.cpu())

        def unpack(packed):
            device, tensor = packed
            return tensor if tensor.device == device else tensor.to(device)

        super().__init__(pack, unpack)
        self.pin_memory = pin_memory


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager in which using saved-tensor hooks raises RuntimeError(error_message)
    (entering it while hooks are active raises too)."""

    def __init__(self, error_message: str):
        self.error_message = error_message
        self._prev = []

    def __enter__(self):
        if STATE.saved_hooks is not None:
            raise RuntimeError(self.error_message)
        self._prev.append(STATE.saved_hooks_disabled)
        STATE.saved_hooks_disabled = self.error_message
        return self

    def __exit__(self, *exc):
        STATE.saved_hooks_disabled = self._prev.pop()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)
        return wrapper


# ---------------------------------------------------------------------------
# the memory report

class SavedTensorRow:
    """One node of the report: its name, the tensors it saved and their bytes."""

    __slots__ = ("node", "name", "count", "nbytes", "packed", "shapes", "dtypes")

    def __init__(self, node, name, count, nbytes, packed, shapes, dtypes):
        self.node, self.name, self.count, self.nbytes = node, name, count, nbytes
        self.packed, self.shapes, self.dtypes = packed, shapes, dtypes

    def __repr__(self) -> str:
        return (f"SavedTensorRow(name={self.name!r}, count={self.count}, nbytes={self.nbytes}, "
                f"packed={self.packed}, shapes={self.shapes})")


class SavedTensorReport(list):
    """Rows (`SavedTensorRow`), largest first; ``str()`` gives a table.

    ``total_bytes`` counts each array once, even when several nodes save it;
    ``activation_bytes`` leaves out leaves (parameters and inputs, which live anyway);
    ``packed`` counts entries held by saved-tensor hooks (their memory is the hooks').
    """

    def __init__(self, rows, total_bytes: int, activation_bytes: int, packed: int):
        super().__init__(rows)
        self.total_bytes = total_bytes
        self.activation_bytes = activation_bytes
        self.packed = packed

    def table(self, row_limit: int = 50) -> str:
        rows = self[:row_limit] if row_limit else list(self)
        width = max([len(r.name) for r in rows] + [4])
        lines = [f"{'Node':<{width}}  {'Saved':>5}  {'Bytes':>10}  Shapes",
                 "-" * (width + 33)]
        for r in rows:
            shapes = ", ".join(f"{list(s)} {d}" for s, d in zip(r.shapes, r.dtypes))
            packed = f" (+{r.packed} packed)" if r.packed else ""
            lines.append(f"{r.name:<{width}}  {r.count:>5}  {format_memory(r.nbytes):>10}  "
                         f"{shapes}{packed}")
        lines.append("-" * (width + 33))
        lines.append(f"{len(self)} nodes; saved tensors hold {format_memory(self.total_bytes)}"
                     f" ({format_memory(self.activation_bytes)} of activations, the rest "
                     f"leaves){f'; {self.packed} packed by hooks' if self.packed else ''}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__


def _memory_key(array):
    """An identity for the memory an array views (its base array's id and its byte range)."""
    base = array
    while getattr(base, "base", None) is not None:
        base = base.base
    return id(base)


def saved_tensor_report(*outputs) -> SavedTensorReport:
    """Per node of the graph behind `outputs`, the bytes it saved for backward, largest
    first.  Nodes that saved nothing are left out; freed nodes (after a backward without
    ``retain_graph``) hold nothing."""
    roots = []
    for out in outputs:
        items = out if isinstance(out, (list, tuple)) else (out,)
        for t in items:
            fn = getattr(t, "grad_fn", None)
            if fn is not None:
                roots.append(fn)
    seen, stack, rows = set(roots), list(roots), []
    unique, leaves, packed_total = {}, set(), 0
    while stack:
        node = stack.pop()
        for child, _ in node._edges:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
        if isinstance(node, AccumulateGrad):
            leaves.add(_memory_key(node.variable._data))
            continue
        saved = getattr(node, "_saved", None)
        if not saved:
            continue
        count = nbytes = packed = 0
        shapes, dtypes = [], []
        for e in saved:
            if e is None or e[1] is None:
                continue
            count += 1
            if len(e) == 6:  # packed by saved-tensor hooks
                packed += 1
                shape, dtype = e[5]
                shapes.append(tuple(shape))
                dtypes.append(str(dtype))
                continue
            tensor, data = e[0], e[1]
            shapes.append(tuple(data.shape))
            dtypes.append(str(data.dtype))
            nbytes += data.nbytes
            key = _memory_key(data)
            unique[key] = max(unique.get(key, 0), data.nbytes)
            if tensor is not None and tensor._grad_fn is None and (
                    tensor._requires_grad or e[2] is not None):
                leaves.add(key)  # a parameter or an input (or a view of one)
        packed_total += packed
        rows.append(SavedTensorRow(node, node.name(), count, nbytes, packed, shapes, dtypes))
    rows.sort(key=lambda r: r.nbytes, reverse=True)
    return SavedTensorReport(rows, sum(unique.values()),
                             sum(n for k, n in unique.items() if k not in leaves), packed_total)
