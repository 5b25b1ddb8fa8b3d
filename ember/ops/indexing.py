"""Indexing: ``x[key]`` and ``x[key] = value``, index_put, masks, take, nonzero.

A key is split in two, as PyTorch does: first its ints, slices and None make a view
(``slicing.subview``), then its integer/bool tensors (the "advanced" part) index that
view, which copies.  The copy's gradient scatter-adds, so repeated indices sum.
Gather/scatter are in ``scatter.py``, the ``index_*`` family in ``index_dim.py``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.backend import device_of, scatter_add, to_backend
from .._core.function import Function
from .._core.tensor import Tensor, _make
from . import _native_select
from ._inplace import inplace_form
from ._util import check_same_device, is_scalar, xp_of
from .creation import tensor as make_tensor
from .slicing import subview
from .arithmetic import _short
from .slicing import SubviewBackward

_INTS = (int, np.integer)
_INDEX_KINDS = "iub"  # integer, unsigned (uint8: a mask), bool


# ----------------------------------------------------------------------
# helpers shared with scatter.py and index_dim.py


def backend_index(index, like, allow_bool: bool = True):
    """An index (tensor, array, list or int) as a backend array on `like`'s device."""
    if isinstance(index, Tensor):
        data = index._data
    elif isinstance(index, (list, tuple)):
        if any(isinstance(i, Tensor) for i in index):
            index = [i.cpu_array() if isinstance(i, Tensor) else i for i in index]
        data = np.asarray(index)
        if data.size == 0:
            data = data.astype(np.int64)
    else:
        data = np.asarray(index) if not hasattr(index, "__cuda_array_interface__") else index
    kind = data.dtype.kind
    if kind not in _INDEX_KINDS or (kind == "b" and not allow_bool):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    dev = device_of(like)
    if device_of(data) != dev:
        data = to_backend(data, dev)
    return data


def check_bounds(index, size: int, dim: int) -> None:
    """IndexError (PyTorch's message) when an int index array reaches outside ``[-size, size)``."""
    if index.size == 0:
        return
    low, high = int(index.min()), int(index.max())
    if low < -size or high >= size:
        bad = high if high >= size else low
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def read_only_error() -> RuntimeError:
    return RuntimeError(
        "unsupported operation: more than one element of the written-to tensor refers to a "
        "single memory location. Please clone() the tensor before performing the operation.")


def output_array(ctx, x):
    """Where an op writes: the input itself for an in-place op, else a copy."""
    if not ctx._inplace:
        return x.copy()
    if not getattr(x.flags, "writeable", True):
        raise read_only_error()
    return x


def dtype_short(d) -> str:
    return _short(d)


# ----------------------------------------------------------------------
# parsing a key


def _as_tuple_key(key) -> tuple:
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and len(key) < 32 and any(
            isinstance(k, (Tensor, list, tuple, range, slice)) or k is None or k is Ellipsis
            for k in key):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated; use "
            "x[tuple(seq)] instead of x[seq].", UserWarning, stacklevel=3)
        return tuple(key)
    return (key,)


def _type_name(item) -> str:
    """The type as PyTorch names it in index errors: ``numpy.bool``, ``set``."""
    cls = type(item)
    module = cls.__module__.split(".")[0]
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def _invalid_index(item) -> IndexError:
    return IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                      f"Variables are valid indices (got {_type_name(item)})")


def _is_byte_mask(item) -> bool:
    """A uint8 tensor or array of at least one dim: PyTorch's deprecated mask."""
    data = item._data if isinstance(item, Tensor) else item
    is_array = isinstance(data, np.ndarray) or hasattr(data, "__cuda_array_interface__")
    return is_array and data.ndim > 0 and data.dtype == np.uint8


