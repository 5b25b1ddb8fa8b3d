"""Quantized neural-network modules (``torch.ao.nn``)."""

from . import quantized

__all__ = ["quantized"]
