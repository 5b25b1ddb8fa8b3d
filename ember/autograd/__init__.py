"""ember.autograd: backward, grad, custom Functions, gradcheck, functional AD, anomaly mode."""

from .._core.engine import backward, grad
from .._core.grad_mode import (
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled,
)
from . import anomaly_mode, forward_ad, function, functional, graph
from . import profiler  # the legacy profiler API
from .anomaly_mode import (
    detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly,
)
from .function import Function, FunctionCtx, NestedIOFunction, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .variable import Variable

__all__ = [
    "Function", "FunctionCtx", "GradcheckError", "NestedIOFunction", "Variable",
    "anomaly_mode", "backward", "detect_anomaly", "enable_grad", "forward_ad", "function",
    "functional",
    "grad", "gradcheck", "gradgradcheck", "graph", "inference_mode",
    "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "no_grad", "once_differentiable", "set_detect_anomaly",
    "set_grad_enabled",
]
