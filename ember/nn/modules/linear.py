"""Linear layers: Identity, Linear (y = x W^T + b) and Bilinear (y = x1^T A x2 + b)."""

from __future__ import annotations

import math

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._deferred import deferred_exports
from ._params import optional_parameter, reset_kaiming_uniform
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "NonDynamicallyQuantizableLinear"]

__getattr__ = deferred_exports(__name__, {"lazy": ("LazyLinear",)})


class Identity(Module):
    """Returns its input unchanged (arguments to the constructor are ignored).

    Handy as a placeholder, e.g. to remove a classifier head: ``model.fc = Identity()``.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``, on the last dimension of the input.

    weight has shape (out_features, in_features), bias (out_features,).  Both start
    uniform in [-1/sqrt(in_features), 1/sqrt(in_features)] (kaiming_uniform_ with
    a=sqrt(5) for the weight, as in PyTorch).

    >>> Linear(20, 30)(ember.randn(128, 20)).shape
    ember.Size([128, 30])
    """

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        optional_parameter(self, "bias", bias, out_features, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values for weight and bias."""
        reset_kaiming_uniform(self.weight, self.bias)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under another name: MultiheadAttention's output projection (the name keeps
    PyTorch's repr; in PyTorch it also opts out of dynamic quantization)."""


class Bilinear(Module):
    """``y[..., k] = x1 @ weight[k] @ x2 + bias[k]`` for two inputs of matching batch shape.

    weight has shape (out_features, in1_features, in2_features); weight and bias start
    uniform in [-1/sqrt(in1_features), 1/sqrt(in1_features)].
    """

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features),
                                      device=device, dtype=dtype))
        optional_parameter(self, "bias", bias, out_features, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values for weight and bias."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
