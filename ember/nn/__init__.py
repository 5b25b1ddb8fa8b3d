"""ember.nn: neural-network building blocks (``import ember.nn.functional as F``)."""

from . import functional

__all__ = ["functional"]

# --- module system (parameter.py, modules/module.py, container.py, linear.py, flatten.py) ---
from . import init, utils
from .modules import (
    Bilinear, Flatten, Identity, Linear, Module, ModuleDict, ModuleList, ParameterDict,
    ParameterList, Sequential, Unflatten,
)
from .parameter import Buffer, Parameter

__all__ += [
    "Bilinear", "Buffer", "Flatten", "Identity", "Linear", "Module", "ModuleDict", "ModuleList",
    "Parameter", "ParameterDict", "ParameterList", "Sequential", "Unflatten", "init", "utils",
]
