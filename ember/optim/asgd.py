"""ASGD: averaged stochastic gradient descent (Polyak & Juditsky, 1992)."""

from __future__ import annotations

import numpy as np

from .adam import decayed_grad
from .optimizer import Optimizer, check_hyper, check_lr, scalar, step_tensor, zeros_state

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD: SGD with a decaying step size and a running average of the iterates.

    Each step: ``p *= 1 - lambd * eta``, ``p -= eta * g``; the average
    ``ax += mu * (p - ax)`` (a copy of ``p`` while ``mu`` is 1); then
    ``eta = lr / (1 + lambd * lr * t)**alpha`` and ``mu = 1 / max(1, t - t0)``.
    The average is in ``state[p]["ax"]``.  `weight_decay` adds ``weight_decay * p``
    to the gradient.

    State per parameter: ``step``, ``eta``, ``mu`` (0-dim float tensors) and ``ax``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor).
        lambd: decay term.
        alpha: power of the step-size decay.
        t0: step at which averaging starts.
        weight_decay: L2 penalty added to the gradient.
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_lr(lr)
        check_hyper("weight_decay value", weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        state["step"] = step_tensor()
        state["eta"] = step_tensor(scalar(group["lr"]))
        state["mu"] = step_tensor(1.0)
        state["ax"] = zeros_state(param)

    def _update(self, param, grad, state, group) -> None:
        lr = scalar(group["lr"])
        lambd, alpha = group["lambd"], group["alpha"]
        step_t, eta_t, mu_t = state["step"]._data, state["eta"]._data, state["mu"]._data
        step_t += 1
        g = decayed_grad(self, param, grad, group["weight_decay"], group["maximize"])
        eta = float(eta_t)
        param *= 1 - lambd * eta
        tmp = self._scratch(param)
        np.multiply(g, -eta, out=tmp)
        param += tmp
        ax = state["ax"]._data
        mu = float(mu_t)
        if mu != 1:
            np.subtract(param, ax, out=tmp)
            tmp *= mu
            ax += tmp
        else:
            ax[...] = param
        step = float(step_t)
        # eta and mu are stored rounded to the state's float dtype, as in PyTorch
        eta_t[...] = lr / ((1 + lambd * lr * step) ** alpha)
        mu_t[...] = 1 / max(1, step - group["t0"])
