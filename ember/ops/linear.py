"""Linear maps of a batch: ``linear`` (``x @ W.T + b``) and ``bilinear``.

Both are compositions of matmul/addmm, so their gradients of every order come from
those ops.  ``nn.Linear``/``nn.Bilinear`` and attention's projections call them.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.tensor import Tensor, _make
from ._direct import linear_of_arrays, plain_linear, records
from .linalg import AddProduct, addmm, matmul
from .shape import T

__all__ = ["linear", "bilinear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` over the last dimension of `input`.

    `weight` is (out_features, in_features) (or 1-D, giving one output); `input` is
    (*, in_features).  A 2-D input with a bias is one fused ``addmm``.

    >>> linear(ember.ones(2, 3), ember.ones(4, 3), ember.zeros(4)).shape
    torch.Size([2, 4])
    """
    if plain_linear(input, weight, bias):
        if not records(input, weight, bias):  # (ops/_direct.py)
            return linear_of_arrays(input, weight, bias)
        if bias is not None:
            # addmm's node on weight.t()'s, as below, without the checks that
            # `plain_linear` has made (~5 us of a small layer's ~30)
            return AddProduct.record_linear(bias, input, T.apply(weight))
    elif isinstance(input, Tensor) and input.dim() > 2 and not records(input, weight, bias):
        rows = _folded(input)
        if rows is not None and plain_linear(rows, weight, bias):
            # (N, S, E) activations at inference: the rows of the general path's one
            # addmm, on the arrays (a transformer's 64 x 128 -> 512 layer: 126 -> 84 us)
            out = linear_of_arrays(rows, weight, bias)._data
            return _make(out.reshape(tuple(input.shape[:-1]) + out.shape[-1:]))
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{input.dim()}D and {weight.dim()}D")
    if weight.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{weight.dim()}D")
    if weight.dim() == 2 and input.shape[-1] != weight.shape[1]:
        rows = math.prod(input.shape[:-1])
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                           f"{input.shape[-1]} and {weight.shape[1]}x{weight.shape[0]})")
    if bias is not None and weight.dim() == 2:
        if input.dim() == 2:
            return addmm(bias, input, weight.t())
        if input.dim() > 2 and input.is_contiguous():
            # as PyTorch: the leading dims folded into one addmm (the bias is added into
            # the fresh product, and the backward is two plain matrix products)
            rows = input.view(-1, input.shape[-1])
            out = addmm(bias, rows, weight.t())
            return out.view(tuple(input.shape[:-1]) + (weight.shape[0],))
    out = matmul(input, weight.t())
    return out if bias is None else out + bias


def _folded(input: Tensor) -> Tensor | None:
    """A C-contiguous input's leading dims folded into rows (a 2-D tensor on its array),
    or None."""
    x = input._data
    if type(x) is not np.ndarray or not x.flags.c_contiguous:
        return None
    return _make(x.reshape(-1, x.shape[-1]))


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``out[..., k] = input1 @ weight[k] @ input2 + bias[k]``.

    `input1` is (*, in1), `input2` (*, in2) with the same leading shape, `weight`
    (out, in1, in2), `bias` (out,).
    """
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} "
                           f"and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be a 3-D tensor, got {weight.dim()}-D")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    if bias is not None and bias.shape[-1] != out_f:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1]} but expected {out_f}")
    # (*, in1) @ (in1, out * in2) -> (*, out, in2), then contract in2 with input2.
    mixed = matmul(input1, weight.permute(1, 0, 2).reshape(in1, out_f * in2))
    mixed = mixed.reshape(tuple(input1.shape[:-1]) + (out_f, in2))
    out = (mixed * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias
