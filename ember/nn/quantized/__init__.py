"""``ember.nn.quantized``: an alias of ``ember.ao.nn.quantized`` (as ``torch.nn.quantized``)."""

from ...ao.nn.quantized import DeQuantize, Linear, Quantize, ReLU, dynamic

__all__ = ["DeQuantize", "Linear", "Quantize", "ReLU", "dynamic"]
