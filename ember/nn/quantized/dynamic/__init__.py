"""``ember.nn.quantized.dynamic``: an alias of ``ember.ao.nn.quantized.dynamic``."""

from ....ao.nn.quantized.dynamic import Linear

__all__ = ["Linear"]
