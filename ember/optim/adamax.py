"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

import numpy as np

from .adam import check_adam_hypers, decayed_grad, lerp_
from .optimizer import Optimizer, scalar, start_state

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2015, section 7): Adam with an infinity-norm denominator.

    Each step: ``m = beta1 * m + (1 - beta1) * g``,
    ``u = max(beta2 * u, |g| + eps)`` and ``p -= lr / (1 - beta1**t) * m / u``.
    `weight_decay` adds ``weight_decay * p`` to the gradient.

    State per parameter: ``step``, ``exp_avg`` (m) and ``exp_inf`` (u).

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor).
        betas: decay rates of the average and of the infinity norm.
        eps: added to ``|g|`` for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_adam_hypers(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        start_state(param, state, "exp_avg", "exp_inf")

    def _update(self, param, grad, state, group) -> None:
        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        step_t = state["step"]._data
        step_t += 1
        g = decayed_grad(self, param, grad, group["weight_decay"], group["maximize"])
        exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
        tmp = self._scratch(param)
        lerp_(exp_avg, g, 1 - beta1, tmp)
        exp_inf *= beta2
        np.abs(g, out=tmp)
        tmp += group["eps"]
        np.maximum(exp_inf, tmp, out=exp_inf)
        clr = lr / (1 - beta1 ** float(step_t))
        np.divide(exp_avg, exp_inf, out=tmp)
        tmp *= -clr
        param += tmp
