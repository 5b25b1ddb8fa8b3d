"""Statistics over dimensions: var, std (with their means), logsumexp and the vector
norm (``torch.norm``).  Shared helpers come from ``reduction.py``."""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function, as_array
from .._core.tensor import Tensor
from ._util import xp_of
from .reduction import (
    _check_nonempty, _const, _count, _ExpShifted, _is_float, _keep, _kept_shape,
    _restore_reduced, _short_name, mean, reduce_dims,
)


class _AbsPow(Function):
    """``|x| ** q`` for a Python float q (a building block of p-norm gradients)."""

    @staticmethod
    def forward(ctx, x, q):
        ctx.save_for_backward(x)
        ctx.q = q
        return xp_of(x).abs(x) ** q

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        sign = _const(xp_of(x._data).sign(x._data))
        return grad * sign * _AbsPow.apply(x, ctx.q - 1) * ctx.q


# ---------------------------------------------------------------------------
# variance and standard deviation


def _degrees(n: int, correction) -> float:
    dof = builtins.max(0, n - correction)
    if dof <= 0:
        warnings.warn("var(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=4)
    return float(dof)


class Var(Function):
    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, take_sqrt):
        xp = xp_of(x)
        ctx.shape, ctx.dims, ctx.keepdim, ctx.sqrt = x.shape, dims, keepdim, take_sqrt
        ctx.dof = _degrees(_count(x.shape, dims), correction)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            d = x - x.mean(axis=dims, keepdims=True)
            sq = (d * d.conj()).real if x.dtype.kind == "c" else d * d
            out = sq.sum(axis=dims, keepdims=keepdim) / sq.dtype.type(ctx.dof)
            if take_sqrt:
                out = xp.sqrt(out)
        out = as_array(out)
        ctx.save_for_backward(x, out if take_sqrt else None)
        ctx._name = "StdBackward0" if take_sqrt else "VarBackward0"
        return out

    @staticmethod
    def backward(ctx, grad):
        x, std = ctx.saved_tensors
        shape, dims, keepdim = ctx.shape, ctx.dims, ctx.keepdim
        g = _restore_reduced(grad, shape, dims, keepdim)
        centered = x - x.mean(dims, keepdim=True)
        if not ctx.sqrt:
            return g * centered * (2.0 / ctx.dof)
        # NOTE: d std = d var / (2 std); where std is 0 so is x - mean: give 0, not nan.
        std = _keep(std, shape, dims, keepdim)
        zero = _const((std._data == 0).astype(std._data.dtype))
        return g * centered / ((std + zero) * ctx.dof)


def _var_args(input: Tensor, dim, unbiased, correction, op: str):
    if isinstance(dim, bool):  # the var(input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{op}(): cannot set both unbiased and correction")
    if correction is None:
        correction = 0 if unbiased is False else 1
    if not _is_float(input._data):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return reduce_dims(input, dim, op), correction


def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """Variance over `dim`, dividing by ``N - correction`` (Bessel's correction by default).

    ``unbiased=False`` is the legacy spelling of ``correction=0``.
    """
    dims, correction = _var_args(input, dim, unbiased, correction, "var")
    return Var.apply(input, dims, correction, keepdim, False)


def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """Standard deviation: the square root of ``var`` with the same arguments."""
    dims, correction = _var_args(input, dim, unbiased, correction, "std")
    return Var.apply(input, dims, correction, keepdim, True)


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None):
    """``(var(input, ...), mean(input, ...))`` in one call."""
    dims, correction = _var_args(input, dim, unbiased, correction, "var_mean")
    return (Var.apply(input, dims, correction, keepdim, False), mean(input, dims, keepdim))


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None):
    """``(std(input, ...), mean(input, ...))`` in one call."""
    dims, correction = _var_args(input, dim, unbiased, correction, "std_mean")
    return (Var.apply(input, dims, correction, keepdim, True), mean(input, dims, keepdim))


# ---------------------------------------------------------------------------
# logsumexp and norms


