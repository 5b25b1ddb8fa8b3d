"""Quantized tensors: an integer array plus the parameters that map it back to reals,
``real = (q - zero_point) * scale``, with one (scale, zero_point) for the whole tensor or
one per slice along an axis.

A `QuantizedTensor` is a forward-only value for inference: it dequantizes, shows its
integers and its parameters, and refuses arithmetic (``NotImplementedError`` naming the
op), so nothing computes silently on the integers as if they were the values.
"""

from __future__ import annotations

import numpy as np

from ..._core.tensor import Tensor, _make
from ._qtypes import (
    QuantizedDtype, per_channel_affine, per_tensor_affine, qint32, qscheme,
)
from ..._core.device import device
from ..._core.tensor import Size

__all__ = ["QuantizedTensor", "quantize_per_tensor", "quantize_per_channel", "dequantize"]


def _float32_input(input, op: str) -> np.ndarray:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    data = input.detach().cpu()._data
    if data.dtype != np.float32:
        name = {"float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                "bool": "Bool", "uint8": "Byte", "int8": "Char"}.get(str(data.dtype),
                                                                     str(data.dtype))
        raise RuntimeError(f"Quantize only works on Float Tensor, got {name}")
    return data


def _check_qdtype(dtype, op: str) -> QuantizedDtype:
    if not isinstance(dtype, QuantizedDtype):
        raise RuntimeError(f"{op}: dtype must be ember.quint8, ember.qint8 or ember.qint32, "
                           f"got {dtype}")
    return dtype


def _as_float(value) -> float:
    return float(value.item() if isinstance(value, Tensor) else value)


def _as_int(value) -> int:
    return int(value.item() if isinstance(value, Tensor) else value)


def _as_array(value, np_dtype) -> np.ndarray:
    if isinstance(value, Tensor):
        value = value.detach().cpu()._data
    return np.asarray(value).astype(np_dtype).reshape(-1)


def _quantize_per_tensor_array(x: np.ndarray, scale: float, zero_point: int,
                               dtype: QuantizedDtype) -> np.ndarray:
    inv_scale = np.float32(1.0) / np.float32(scale)
    if dtype is qint32:
        q = np.rint(x * inv_scale + np.float32(zero_point))
    else:
        # NOTE: PyTorch's x86 (fbgemm) kernel computes zero_point + x * inv_scale as one fused
        # multiply-add, rounded once to float32, then to the nearest integer (ties to even).
        # The float64 product of two float32s is exact, so adding in float64 and rounding to
        # float32 reproduces the fused result (up to a double-rounding case of probability
        # ~2^-30 per element); rounding x * inv_scale first would differ on near-ties.
        q = np.rint((x.astype(np.float64) * np.float64(inv_scale) + zero_point)
                    .astype(np.float32))
    return np.clip(q, dtype.quant_min, dtype.quant_max).astype(dtype.np_dtype)


def _quantize_per_channel_array(x: np.ndarray, scales: np.ndarray, zero_points: np.ndarray,
                                axis: int, dtype: QuantizedDtype) -> np.ndarray:
    shape = [1] * x.ndim
    shape[axis] = -1
    inv_scale = np.float32(1.0) / scales.astype(np.float32).reshape(shape)
    zp = zero_points.astype(np.float32).reshape(shape)
    # (per channel, PyTorch rounds x * inv_scale to float32 before adding the zero point)
    q = np.rint(x * inv_scale + zp)
    return np.clip(q, dtype.quant_min, dtype.quant_max).astype(dtype.np_dtype)


