"""Statically quantized Linear: quint8 activations in and out (their parameters fixed by
calibration), qint8 weights, an exact integer matrix product, and PyTorch's x86 (fbgemm)
requantization of the result."""

from __future__ import annotations

import numpy as np

from ...._core.tensor import Tensor, _make
from ....nn.modules.module import Module
from ...quantization._qtypes import per_tensor_affine, qint8, quint8
from ...quantization.quantized_tensor import (
    QuantizedTensor, quantize_per_channel, quantize_per_tensor,
)

__all__ = ["Linear", "quantize_weight"]


def quantize_weight(weight: Tensor, observer) -> QuantizedTensor:
    """Quantize a float weight with the (already run) `observer`'s parameters, per tensor or
    per channel as its scheme says, clamped to the observer's integer range."""
    scale, zero_point = observer.calculate_qparams()
    weight = weight.detach().float()
    if observer.qscheme.per_channel:
        wq = quantize_per_channel(weight, scale.double(), zero_point, observer.ch_axis,
                                  observer.dtype)
    else:
        wq = quantize_per_tensor(weight, float(scale.item()), int(zero_point.item()),
                                 observer.dtype)
    # (an observer may use a narrower range than the dtype's, e.g. reduce_range)
    np.clip(wq._int, observer.quant_min, observer.quant_max, out=wq._int)
    return wq


class Linear(Module):
    """``y = x @ W.T + b`` on quantized tensors: takes a per-tensor quint8 `QuantizedTensor`
    and returns one with this layer's ``scale`` and ``zero_point``; W is qint8 (per tensor or
    per channel), b stays float32.

    The integer product ``acc = sum((xq - x_zp) * (wq - w_zp))`` is exact; the output
    integers are ``clamp(round((float32(acc) + b / s) * (s / scale)) + zero_point, 0, 255)``
    with ``s = x_scale * w_scale`` in float32, as PyTorch's x86 kernel computes them.
    Inference only.  Made by ``ember.ao.quantization.convert`` (or ``Linear.from_float``).
    """

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype=qint8) -> None:
        super().__init__()
        if dtype is not qint8:
            raise NotImplementedError(f"quantized Linear supports ember.qint8 weights, not "
                                      f"{dtype}")
        self.in_features = in_features
        self.out_features = out_features
        self.scale = 1.0
        self.zero_point = 0
        weight = quantize_per_tensor(_make(np.zeros((out_features, in_features), np.float32)),
                                     1.0, 0, qint8)
        bias = _make(np.zeros(out_features, np.float32)) if bias_ else None
        self.set_weight_bias(weight, bias)

    def set_weight_bias(self, weight: QuantizedTensor, bias: Tensor | None) -> None:
        """Install a qint8 weight (per tensor or per channel along dim 0) and a float bias."""
        if not isinstance(weight, QuantizedTensor) or weight.dtype is not qint8:
            raise TypeError("the weight of a quantized Linear must be a qint8 QuantizedTensor")
        self._weight = weight
        self._bias = None if bias is None else bias.detach().float()
        # the integer weight minus its zero point, transposed, as float64 for the GEMM
        w = weight._int.astype(np.float64)
        if weight.qscheme().per_channel:
            w = w - weight._zero_point.reshape(-1, 1)
            self._w_scale = weight._scale.astype(np.float32)
        else:
            w = w - weight._zero_point
            self._w_scale = np.float32(weight._scale)
        self._w_centered_t = np.ascontiguousarray(w.T)

    def weight(self) -> QuantizedTensor:
        """The quantized weight."""
        return self._weight

    def bias(self) -> Tensor | None:
        """The float bias (or None)."""
        return self._bias

    def _check_shape(self, shape) -> None:
        if shape[-1] != self.in_features:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({int(np.prod(shape[:-1]))}x{shape[-1]} and "
                               f"{self.in_features}x{self.out_features})")

    def _integer_product(self, xq: np.ndarray, x_zp: int) -> np.ndarray:
        # NOTE: the integer GEMM is done in float64 on the integer values: every product and
        # partial sum is an integer below 2**53 (|xq - zp| <= 255, |wq - zp| <= 255, so up to
        # ~1.3e11 terms), hence exact, and BLAS makes it fast.
        return (xq.astype(np.float64) - x_zp) @ self._w_centered_t

    def forward(self, x: QuantizedTensor) -> QuantizedTensor:
        if not isinstance(x, QuantizedTensor) or x.dtype is not quint8 \
                or x.qscheme() is not per_tensor_affine:
            what = type(x).__name__ if not isinstance(x, QuantizedTensor) else \
                f"{x.dtype} {x.qscheme()}"
            raise TypeError(f"quantized Linear expects a per-tensor quint8 QuantizedTensor "
                            f"(put a QuantStub before it), got {what}")
        self._check_shape(x.shape)
        acc = self._integer_product(x._int, x._zero_point)
        f32 = np.float32
        act_times_w = (f32(x._scale) * self._w_scale).astype(f32)
        multiplier = (act_times_w / f32(self.scale)).astype(f32)
        # NOTE: fbgemm adds the bias in the accumulator's units (bias / (x_scale * w_scale))
        # and multiplies by one float32 multiplier; computing (acc * s + b) / scale instead
        # rounds differently on about 2 outputs in a million.
        y = acc.astype(f32)
        if self._bias is not None:
            y = y + (self._bias._data / act_times_w).astype(f32)
        q = np.rint((y * multiplier).astype(f32)) + self.zero_point
        q = np.clip(q, quint8.quant_min, quint8.quant_max).astype(np.uint8)
        return QuantizedTensor(q, quint8, per_tensor_affine, float(self.scale),
                               int(self.zero_point))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False) -> Linear:
        """Quantize an observed ``nn.Linear`` (or a QAT ``Linear``): the weight through the
        qconfig's weight observer (the QAT module's ``weight_fake_quant``), the output scale
        and zero point from its ``activation_post_process``."""
        observer = getattr(mod, "activation_post_process", None)
        if observer is None:
            raise RuntimeError(f"{cls.__name__}.from_float: the module has no "
                               "activation_post_process; run ember.ao.quantization.prepare "
                               "(and calibrate) before convert")
        weight_process = getattr(mod, "weight_fake_quant", None)
        if weight_process is None:
            if getattr(mod, "qconfig", None) is None:
                raise RuntimeError(f"{cls.__name__}.from_float: the module has no qconfig")
            weight_process = mod.qconfig.weight()
        if not use_precomputed_fake_quant:
            weight_process(mod.weight.detach())
        if weight_process.dtype is not qint8:
            raise NotImplementedError(f"quantized Linear: weight dtype {weight_process.dtype} "
                                      "is not supported (only ember.qint8)")
        out_scale, out_zp = observer.calculate_qparams()
        qlinear = cls(mod.in_features, mod.out_features, mod.bias is not None)
        qlinear.set_weight_bias(quantize_weight(mod.weight, weight_process), mod.bias)
        qlinear.scale = float(out_scale.item())
        qlinear.zero_point = int(out_zp.item())
        return qlinear

    def _weight_qparams_repr(self) -> str:
        w = self._weight
        if w.qscheme().per_channel:
            return "qscheme=ember.per_channel_affine"
        return f"scale={w.q_scale()}, zero_point={w.q_zero_point()}, qscheme={w.qscheme()}"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale}, zero_point={self.zero_point}, "
                f"{self._weight_qparams_repr()}")

    def _get_name(self) -> str:
        return "QuantizedLinear"
