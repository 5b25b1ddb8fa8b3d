"""Tensor creation: tensor/as_tensor/from_numpy and the factories (zeros, ones, ...).

Random factories live in ``ember/random.py``.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._core import dtype as dtypes
from .._core.backend import array_module, to_backend
from .._core.device import CPU, to_device
from .._core.tensor import Tensor, _make


def _infer_dtype(data) -> dtypes.dtype:
    """PyTorch's inference for nested Python data: bool < int < float < complex."""
    kinds = set()

    def visit(x):
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, np.ndarray):
            kinds.add(dtypes.from_numpy_dtype(x.dtype))
        elif isinstance(x, (bool, np.bool_)):
            kinds.add("bool")
        elif isinstance(x, (numbers.Integral,)):
            kinds.add("int")
        elif isinstance(x, numbers.Real):
            kinds.add("float")
        elif isinstance(x, numbers.Complex):
            kinds.add("complex")
        elif isinstance(x, (list, tuple)):
            for item in x:
                visit(item)
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")

    visit(data)
    if not kinds:
        return dtypes.get_default_dtype()
    rank = {"bool": dtypes.bool, "int": dtypes.int64, "float": dtypes.get_default_dtype(),
            "complex": dtypes.get_default_dtype().to_complex()}
    result = None
    for k in kinds:
        d = rank[k] if isinstance(k, str) else k
        result = d if result is None else dtypes.promote_types(result, d)
    return result


def _to_numpy_nested(data):
    """Replace tensors inside nested lists by NumPy arrays."""
    if isinstance(data, Tensor):
        return data.cpu_array()
    if isinstance(data, (list, tuple)):
        return [_to_numpy_nested(x) for x in data]
    return data


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor copied from `data` (nested lists, a scalar, a NumPy array or a tensor).

    Without `dtype`: Python floats give the default float dtype, ints int64, bools bool.

    >>> ember.tensor([[1., 2.], [3., 4.]]).shape
    ember.Size([2, 2])
    """
    if isinstance(data, Tensor):
        d = data.dtype if dtype is None else dtypes.to_dtype(dtype)
        array = data.cpu_array().astype(d.np_dtype, copy=True)
    elif isinstance(data, np.ndarray):
        d = dtypes.from_numpy_dtype(data.dtype) if dtype is None else dtypes.to_dtype(dtype)
        array = np.array(data, dtype=d.np_dtype, copy=True)
    else:
        d = _infer_dtype(data) if dtype is None else dtypes.to_dtype(dtype)
        try:
            array = np.array(_to_numpy_nested(data), dtype=d.np_dtype)
        except ValueError as exc:
            raise ValueError(f"tensor(): could not build a tensor from the data: {exc}") from None
        if array.dtype == object:
            raise TypeError("tensor(): data has an element of an unsupported type")
    dev = to_device(device)
    if dev is not CPU:
        array = to_backend(array, dev)
    out = _make(array)
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor``, but shares memory with a NumPy array or tensor when it can."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, np.ndarray) and (dtype is None or dtypes.to_dtype(
            dtype).np_dtype == data.dtype) and to_device(device) is CPU:
        dtypes.from_numpy_dtype(data.dtype)
        return _make(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (writes are seen by both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dtypes.from_numpy_dtype(ndarray.dtype)
    return _make(ndarray)


def _shape_arg(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a tuple of ints, but got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _factory(fill, size, dtype, device, requires_grad, default=None) -> Tensor:
    d = (default or dtypes.get_default_dtype()) if dtype is None else dtypes.to_dtype(dtype)
    xp = array_module(to_device(device))
    shape = _shape_arg(size)
    if fill is None:
        array = xp.empty(shape, dtype=d.np_dtype)
    elif fill == 0:
        array = xp.zeros(shape, dtype=d.np_dtype)
    else:
        array = xp.full(shape, fill, dtype=d.np_dtype)
    out = _make(array)
    if requires_grad:
        out.requires_grad_(True)
    return out


def zeros(*size, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros of the given shape."""
    return _factory(0, size, dtype, device, requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones of the given shape."""
    return _factory(1, size, dtype, device, requires_grad)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
          pin_memory: bool = False, memory_format=None) -> Tensor:
    """An uninitialized tensor of the given shape."""
    return _factory(None, size, dtype, device, requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """A tensor filled with `fill_value`; its dtype is inferred from the value.

    ``full([1], 2)`` is int64, ``full([1], 2.)`` float32, as in PyTorch.
    """
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = _infer_dtype(fill_value)
    return _factory(fill_value if fill_value != 0 else 0, (size,) if isinstance(
        size, (tuple, list)) else (size,), dtype, device, requires_grad, default=default)


def _like(input: Tensor, dtype, device):
    return (input.dtype if dtype is None else dtype), (
        input.device if device is None else device)


def zeros_like(input: Tensor, *, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """Zeros with the shape (and by default dtype and device) of `input`."""
    d, dev = _like(input, dtype, device)
    return _factory(0, (tuple(input.shape),), d, dev, requires_grad)


def ones_like(input: Tensor, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """Ones with the shape (and by default dtype and device) of `input`."""
    d, dev = _like(input, dtype, device)
    return _factory(1, (tuple(input.shape),), d, dev, requires_grad)


def empty_like(input: Tensor, *, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """Uninitialized memory with the shape of `input`."""
    d, dev = _like(input, dtype, device)
    return _factory(None, (tuple(input.shape),), d, dev, requires_grad)


def full_like(input: Tensor, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """`fill_value` everywhere, with the shape (and dtype) of `input`."""
    d, dev = _like(input, dtype, device)
    return _factory(fill_value, (tuple(input.shape),), d, dev, requires_grad)


def _new(fill):
    def factory(input: Tensor, *size, dtype=None, device=None, requires_grad: bool = False,
                layout=None, pin_memory=False) -> Tensor:
        d, dev = _like(input, dtype, device)
        return _factory(fill, size, d, dev, requires_grad)
    return factory


new_zeros = _new(0)
new_zeros.__doc__ = "Zeros of `size` with this tensor's dtype and device."
new_ones = _new(1)
new_ones.__doc__ = "Ones of `size` with this tensor's dtype and device."
new_empty = _new(None)
new_empty.__doc__ = "Uninitialized memory of `size` with this tensor's dtype and device."


def new_full(input: Tensor, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False, layout=None, pin_memory=False) -> Tensor:
    """`fill_value` in a tensor of `size` with this tensor's dtype and device."""
    d, dev = _like(input, dtype, device)
    return _factory(fill_value, (size,), d, dev, requires_grad)


def new_tensor(input: Tensor, data, *, dtype=None, device=None,
               requires_grad: bool = False, layout=None, pin_memory=False) -> Tensor:
    """A copy of `data` with this tensor's dtype and device by default."""
    d, dev = _like(input, dtype, device)
    return tensor(data, dtype=d, device=dev, requires_grad=requires_grad)
