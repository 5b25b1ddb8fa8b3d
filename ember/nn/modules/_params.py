"""How layers make and first fill their parameters: optional parameters (a bias, an affine
map) declared as None when absent, and PyTorch's default initializations."""

from __future__ import annotations

import math

from ...ops.creation import empty
from .. import init
from ..parameter import Parameter
from .module import Module


def optional_parameter(module: Module, name: str, wanted: bool, shape, device=None,
                       dtype=None) -> None:
    """Register `name` as an uninitialized Parameter of `shape` when `wanted`, else as None
    (so that ``module.<name>`` exists either way, as PyTorch's layers do)."""
    value = Parameter(empty(shape, device=device, dtype=dtype)) if wanted else None
    module.register_parameter(name, value)


def reset_affine(weight, bias) -> None:
    """An identity affine map: `weight` to ones, `bias` to zeros (either may be None)."""
    if weight is not None:
        init.ones_(weight)
    if bias is not None:
        init.zeros_(bias)


def reset_kaiming_uniform(weight, bias) -> None:
    """PyTorch's default for Linear and convolutions: kaiming_uniform_ with a=sqrt(5) for
    `weight`, and `bias` (may be None) uniform in +-1/sqrt(fan_in) of the weight."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)
