"""NAdam: Adam with Nesterov momentum (Dozat, 2016)."""

from __future__ import annotations

import numpy as np

from .adam import check_adam_hypers, init_moments, moments, update_moments
from .optimizer import Optimizer, check_hyper, step_tensor

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam: Adam whose first moment looks one step ahead, with a momentum schedule.

    The momentum of step ``t`` is ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * psi))`` with
    ``psi`` = `momentum_decay`; ``mu_prod`` is the running product of the ``mu_t``.
    Each step updates ``m`` and ``v`` as Adam does and moves
    ``p -= lr * ((1 - mu_t) / (1 - mu_prod_t) * g
    + mu_{t+1} / (1 - mu_prod_{t+1}) * m) / (sqrt(v / (1 - beta2**t)) + eps)``.
    `weight_decay` adds an L2 term to the gradient, or with `decoupled_weight_decay`
    shrinks ``p *= 1 - lr * weight_decay`` first.

    State per parameter: ``step``, ``mu_product`` (0-dim float tensors), ``exp_avg``
    and ``exp_avg_sq``.

    Args:
        params, lr, betas, eps, weight_decay: as for :class:`~ember.optim.Adam`.
        momentum_decay: ``psi`` in the momentum schedule.
        decoupled_weight_decay: decay the weights directly (as AdamW does).
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_adam_hypers(lr, betas, eps, weight_decay)
        check_hyper("momentum_decay value", momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        init_moments(param, state)
        state["mu_product"] = step_tensor(1.0)

    def _update(self, param, grad, state, group) -> None:
        step, g, tmp = update_moments(self, param, grad, state, group)
        lr, beta1, beta2 = step.lr, step.beta1, step.beta2
        psi = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step.count * psi))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step.count + 1) * psi))
        # NOTE: the product is kept in the state's float dtype (as PyTorch does), so it
        # is rounded there at every step; the next one is formed in double precision.
        mu_product_t = state["mu_product"]._data
        mu_product_t *= mu
        mu_product = float(mu_product_t)
        exp_avg, exp_avg_sq = moments(state)
        denom = self._scratch(param, 2)
        np.divide(exp_avg_sq, 1 - beta2 ** step.count, out=denom)
        np.sqrt(denom, out=denom)
        denom += group["eps"]
        np.multiply(g, -lr * (1.0 - mu) / (1.0 - mu_product), out=tmp)
        tmp /= denom
        param += tmp
        np.multiply(exp_avg, -lr * mu_next / (1.0 - mu_product * mu_next), out=tmp)
        tmp /= denom
        param += tmp
