"""class Tensor: one backend array plus what autograd needs to know about it.

A Tensor holds a NumPy (or CuPy) array in `_data`.  Autograd state lives beside it:
`_grad_fn` (the node that made it, None for leaves), `_requires_grad`, `_grad`, and
a version counter shared with every view of the same memory, so that an in-place
write through any alias is seen when backward unpacks a saved tensor.

The ~200 op methods (``x.exp()``, ``x + y``...) are not written here: they are
attached from one table in ``ember/_tensor_methods.py``, so this file stays the
ground floor that imports nothing of ember above ``_core``.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import dtype as dtypes
from .backend import device_of
from .device import to_device
from .grad_mode import STATE


class VersionCounter:
    """Counts in-place writes; shared by a tensor and all of its views."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class ViewInfo:
    """How a view was made: its base tensor and a function replaying the view on it.

    `version` is the counter value when the view's grad_fn was last made; when an
    in-place write has happened since, the grad_fn is made again from the base.
    """

    __slots__ = ("base", "view_fn", "version")

    def __init__(self, base: Tensor, view_fn, version: int):
        self.base = base
        self.view_fn = view_fn
        self.version = version


class TensorExtra:
    """Rarely used per-tensor state, kept out of the hot path."""

    __slots__ = ("hooks", "post_accumulate_hooks", "retains_grad", "name")

    def __init__(self):
        self.hooks = {}
        self.post_accumulate_hooks = {}
        self.retains_grad = False
        self.name = None


class Size(tuple):
    """A tensor's shape: a tuple of ints with PyTorch's repr and ``numel()``."""

    def __repr__(self) -> str:
        return f"ember.Size([{', '.join(str(d) for d in self)}])"

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __reduce__(self):
        return (Size, (tuple(self),))


def size_str(shape) -> str:
    """A shape as PyTorch writes it in error messages: ``torch.Size([3, 4])``.

    Messages keep PyTorch's wording so that code matching on them works unchanged; ``repr``
    of a :class:`Size` stays ``ember.Size([3, 4])``.
    """
    return f"torch.Size([{', '.join(str(d) for d in shape)}])"