def _classify(item, like):
    """One element of a key as (kind, value)."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, bool):
        return "bool", item
    if isinstance(item, np.bool_):  # PyTorch takes Python bools only
        raise _invalid_index(item)
    if isinstance(item, _INTS):
        return "int", int(item)
    if isinstance(item, slice):
        return "slice", _checked_slice(item)
    if isinstance(item, range):  # a range indexes like the list of its ints
        item = list(item)
    if isinstance(item, Tensor) and item._data.ndim == 0:
        kind = item._data.dtype.kind
        if kind == "b" or item._data.dtype == np.uint8:
            return "bool", bool(item.item())
        if kind in "iu":
            return "int", int(item.item())
    if isinstance(item, Tensor) and item._data.dtype in (np.int8, np.int16):
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if isinstance(item, (float, complex, np.floating, set, dict)):
        raise _invalid_index(item)
    if not isinstance(item, (Tensor, np.ndarray, list, tuple)) and not hasattr(
            item, "__cuda_array_interface__"):
        raise TypeError(f"invalid index of type {type(item).__name__}")
    data = backend_index(item, like)
    if data.dtype == np.uint8 and data.ndim > 0:
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning, stacklevel=4)
    if data.dtype.kind == "b" or data.dtype == np.uint8:
        if data.ndim == 0:
            return "bool", bool(data)
        return "mask", data.astype(bool) if data.dtype != bool else data
    return "array", data.astype(np.int64) if data.dtype != np.int64 else data


def _checked_slice(item: slice) -> slice:
    """A slice of plain ints; PyTorch's errors for other bounds and for steps below one."""
    for part in (item.start, item.stop, item.step):
        if part is not None and not isinstance(part, (_INTS, Tensor)):
            raise TypeError("slice indices must be integers or None or have an __index__ "
                            "method")
    start, stop, step = (None if p is None else int(p)
                         for p in (item.start, item.stop, item.step))
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step is not None and step < 0:
        raise ValueError("step must be greater than zero")
    return slice(start, stop, step)


def parse_key(x: Tensor, key):
    """Split `key` into a basic key (for a view) and an advanced key (None without one).

    The advanced key applies to the view and holds only full slices and int arrays
    (masks are turned into the arrays of their nonzero positions).
    """
    items = [_classify(k, x._data) for k in _as_tuple_key(key)]
    shape = x._data.shape
    ndim = len(shape)
    used = sum(1 if kind in ("int", "slice", "array") else v.ndim if kind == "mask" else 0
               for kind, v in items)
    ellipses = sum(1 for kind, _ in items if kind == "ellipsis")
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > ndim:
        if ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, advanced = [], []
    has_advanced = False
    dim = 0
    for kind, v in items:
        if kind == "int":
            size = shape[dim]
            if v < -size or v >= size:
                raise IndexError(f"index {v} is out of bounds for dimension {dim} with size "
                                 f"{size}")
            basic.append(v % size)
            dim += 1
        elif kind == "slice":
            basic.append(v)
            advanced.append(slice(None))
            dim += 1
        elif kind == "none":
            basic.append(None)
            advanced.append(slice(None))
        elif kind == "bool":
            basic.append(None)
            advanced.append(np.zeros(1 if v else 0, dtype=np.int64))
            has_advanced = True
        elif kind == "ellipsis":
            basic.append(Ellipsis)
            advanced.extend([slice(None)] * (ndim - used))
            dim += ndim - used
        elif kind == "array":
            check_bounds(v, shape[dim], dim)
            basic.append(slice(None))
            advanced.append(v)
            has_advanced = True
            dim += 1
        else:  # mask
            for j, n in enumerate(v.shape):
                if n != shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask {list(v.shape)} at index {j} does not match "
                        f"the shape of the indexed tensor {list(shape)} at index {dim + j}")
            basic.extend([slice(None)] * v.ndim)
            advanced.extend(mask_positions(v))
            has_advanced = True
            dim += v.ndim
    if has_advanced:
        xp = xp_of(x._data)
        advanced = [xp.asarray(a) if isinstance(a, np.ndarray) and xp is not np else a
                    for a in advanced]
        while advanced and isinstance(advanced[-1], slice):
            advanced.pop()
    return tuple(basic), (tuple(advanced) if has_advanced else None)


def mask_positions(mask) -> tuple:
    """The index arrays of a boolean mask's true positions (none for a 0-dim mask):
    computed from its values outside any op, so ``ember.compile`` runs a call that
    indexes with a mask eagerly (_compile/program.py)."""
    return xp_of(mask).nonzero(mask) if mask.ndim else ()


def _is_trivial(basic: tuple) -> bool:
    return all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in basic)


