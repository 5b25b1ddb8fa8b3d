"""``ember.quantization``: the same names as ``ember.ao.quantization`` (PyTorch keeps
``torch.quantization`` as an alias of ``torch.ao.quantization``)."""

from .ao.quantization import *  # noqa: F403
from .ao.quantization import __all__  # noqa: F401
