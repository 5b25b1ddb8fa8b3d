"""Fake quantization: ``dequantize(quantize(x))`` in floating point, for quantization-aware
training.  The forward pass rounds values onto the quantization grid; the backward pass is
the straight-through estimator: the gradient passes unchanged where ``round(x / scale) +
zero_point`` lies inside ``[quant_min, quant_max]`` and is zero where the value was clamped.

NOTE: the straight-through gradient is, by design, not the derivative of the staircase
forward (which is zero almost everywhere), so finite-difference gradchecks do not apply;
tests/ao/test_fake_quantize.py checks the gradient values by hand.
"""

from __future__ import annotations

import numpy as np

from ..._core.function import Function
from ..._core.tensor import Tensor, _make
from ...ops._util import xp_of

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


def _fake_quantize(x, scale, zero_point, quant_min: int, quant_max: int):
    """(values, mask): the fake-quantized array and where the gradient passes."""
    xp = xp_of(x)
    scale = xp.asarray(scale).astype(x.dtype)
    zero_point = xp.asarray(zero_point).astype(x.dtype)
    inv_scale = x.dtype.type(1.0) / scale
    # (PyTorch rounds x * inv_scale, then adds the integer zero point)
    q = xp.rint(x * inv_scale) + zero_point
    mask = (q >= quant_min) & (q <= quant_max)
    out = (xp.clip(q, quant_min, quant_max) - zero_point) * scale
    return out.astype(x.dtype, copy=False), mask


class FakeQuantizePerTensor(Function):
    """Fake quantization with one scale and zero point; straight-through gradient."""

    _name = "FakeQuantizePerTensorAffineCachemaskBackward0"

    @staticmethod
    def forward(ctx, x, *, scale, zero_point, quant_min, quant_max):
        out, ctx.mask = _fake_quantize(x, scale, zero_point, quant_min, quant_max)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * _make(ctx.mask.astype(grad._data.dtype))


class FakeQuantizePerChannel(Function):
    """Fake quantization with one scale and zero point per channel; straight-through
    gradient."""

    _name = "FakeQuantizePerChannelAffineCachemaskBackward0"

    @staticmethod
    def forward(ctx, x, *, scale, zero_point, axis, quant_min, quant_max):
        shape = [1] * x.ndim
        shape[axis] = -1
        out, ctx.mask = _fake_quantize(x, scale.reshape(shape), zero_point.reshape(shape),
                                       quant_min, quant_max)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * _make(ctx.mask.astype(grad._data.dtype))


def _check_input(input, op: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating-point input, got {input.dtype}")


def _check_range(quant_min: int, quant_max: int, op: str) -> None:
    if quant_min > quant_max:
        raise RuntimeError(f"{op}: `quant_min` should be less than or equal to `quant_max`.")


def _values(value, np_dtype) -> np.ndarray:
    if isinstance(value, Tensor):
        value = value.detach().cpu()._data
    return np.asarray(value).astype(np_dtype).reshape(-1)


def fake_quantize_per_tensor_affine(input: Tensor, scale, zero_point: int, quant_min: int,
                                    quant_max: int) -> Tensor:
    """Round `input` onto the grid of ``quantize_per_tensor`` and map it back to floats:
    ``(clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale``.

    The gradient is straight-through: `grad` where the value was not clamped, else 0.
    `scale` and `zero_point` may be numbers or one-element tensors (they get no gradient).
    """
    op = "fake_quantize_per_tensor_affine"
    _check_input(input, op)
    _check_range(quant_min, quant_max, op)
    scale = float(_values(scale, np.float64)[0])
    zero_point = int(np.rint(_values(zero_point, np.float64)[0]))
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    return FakeQuantizePerTensor.apply(input, scale=scale, zero_point=zero_point,
                                       quant_min=int(quant_min), quant_max=int(quant_max))


def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor,
                                     axis: int, quant_min: int, quant_max: int) -> Tensor:
    """Fake quantization with one scale and zero point per slice of `input` along `axis`
    (`scale` and `zero_point` are 1-d tensors of that length); straight-through gradient."""
    op = "fake_quantize_per_channel_affine"
    _check_input(input, op)
    _check_range(quant_min, quant_max, op)
    ndim = input.dim()
    if not -ndim <= axis < max(ndim, 1):
        raise IndexError(f"{op}: axis {axis} out of range for a {ndim}-d input")
    axis = axis % ndim
    scales = _values(scale, np.float32)
    zero_points = np.rint(_values(zero_point, np.float64)).astype(np.int64)
    channels = input.shape[axis]
    if scales.size != channels or zero_points.size != channels:
        raise RuntimeError(f"{op}: expected {channels} scales and zero points (the length of "
                           f"dimension {axis}), got {scales.size} and {zero_points.size}")
    if (zero_points < quant_min).any() or (zero_points > quant_max).any():
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    return FakeQuantizePerChannel.apply(input, scale=scales, zero_point=zero_points, axis=axis,
                                        quant_min=int(quant_min), quant_max=int(quant_max))
