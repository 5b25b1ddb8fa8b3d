"""Dynamically quantized Linear: int8 weights quantized once, activations quantized on the
fly from each input's own range, integer matrix product, float output."""

from __future__ import annotations

import numpy as np

from ....._core.tensor import Tensor, _make
from .....nn.modules.module import Module
from ....quantization._qtypes import qint8, quint8
from ....quantization.quantized_tensor import (
    QuantizedTensor, _quantize_per_tensor_array, quantize_per_channel, quantize_per_tensor,
)

__all__ = ["Linear", "choose_qparams_dynamic"]


def choose_qparams_dynamic(x_min: float, x_max: float, qmin: int = 0, qmax: int = 255,
                           reduce_range: bool = True) -> tuple:
    """(scale, zero_point) for quantizing values in [x_min, x_max] to quint8, as PyTorch's x86
    dynamic kernels choose them: the range is widened to hold 0, and the zero point is taken
    from whichever end gives the smaller error, then rounded and clamped."""
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    x_min = min(np.float32(x_min), np.float32(0.0))
    x_max = max(np.float32(x_max), np.float32(0.0))
    scale = float(np.float32(x_max - x_min)) / (qmax - qmin)
    if np.float32(scale) == 0 or np.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    x_min, x_max = float(x_min), float(x_max)
    from_min = qmin - x_min / scale
    from_max = qmax - x_max / scale
    error_min = abs(qmin) - abs(x_min / scale)
    error_max = abs(qmax) - abs(x_max / scale)
    initial = from_min if error_min < error_max else from_max
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return float(np.float32(scale)), zero_point


class Linear(Module):
    """``y = x @ W.T + b`` with W stored as qint8 and x quantized to quint8 at each call
    (its scale and zero point from its own min and max, range 0..127 as PyTorch's x86
    backend uses).  The integer product is exact; the output is float32.

    Inference only: the output never has a ``grad_fn``, even when the input requires grad.
    Made from a float ``nn.Linear`` by ``quantize_dynamic`` (or ``Linear.from_float``).
    """

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype=qint8) -> None:
        super().__init__()
        if dtype is not qint8:
            raise NotImplementedError(f"dynamic quantized Linear supports ember.qint8 weights, "
                                      f"not {dtype}")
        self.in_features = in_features
        self.out_features = out_features
        weight = quantize_per_tensor(_make(np.zeros((out_features, in_features), np.float32)),
                                     1.0, 0, qint8)
        bias = _make(np.zeros(out_features, np.float32)) if bias_ else None
        self.set_weight_bias(weight, bias)

    def set_weight_bias(self, weight: QuantizedTensor, bias: Tensor | None) -> None:
        """Install a qint8 weight (per tensor or per channel along dim 0) and a float bias."""
        if not isinstance(weight, QuantizedTensor) or weight.dtype is not qint8:
            raise TypeError("the weight of a dynamic quantized Linear must be a qint8 "
                            "QuantizedTensor")
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

    def forward(self, x: Tensor) -> Tensor:
        data = x.detach().cpu()._data
        if data.dtype != np.float32:
            data = data.astype(np.float32)
        if data.shape[-1] != self.in_features:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({int(np.prod(data.shape[:-1]))}x{data.shape[-1]} and "
                               f"{self.in_features}x{self.out_features})")
        lo = float(data.min()) if data.size else 0.0
        hi = float(data.max()) if data.size else 0.0
        x_scale, x_zp = choose_qparams_dynamic(lo, hi, reduce_range=True)
        xq = _quantize_per_tensor_array(data, x_scale, x_zp, quint8)
        # NOTE: the integer GEMM is done in float64 on the integer values: every product and
        # partial sum is an integer below 2**53 (|xq - zp| <= 255, |wq - zp| <= 255, so up to
        # ~1.3e11 terms), hence exact, and BLAS makes it fast.
        acc = (xq.astype(np.float64) - x_zp) @ self._w_centered_t
        out = acc.astype(np.float32) * (np.float32(x_scale) * self._w_scale)
        if self._bias is not None:
            out = out + self._bias._data
        return _make(out.astype(np.float32, copy=False))

    @classmethod
    def from_float(cls, mod, qconfig=None) -> Linear:
        """Quantize a float ``nn.Linear``: its weight through the qconfig's weight observer
        (default: per-tensor symmetric qint8 min/max), its bias kept in float."""
        from ....quantization.qconfig import default_dynamic_qconfig

        qconfig = qconfig or getattr(mod, "qconfig", None) or default_dynamic_qconfig
        observer = qconfig.weight()
        if observer.dtype is not qint8:
            raise NotImplementedError(f"quantize_dynamic: weight dtype {observer.dtype} is not "
                                      "supported (only ember.qint8)")
        weight = mod.weight.detach().float()
        observer(weight)
        scale, zero_point = observer.calculate_qparams()
        if observer.qscheme.per_channel:
            wq = quantize_per_channel(weight, scale.double(), zero_point, 0, qint8)
        else:
            wq = quantize_per_tensor(weight, float(scale.item()), int(zero_point.item()),
                                     qint8)
        qlinear = cls(mod.in_features, mod.out_features, mod.bias is not None)
        qlinear.set_weight_bias(wq, None if mod.bias is None else mod.bias)
        return qlinear

    def extra_repr(self) -> str:
        w = self._weight
        if w.qscheme().per_channel:
            qparams = "qscheme=ember.per_channel_affine"
        else:
            qparams = (f"scale={w.q_scale()}, zero_point={w.q_zero_point()}, "
                       f"qscheme={w.qscheme()}")
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={w.dtype}, {qparams}")

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"
