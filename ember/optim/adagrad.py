"""Adagrad: per-coordinate step sizes from the sum of squared gradients (Duchi et al., 2011)."""

from __future__ import annotations

import numpy as np

from .._core.tensor import _make
from .adam import decayed_grad
from .optimizer import (
    Optimizer, check_hyper, check_lr, scalar, sparse_grad_parts, step_tensor,
)
from ..ops._util import xp_of

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad: divide each coordinate's step by the root of its summed squared gradients.

    Each step: ``s += g**2`` and ``p -= lr_t * g / (sqrt(s) + eps)`` with the decayed
    rate ``lr_t = lr / (1 + (t - 1) * lr_decay)``.  `weight_decay` adds
    ``weight_decay * p`` to the gradient.  Sparse gradients take the update only on
    their stored entries (``sparse_rows_update``; they arrive with ember's sparse type).

    State per parameter (created with the optimizer, as in PyTorch): ``step`` and
    ``sum`` (filled with `initial_accumulator_value`).

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor).
        lr_decay: decay of the learning rate with the step count.
        weight_decay: L2 penalty added to the gradient.
        initial_accumulator_value: starting value of the sums.
        eps: added to the denominator for numerical stability.
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10,
                 foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_hyper("lr_decay value", lr_decay)
        check_hyper("weight_decay value", weight_decay)
        check_hyper("initial_accumulator_value value", initial_accumulator_value)
        check_hyper("epsilon value", eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, self.state[p], group)

    def _init_state(self, param, state, group) -> None:
        state["step"] = step_tensor()
        data = param._data

        value = group["initial_accumulator_value"]
        if data.dtype.kind == "c":
            value = complex(value, value)
        state["sum"] = _make(xp_of(data).full_like(data, value))

    def _update(self, param, grad, state, group) -> None:
        step_t = state["step"]._data
        step_t += 1
        clr = scalar(group["lr"]) / (1 + (float(step_t) - 1) * group["lr_decay"])
        g = decayed_grad(self, param, grad, group["weight_decay"], group["maximize"])
        state_sum = state["sum"]._data
        tmp = self._scratch(param)
        np.multiply(g, g, out=tmp)
        state_sum += tmp
        np.sqrt(state_sum, out=tmp)
        tmp += group["eps"]
        np.divide(g, tmp, out=tmp)
        tmp *= -clr
        param += tmp

    def _sparse_update(self, param, grad, state, group) -> None:
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        indices, values = sparse_grad_parts(grad, "Adagrad")
        if group["maximize"]:
            values = -values
        step_t = state["step"]._data
        step_t += 1
        clr = scalar(group["lr"]) / (1 + (float(step_t) - 1) * group["lr_decay"])
        sparse_rows_update(param._data, state["sum"]._data, indices, values, clr,
                           group["eps"])


def sparse_rows_update(param, state_sum, indices, values, clr: float, eps: float) -> None:
    """Adagrad on the entries of a coalesced sparse gradient (unique `indices`).

    `indices` is an integer array of shape (sparse_dims, nnz) and `values` has shape
    ``(nnz,) + param.shape[sparse_dims:]``; only those entries of `param` and of the sum
    change.
    """
    where = tuple(indices)
    sums = state_sum[where] + values * values
    state_sum[where] = sums
    param[where] -= clr * values / (np.sqrt(sums) + eps)