class Tensor:
    """A multi-dimensional array that can record the operations applied to it."""

    __slots__ = ("_data", "_requires_grad", "_grad", "_grad_fn", "_output_nr", "_version",
                 "_view_info", "_accum_ref", "_extra", "__dict__", "__weakref__")

    # So that NumPy defers to our reflected operators (ndarray + Tensor -> Tensor).
    __array_priority__ = 1000

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, device=None, dtype=None):
        # Legacy constructor: Tensor(2, 3) is uninitialized, Tensor([1, 2]) copies data.
        # Both give the default float dtype, as in PyTorch, on the CPU only.
        if device is not None and to_device(device).type != "cpu":
            raise RuntimeError("legacy constructor expects device type: cpu but device type: "
                               f"{to_device(device).type} was passed")
        default = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
        if len(args) == 1 and not isinstance(args[0], int):
            data = np.array(args[0].numpy() if isinstance(args[0], Tensor) else args[0],
                            dtype=default.np_dtype)
        else:
            shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
            data = np.empty(tuple(shape), dtype=default.np_dtype)
        _init(self, data)

    # ------------------------------------------------------------------
    # basic attributes

    @property
    def data(self) -> Tensor:
        """The same memory as a tensor outside the graph, with its own version counter."""
        out = _make(self._data)
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape as an ``ember.Size``, or the length of one dimension."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    def dim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        """The number of elements."""
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def dtype(self) -> dtypes.dtype:
        return dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        return device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    is_sparse = False
    is_quantized = False
    is_meta = False
    layout = "strided"

    def is_floating_point(self) -> bool:
        """True for float16/bfloat16/float32/float64 tensors."""
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        """True for complex tensors."""
        return self.dtype.is_complex

    def is_signed(self) -> bool:
        """True unless the dtype is unsigned (uint8) or bool."""
        return self._data.dtype.kind not in "ub"

    def is_same_size(self, other: Tensor) -> bool:
        """True when `other` has the same shape."""
        return tuple(self._data.shape) == tuple(other._data.shape)

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor (RuntimeError for any other size)."""
        size = self._data.size
        if size != 1:
            raise RuntimeError("Boolean value of Tensor with "
                               f"{'no values' if size == 0 else 'more than one value'} is "
                               "ambiguous")
        return bool(self._data.reshape(-1)[0] != 0)

    def get_device(self) -> int:
        """-1 for CPU tensors, the GPU index otherwise."""
        dev = self.device
        return -1 if dev.type == "cpu" else (dev.index or 0)

    def is_contiguous(self, memory_format=None) -> bool:
        """True when the memory is laid out in row-major order without gaps (or in the
        given `memory_format`, e.g. ``ember.channels_last``)."""
        if memory_format is None:
            return bool(self._data.flags.c_contiguous)
        from .memory_format import is_in_format

        return is_in_format(self._data, memory_format)

    def stride(self, dim: int | None = None):
        """Strides in elements (not bytes), as PyTorch reports them."""
        item = self._data.itemsize
        strides = tuple(s // item for s in self._data.strides)
        return strides if dim is None else strides[_wrap_dim(dim, self._data.ndim, "stride")]

    def data_ptr(self) -> int:
        """The address of the first element."""
        if self.device.type == "cpu":
            return self._data.__array_interface__["data"][0]
        return self._data.data.ptr

    def storage_offset(self) -> int:
        """Elements between the start of the underlying buffer and this view."""
        base = self._data
        while getattr(base, "base", None) is not None and isinstance(base.base, type(base)):
            base = base.base
        return (self.data_ptr() - _ptr(base)) // self._data.itemsize

    def untyped_storage(self):
        """The underlying buffer (the root backend array), for identity checks."""
        base = self._data
        while getattr(base, "base", None) is not None and isinstance(base.base, type(base)):
            base = base.base
        return _Storage(base)

    # ------------------------------------------------------------------
    # autograd attributes

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records operations on this (leaf) tensor; returns self."""
        requires_grad = bool(requires_grad)
        if self._grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach()."
            )
        kind = self._data.dtype.kind
        if requires_grad and kind not in "fc" and self.dtype is not dtypes.bfloat16:
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        self._requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        info = self._view_info
        if info is not None and info.version != self._version.value:
            _refresh_view(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self):
        if self._grad_fn is not None and not self.retains_grad and STATE.enabled:
            import warnings

            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"grad of type {type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError("assigned grad has data of a different size")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if device_of(value._data) != device_of(self._data):
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._extra is not None and self._extra.retains_grad

    def is_inference(self) -> bool:
        """False: ember has no inference tensors (``inference_mode`` only stops recording)."""
        return False

    @property
    def name(self):
        return None if self._extra is None else self._extra.name

    def retain_grad(self) -> None:
        """Keep the gradient of this non-leaf tensor in ``.grad`` after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        grad_fn = self.grad_fn
        if grad_fn is None or self.retains_grad:
            return
        _extra(self).retains_grad = True
        grad_fn._add_retained(self._output_nr, weakref.ref(self))

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed.

        The hook may return a new gradient to use instead.  Returns a handle whose
        ``remove()`` unregisters it.
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        grad_fn = self.grad_fn
        if grad_fn is None:
            return RemovableHandle(_extra(self).hooks, hook)
        return grad_fn._add_tensor_prehook(self._output_nr, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a gradient was accumulated into this leaf's ``.grad``."""
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return RemovableHandle(_extra(self).post_accumulate_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute the gradient of this tensor w.r.t. the graph leaves, into their ``.grad``."""
        from .engine import backward

        backward((self,), None if gradient is None else (gradient,), retain_graph,
                 create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """The same memory and version counter, outside the graph."""
        out = _make(self._data)
        out._version = self._version
        return out

    def detach_(self) -> Tensor:
        """Cut this tensor out of the graph in place (it becomes a leaf)."""
        if self._view_info is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view "
                "is set as True, gradients are views of DDP buckets, and hence detach_() "
                "cannot be called on these gradients. To fix this error, please refer to "
                "the Optimizer.zero_grad() function in torch/optim/optimizer.py as the "
                "solution."
            )
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    # ------------------------------------------------------------------
    # conversions

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        value = self._data.reshape(()).item() if self.device.type == "cpu" else self._data.item()
        if self.dtype is dtypes.bfloat16:
            return float(value)
        return value

    def tolist(self):
        """The values as (nested) Python lists of numbers."""
        data = self._data if self.device.type == "cpu" else self._data.get()
        if self.dtype is dtypes.bfloat16:
            data = data.astype(np.float32)
        return data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The NumPy array sharing this tensor's memory (CPU tensors only)."""
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.device.type != "cpu":
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                    "to copy the tensor to host memory first."
                )
            return self._data.get()
        return self._data

    def __array__(self, dtype=None, copy=None):
        data = self._data if self.device.type == "cpu" else self._data.get()
        if dtype is not None and data.dtype != dtype:
            return data.astype(dtype)
        if copy:
            return data.copy()
        return data

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
                if self._data.size > 1 else "Boolean value of Tensor with no values is ambiguous"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __reduce_ex__(self, protocol):
        # Pickling (DataLoader workers, deepcopy of modules) keeps data and requires_grad.
        cls = type(self)
        return (_rebuild, (cls, self.detach().cpu_array(), self._requires_grad,
                           str(self.device), self.__dict__ or None))

    def cpu_array(self) -> np.ndarray:
        """The data as a NumPy array (copied from the GPU when needed)."""
        return self._data if self.device.type == "cpu" else self._data.get()

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment."
            )
        if id(self) in memo:
            return memo[id(self)]
        import copy

        out = _make(self._data.copy(), self._requires_grad, cls=type(self))
        memo[id(self)] = out
        if self._grad is not None:
            out._grad = copy.deepcopy(self._grad, memo)
        if self.__dict__:
            out.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return out

    def __repr__(self, *, tensor_contents=None) -> str:
        from .printing import tensor_repr

        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def type(self, dtype=None, non_blocking: bool = False):
        """With no argument, the legacy type name (``'ember.FloatTensor'``); else a cast."""
        if dtype is None:
            prefix = "ember.cuda." if self.device.type == "cuda" else "ember."
            return prefix + _LEGACY_NAMES[self.dtype.name]
        if isinstance(dtype, type) and hasattr(dtype, "device_type"):  # FloatTensor & co.
            return self.to(device=dtype.device_type, dtype=dtype.dtype)
        if isinstance(dtype, str):
            name = dtype.rsplit(".", 1)[-1]
            for key, legacy in _LEGACY_NAMES.items():
                if legacy == name:
                    return self.to(dtypes._BY_NAME[key])
            raise ValueError(f"invalid type: '{dtype}'")
        return self.to(dtype)


_LEGACY_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
    "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
    "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor",
}


