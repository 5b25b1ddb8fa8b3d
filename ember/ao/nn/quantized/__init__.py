"""Quantized modules (``torch.ao.nn.quantized``): the statically quantized ones that
``convert`` produces, and the dynamic ones (``ember.ao.nn.quantized.dynamic``)."""

from . import dynamic
from .linear import Linear
from .modules import DeQuantize, Quantize, ReLU

__all__ = ["DeQuantize", "Linear", "Quantize", "ReLU", "dynamic"]
