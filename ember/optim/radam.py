"""RAdam: Adam with a rectified adaptive learning rate (Liu et al., 2020)."""

from __future__ import annotations

import numpy as np

from .adam import check_adam_hypers, init_moments, moments, update_moments
from .optimizer import Optimizer

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
        params, lr, betas, eps, weight_decay: as for :class:`~ember.optim.Adam`.
        decoupled_weight_decay: decay the weights directly (as AdamW does).
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_adam_hypers(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        init_moments(param, state)

    def _update(self, param, grad, state, group) -> None:
        step, _, tmp = update_moments(self, param, grad, state, group)
        lr, beta1, beta2 = step.lr, step.beta1, step.beta2
        exp_avg, exp_avg_sq = moments(state)
        bias_correction1 = 1 - beta1 ** step.count
        bias_correction2 = 1 - beta2 ** step.count
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step.count * (beta2 ** step.count) / bias_correction2
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
