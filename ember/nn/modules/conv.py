"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d.

Both kinds share `_ConvNd`: it checks the arguments, makes the weight (and bias) and
draws their initial values (kaiming_uniform_ with a=sqrt(5), bias uniform in
+-1/sqrt(fan_in), as PyTorch).  A convolution's weight is (out, in/groups, *kernel);
a transposed convolution's (in, out/groups, *kernel).
"""

from __future__ import annotations


from ...ops.creation import empty
from .. import functional as F
from ..parameter import Parameter
from ._deferred import deferred_exports
from ._params import optional_parameter, reset_kaiming_uniform
from .module import Module
from .utils import _repeat_to

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

__getattr__ = deferred_exports(__name__, {"lazy": (
    "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d")})

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What every convolution layer shares: arguments, parameters and their initialization."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode",
                     "output_padding", "in_channels", "out_channels", "kernel_size"]
    _dims = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
                 dilation, transposed: bool, output_padding, groups: int, bias: bool,
                 padding_mode: str, device=None, dtype=None) -> None:
        super().__init__()
        n = self._dims
        kernel_size, stride, dilation = (_repeat_to(v, n) for v in (kernel_size, stride, dilation))
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'same', 'valid'}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _repeat_to(padding, n)
        if padding_mode not in _PADDING_MODES:
            raise ValueError("padding_mode must be one of {'zeros', 'reflect', 'replicate', "
                             f"'circular'}}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = _repeat_to(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's amounts (last dim first) for the non-zero padding modes
        self._reversed_padding_repeated_twice = _reversed_pairs(padding, kernel_size, dilation)
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + tuple(kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        optional_parameter(self, "bias", bias, out_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values for weight and bias."""
        reset_kaiming_uniform(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


def _reversed_pairs(padding, kernel_size, dilation) -> list:
    """[left, right] per spatial dim, last dim first (what F.pad takes)."""
    if isinstance(padding, str):
        out = [0, 0] * len(kernel_size)
        if padding == "same":
            for i, (k, d) in enumerate(zip(reversed(kernel_size), reversed(dilation))):
                total = d * (k - 1)
                out[2 * i], out[2 * i + 1] = total // 2, total - total // 2
        return out
    return [p for p in reversed(padding) for _ in range(2)]


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._conv(input, weight, bias, self.stride, self.padding, self.dilation,
                          self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) (or (C_in, L)): weight (C_out, C_in/groups, k).

    `padding` is an int, a tuple, 'valid' or 'same'; `padding_mode` one of 'zeros',
    'reflect', 'replicate', 'circular'.
    """

    _dims = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W): weight (C_out, C_in/groups, kH, kW).

    >>> Conv2d(1, 8, 3)(ember.randn(2, 1, 28, 28)).shape
    ember.Size([2, 8, 26, 26])
    """

    _dims = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W): weight (C_out, C_in/groups, kD, kH, kW)."""

    _dims = 3
    _conv = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size,
                        num_spatial_dims: int, dilation=None) -> tuple:
        """The output_padding that makes the output `output_size` (checked to be reachable)."""
        if output_size is None:
            return self.output_padding
        has_batch = input.dim() == num_spatial_dims + 2
        lead = 2 if has_batch else 1
        output_size = tuple(int(s) for s in output_size)
        if len(output_size) == lead + num_spatial_dims:
            output_size = output_size[lead:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{lead + num_spatial_dims} elements (got {len(output_size)})")
        dilation = self.dilation if dilation is None else dilation
        spatial = input.shape[input.dim() - num_spatial_dims:]
        low = [(n - 1) * s - 2 * p + d * (k - 1) + 1 for n, s, p, d, k in
               zip(spatial, stride, padding, dilation, kernel_size)]
        high = [m + s - 1 for m, s in zip(low, stride)]
        for want, lo, hi in zip(output_size, low, high):
            if not lo <= want <= hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {low} to {high} (for an input of {spatial})")
        return tuple(want - lo for want, lo in zip(output_size, low))

    def forward(self, input, output_size=None):
        n = self._dims
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, n, self.dilation)
        return self._conv(input, self.weight, self.bias, self.stride, self.padding,
                          output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution (the gradient of Conv1d for its input); weight
    (C_in, C_out/groups, k).  ``forward(input, output_size=None)``."""

    _dims = 1
    _conv = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution; weight (C_in, C_out/groups, kH, kW).  `output_size`
    in forward picks among the output sizes a strided convolution maps to the input's.

    >>> ConvTranspose2d(8, 1, 3, stride=2)(ember.randn(1, 8, 5, 5)).shape
    ember.Size([1, 1, 11, 11])
    """

    _dims = 2
    _conv = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution; weight (C_in, C_out/groups, kD, kH, kW)."""

    _dims = 3
    _conv = staticmethod(F.conv_transpose3d)
