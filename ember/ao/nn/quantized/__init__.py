"""Quantized modules.  Only the dynamic ones exist so far (``ember.ao.nn.quantized.dynamic``)."""

from . import dynamic

__all__ = ["dynamic"]
