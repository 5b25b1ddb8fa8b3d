"""Dynamically quantized Linear: int8 weights quantized once, activations quantized on the
fly from each input's own range, integer matrix product, float output."""

from __future__ import annotations

import numpy as np

from ....._core.tensor import Tensor, _make
from ....quantization._qtypes import qint8, quint8
from ....quantization.qconfig import default_dynamic_qconfig
from ....quantization.quantized_tensor import _quantize_per_tensor_array
from ..linear import Linear as StaticLinear
from ..linear import quantize_weight

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


class Linear(StaticLinear):
    """``y = x @ W.T + b`` with W stored as qint8 and x quantized to quint8 at each call
    (its scale and zero point from its own min and max, range 0..127 as PyTorch's x86
    backend uses).  The integer product is exact; the output is float32.

    Inference only: the output never has a ``grad_fn``, even when the input requires grad.
    Made from a float ``nn.Linear`` by ``quantize_dynamic`` (or ``Linear.from_float``).
    """

    def forward(self, x: Tensor) -> Tensor:
        data = x.detach().cpu()._data
        if data.dtype != np.float32:
            data = data.astype(np.float32)
        self._check_shape(data.shape)
        lo = float(data.min()) if data.size else 0.0
        hi = float(data.max()) if data.size else 0.0
        x_scale, x_zp = choose_qparams_dynamic(lo, hi, reduce_range=True)
        xq = _quantize_per_tensor_array(data, x_scale, x_zp, quint8)
        acc = self._integer_product(xq, x_zp)
        out = acc.astype(np.float32) * (np.float32(x_scale) * self._w_scale)
        if self._bias is not None:
            out = out + self._bias._data
        return _make(out.astype(np.float32, copy=False))

    @classmethod
    def from_float(cls, mod, qconfig=None) -> Linear:
        """Quantize a float ``nn.Linear``: its weight through the qconfig's weight observer
        (default: per-tensor symmetric qint8 min/max), its bias kept in float."""
        qconfig = qconfig or getattr(mod, "qconfig", None) or default_dynamic_qconfig
        observer = qconfig.weight()
        if observer.dtype is not qint8:
            raise NotImplementedError(f"quantize_dynamic: weight dtype {observer.dtype} is not "
                                      "supported (only ember.qint8)")
        observer(mod.weight.detach())
        qlinear = cls(mod.in_features, mod.out_features, mod.bias is not None)
        qlinear.set_weight_bias(quantize_weight(mod.weight, observer), mod.bias)
        return qlinear

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._weight.dtype}, {self._weight_qparams_repr()}")

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"
