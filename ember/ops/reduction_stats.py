"""Statistics over dimensions: var, std (with their means) and logsumexp.  Shared helpers
come from ``reduction.py``; ``torch.norm`` is ``legacy_norm`` in ``linalg_norms.py``."""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function, as_array
from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Tensor, _make
from . import _native as native
from . import _native_rows
from ._util import xp_of
from .reduction import (
    _const, _count, _ExpShifted, _is_float, _keep, _kept_shape,
    _restore_reduced, reduce_dims,
)


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
        # (an empty input has no reduction factor: PyTorch counts it as 0 and warns)
        ctx.dof = _degrees(_count(x.shape, dims) if x.size else 0, correction)
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
        centered = x - x.mean(dims, keepdim=True)
        # (each factor scales the reduced gradient, which then broadcasts in one product)
        if not ctx.sqrt:
            # NOTE: no degrees of freedom left: the variance is nan/inf, so is its gradient
            g = grad * (2.0 / ctx.dof if ctx.dof else math.inf)
            return _restore_reduced(g, shape, dims, keepdim) * centered
        # NOTE: d std = d var / (2 std); where std is 0 so is x - mean: give 0, not nan.
        zero = _const((std._data == 0).astype(std._data.dtype))
        g = grad / ((std + zero) * ctx.dof)
        return _restore_reduced(g, shape, dims, keepdim) * centered


class VarMean(Var):
    """(var or std, mean) from one node, as PyTorch records var_mean/std_mean.  An output
    that gets no gradient adds nothing (not zeros times a nan-holding centered input)."""

    _materialize_grads = False

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, take_sqrt):
        out = Var.forward(ctx, x, dims, correction, keepdim, take_sqrt)
        ctx._name = "StdMeanBackward0" if take_sqrt else "VarMeanBackward0"
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the mean of nothing is nan
            return out, as_array(x.mean(axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, grad, grad_mean):
        g_var = None if grad is None else Var.backward(ctx, grad)
        if grad_mean is None:
            return g_var
        g_mean = _restore_reduced(grad_mean / float(_count(ctx.shape, ctx.dims)), ctx.shape,
                                  ctx.dims, ctx.keepdim)
        return g_mean if g_var is None else g_var + g_mean


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
    return VarMean.apply(input, dims, correction, keepdim, False)


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *,
             correction=None):
    """``(std(input, ...), mean(input, ...))`` in one call."""
    dims, correction = _var_args(input, dim, unbiased, correction, "std_mean")
    return VarMean.apply(input, dims, correction, keepdim, True)


# ---------------------------------------------------------------------------
# logsumexp


class LogSumExp(Function):
    _name = "LogsumexpBackward0"
    _fresh_grads = True  # (its gradient is a new array: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        xp = xp_of(x)
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.rows = None
        if x.size == 0:
            out = xp.full(_kept_shape(x.shape, dims), -xp.inf, dtype=x.dtype)
        elif dims == (x.ndim - 1,) and _native_rows.supports(
                rows := x.reshape(-1, x.shape[-1])):
            # over the last dim: one kernel pass for the max, one for the sum of exps
            ctx.rows = rows.shape
            out = _native_rows.logsumexp(rows).reshape(_kept_shape(x.shape, dims))
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
        if (ctx.rows is not None and not STATE.enabled and PROCESS.observer is None
                and type(grad._data) is np.ndarray):  # first order: one kernel pass
            rows = x._data.reshape(ctx.rows)
            g = np.ascontiguousarray(grad._data, rows.dtype).reshape(-1)
            return _make(_native_rows.logsumexp_backward(
                native.writable(g), rows, out._data.reshape(-1)).reshape(ctx.shape)), None, None
        g = _restore_reduced(grad, ctx.shape, ctx.dims, ctx.keepdim)
        return g * _ExpShifted.apply(x, _keep(out, ctx.shape, ctx.dims, ctx.keepdim))


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input), dim))`` computed without overflow; its gradient is softmax."""
    if not _is_float(input._data):
        input = input.to(dtypes.get_default_dtype())
    return LogSumExp.apply(input, reduce_dims(input, dim, "logsumexp"), keepdim)
