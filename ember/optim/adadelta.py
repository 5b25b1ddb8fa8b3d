"""Adadelta: per-coordinate step sizes from running averages (Zeiler, 2012)."""

from __future__ import annotations

import numpy as np

from . import _fused
from .adam import decayed_grad, update_second_moment
from .optimizer import Optimizer, check_hyper, check_lr, scalar, start_state

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta: the step is the gradient scaled by RMS(past steps) / RMS(gradients).

    Each step: ``v = rho * v + (1 - rho) * g**2``,
    ``delta = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho * u + (1 - rho) * delta**2``
    and ``p -= lr * delta``.  `weight_decay` adds ``weight_decay * p`` to the gradient.

    State per parameter: ``step``, ``square_avg`` (v) and ``acc_delta`` (u).

    Args:
        params: parameters or parameter groups to optimize.
        lr: scale applied to the step (a float or a one-element tensor).
        rho: decay rate of the running averages.
        eps: added inside the square roots for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_hyper("epsilon value", eps)
        check_hyper("weight_decay value", weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        start_state(param, state, "square_avg", "acc_delta")

    def _update(self, param, grad, state, group) -> None:
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        if _fused.usable(group, param, grad, square_avg, acc_delta):
            state["step"]._data += 1
            _fused.adadelta_step(param, grad, square_avg, acc_delta, lr=scalar(group["lr"]),
                                 rho=group["rho"], eps=group["eps"],
                                 weight_decay=group["weight_decay"],
                                 maximize=group["maximize"])
            return
        lr = scalar(group["lr"])
        rho, eps = group["rho"], group["eps"]
        state["step"]._data += 1
        g = decayed_grad(self, param, grad, group["weight_decay"], group["maximize"])
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        tmp = self._scratch(param)
        update_second_moment(square_avg, g, rho, tmp)
        delta = self._scratch(param, 2)
        np.add(acc_delta, eps, out=delta)
        np.sqrt(delta, out=delta)
        np.add(square_avg, eps, out=tmp)
        np.sqrt(tmp, out=tmp)
        delta /= tmp
        delta *= g
        update_second_moment(acc_delta, delta, rho, tmp)
        np.multiply(delta, -lr, out=tmp)
        param += tmp
