"""The quantized-region boundary modules (Quantize, DeQuantize) and ReLU on quantized
tensors; ``convert`` puts them where QuantStub, DeQuantStub and nn.ReLU were."""

from __future__ import annotations

import numpy as np

from ...._core.tensor import Tensor
from ....nn import functional as F
from ....nn.modules.module import Module
from ...quantization._qtypes import quint8
from ...quantization.quantized_tensor import QuantizedTensor, dequantize, quantize_per_tensor

__all__ = ["Quantize", "DeQuantize", "ReLU"]


class Quantize(Module):
    """Quantize float32 inputs per tensor with a fixed ``scale`` and ``zero_point`` (the ones
    calibration chose for the QuantStub it replaces); returns a `QuantizedTensor`."""

    def __init__(self, scale: float, zero_point: int, dtype=quint8) -> None:
        super().__init__()
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.dtype = dtype

    def forward(self, x: Tensor) -> QuantizedTensor:
        return quantize_per_tensor(x, self.scale, self.zero_point, self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False) -> Quantize:
        """From an observed QuantStub: its observer's (scale, zero_point) and dtype."""
        observer = getattr(mod, "activation_post_process", None)
        if observer is None:
            raise RuntimeError("Quantize.from_float: the QuantStub has no "
                               "activation_post_process; run ember.ao.quantization.prepare "
                               "(and calibrate) before convert")
        scale, zero_point = observer.calculate_qparams()
        return Quantize(float(scale.item()), int(zero_point.item()), observer.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(Module):
    """Return the float32 values of a `QuantizedTensor` (a float tensor passes unchanged)."""

    def forward(self, x):
        return dequantize(x)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False) -> DeQuantize:
        """A DeQuantize in place of a DeQuantStub."""
        return DeQuantize()


class ReLU(Module):
    """``max(x, 0)`` on either kind of input: on a `QuantizedTensor` it works on the integers,
    ``max(q, zero_point)``, keeping the input's scale and zero point (exactly what
    ``relu`` of a quantized tensor gives in PyTorch); a float tensor goes through
    ``F.relu``.

    NOTE: PyTorch's convert keeps ``nn.ReLU`` and lets ``torch.relu`` dispatch on the
    quantized tensor; ember's QuantizedTensor refuses float ops, so convert swaps the layer.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        if not isinstance(x, QuantizedTensor):
            return F.relu(x, inplace=self.inplace)
        if x.qscheme().per_channel:
            shape = [1] * x.ndim
            shape[x._axis] = -1
            zero_point = x._zero_point.reshape(shape)
        else:
            zero_point = x._zero_point
        q = np.maximum(x._int, zero_point).astype(x._int.dtype)
        return QuantizedTensor(q, x._dtype, x._qscheme, x._scale, x._zero_point, x._axis)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False) -> ReLU:
        """A quantized-aware ReLU in place of ``nn.ReLU``."""
        return cls(getattr(mod, "inplace", False))

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""

    def _get_name(self) -> str:
        return "QuantizedReLU"