class _Storage:
    """A handle on the memory under a tensor: equal for tensors sharing it."""

    def __init__(self, array):
        self._array = array

    def data_ptr(self) -> int:
        return _ptr(self._array)

    def nbytes(self) -> int:
        return self._array.nbytes

    def size(self) -> int:
        return self._array.nbytes

    def __eq__(self, other):
        return isinstance(other, _Storage) and self.data_ptr() == other.data_ptr()

    def __hash__(self):
        return hash(self.data_ptr())


def _ptr(array) -> int:
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr


class RemovableHandle:
    """Returned by hook registration; ``remove()`` takes the hook out again."""

    _next_id = 0

    def __init__(self, hooks_dict: dict, hook):
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id
        self._hooks_ref = weakref.ref(hooks_dict) if _weakrefable(hooks_dict) else None
        self._hooks = None if self._hooks_ref else hooks_dict
        hooks_dict[self.id] = hook

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        hooks = self._hooks_ref() if self._hooks_ref else self._hooks
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class HookDict(dict):
    """A dict that can be referenced weakly (plain dicts cannot)."""

    __slots__ = ("__weakref__",)


def _weakrefable(obj) -> bool:
    return isinstance(obj, HookDict)


# ----------------------------------------------------------------------
# construction helpers used by the whole core


_FIELDS = tuple(name for name in Tensor.__slots__ if not name.startswith("__"))


def _init(t: Tensor, data, requires_grad: bool = False) -> None:
    """Give `t` the fields of a new leaf wrapping `data`, as `_make` sets them."""
    fresh = _make(data, requires_grad)
    for name in _FIELDS:
        setattr(t, name, getattr(fresh, name))


def _make(data, requires_grad: bool = False, cls=Tensor) -> Tensor:
    """Wrap a backend array in a new leaf Tensor (no copy)."""
    # NOTE: the stores are written out (no loop over `_FIELDS`): this runs once per op
    # result, and a loop would cost a measurable share of the per-op overhead.
    t = object.__new__(cls)
    t._data = data
    t._requires_grad = requires_grad
    t._grad = None
    t._grad_fn = None
    t._output_nr = 0
    t._version = VersionCounter()
    t._view_info = None
    t._accum_ref = None
    t._extra = None
    return t


def _extra(t: Tensor) -> TensorExtra:
    if t._extra is None:
        t._extra = TensorExtra()
        t._extra.hooks = HookDict()
        t._extra.post_accumulate_hooks = HookDict()
    return t._extra


def _refresh_view(view: Tensor) -> None:
    """Re-derive a view's grad_fn from its base after an in-place write changed the base."""
    from .grad_mode import enable_grad

    info = view._view_info
    info.version = view._version.value
    base = info.base
    if not base._requires_grad:
        return
    with enable_grad():
        fresh = info.view_fn(base)
    view._grad_fn = fresh._grad_fn
    view._output_nr = fresh._output_nr
    view._requires_grad = fresh._requires_grad


def _rebuild(cls, array, requires_grad, device_str, state):
    t = _make(array, requires_grad, cls=cls)
    if device_str != "cpu":
        t = t.to(device_str)
        t._requires_grad = requires_grad
    if state:
        t.__dict__.update(state)
    return t


def _wrap_dim(dim: int, ndim: int, op: str = "") -> int:
    """Turn a possibly negative dim into an index, with PyTorch's IndexError."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}(): dim must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim + n if dim < 0 else dim


def is_tensor(obj) -> bool:
    """True when `obj` is an ember Tensor (or Parameter)."""
    return isinstance(obj, Tensor)