# ----------------------------------------------------------------------
# advanced indexing: the Functions


class Index(Function):
    """``x[key]`` with int arrays in the key (a copy)."""

    @staticmethod
    def forward(ctx, x, key):
        ctx.in_shape, ctx.key = x.shape, key
        return xp_of(x).ascontiguousarray(x[key])

    @staticmethod
    def backward(ctx, grad):
        return IndexPut.apply(grad.new_zeros(ctx.in_shape), grad, key=ctx.key, accumulate=True)


class IndexPut(Function):
    """``out = x.clone(); out[key] = values`` (or ``+=`` with accumulate)."""

    @staticmethod
    def forward(ctx, x, values, key, accumulate):
        ctx.key, ctx.accumulate = key, accumulate
        out = output_array(ctx, x)
        if accumulate:
            xp = xp_of(out)
            scatter_add(xp, out, key, xp.broadcast_to(values, advanced_shape(out.shape, key)))
        else:
            out[key] = values
        return out

    @staticmethod
    def backward(ctx, grad):
        gx = gv = None
        if ctx._edges[0][0] is not None:
            gx = grad if ctx.accumulate else IndexPut.apply(
                grad, grad.new_zeros(()), key=ctx.key, accumulate=False)
        if ctx._edges[1][0] is not None:
            gv = Index.apply(grad, ctx.key)
        return gx, gv


IndexPutInplace = inplace_form(IndexPut)


# ----------------------------------------------------------------------
# __getitem__ / __setitem__


def getitem(input: Tensor, key) -> Tensor:
    """``input[key]``: a view for ints, slices, None and ``...``; a copy when the key holds
    integer or bool tensors (or lists)."""
    basic, advanced = parse_key(input, key)
    out = input if _is_trivial(basic) and advanced is not None else subview(input, basic)
    if advanced is None:
        return out
    return Index.apply(out, advanced)


def setitem(input: Tensor, key, value) -> None:
    """``input[key] = value`` (a scalar or a tensor broadcast to the indexed region)."""
    if not isinstance(value, Tensor) or value.dim() == 0:
        items = key if isinstance(key, (tuple, list)) else (key,)
        if any(_is_byte_mask(k) for k in items):  # PyTorch fills through masked_fill_ here
            raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with "
                               "dtype unsigned char")
    basic, advanced = parse_key(input, key)
    target = input if _is_trivial(basic) and advanced is not None else subview(input, basic)
    if advanced is None:
        if isinstance(value, Tensor):
            value = _strip_leading_ones(value, target._data.ndim)
        target.copy_(value)
        return
    values = _values_for(target, value, "index_put_")
    check_same_device("index_put_", target, values)
    values = _checked_values(target, advanced, values)
    IndexPutInplace.apply(target, values, key=advanced, accumulate=False)


def _strip_leading_ones(value: Tensor, ndim: int) -> Tensor:
    """PyTorch drops leading size-1 dims of a value that has more dims than its target."""
    shape = tuple(value.shape)
    k = 0
    while len(shape) - k > ndim and shape[k] == 1:
        k += 1
    return value.reshape(shape[k:]) if k else value


def _values_for(target: Tensor, value, op: str) -> Tensor:
    if isinstance(value, Tensor):
        if value._data.dtype != target._data.dtype:
            raise RuntimeError(
                "Index put requires the source and destination dtypes match, got "
                f"{dtype_short(target.dtype)} for the destination and "
                f"{dtype_short(value.dtype)} for the source.")
        return value
    if not is_scalar(value):
        return make_tensor(value, dtype=target.dtype, device=target.device)
    xp = xp_of(target._data)
    return _make(xp.asarray(value).astype(target._data.dtype))


def advanced_shape(shape: tuple, key: tuple) -> tuple:
    """The shape of ``x[key]`` for a key of full slices and int arrays (NumPy's rules)."""
    arrays = [i for i, k in enumerate(key) if not isinstance(k, slice)]
    if not arrays:
        return tuple(shape)
    try:
        index_shape = tuple(np.broadcast_shapes(*(key[i].shape for i in arrays)))
    except ValueError:
        shapes = ", ".join(str(list(key[i].shape)) for i in arrays)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {shapes}") from None
    kept = [shape[i] for i, k in enumerate(key) if isinstance(k, slice)]
    rest = tuple(shape[len(key):])
    if arrays == list(range(arrays[0], arrays[-1] + 1)):  # adjacent: result dims stay there
        first = arrays[0]
        return tuple(kept[:first]) + index_shape + tuple(kept[first:]) + rest
    return index_shape + tuple(kept) + rest


