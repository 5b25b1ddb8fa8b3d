"""RMS norm as one node: ``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims,
forward and first-order backward on arrays.

NOTE: why.  Written with ember ops (`rms_norm_composite`) it is six nodes, and the
backward of its broadcast products alone took ~1 ms: (32, 64, 256) float32, forward and
backward, 2.64-2.73 ms against PyTorch's 1.37 (2-core Intel Xeon, 2026-12-06; PyTorch's
CPU rms_norm is the same composition of ops).  With ``create_graph`` the backward
differentiates the composition, recomputed (ops/recompute.py), so that gradients of
every order are its own.
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor, _make
from . import _kernels
from .recompute import recomputed_grads


def rms_norm_composite(input: Tensor, weight: Tensor | None, dims: tuple, eps: float):
    """rms_norm with ember ops over `dims`: the reference, and the form differentiated for
    gradients of second order and more."""
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


class RmsNorm(Function):
    """rms_norm of `x` over its trailing `dims`."""

    _name = "RmsNormBackward0"
    _fresh_grads = True  # (each gradient is an array made here: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, weight, *, dims, eps):
        size = int(np.prod([x.shape[d] for d in dims]))
        rows = np.ascontiguousarray(x).reshape(-1, size)
        rstd = _kernels.sums_of_products(rows, rows, (1,))   # (then the mean, then 1 / rms)
        rstd *= 1 / size
        rstd += eps
        np.sqrt(rstd, out=rstd)
        np.divide(1, rstd, out=rstd)
        out = rows * rstd
        if weight is not None:
            out *= weight.reshape(-1)
        ctx.dims, ctx.size, ctx.eps, ctx.rstd = dims, size, eps, rstd
        ctx.save_for_backward(x, weight)
        return out.reshape(x.shape)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        if is_grad_enabled():  # create_graph: differentiate the composition
            return recomputed_grads(rms_norm_composite, (x, weight), needs, grad,
                                    dims=ctx.dims, eps=ctx.eps)
        size, rstd = ctx.size, ctx.rstd
        rows = np.ascontiguousarray(x._data).reshape(-1, size)
        g = np.ascontiguousarray(grad._data).reshape(-1, size)
        w = None if weight is None else weight._data.reshape(-1)
        gw = None
        if weight is not None and needs[1]:
            normalized = rows * rstd
            normalized *= g
            gw = _make(normalized.sum(axis=0).reshape(weight.shape))
        gx = None
        if needs[0]:
            scaled = g if w is None else g * w              # d loss / d (x * rstd)
            # d/dx of x * rstd: rstd * scaled - x * rstd^3 * mean(scaled * x)
            coefficient = _kernels.sums_of_products(scaled, rows, (1,))
            coefficient *= rstd * rstd * rstd / size
            gx = scaled * rstd
            gx -= rows * coefficient
            gx = _make(gx.reshape(x.shape))
        return gx, gw

