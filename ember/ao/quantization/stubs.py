"""QuantStub and DeQuantStub: markers for where a model's quantized region begins and ends.
Before conversion both pass their input through unchanged."""

from __future__ import annotations

from ..._core.tensor import Tensor
from ...nn.modules.module import Module

__all__ = ["QuantStub", "DeQuantStub"]


class _Stub(Module):
    """An identity until the model is converted; `qconfig` overrides the model's here."""

    def __init__(self, qconfig=None) -> None:
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x: Tensor) -> Tensor:
        return x


class QuantStub(_Stub):
    """Marks where float inputs enter the quantized part of a model (identity until the
    model is converted); `qconfig` overrides the model's for this point."""


class DeQuantStub(_Stub):
    """Marks where values leave the quantized part of a model (identity until the model is
    converted)."""
