"""RAdam: Adam with a rectified adaptive learning rate (Liu et al., 2020)."""

from __future__ import annotations

import numpy as np

from .adam import decayed_grad, lerp_, update_second_moment
from .optimizer import (
    Optimizer, check_betas, check_hyper, check_lr, scalar, step_tensor, zeros_state,
)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam: Adam that uses plain momentum steps until the variance estimate is reliable.

    With ``rho_inf = 2 / (1 - beta2) - 1`` and
    ``rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)``, a step is
    ``p -= lr * m_hat * r_t * sqrt(1 - beta2**t) / (sqrt(v) + eps)`` when ``rho_t > 5``,
    where ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``,
    and ``p -= lr * m_hat`` otherwise (``m_hat = m / (1 - beta1**t)``).  `weight_decay`
    adds an L2 term to the gradient, or with `decoupled_weight_decay` shrinks
    ``p *= 1 - lr * weight_decay`` first.

    State per parameter: ``step``, ``exp_avg`` and ``exp_avg_sq``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor).
        betas: decay rates of the two running averages.
        eps: added to the denominator for numerical stability.
        weight_decay: weight decay factor.
        decoupled_weight_decay: decay the weights directly (as AdamW does).
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_hyper("epsilon value", eps)
        check_betas(betas)
        check_hyper("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        state["step"] = step_tensor()
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)

    def _update(self, param, grad, state, group) -> None:
        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        weight_decay = group["weight_decay"]
        step_t = state["step"]._data
        step_t += 1
        step = float(step_t)
        if weight_decay != 0 and group["decoupled_weight_decay"]:
            param *= 1 - lr * weight_decay
            weight_decay = 0
        g = decayed_grad(self, param, grad, weight_decay, group["maximize"])
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        tmp = self._scratch(param)
        lerp_(exp_avg, g, 1 - beta1, tmp)
        update_second_moment(exp_avg_sq, g, beta2, tmp)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            np.sqrt(exp_avg_sq, out=tmp)
            tmp += group["eps"]
            np.divide(exp_avg, tmp, out=tmp)
            tmp *= -lr * rect * bias_correction2 ** 0.5 / bias_correction1
        else:
            np.multiply(exp_avg, -lr / bias_correction1, out=tmp)
        param += tmp