class QuantizedTensor:
    """An integer tensor with its quantization parameters (made by ``quantize_per_tensor``
    or ``quantize_per_channel``); ``dequantize()`` gives the float32 values it stands for.

    It supports no arithmetic: quantized ops run forward only, inside quantized modules
    such as ``ember.ao.nn.quantized.dynamic.Linear``.
    """

    __slots__ = ("_int", "_dtype", "_qscheme", "_scale", "_zero_point", "_axis")
    is_quantized = True
    requires_grad = False
    grad_fn = None
    is_leaf = True

    def __init__(self, int_array: np.ndarray, dtype: QuantizedDtype, scheme: qscheme,
                 scale, zero_point, axis: int | None = None) -> None:
        self._int = int_array
        self._dtype = dtype
        self._qscheme = scheme
        self._scale = scale            # float, or float64 array (per channel)
        self._zero_point = zero_point  # int, or int64 array (per channel)
        self._axis = axis

    # --- what it is -------------------------------------------------------------------
    @property
    def dtype(self) -> QuantizedDtype:
        return self._dtype

    @property
    def shape(self):
        return Size(self._int.shape)

    @property
    def device(self):
        return device("cpu")

    @property
    def ndim(self) -> int:
        return self._int.ndim

    def size(self, dim: int | None = None):
        """The shape, or the length of dimension `dim`."""
        return self.shape if dim is None else self._int.shape[dim]

    def dim(self) -> int:
        """The number of dimensions."""
        return self._int.ndim

    def numel(self) -> int:
        """The number of elements."""
        return int(self._int.size)

    def element_size(self) -> int:
        """Bytes per element of the integer storage."""
        return self._dtype.itemsize

    def qscheme(self) -> qscheme:
        """The quantization scheme (``ember.per_tensor_affine`` or ``per_channel_affine``)."""
        return self._qscheme

    def _per_tensor(self, what: str):
        if self._qscheme.per_channel:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerTensorAffine to be true, "
                               f"but got false.  ({what} of a per-channel quantized tensor: "
                               "use q_per_channel_*)")

    def _per_channel(self, what: str):
        if not self._qscheme.per_channel:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerChannelAffine to be "
                               f"true, but got false.  ({what} of a per-tensor quantized "
                               "tensor: use q_scale/q_zero_point)")

    def q_scale(self) -> float:
        """The scale of a per-tensor quantized tensor."""
        self._per_tensor("q_scale")
        return float(self._scale)

    def q_zero_point(self) -> int:
        """The zero point of a per-tensor quantized tensor."""
        self._per_tensor("q_zero_point")
        return int(self._zero_point)

    def q_per_channel_scales(self) -> Tensor:
        """The float64 scales of a per-channel quantized tensor, one per channel."""
        self._per_channel("q_per_channel_scales")
        return _make(self._scale.copy())

    def q_per_channel_zero_points(self) -> Tensor:
        """The int64 zero points of a per-channel quantized tensor."""
        self._per_channel("q_per_channel_zero_points")
        return _make(self._zero_point.copy())

    def q_per_channel_axis(self) -> int:
        """The axis along which the channels' parameters vary."""
        self._per_channel("q_per_channel_axis")
        return self._axis

    # --- conversions --------------------------------------------------------------------
    def int_repr(self) -> Tensor:
        """The stored integers as an ordinary uint8/int8/int32 tensor (a copy)."""
        return _make(self._int.copy())

    def dequantize(self) -> Tensor:
        """The real values ``(q - zero_point) * scale`` as a float32 tensor."""
        q = self._int.astype(np.int64)
        if self._qscheme.per_channel:
            shape = [1] * q.ndim
            shape[self._axis] = -1
            # (per channel, PyTorch multiplies by the float64 scales, then rounds to float32)
            centered = (q - self._zero_point.reshape(shape)).astype(np.float64)
            return _make((centered * self._scale.reshape(shape)).astype(np.float32))
        centered = (q - self._zero_point).astype(np.float32)
        return _make((centered * np.float32(self._scale)).astype(np.float32))

    def clone(self) -> QuantizedTensor:
        """A copy with its own integer storage."""
        return QuantizedTensor(self._int.copy(), self._dtype, self._qscheme, self._scale,
                               self._zero_point, self._axis)

    def detach(self) -> QuantizedTensor:
        """Itself: a quantized tensor is never part of an autograd graph."""
        return self

    def cpu(self) -> QuantizedTensor:
        """Itself: quantized tensors live on the CPU."""
        return self

    def __len__(self) -> int:
        if self._int.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._int.shape[0]

    def __repr__(self) -> str:
        body = repr(self.dequantize())
        body = body[:-1] if body.endswith(")") else body
        if self._qscheme.per_channel:
            params = (f",\n       scale={self.q_per_channel_scales()!r},\n       "
                      f"zero_point={self.q_per_channel_zero_points()!r}, axis={self._axis}")
        else:
            params = f", scale={self._scale}, zero_point={self._zero_point}"
        return (f"{body}, size={tuple(self._int.shape)}, dtype={self._dtype},\n"
                f"       quantization_scheme={self._qscheme}{params})")

    def __reduce__(self):
        return (QuantizedTensor, (self._int, self._dtype, self._qscheme, self._scale,
                                  self._zero_point, self._axis))


