"""Conversions: dtype and device changes (``to``), clone, copy_, contiguous."""

from __future__ import annotations

import numpy as np

from .._core import dtype as dtypes
from .._core.backend import array_module, device_of, to_backend
from .._core.device import device as Device
from .._core.function import Function
from .._core.memory_format import (
    check_format, contiguous_format, copy_in_format, is_in_format, preserve_format,
)
from .._core.tensor import Tensor
from . import _parallel
from ._util import xp_of
from .creation import tensor


class ToCopy(Function):
    """A copy with another dtype and/or device; the gradient converts back."""

    @staticmethod
    def forward(ctx, x, np_dtype=None, dev=None, copy=False):
        ctx.src = (x.dtype, device_of(x))
        out = x
        if dev is not None and device_of(x) != dev:
            out = to_backend(out, dev)
        if np_dtype is not None and out.dtype != np_dtype:
            out = out.astype(np_dtype)
        elif copy and out is x:
            out = x.copy()
        return out

    @staticmethod
    def backward(ctx, grad):
        src_dtype, src_dev = ctx.src
        if src_dtype.kind not in "fc" and src_dtype.name != "bfloat16":
            return None
        if src_dtype.kind != "c" and grad.is_complex():  # a real input: dL/dx is the real part
            grad = grad.real
        return grad.to(device=src_dev, dtype=dtypes.from_numpy_dtype(src_dtype))


def _parse_to_args(args, kwargs):
    """Sort ``to``'s flexible arguments into (device, dtype)."""
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a.device, a.dtype
        elif isinstance(a, dtypes.dtype) or a in (float, int, bool, complex):
            dt = a
        elif isinstance(a, (str, Device, int)) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            continue  # non_blocking given positionally
        elif isinstance(a, np.dtype) or (isinstance(a, type) and issubclass(a, np.generic)):
            dt = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    dev = None if dev is None else Device(dev)
    return dev, (None if dt is None else dtypes.to_dtype(dt)), copy


def to(input: Tensor, *args, **kwargs) -> Tensor:
    """Return `input` with another dtype, device and/or memory format (itself when nothing
    changes)."""
    fmt = kwargs.pop("memory_format", None)
    result = _to(input, args, kwargs)
    if fmt is None or check_format(fmt) is preserve_format:
        return result
    return contiguous(result, fmt)


def _to(input: Tensor, args, kwargs) -> Tensor:
    dev, dt, copy = _parse_to_args(args, kwargs)
    if dev is not None and dev.type == "cuda":
        array_module(dev)  # raises a clear error when CUDA is unavailable
    same_dtype = dt is None or input._data.dtype == dt.np_dtype
    same_device = dev is None or input.device == dev or (
        dev.type == input.device.type and dev.index is None)
    if same_dtype and same_device and not copy:
        return input
    return ToCopy.apply(input, None if dt is None else dt.np_dtype,
                        None if same_device else dev, copy)


def type_as(input: Tensor, other: Tensor) -> Tensor:
    """`input` converted to the dtype of `other` (itself when it already has it)."""
    return to(input, other.dtype)


def _caster(target):
    def convert(input: Tensor, memory_format=None) -> Tensor:
        return to(input, target)
    convert.__name__ = target.name
    convert.__doc__ = f"``to({target})``: a copy converted to {target.name} (self if already)."
    return convert


float_ = _caster(dtypes.float32)
double = _caster(dtypes.float64)
half = _caster(dtypes.float16)
bfloat16 = _caster(dtypes.bfloat16)
long = _caster(dtypes.int64)
int_ = _caster(dtypes.int32)
short = _caster(dtypes.int16)
char = _caster(dtypes.int8)
byte = _caster(dtypes.uint8)
bool_ = _caster(dtypes.bool)
cfloat = _caster(dtypes.complex64)
cdouble = _caster(dtypes.complex128)


def cpu(input: Tensor, memory_format=None) -> Tensor:
    """A copy in CPU memory (self when already there)."""
    return to(input, "cpu")


def cuda(input: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    """A copy in GPU memory (needs CuPy and a GPU)."""
    if device is None:
        device = "cuda"
    elif isinstance(device, int):
        device = f"cuda:{device}"
    return to(input, device)


class Clone(Function):
    """A copy that stays in the graph; its gradient passes through unchanged."""

    _passes_grad = True  # (Node._passes_grad)

    @staticmethod
    def forward(ctx, x, memory_format=preserve_format):
        if memory_format is contiguous_format and type(x) is np.ndarray \
                and not x.flags.c_contiguous:
            return _parallel.contiguous(x)   # (the copy on the threads when large)
        return copy_in_format(xp_of(x), x, memory_format)

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(input: Tensor, *, memory_format=preserve_format) -> Tensor:
    """A copy of `input` with its own memory, recorded in the graph.  By default it keeps
    the layout of `input` (see ``ember/_core/memory_format.py``)."""
    return Clone.apply(input, memory_format=check_format(memory_format))


def contiguous(input: Tensor, memory_format=contiguous_format) -> Tensor:
    """`input` itself when laid out in `memory_format` (row-major by default), else a copy
    that is."""
    memory_format = check_format(memory_format)
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if is_in_format(input._data, memory_format):
        return input
    return Clone.apply(input, memory_format=memory_format)


class Copy(Function):
    """``dst.copy_(src)``: the gradient goes to `src`, none to the old value of `dst`."""

    _inplace = True
    _name = "CopyBackwards"

    @staticmethod
    def forward(ctx, dst, src):
        ctx.src_meta = (src.dtype, device_of(src)) if hasattr(src, "dtype") else None
        if hasattr(src, "dtype") and device_of(src) != device_of(dst):
            src = to_backend(src, device_of(dst))
        try:
            dst[...] = src
        except ValueError as exc:  # a read-only (expanded) destination
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers "
                f"to a single memory location. Please clone() the tensor before performing "
                f"the operation. ({exc})"
            ) from None
        return dst

    @staticmethod
    def backward(ctx, grad):
        src_grad = grad
        if ctx.src_meta is not None:
            src_dtype, src_dev = ctx.src_meta
            src_grad = grad.to(device=src_dev, dtype=dtypes.from_numpy_dtype(src_dtype))
        return None, src_grad


def copy_(input: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy `src`'s values into `input` (broadcasting, converting dtype and device)."""
    if not isinstance(src, Tensor):
        src = tensor(src, dtype=input.dtype)
    src_shape = tuple(src.shape)
    try:
        np.broadcast_shapes(src_shape, tuple(input.shape))
        if len(src_shape) > input.ndim:
            raise ValueError
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({input.shape[-1] if input.ndim else 1}) must match the size "
            f"of tensor b ({src_shape[-1] if src_shape else 1}) at non-singleton dimension "
            f"{max(input.ndim - 1, 0)}; copy_ of a tensor of shape {list(src_shape)} into one "
            f"of shape {list(input.shape)}"
        ) from None
    return Copy.apply(input, src)
