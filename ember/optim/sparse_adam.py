"""SparseAdam: Adam restricted to the entries a sparse gradient stores."""

from __future__ import annotations

import math

import numpy as np

from .optimizer import Optimizer, check_betas, check_lr, scalar, sparse_grad_parts, zeros_state

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Adam for dense parameters with sparse gradients (e.g. a sparse ``Embedding``).

    Only the entries stored in the gradient take part in a step: their moments are
    updated as in Adam and only they move; every other entry, and its moments, stays
    as it is.  Dense gradients are refused (use ``Adam``).

    State per parameter: ``step`` (an int), ``exp_avg`` and ``exp_avg_sq``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor, > 0).
        betas: decay rates of the two running averages.
        eps: added to the denominator for numerical stability (> 0).
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        check_lr(lr, strict=True)
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does "
                             "not support complex parameters")

    def _init_state(self, param, state, group) -> None:
        state["step"] = 0
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)

    def _update(self, param, grad, state, group) -> None:
        raise RuntimeError(
            "SparseAdam does not support dense gradients, please consider Adam instead")

    def _sparse_update(self, param, grad, state, group) -> None:
        indices, values = sparse_grad_parts(grad, "SparseAdam")
        state["step"] += 1
        if values.size == 0:
            return
        if group.get("maximize", False):
            values = -values
        beta1, beta2 = group["betas"]
        sparse_adam_rows(param._data, state["exp_avg"]._data, state["exp_avg_sq"]._data,
                         indices, values, state["step"], scalar(group["lr"]), beta1, beta2,
                         group["eps"])


def sparse_adam_rows(param, exp_avg, exp_avg_sq, indices, values, step: int, lr: float,
                     beta1: float, beta2: float, eps: float) -> None:
    """One Adam step on the entries of a coalesced sparse gradient (unique `indices`).

    `indices` is an integer array of shape (sparse_dims, nnz) and `values` has shape
    ``(nnz,) + param.shape[sparse_dims:]``.
    """
    where = tuple(indices)
    m = exp_avg[where]
    m += (values - m) * (1 - beta1)
    v = exp_avg_sq[where]
    v += (values * values - v) * (1 - beta2)
    exp_avg[where] = m
    exp_avg_sq[where] = v
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param[where] -= step_size * (m / (np.sqrt(v) + eps))