def _refuse(op: str):
    def method(self, *args, **kwargs):
        raise NotImplementedError(
            f"'{op}' is not supported on quantized tensors (QuantizedTensor, dtype "
            f"{self._dtype}): quantized tensors run forward only inside quantized modules; "
            "call .dequantize() to compute on the float values")
    method.__name__ = op
    return method


# Every arithmetic / comparison operator and the common math methods refuse, by name.
_REFUSED = (
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
    "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__",
    "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
    "__rmatmul__", "__neg__", "__pos__", "__abs__", "__lt__", "__le__", "__gt__", "__ge__",
    "__and__", "__or__", "__xor__", "__invert__", "__getitem__", "__setitem__", "__bool__",
    "__float__", "__int__", "__array__",
    "add", "sub", "mul", "div", "matmul", "mm", "sum", "mean", "exp", "relu", "abs", "neg",
    "view", "reshape", "transpose", "permute", "t", "float", "to", "numpy", "tolist", "item",
    "backward", "requires_grad_",
)
for _op in _REFUSED:
    setattr(QuantizedTensor, _op, _refuse(_op))
del _op

# ember's ops read a tensor's array as `_data`: a quantized tensor handed to a float op
# (torch.tanh(q), nn.Sigmoid()(q)) gets the same clear refusal instead of AttributeError.
QuantizedTensor._data = property(_refuse("a float op"))


def quantize_per_tensor(input: Tensor, scale, zero_point, dtype: QuantizedDtype
                        ) -> QuantizedTensor:
    """Quantize a float32 tensor with one scale and zero point:
    ``q = clamp(round(x / scale) + zero_point, qmin, qmax)`` (ties to even, rounded the way
    PyTorch's x86 kernel does), stored as `dtype` (``ember.quint8``, ``qint8``, ``qint32``).

    >>> ember.quantize_per_tensor(ember.tensor([0.5, -1.0]), 0.1, 10, ember.quint8).int_repr()
    tensor([15,  0], dtype=ember.uint8)
    """
    op = "quantize_per_tensor"
    dtype = _check_qdtype(dtype, op)
    x = _float32_input(input, op)
    scale, zero_point = _as_float(scale), _as_int(zero_point)
    if zero_point < dtype.quant_min or zero_point > dtype.quant_max:
        side = "below lower" if zero_point < dtype.quant_min else "above upper"
        raise RuntimeError(f"quantize_tensor_per_tensor_affine zero_point {zero_point} is "
                           f"{side} bound.")
    q = _quantize_per_tensor_array(x, scale, zero_point, dtype)
    return QuantizedTensor(q, dtype, per_tensor_affine, scale, zero_point)


def quantize_per_channel(input: Tensor, scales, zero_points, axis: int,
                         dtype: QuantizedDtype) -> QuantizedTensor:
    """Quantize a float32 tensor with one scale and zero point per slice along `axis`:
    ``scales`` (float, kept as float64) and ``zero_points`` (int64) have one entry per
    channel."""
    op = "quantize_per_channel"
    dtype = _check_qdtype(dtype, op)
    x = _float32_input(input, op)
    if not -x.ndim <= axis < max(x.ndim, 1):
        raise IndexError(f"{op}: axis {axis} out of range for a {x.ndim}-d tensor")
    axis = axis % x.ndim
    scales = _as_array(scales, np.float64)
    zero_points = _as_array(zero_points, np.int64)
    channels = x.shape[axis]
    if scales.size != channels:
        raise RuntimeError(f"length of scales must equal to channel, expected {channels} got, "
                           f"{scales.size}")
    if zero_points.size != channels:
        raise RuntimeError(f"length of zero_points must equal to channel expected {channels} "
                           f"got, {zero_points.size}")
    if (zero_points < dtype.quant_min).any() or (zero_points > dtype.quant_max).any():
        raise RuntimeError(f"{op}: zero points must lie in [{dtype.quant_min}, "
                           f"{dtype.quant_max}] for {dtype}")
    q = _quantize_per_channel_array(x, scales, zero_points, axis, dtype)
    return QuantizedTensor(q, dtype, per_channel_affine, scales, zero_points, axis)


def dequantize(tensor):
    """The float32 values of a quantized tensor; a float tensor is returned as it is.  A list
    or tuple of tensors gives a list."""
    if isinstance(tensor, (list, tuple)):
        return [dequantize(t) for t in tensor]
    if isinstance(tensor, QuantizedTensor):
        return tensor.dequantize()
    if isinstance(tensor, Tensor):
        return tensor
    raise TypeError(f"dequantize(): argument 'tensor' must be Tensor, not "
                    f"{type(tensor).__name__}")
