"""Normalization layers that work per sample: LayerNorm, GroupNorm, RMSNorm and
LocalResponseNorm (BatchNorm is in batchnorm.py, InstanceNorm in instancenorm.py)."""

from __future__ import annotations

from ...ops.creation import tensor
from ...ops.einsum import einsum
from .. import functional as F
from ._params import optional_parameter, reset_affine
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


def _as_shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalize each sample over its trailing `normalized_shape` dims, then apply a learned
    elementwise scale (starts at 1) and shift (starts at 0)."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        shape = self.normalized_shape
        optional_parameter(self, "weight", elementwise_affine, shape, device, dtype)
        optional_parameter(self, "bias", elementwise_affine and bias, shape, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        reset_affine(self.weight, self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the channels into `num_groups` groups and normalize each group of each sample;
    then a per-channel learned scale and shift."""

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        optional_parameter(self, "weight", affine, num_channels, device, dtype)
        optional_parameter(self, "bias", affine and bias, num_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        reset_affine(self.weight, self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing `normalized_shape` dims
    (`eps` None: the machine epsilon of the input's dtype)."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        optional_parameter(self, "weight", elementwise_affine, self.normalized_shape, device,
                           dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight to ones."""
        reset_affine(self.weight, None)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Normalize each element by the energy of `size` neighbouring channels."""

    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _cross_map_window(channels: int, size: int):
    """0/1 matrix: row c marks the channels whose squares normalize channel c.

    NOTE: PyTorch's CrossMapLRN2d slides a running sum over channels and never subtracts
    channel 0 once it has entered, so every channel counts channel 0 besides its window
    c - (size-1)//2 .. c + (size-1)//2.  We reproduce that so the outputs agree.
    """
    half = (size - 1) // 2
    return [[1.0 if j == 0 or c - half <= j <= c + half else 0.0 for j in range(channels)]
            for c in range(channels)]


class CrossMapLRN2d(Module):
    """Local response normalization across channels of (N, C, H, W) input, PyTorch's legacy
    form: ``x / (k + alpha / size * sum of squares over the channel window) ** beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        window = tensor(_cross_map_window(input.shape[1], self.size), dtype=input.dtype,
                        device=input.device)
        energy = einsum("nchw,dc->ndhw", input * input, window)
        return input * (energy * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