def _checked_values(target: Tensor, key: tuple, values: Tensor) -> Tensor:
    """`values` made to broadcast to ``target[key]``'s shape (RuntimeError when it can't)."""
    shape = advanced_shape(target._data.shape, key)
    values = _strip_leading_ones(values, len(shape))
    vshape = tuple(values.shape)
    if len(vshape) > len(shape) or not _can_bc(vshape, shape) or tuple(
            np.broadcast_shapes(vshape, shape)) != shape:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(shape)}")
    return values


# ----------------------------------------------------------------------
# index_put


def _key_from_indices(input: Tensor, indices, op: str) -> tuple:
    """A tuple of index tensors (None = the whole dim) as an advanced key, checked."""
    if isinstance(indices, Tensor) or not isinstance(indices, (list, tuple)):
        raise TypeError(f"{op}(): indices must be a tuple of Tensors")
    # A 0-dim int tensor is an advanced index here (not a select, as in x[t]).
    items = tuple(slice(None) if i is None else i.reshape(1) if isinstance(i, Tensor) and
                  i.ndim == 0 and i._data.dtype.kind in "iu" else i for i in indices)
    basic, advanced = parse_key(input, items)
    if not _is_trivial(basic) or any(i is not None and not isinstance(i, Tensor) and not
                                     hasattr(i, "shape") for i in indices):
        raise TypeError(f"{op}(): indices must be Tensors (or None)")
    if advanced is None:  # PyTorch has no meaning for it either (it fails deep inside)
        raise RuntimeError(f"{op}(): indices must hold at least one index tensor, got "
                           f"{len(indices)} entries and none is a Tensor")
    return advanced


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of `input` with ``out[indices] = values`` (``+=`` with accumulate, where
    repeated indices add up)."""
    key = _key_from_indices(input, indices, "index_put")
    values = _checked_values(input, key, _values_for(input, values, "index_put"))
    return IndexPut.apply(input, values, key=key, accumulate=bool(accumulate))


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """In-place ``index_put``."""
    key = _key_from_indices(input, indices, "index_put_")
    values = _checked_values(input, key, _values_for(input, values, "index_put_"))
    return IndexPutInplace.apply(input, values, key=key, accumulate=bool(accumulate))


# ----------------------------------------------------------------------
# masks


def _bool_mask(mask, op: str, like: Tensor) -> Tensor:
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{_dtype_words(mask.dtype)}")
    check_same_device(op, like, mask)
    return mask


def _dtype_words(d) -> str:
    return {"float32": "float", "float64": "double", "uint8": "unsigned char",
            "int64": "long int", "int32": "int"}.get(d.name, d.name)


def _broadcast_error(a: tuple, b: tuple) -> RuntimeError:
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of tensor b "
                                f"({pb[i]}) at non-singleton dimension {i}")
    return RuntimeError(f"shapes {list(a)} and {list(b)} cannot be broadcast")


def _broadcast_pair(a: Tensor, mask: Tensor):
    sa, sm = tuple(a.shape), tuple(mask.shape)
    if sa == sm:
        return a, mask
    try:
        shape = np.broadcast_shapes(sa, sm)
    except ValueError:
        raise _broadcast_error(sa, sm) from None
    return (a if sa == shape else a.expand(shape)), (mask if sm == shape else mask.expand(shape))


def _inplace_mask(input: Tensor, mask: Tensor, op: str) -> Tensor:
    shape, sm = tuple(input.shape), tuple(mask.shape)
    if sm == shape:
        return mask
    if not _can_bc(shape, sm):
        raise _broadcast_error(shape, sm)
    full = tuple(np.broadcast_shapes(shape, sm))
    if full != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(full)}")
    return mask.expand(shape)


def _can_bc(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


class MaskedFill(Function):
    """``where(mask, value, x)``; `value` is a scalar or a 0-dim tensor."""

    @staticmethod
    def forward(ctx, x, value, mask):
        ctx.mask = mask
        if not isinstance(value, (bool, int, float, complex)):  # a 0-dim tensor value
            ctx._name = "MaskedFillBackward1"
        elif not ctx._inplace and type(x) is np.ndarray and type(mask) is np.ndarray \
                and mask.shape == x.shape and x.dtype.char in "fd":
            # NOTE: copyto's `where` branches per element (5 ms for 1M float32 on a random
            # mask); the select kernel does not
            with np.errstate(over="ignore"):   # (a value past the dtype's range: inf)
                return _native_select.where(mask, value, x)
        out = output_array(ctx, x)
        xp_of(out).copyto(out, value, casting="unsafe", where=mask)
        return out

    @staticmethod
    def backward(ctx, grad):
        mask = _make(ctx.mask)
        gx = grad.masked_fill(mask, 0) if ctx._edges[0][0] is not None else None
        gv = None
        if len(ctx._edges) > 1 and ctx._edges[1][0] is not None:
            gv = grad.masked_select(mask).sum()
        return gx, gv


MaskedFillInplace = inplace_form(MaskedFill)


def _fill_value(input: Tensor, value, op: str):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value.ndim} dimension(s).")
        if value.requires_grad and input.is_floating_point():
            return value if value.dtype == input.dtype else value.to(input.dtype)
        return value.item()
    if not is_scalar(value):
        raise TypeError(f"{op}(): value must be a number or a 0-dim tensor, got "
                        f"{type(value).__name__}")
    return value


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """A copy of `input` with `value` where `mask` is True (mask and input broadcast)."""
    mask = _bool_mask(mask, "masked_fill_", input)
    x, mask = _broadcast_pair(input, mask)
    return MaskedFill.apply(x, _fill_value(input, value, "masked_fill_"), mask=mask._data)


def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    """In-place ``masked_fill`` (the mask broadcasts to `input`)."""
    mask = _inplace_mask(input, _bool_mask(mask, "masked_fill_", input), "masked_fill_")
    return MaskedFillInplace.apply(input, _fill_value(input, value, "masked_fill_"),
                                   mask=mask._data)


class MaskedSelect(Function):
    @staticmethod
    def forward(ctx, x, mask):
        ctx.mask = mask
        return x[mask]

    @staticmethod
    def backward(ctx, grad):
        mask = _make(ctx.mask)
        return grad.new_zeros(ctx.mask.shape).masked_scatter(mask, grad)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of `input` where `mask` is True, as a 1-d tensor (the two broadcast)."""
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    check_same_device("masked_select", input, mask)
    x, mask = _broadcast_pair(input, mask)
    return MaskedSelect.apply(x, mask=mask._data)


