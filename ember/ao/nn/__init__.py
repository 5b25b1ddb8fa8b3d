"""Quantized neural-network modules (``torch.ao.nn``)."""

from . import qat, quantized

__all__ = ["qat", "quantized"]
