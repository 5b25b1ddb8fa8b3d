"""ember.autograd: backward, grad, custom Functions, gradcheck, functional AD."""

from .._core.engine import backward, grad
from .._core.grad_mode import (
    enable_grad, inference_mode, no_grad, set_grad_enabled,
)
from .._core.tensor import Tensor as Variable
from . import function
from .function import Function, once_differentiable

__all__ = [
    "Function", "Variable", "backward", "enable_grad", "function", "grad", "inference_mode",
    "no_grad", "once_differentiable", "set_grad_enabled",
]

from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402

__all__ += ["GradcheckError", "gradcheck", "gradgradcheck"]