class MaskedScatter(Function):
    """Copy the first elements of `source`, in order, to where `mask` is True."""

    @staticmethod
    def forward(ctx, x, source, mask):
        ctx.mask, ctx.source_shape = mask, source.shape
        out = output_array(ctx, x)
        count = int(mask.sum())
        out[mask] = source.reshape(-1)[:count]
        return out

    @staticmethod
    def backward(ctx, grad):
        mask = _make(ctx.mask)
        gx = gs = None
        if ctx._edges[0][0] is not None:
            gx = grad.masked_fill(mask, 0)
        if ctx._edges[1][0] is not None:
            picked = grad.masked_select(mask)
            n = 1
            for s in ctx.source_shape:
                n *= s
            gs = pad_to(picked, (n,)).reshape(ctx.source_shape)
        return gx, gs


MaskedScatterInplace = inplace_form(MaskedScatter)


def _check_source(input: Tensor, mask: Tensor, source: Tensor, op: str) -> None:
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{dtype_short(input.dtype)} and {dtype_short(source.dtype)}")
    if int(mask._data.sum()) > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of `input` whose True-mask positions take `source`'s elements in order."""
    mask = _bool_mask(mask, "masked_scatter_", input)
    x, mask = _broadcast_pair(input, mask)
    _check_source(x, mask, source, "masked_scatter")
    return MaskedScatter.apply(x, source, mask=mask._data)