class LogSumExp(Function):
    _name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        xp = xp_of(x)
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        if x.size == 0:
            out = xp.full(_kept_shape(x.shape, dims), -xp.inf, dtype=x.dtype)
        else:
            # NOTE: shift by the max so that exp cannot overflow (infinite maxima: by 0).
            m = x.max(axis=dims, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0).astype(x.dtype)
            with np.errstate(divide="ignore"):
                out = xp.log(xp.exp(x - m).sum(axis=dims, keepdims=True)) + m
        if not keepdim:
            out = out.reshape([s for i, s in enumerate(x.shape) if i not in dims])
        out = as_array(out)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        g = _restore_reduced(grad, ctx.shape, ctx.dims, ctx.keepdim)
        return g * _ExpShifted.apply(x, _keep(out, ctx.shape, ctx.dims, ctx.keepdim))


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))`` computed without overflow; its gradient is softmax."""
    if not _is_float(input._data):
        input = input.to(dtypes.get_default_dtype())
    return LogSumExp.apply(input, reduce_dims(input, dim, "logsumexp"), keepdim)


class Norm(Function):
    _name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        xp = xp_of(x)
        ctx.shape, ctx.dims, ctx.keepdim, ctx.p = x.shape, dims, keepdim, p
        a = xp.abs(x)
        if p == np.inf:
            out = a.max(axis=dims, keepdims=True)
        elif p == -np.inf:
            out = a.min(axis=dims, keepdims=True)
        elif p == 0:
            out = (x != 0).sum(axis=dims, keepdims=True).astype(a.dtype)
        elif p == 1:
            out = a.sum(axis=dims, keepdims=True)
        elif p == 2:
            out = xp.sqrt((a * a).sum(axis=dims, keepdims=True))
        else:
            with np.errstate(divide="ignore"):
                out = ((a ** p).sum(axis=dims, keepdims=True) ** (1.0 / p)).astype(a.dtype)
        if not keepdim:
            out = out.reshape([s for i, s in enumerate(x.shape) if i not in dims])
        out = as_array(out)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        p, shape, dims = ctx.p, ctx.shape, ctx.dims
        g = _restore_reduced(grad, shape, dims, ctx.keepdim)
        out = _keep(out, shape, dims, ctx.keepdim)
        xd, od = x._data, out._data
        xp = xp_of(xd)
        if p == 0:
            return None
        sign = xp.nan_to_num(xp.sign(xd))
        if p == 1:
            return g * _const(sign)
        if p in (np.inf, -np.inf):
            mask = (xp.abs(xd) == od)
            count = mask.sum(axis=dims, keepdims=True)
            return g * _const(sign * mask / xp.maximum(count, 1))
        # NOTE: a zero norm has no gradient of its own; PyTorch returns 0 there, not nan.
        zero_out = _const((od == 0).astype(od.dtype))
        if p == 2:
            return g * x / (out + zero_out)
        # sign(x) |x|^(p-1) / norm^(p-1); zeros of x are moved to 1 (their sign is 0) so
        # that no inf/nan appears for p < 1 or in higher derivatives.
        zero_x = _const((xd == 0).astype(xd.dtype))
        scale = _AbsPow.apply(x + zero_x, p - 1) / _AbsPow.apply(out + zero_out, p - 1)
        return g * _const(sign * (od != 0)) * scale


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Vector p-norm over `dim` (all elements by default).

    `p` may be 'fro' (= 2), inf, -inf, 0 (number of non-zeros) or any real number.
    """
    if dtype is not None:
        input = input.to(dtypes.to_dtype(dtype))
    if not _is_float(input._data):
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_short_name(input._data)}")
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError("norm(): p='nuc' (the nuclear norm) is not supported")
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        p = 2
    if p is None:
        p = 2
    dims = reduce_dims(input, dim, "norm")
    if p < 0 or p == np.inf:
        _check_nonempty(input, dims, "linalg.vector_norm")
    return Norm.apply(input, float(p), dims, keepdim)
