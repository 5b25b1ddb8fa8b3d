"""Folding an eval-mode batch norm into the convolution or linear layer before it:
``bn(conv(x)) == fused_conv(x)`` with one layer fewer at inference.

With ``s = bn.weight / sqrt(running_var + eps)``: the weight is scaled by s along the
output channels, and the bias becomes ``(bias - running_mean) * s + bn.bias``.
"""

from __future__ import annotations

import copy

from ..._core.grad_mode import no_grad
from ..._core.tensor import Tensor
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _bn_scale(running_var: Tensor, eps: float, bn_weight) -> Tensor:
    scale = (running_var + eps).rsqrt()
    return scale if bn_weight is None else bn_weight * scale


def _fused_bias(bias, running_mean: Tensor, scale: Tensor, bn_bias) -> Tensor:
    if bias is None:
        bias = running_mean.new_zeros(tuple(running_mean.shape))
    fused = (bias - running_mean) * scale
    return fused if bn_bias is None else fused + bn_bias


def fuse_conv_bn_weights(conv_w: Tensor, conv_b, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w, bn_b, transpose: bool = False) -> tuple:
    """The (weight, bias) Parameters of a convolution with the batch norm after it folded
    in; `transpose` for a transposed convolution (output channels on dim 1)."""
    scale = _bn_scale(bn_rv, bn_eps, bn_w)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    weight = conv_w * scale.reshape(shape).to(conv_w.dtype)
    bias = _fused_bias(conv_b, bn_rm, scale, bn_b).to(conv_w.dtype)
    bias_grad = conv_w.requires_grad if conv_b is None else conv_b.requires_grad
    return Parameter(weight.detach(), conv_w.requires_grad), Parameter(bias.detach(), bias_grad)


def fuse_linear_bn_weights(linear_w: Tensor, linear_b, bn_rm: Tensor, bn_rv: Tensor,
                           bn_eps: float, bn_w, bn_b) -> tuple:
    """The (weight, bias) Parameters of a linear layer with the batch norm after it folded
    in."""
    scale = _bn_scale(bn_rv, bn_eps, bn_w)
    weight = linear_w * scale.unsqueeze(-1).to(linear_w.dtype)
    bias = _fused_bias(linear_b, bn_rm, scale, bn_b).to(linear_w.dtype)
    bias_grad = linear_w.requires_grad if linear_b is None else linear_b.requires_grad
    return Parameter(weight.detach(), linear_w.requires_grad), Parameter(bias.detach(),
                                                                         bias_grad)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of `conv` (eval mode) computing ``bn(conv(x))`` of the eval-mode `bn`."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("the batch norm has no running statistics to fuse")
    with no_grad():
        fused.weight, fused.bias = fuse_conv_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
            bn.bias, transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` (eval mode) computing ``bn(linear(x))`` of the eval-mode `bn`."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or "
                             "bn.num_features must be 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("the batch norm has no running statistics to fuse")
    fused = copy.deepcopy(linear)
    with no_grad():
        fused.weight, fused.bias = fuse_linear_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
            bn.bias)
    return fused