def masked_scatter_(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place ``masked_scatter``."""
    mask = _inplace_mask(input, _bool_mask(mask, "masked_scatter_", input), "masked_scatter_")
    _check_source(input, mask, source, "masked_scatter_")
    return MaskedScatterInplace.apply(input, source, mask=mask._data)


def pad_to(t: Tensor, shape: tuple) -> Tensor:
    """`t` placed at the start of zeros of the (larger) `shape`; differentiable."""
    if tuple(t.shape) == tuple(shape):
        return t

    key = tuple(slice(0, n) for n in t.shape) + (Ellipsis,)
    return SubviewBackward.apply(t, tuple(shape), key)


# ----------------------------------------------------------------------
# take, put, nonzero, where


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened `input` at `index` (the result has `index`'s shape)."""
    data = backend_index(index, input._data, allow_bool=False)
    n = input._data.size
    if data.size and (int(data.min()) < -n or int(data.max()) >= n):
        bad = int(data.max()) if int(data.max()) >= n else int(data.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    # (not a copy: an index array that is the index tensor's own stands for it in a compiled
    # graph, which then reads each call's indices)
    return Index.apply(input.reshape(-1), (data.astype(np.int64, copy=False),))


def _put_key(input: Tensor, index, op: str) -> tuple:
    data = backend_index(index, input._data, allow_bool=False).reshape(-1)
    n = input._data.size
    if data.size and (int(data.min()) < -n or int(data.max()) >= n):
        bad = int(data.max()) if int(data.max()) >= n else int(data.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    xp = xp_of(input._data)
    return tuple(xp.unravel_index(data % max(n, 1), input._data.shape)) if input.ndim else (
        Ellipsis,)


def _put_values(input: Tensor, source, op: str) -> Tensor:
    values = _values_for(input, source, op)
    return values.reshape(()) if input.ndim == 0 else values.reshape(-1)


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Write `source` into the flattened `input` at `index`, in place (``+=`` with
    accumulate)."""
    key = _put_key(input, index, "put_")
    values = _put_values(input, source, "put_")
    return IndexPutInplace.apply(input, values, key=key, accumulate=bool(accumulate))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place ``put_``."""
    key = _put_key(input, index, "put")
    values = _put_values(input, source, "put")
    return IndexPut.apply(input, values, key=key, accumulate=bool(accumulate))


class Nonzero(Function):
    """The (n, ndim) int64 positions of the nonzero elements.  No gradient; a Function so
    that the profiler and the ONNX exporter see it."""

    @staticmethod
    def forward(ctx, x):
        xp = xp_of(x)
        if x.ndim == 0:
            return xp.zeros((1 if bool(x) else 0, 0), dtype=np.int64)
        return xp.stack(xp.nonzero(x), axis=1).astype(np.int64, copy=False)


def nonzero(input: Tensor, *, as_tuple: bool = False):
    """Indices of the nonzero elements: an (n, ndim) int64 tensor, or with ``as_tuple`` one
    1-d tensor per dim."""
    if as_tuple and input._data.ndim == 0:  # a 0-dim input counts as one element
        xp = xp_of(input._data)
        return (_make(xp.arange(1 if bool(input._data) else 0, dtype=np.int64)),)
    out = Nonzero.apply(input)
    return out.unbind(1) if as_tuple else out


def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: an (n, ndim) tensor of the nonzero positions."""
    return nonzero(input)


def unravel_index(indices, shape) -> tuple:
    """The coordinates in a tensor of `shape` of each flat (row-major) index: a tuple of
    int64 tensors, one per dim, shaped like `indices`."""
    if not isinstance(indices, Tensor):
        indices = _make(np.asarray(indices))
    if indices.is_floating_point() or indices.dtype is dtypes.bool or indices.is_complex():
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    dims = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(dims)}")
    flat = indices._data
    total = 1
    for d in dims:
        total *= d
    if flat.size and (int(flat.min()) < -total or int(flat.max()) >= total):
        raise ValueError(f"'indices' must be in range [-{total}, {total})")
    flat = xp_of(flat).where(flat < 0, flat + total, flat)
    coords = xp_of(flat).unravel_index(flat, dims) if dims else ()
    return tuple(_make(xp_of(flat).asarray(c, dtype=np.int64)) for c in coords)
