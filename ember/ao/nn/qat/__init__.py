"""Modules for quantization-aware training (``torch.ao.nn.qat``): float layers whose
weights pass through fake quantization in forward."""

from .linear import Linear

__all__ = ["Linear"]
