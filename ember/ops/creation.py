"""Tensor creation: tensor/as_tensor/from_numpy and the factories (zeros, ones, ...).

Random factories live in ``ember/random.py``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._core import dtype as dtypes
from .._core.backend import array_module, to_backend
from .._core.device import CPU, factory_device
from .._core.function import Function
from .._core.memory_format import like_format
from .._core.tensor import Tensor, _make
from . import _native_fill
from ._util import check_layout, out_dtype, size_args, write_out, xp_of
from .joining import stack


def _infer_dtype(data) -> dtypes.dtype:
    """PyTorch's inference for nested Python data: bool < int < float < complex.

    NumPy arrays, NumPy scalars and tensors keep their own dtype.
    """
    kinds = set()

    def visit(x):
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, (np.ndarray, np.generic)):
            kinds.add(dtypes.from_numpy_dtype(x.dtype))
        elif isinstance(x, bool):
            kinds.add("bool")
        elif isinstance(x, numbers.Integral):
            kinds.add("int")
        elif isinstance(x, numbers.Real):
            kinds.add("float")
        elif isinstance(x, numbers.Complex):
            kinds.add("complex")
        elif isinstance(x, (list, tuple, range)):
            for item in x:
                visit(item)
        elif isinstance(x, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")

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
    if isinstance(data, (list, tuple, range)):
        return [_to_numpy_nested(x) for x in data]
    return data


def _ragged_message(data) -> str:
    """PyTorch's message for nested sequences whose lengths disagree."""
    def shape_of(x):
        if isinstance(x, (list, tuple, range)):
            return [len(x)] + (shape_of(x[0]) if len(x) else [])
        return []

    expected = shape_of(data)

    def walk(x, dim):
        if dim >= len(expected):
            return None
        if not isinstance(x, (list, tuple, range)):
            return f"expected sequence of length {expected[dim]} at dim {dim} (got scalar)"
        if len(x) != expected[dim]:
            return f"expected sequence of length {expected[dim]} at dim {dim} (got {len(x)})"
        for item in x:
            msg = walk(item, dim + 1)
            if msg:
                return msg
        return None

    return walk(data, 0) or "could not build a tensor from the data"


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor copied from `data` (nested lists, a scalar, a NumPy array or a tensor).

    Without `dtype`: Python floats give the default float dtype, ints int64, bools bool;
    NumPy arrays and scalars keep their dtype.

    >>> ember.tensor([[1., 2.], [3., 4.]]).shape
    ember.Size([2, 2])
    """
    if isinstance(data, Tensor):
        import warnings

        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        d = data.dtype if dtype is None else dtypes.to_dtype(dtype)
        array = data.cpu_array().astype(d.np_dtype, copy=True)
    elif isinstance(data, np.ndarray):
        d = dtypes.from_numpy_dtype(data.dtype) if dtype is None else dtypes.to_dtype(dtype)
        array = np.array(data, dtype=d.np_dtype, copy=True)
    else:
        d = _infer_dtype(data) if dtype is None else dtypes.to_dtype(dtype)
        try:
            array = np.array(_to_numpy_nested(data), dtype=d.np_dtype)
        except ValueError:
            raise ValueError(_ragged_message(data)) from None
        except OverflowError:
            raise ValueError("Overflow when unpacking long long") from None
        if array.dtype == object:
            raise TypeError("tensor(): data has an element of an unsupported type")
    dev = factory_device(device)
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
            dtype).np_dtype == data.dtype) and factory_device(device) is CPU:
        dtypes.from_numpy_dtype(data.dtype)
        return _make(data)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """`obj` as a tensor, sharing memory with a tensor or NumPy array when `copy` is not
    True and nothing needs converting (``copy=False`` raises when a copy is needed)."""
    if copy is True:
        result = (obj.detach().to(device=device, dtype=dtype, copy=True)
                  if isinstance(obj, Tensor) else tensor(obj, dtype=dtype, device=device))
    else:
        result = as_tensor(obj, dtype=dtype, device=device)
        source = obj._data if isinstance(obj, Tensor) else obj
        if copy is False and not (isinstance(source, np.ndarray) and
                                  np.shares_memory(result._data, source)):
            raise ValueError("asarray(): a copy is needed but copy=False was given")
    if requires_grad:
        result.requires_grad_(True)
    return result


def scalar_tensor(s, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-dim tensor holding the number `s` (the default float dtype unless given)."""
    check_layout("scalar_tensor", layout)
    d = dtypes.get_default_dtype() if dtype is None else dtype
    return tensor(s, dtype=d, device=device, requires_grad=requires_grad)


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


