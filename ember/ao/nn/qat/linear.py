"""QAT Linear: an nn.Linear whose weight is fake-quantized on every forward."""

from __future__ import annotations

from ...._core.tensor import Tensor
from ....nn import functional as F
from ....nn.modules.linear import Linear as FloatLinear

__all__ = ["Linear"]


class Linear(FloatLinear):
    """``y = x @ fake_quant(W).T + b``: a float Linear whose weight goes through
    ``weight_fake_quant`` (made by ``qconfig.weight()``) on each call, so training sees the
    int8 rounding and gradients reach W by the straight-through estimator.

    Made by ``ember.ao.quantization.prepare_qat`` (or ``Linear.from_float``); ``convert``
    turns it into ``ember.ao.nn.quantized.Linear``.
    """

    _FLOAT_MODULE = FloatLinear

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 qconfig=None, device=None, dtype=None) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        if qconfig is None:
            raise ValueError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False) -> Linear:
        """A QAT Linear sharing `mod`'s weight and bias Parameters, configured by
        ``mod.qconfig``."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise TypeError(f"qat.{cls.__name__}.from_float only works for "
                            f"{cls._FLOAT_MODULE.__name__}, got {type(mod).__name__}")
        qconfig = getattr(mod, "qconfig", None)
        if qconfig is None:
            raise ValueError("Input float module must have a valid qconfig")
        qat = cls(mod.in_features, mod.out_features, mod.bias is not None, qconfig=qconfig)
        qat.weight = mod.weight
        qat.bias = mod.bias
        return qat

    def to_float(self) -> FloatLinear:
        """A plain nn.Linear with (copies of) this layer's float weight and bias."""
        linear = FloatLinear(self.in_features, self.out_features, self.bias is not None)
        linear.weight.data = self.weight.detach().clone()
        if self.bias is not None:
            linear.bias.data = self.bias.detach().clone()
        linear.train(self.training)
        return linear
