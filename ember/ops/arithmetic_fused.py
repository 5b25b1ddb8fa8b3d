"""Fused arithmetic: addcmul, addcdiv and lerp (and their in-place forms, which
optimizers use for their updates)."""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor
from ._util import cast, is_scalar, result_type, xp_of
from .arithmetic import (
    _is_integral, _short, check_broadcast, check_inplace_shape, inplace_form, unsupported,
)


class Addcmul(Function):
    @staticmethod
    def forward(ctx, x, t1, t2, value=1):
        ctx.value = value
        ctx.save_for_backward(t1, t2)
        return (x + value * (t1 * t2)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        value = ctx.value
        g1 = grad * t2 * value if ctx._edges[1][0] is not None else None
        g2 = grad * t1 * value if ctx._edges[2][0] is not None else None
        return grad, g1, g2


AddcmulInplace = inplace_form(Addcmul)


class Addcdiv(Function):
    @staticmethod
    def forward(ctx, x, t1, t2, value=1):
        ctx.value = value
        ctx.save_for_backward(t1, t2)
        with np.errstate(all="ignore"):
            return (x + value * (t1 / t2)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        value = ctx.value
        g1 = grad * value / t2 if ctx._edges[1][0] is not None else None
        g2 = -grad * value * t1 / (t2 * t2) if ctx._edges[2][0] is not None else None
        return grad, g1, g2


AddcdivInplace = inplace_form(Addcdiv)


def _addc_operands(op: str, input, tensor1, tensor2, value):
    for t in (input, tensor1, tensor2):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor arguments, got {type(t).__name__}")
    check_broadcast(input, tensor1, tensor2)
    rt = result_type(input, tensor1, tensor2)
    if op.startswith("addcdiv") and _is_integral(rt):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported. Compute "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for the old "
            "integer behaviour, or use floating point tensors."
        )
    if _is_integral(rt):
        value = int(value)  # PyTorch truncates the multiplier for integer results
    if op.endswith("_"):
        check_inplace_shape(input, tensor1, tensor2)
        rt = input.dtype
        if not dtypes.can_cast(result_type(input, tensor1, tensor2), rt):
            raise RuntimeError(f"result type {_short(result_type(tensor1, tensor2))} can't be "
                               f"cast to the desired output type {_short(rt)}")
    return (cast(input, rt, like=input), cast(tensor1, rt, like=input),
            cast(tensor2, rt, like=input), value)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2``, broadcasting all three."""
    return Addcmul.apply(*_addc_operands("addcmul", input, tensor1, tensor2, value))


def addcmul_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place ``addcmul``."""
    return AddcmulInplace.apply(*_addc_operands("addcmul_", input, tensor1, tensor2, value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2``, broadcasting all three (floating point only)."""
    return Addcdiv.apply(*_addc_operands("addcdiv", input, tensor1, tensor2, value))


def addcdiv_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place ``addcdiv``."""
    return AddcdivInplace.apply(*_addc_operands("addcdiv_", input, tensor1, tensor2, value))


def _lerp(xp, x, end, weight):
    # NOTE: the second form is exact at weight == 1 (it returns `end`, not x + (end - x)).
    diff = end - x
    if isinstance(weight, (int, float)):
        return x + weight * diff if math.fabs(weight) < 0.5 else end - diff * (1 - weight)
    return xp.where(xp.abs(weight) < 0.5, x + weight * diff, end - diff * (1 - weight))


class Lerp(Function):
    """lerp with a Python-number weight."""

    _name = "LerpBackward0"

    @staticmethod
    def forward(ctx, x, end, weight):
        ctx.weight = weight
        return _lerp(xp_of(x), x, end, weight).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        w = ctx.weight
        return grad * (1 - w), grad * w


LerpInplace = inplace_form(Lerp)


class LerpTensor(Function):
    """lerp with a tensor weight."""

    _name = "LerpBackward1"

    @staticmethod
    def forward(ctx, x, end, weight):
        ctx.save_for_backward(x, end, weight)
        return _lerp(xp_of(x), x, end, weight).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        x, end, w = ctx.saved_tensors
        gw = grad * (end - x) if ctx._edges[2][0] is not None else None
        return grad * (1 - w), grad * w, gw


LerpTensorInplace = inplace_form(LerpTensor)


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16"}


def _lerp_operands(op: str, input, end, weight):
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise TypeError(f"{op}(): expected `input` and `end` to be Tensors")
    kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
    if not input.dtype.is_floating_point:
        raise unsupported(kernel, input.dtype)
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {_C_NAMES.get(input.dtype.name)} for `{name}` "
                               f"but got dtype {_C_NAMES.get(t.dtype.name, t.dtype.name)}")
    if not (isinstance(weight, Tensor) or is_scalar(weight)):
        raise TypeError(f"{op}(): weight must be a Tensor or a number")
    check_broadcast(input, end, weight)
    if op.endswith("_"):
        check_inplace_shape(input, end, weight)
    return input, end, (weight if isinstance(weight, Tensor) else float(weight))


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """``input + weight * (end - input)``; `weight` is a number or a tensor."""
    x, e, w = _lerp_operands("lerp", input, end, weight)
    return (LerpTensor if isinstance(w, Tensor) else Lerp).apply(x, e, w)


def lerp_(input: Tensor, end: Tensor, weight) -> Tensor:
    """In-place ``lerp``."""
    x, e, w = _lerp_operands("lerp_", input, end, weight)
    return (LerpTensorInplace if isinstance(w, Tensor) else LerpInplace).apply(x, e, w)