def _factory(fill, size, dtype, device, requires_grad, default=None, out=None,
             op: str = "") -> Tensor:
    dtype = out_dtype(op, dtype, out)
    d = (default or dtypes.get_default_dtype()) if dtype is None else dtypes.to_dtype(dtype)
    xp = array_module(factory_device(device))
    shape = _shape_arg(size)
    fill = _fitted(fill, d)
    if fill is None:
        return _finish(xp.empty(shape, dtype=d.np_dtype), requires_grad, out, op)
    # a large float array is written by the threads in halves; others by NumPy
    array = _native_fill.filled(shape, d.np_dtype, fill) if xp is np else None
    if array is None:
        array = (xp.zeros(shape, dtype=d.np_dtype) if _plain_zero(fill)
                 else xp.full(shape, fill, dtype=d.np_dtype))
    return _finish(array, requires_grad, out, op)


def _plain_zero(fill) -> bool:
    """Whether `fill` is a zero that ``zeros`` gives bit for bit (not -0.0, which
    ``full`` keeps, as PyTorch's does)."""
    if fill != 0:
        return False
    if type(fill) is int or type(fill) is bool:   # (zeros' and ones' own numbers)
        return True
    value = complex(fill)
    return math.copysign(1.0, value.real) > 0 and math.copysign(1.0, value.imag) > 0


def _fitted(value, d: dtypes.dtype):
    """A fill value for dtype `d`: RuntimeError when it cannot be stored in an integer dtype;
    negative values wrap into unsigned ones (``full((2,), -1, dtype=uint8)`` holds 255), as
    in PyTorch."""
    if d.is_floating_point or d.is_complex or d is dtypes.bool or value is None:
        return value
    number = value.real if isinstance(value, complex) else value
    info = np.iinfo(d.np_dtype)
    if info.min <= number <= info.max:
        return value
    if math.isfinite(number) and d.np_dtype.kind == "u" and -info.max <= number < 0:
        return int(number) % (info.max + 1)
    raise RuntimeError(f"value cannot be converted to type {d.name}_t without overflow")


def zeros(*args, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros of the given shape (``zeros(2, 3)``, ``zeros((2, 3))`` or
    ``zeros(size=(2, 3))``)."""
    check_layout("zeros", layout)
    return _factory(0, size_args("zeros", args, size), dtype, device, requires_grad, out=out,
                    op="zeros")


def ones(*args, size=None, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones of the given shape."""
    check_layout("ones", layout)
    return _factory(1, size_args("ones", args, size), dtype, device, requires_grad, out=out,
                    op="ones")


def empty(*args, size=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """An uninitialized tensor of the given shape."""
    check_layout("empty", layout)
    return _factory(None, size_args("empty", args, size), dtype, device, requires_grad,
                    out=out, op="empty")


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """A tensor filled with `fill_value`; its dtype is inferred from the value.

    ``full([1], 2)`` is int64, ``full([1], 2.)`` float32, as in PyTorch.
    """
    check_layout("full", layout)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    if isinstance(fill_value, Tensor):
        default = fill_value.dtype
        fill_value = fill_value.item()
    elif isinstance(fill_value, np.generic):
        # NumPy scalars count as Python numbers here (np.bool_ as a float, as in PyTorch)
        default = dtypes.get_default_dtype() if isinstance(fill_value, np.bool_) else \
            _infer_dtype(fill_value.item())
        fill_value = fill_value.item()
    else:
        default = _infer_dtype(fill_value)
    return _factory(fill_value, (size,), dtype, device, requires_grad, default=default,
                    out=out, op="full")


def _like(input: Tensor, dtype, device):
    return (input.dtype if dtype is None else dtype), (
        input.device if device is None else device)


def _filled_like(op: str, fill, input: Tensor, dtype, layout, device, requires_grad: bool,
                 memory_format) -> Tensor:
    """The body of zeros_like / ones_like / empty_like / full_like (`fill` None: empty)."""
    check_layout(op, layout)
    d, dev = _like(input, dtype, device)
    return like_format(_factory(fill, (tuple(input.shape),), d, dev, requires_grad), input,
                       memory_format)


def zeros_like(input: Tensor, *, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """Zeros with the shape (and by default dtype and device) of `input`."""
    return _filled_like("zeros_like", 0, input, dtype, layout, device, requires_grad,
                        memory_format)


def ones_like(input: Tensor, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """Ones with the shape (and by default dtype and device) of `input`."""
    return _filled_like("ones_like", 1, input, dtype, layout, device, requires_grad,
                        memory_format)


def empty_like(input: Tensor, *, dtype=None, layout=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """Uninitialized memory with the shape of `input`."""
    return _filled_like("empty_like", None, input, dtype, layout, device, requires_grad,
                        memory_format)


def full_like(input: Tensor, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """`fill_value` everywhere, with the shape (and dtype) of `input`."""
    return _filled_like("full_like", fill_value, input, dtype, layout, device, requires_grad,
                        memory_format)


def _new(fill):
    def factory(input: Tensor, *size, dtype=None, device=None, requires_grad: bool = False,
                layout=None, pin_memory=False) -> Tensor:
        check_layout("new_" + {0: "zeros", 1: "ones", None: "empty"}[fill], layout)
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
    check_layout("new_full", layout)
    d, dev = _like(input, dtype, device)
    return _factory(fill_value, (size,), d, dev, requires_grad)


def new_tensor(input: Tensor, data, *, dtype=None, device=None,
               requires_grad: bool = False, layout=None, pin_memory=False) -> Tensor:
    """A copy of `data` with this tensor's dtype and device by default."""
    check_layout("new_tensor", layout)
    d, dev = _like(input, dtype, device)
    return tensor(data, dtype=d, device=dev, requires_grad=requires_grad)


# ---------------------------------------------------------------------------
# ranges, grids, identity


def _number(value, op: str):
    """A Python number from a number or a one-element tensor."""
    if isinstance(value, Tensor):
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{op}(): expected a number, got {type(value).__name__}")
    return value


def _finish(array, requires_grad: bool, out=None, op: str = "") -> Tensor:
    """A factory's array as a tensor, or written into `out` (see `write_out`)."""
    result = write_out(op, _make(array), out)
    if requires_grad:
        result.requires_grad_(True)
    return result


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Values from `start` (inclusive) to `end` (exclusive) spaced by `step`.

    With one argument it is `end`.  Integer arguments give int64, any float argument
    the default float dtype.  The length is ``ceil((end - start) / step)``.

    >>> ember.arange(1, 2, 0.25).tolist()
    [1.0, 1.25, 1.5, 1.75]
    """
    check_layout("arange", layout)
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v, "arange") for v in (start, end, step))
    dtype = out_dtype("arange", dtype, out)
    if dtype is None:
        floating = any(isinstance(v, float) for v in (start, end, step))
        d = dtypes.get_default_dtype() if floating else dtypes.int64
    else:
        d = dtypes.to_dtype(dtype)
    integral = not (d.is_floating_point or d.is_complex)
    if integral:
        start, end = int(start), int(end)
        if int(step) == 0 and step != 0:
            raise ValueError("step must be nonzero")
        step = int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    xp = array_module(factory_device(device))
    if integral:
        n = max(0, -(-(end - start) // step))
        array = xp.arange(n, dtype=np.int64) * step + start
        array = array.astype(d.np_dtype, copy=False)
    else:
        n = max(0, math.ceil((end - start) / step))
        array = (xp.arange(n, dtype=np.float64) * step + start).astype(d.np_dtype)
    return _finish(array, requires_grad, out, "arange")


def range_(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Deprecated: values from `start` to `end` *inclusive* (default float dtype)."""
    check_layout("range", layout)
    import warnings

    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    start, end, step = (_number(v, "range") for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    dtype = out_dtype("range", dtype, out)
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    xp = array_module(factory_device(device))
    n = int(math.floor((end - start) / step)) + 1
    array = (xp.arange(n, dtype=np.float64) * step + start).astype(d.np_dtype)
    return _finish(array, requires_grad, out, "range")


def _space_args(op: str, start, end, steps, layout, dtype, out) -> tuple:
    """linspace / logspace arguments checked as PyTorch does: numbers `start` and `end`, an
    int `steps` >= 0, and the dtype asked for (by `dtype` or `out`)."""
    check_layout(op, layout)
    start, end = _number(start, op), _number(end, op)
    steps = int(_number(steps, op))
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return start, end, steps, out_dtype(op, dtype, out)


def linspace(start, end, steps: int, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included.

    >>> ember.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    start, end, steps, dtype = _space_args("linspace", start, end, steps, layout, dtype, out)
    if dtype is None:
        is_complex = isinstance(start, complex) or isinstance(end, complex)
        d = dtypes.get_default_dtype()
        d = d.to_complex() if is_complex else d
    else:
        d = dtypes.to_dtype(dtype)
    xp = array_module(factory_device(device))
    work = d.np_dtype if (d.is_floating_point or d.is_complex) else np.float64
    if d is dtypes.bfloat16 or d is dtypes.float16:
        work = np.float32
    array = _even_steps(xp, start, end, steps, work).astype(d.np_dtype)
    return _finish(array, requires_grad, out, "linspace")


def _even_steps(xp, start, end, steps: int, work):
    """start + i*step for the first half, end - (steps-1-i)*step for the second, computed in
    `work` precision (symmetric rounding, as PyTorch does)."""
    if steps == 0:
        return xp.zeros(0, dtype=work)
    if steps == 1:
        return xp.full(1, start, dtype=work)
    s, e = xp.asarray(start, dtype=work), xp.asarray(end, dtype=work)
    step = (e - s) / (steps - 1)
    i = xp.arange(steps).astype(work)
    half = (steps + 1) // 2  # i < steps / 2 counts from start
    low = s + i[:half] * step
    high = e - (steps - 1 - i[half:]) * step
    return xp.concatenate([low, high])


def logspace(start, end, steps: int, base: float = 10.0, *, out=None, dtype=None, layout=None,
             device=None, requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    start, end, steps, dtype = _space_args("logspace", start, end, steps, layout, dtype, out)
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    xp = array_module(factory_device(device))
    exps = _even_steps(xp, start, end, steps, np.float64)
    array = xp.power(float(base), exps)
    if not (d.is_floating_point or d.is_complex):
        array = xp.round(array)  # NOTE: powers of an integer base must not truncate 99.99..
    return _finish(array.astype(d.np_dtype), requires_grad, out, "logspace")


def eye(n: int, m: int | None = None, *, out=None, dtype=None, layout=None, device=None,
        requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The n x m identity matrix (square when `m` is omitted)."""
    check_layout("eye", layout)
    n = int(n)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is None else int(m)
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dtype = out_dtype("eye", dtype, out)
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    xp = array_module(factory_device(device))
    return _finish(xp.eye(n, m, dtype=d.np_dtype), requires_grad, out, "eye")


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Uninitialized memory seen with the given sizes and strides (in elements)."""
    check_layout("empty_strided", layout)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} vs "
                           f"{len(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError("empty_strided: negative strides are not supported")
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    xp = array_module(factory_device(device))
    needed = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    buffer = xp.empty(needed, dtype=d.np_dtype)
    item = buffer.itemsize
    if xp is np:
        array = np.lib.stride_tricks.as_strided(buffer, size, tuple(s * item for s in stride))
    else:
        array = xp.lib.stride_tricks.as_strided(buffer, size, tuple(s * item for s in stride))
    return _finish(array, requires_grad)


def _tri_indices(op: str, np_fn, row: int, col: int, offset: int, dtype, device) -> Tensor:
    row, col, offset = int(row), int(col), int(offset)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    d = dtypes.int64 if dtype is None else dtypes.to_dtype(dtype)
    if d not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"\"{op}\" not implemented for '{d.name}'")
    rows, cols = np_fn(row, offset, col)
    array = np.stack([rows, cols]).astype(d.np_dtype).reshape(2, -1)
    dev = factory_device(device)
    return _make(array if dev is CPU else to_backend(array, dev))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (row, col) coordinates of the lower triangle of a row x col matrix, as a 2 x N
    tensor in row-major order; `offset` moves the diagonal up (> 0) or down."""
    check_layout("tril_indices", layout)
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (row, col) coordinates of the upper triangle of a row x col matrix (2 x N)."""
    check_layout("triu_indices", layout)
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 1-D tensors: output k varies along dim k ('ij' indexing) and is
    constant along the others; 'xy' swaps the first two dims (Cartesian order).

    The outputs are broadcast views of the inputs (``expand``), so gradients flow back.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        import warnings

        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"meshgrid(): expected Tensors, got {type(t).__name__}")
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got a {t.dim()}-D tensor")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    ordered = [tensors[i] for i in order]
    shape = tuple(t.numel() for t in ordered)
    grids = []
    for k, t in enumerate(ordered):
        view_shape = [1] * len(shape)
        view_shape[k] = shape[k]
        grids.append(t.reshape(view_shape).expand(shape))
    return tuple(grids[order.index(i)] for i in range(len(tensors)))


def cartesian_prod(*tensors) -> Tensor:
    """All combinations of the elements of 1-D tensors, one per row (like itertools.product)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


# ---------------------------------------------------------------------------
# fill_ and zero_


class Fill(Function):
    """Overwrite every element with one value (a number or a 0-dim tensor)."""

    _inplace = True

    @staticmethod
    def forward(ctx, x, value):
        ctx._name = "FillBackward3" if hasattr(value, "shape") else "FillBackward2"
        xp = xp_of(x)
        if hasattr(value, "shape"):
            value = value.astype(x.dtype) if value.dtype != x.dtype else value
            return xp.broadcast_to(value, x.shape).copy()
        if _native_fill.fill_into(x, value):   # (written in place: nothing to copy back)
            return x
        return xp.full(x.shape, value, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _zeros_of(grad), grad.sum()


class Zero(Function):
    _inplace = True

    @staticmethod
    def forward(ctx, x):
        if _native_fill.fill_into(x, 0):
            return x
        return xp_of(x).zeros_like(x)

    @staticmethod
    def backward(ctx, grad):
        return _zeros_of(grad)


def _zeros_of(t: Tensor) -> Tensor:
    return _make(xp_of(t._data).zeros_like(t._data))


def fill_(input: Tensor, value) -> Tensor:
    """Set every element of `input` to `value` in place (a number or a 0-dim tensor)."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        return Fill.apply(input, value)
    if not isinstance(value, (numbers.Number, np.generic)):
        raise TypeError(f"fill_(): argument 'value' must be Number, not {type(value).__name__}")
    if isinstance(value, np.generic):
        value = value.item()
    d = input.dtype
    if not (d.is_floating_point or d.is_complex) and d is not dtypes.bool:
        value = _fitted(value, d)
    return Fill.apply(input, value)


def zero_(input: Tensor) -> Tensor:
    """Set every element of `input` to zero in place."""
    return Zero.apply(input)
