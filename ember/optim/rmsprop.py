"""RMSprop: gradient steps divided by a running RMS of the gradient (Hinton, 2012)."""

from __future__ import annotations

import numpy as np

from .adam import decayed_grad, lerp_, update_second_moment
from .optimizer import Optimizer, check_hyper, check_lr, scalar, start_state, zeros_state

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop: divide the gradient by a running root-mean-square of past gradients.

    Each step: ``v = alpha * v + (1 - alpha) * g**2`` and ``d = sqrt(v) + eps``; with
    `centered`, the running mean ``a`` of the gradient is tracked too and
    ``d = sqrt(v - a**2) + eps``.  Then ``p -= lr * g / d``, or with `momentum`
    ``b = momentum * b + g / d`` and ``p -= lr * b``.  `weight_decay` adds
    ``weight_decay * p`` to the gradient.

    State per parameter: ``step``, ``square_avg`` and, when used, ``momentum_buffer``
    and ``grad_avg``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor).
        alpha: decay rate of the running averages.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalize by an estimate of the variance instead of the raw second
            moment.
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_hyper("epsilon value", eps)
        check_hyper("momentum value", momentum)
        check_hyper("weight_decay value", weight_decay)
        check_hyper("alpha value", alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        start_state(param, state, "square_avg")
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_state(param)
        if group["centered"]:
            state["grad_avg"] = zeros_state(param)

    def _update(self, param, grad, state, group) -> None:
        lr = scalar(group["lr"])
        alpha, momentum = group["alpha"], group["momentum"]
        state["step"]._data += 1
        g = decayed_grad(self, param, grad, group["weight_decay"], group["maximize"])
        square_avg = state["square_avg"]._data
        tmp = self._scratch(param)
        update_second_moment(square_avg, g, alpha, tmp)
        avg = self._scratch(param, 2)
        if group["centered"]:
            grad_avg = state["grad_avg"]._data
            lerp_(grad_avg, g, 1 - alpha, tmp)
            np.multiply(grad_avg, grad_avg, out=avg)
            np.subtract(square_avg, avg, out=avg)
            np.sqrt(avg, out=avg)
        else:
            np.sqrt(square_avg, out=avg)
        avg += group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"]._data
            buf *= momentum
            np.divide(g, avg, out=tmp)
            buf += tmp
            np.multiply(buf, -lr, out=tmp)
        else:
            np.divide(g, avg, out=tmp)
            tmp *= -lr
        param += tmp
