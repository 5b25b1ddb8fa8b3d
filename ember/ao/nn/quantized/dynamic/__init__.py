"""Dynamically quantized modules (``torch.ao.nn.quantized.dynamic``): weights stored as
int8, activations quantized at run time.  Inference only."""

from .linear import Linear

__all__ = ["Linear"]
