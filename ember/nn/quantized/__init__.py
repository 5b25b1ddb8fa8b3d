"""``ember.nn.quantized``: an alias of ``ember.ao.nn.quantized`` (as ``torch.nn.quantized``)."""

from ...ao.nn.quantized import dynamic

__all__ = ["dynamic"]
