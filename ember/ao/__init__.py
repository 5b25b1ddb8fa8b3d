"""Architecture optimization (``torch.ao``): quantization and the quantized modules."""

from . import nn, quantization

__all__ = ["nn", "quantization"]
