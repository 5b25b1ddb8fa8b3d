"""Adam: adaptive moment estimation (Kingma & Ba, 2015), with AMSGrad and decoupled decay."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._core.tensor import Tensor
from . import _fused
from .optimizer import (
    Optimizer, check_betas, check_hyper, check_lr, scalar, start_state, zeros_state,
)

__all__ = ["Adam"]


def lerp_(avg, target, weight: float, tmp) -> None:
    """``avg += weight * (target - avg)`` in place (an exponential moving average).

    `tmp` is a work array of the same shape.  Like PyTorch's ``lerp``, a weight of
    one half or more is computed from the `target` end, which rounds better there.
    """
    np.subtract(target, avg, out=tmp)
    if weight < 0.5:
        tmp *= weight
        avg += tmp
    else:
        tmp *= weight - 1
        np.add(target, tmp, out=avg)


def decayed_grad(optimizer: Optimizer, param, grad, weight_decay: float, maximize: bool):
    """The gradient with `maximize` and the L2 penalty applied (``grad`` when neither)."""
    if weight_decay == 0 and not maximize:
        return grad
    out = optimizer._scratch(param, 1)
    if weight_decay == 0:
        return np.negative(grad, out=out)
    np.multiply(param, weight_decay, out=out)
    (np.subtract if maximize else np.add)(out, grad, out=out)
    return out


def update_second_moment(avg_sq, grad, beta2: float, tmp) -> None:
    """``avg_sq = beta2 * avg_sq + (1 - beta2) * grad**2`` in place."""
    avg_sq *= beta2
    np.multiply(grad, grad, out=tmp)
    tmp *= 1 - beta2
    avg_sq += tmp


# ----------------------------------------------------------------------
# the part of a step that Adam, NAdam and RAdam share


def check_adam_hypers(lr, betas, eps, weight_decay) -> None:
    """PyTorch's ValueErrors for the hyperparameters of the Adam family."""
    check_lr(lr)
    check_hyper("epsilon value", eps)
    check_betas(betas)
    check_hyper("weight_decay value", weight_decay)


def init_moments(param, state: dict) -> None:
    """The state every Adam-family rule starts with: ``step``, ``exp_avg``, ``exp_avg_sq``."""
    start_state(param, state, "exp_avg", "exp_avg_sq")


def moments(state: dict):
    """The arrays of the first and second moment."""
    return state["exp_avg"]._data, state["exp_avg_sq"]._data


class StepScalars(NamedTuple):
    """The numbers of one step: learning rate, betas, step count (from 1), and whether the
    weight decay still has to enter the gradient (False once decoupled decay was applied)."""

    lr: float
    beta1: float
    beta2: float
    count: float
    coupled_decay: bool


def start_step(param, state: dict, group: dict) -> StepScalars:
    """Count the step and apply decoupled weight decay to `param` (AdamW's shrink)."""
    step_t = state["step"]._data
    step_t += 1
    lr = scalar(group["lr"])
    beta1, beta2 = (scalar(b) for b in group["betas"][:2])
    weight_decay = group["weight_decay"]
    decoupled = weight_decay != 0 and group["decoupled_weight_decay"]
    if decoupled:
        param *= 1 - lr * weight_decay
    return StepScalars(lr, beta1, beta2, float(step_t), not decoupled)


def update_moments(optimizer: Optimizer, param, grad, state: dict, group: dict):
    """Start the step and update both moments with the (decayed, signed) gradient.

    Returns the step's scalars, the gradient used and the scratch array ``tmp``
    (free for the rest of the rule).
    """
    step = start_step(param, state, group)
    g = decayed_grad(optimizer, param, grad, group["weight_decay"] if step.coupled_decay else 0,
                     group["maximize"])
    exp_avg, exp_avg_sq = moments(state)
    tmp = optimizer._scratch(param)
    lerp_(exp_avg, g, 1 - step.beta1, tmp)
    update_second_moment(exp_avg_sq, g, step.beta2, tmp)
    return step, g, tmp


class Adam(Optimizer):
    """Adam: steps scaled by running averages of the gradient and of its square.

    Each step: ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * g**2``
    and ``p -= lr * m_hat / (sqrt(v_hat) + eps)`` with the bias corrections
    ``m_hat = m / (1 - beta1**t)``, ``v_hat = v / (1 - beta2**t)``.  With `amsgrad`,
    the running maximum of ``v`` is used instead of ``v``.  `weight_decay` adds
    ``weight_decay * p`` to the gradient, or, with `decoupled_weight_decay` (AdamW),
    shrinks ``p *= 1 - lr * weight_decay`` before the step.

    State per parameter: ``step`` (0-dim float tensor), ``exp_avg``, ``exp_avg_sq``
    and, with `amsgrad`, ``max_exp_avg_sq``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor).
        betas: decay rates of the two running averages.
        eps: added to the denominator for numerical stability.
        weight_decay: weight decay factor.
        amsgrad: use the AMSGrad variant (Reddi et al., 2018).
        maximize: ascend the objective instead of descending it.
        decoupled_weight_decay: decay the weights directly (AdamW) instead of adding
            an L2 term to the gradient.
        fused: None (the default) or True runs each parameter's step as one native
            (numba) pass when it can (CPU, float32/float64, contiguous arrays); False
            keeps the NumPy rule of one array operation at a time.  Same results up
            to float rounding.  `foreach` is accepted and changes nothing.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check_adam_hypers(lr, betas, eps, weight_decay)
        _fused.check_flags(fused, foreach, differentiable)
        if not (all(isinstance(b, float) for b in betas[:2])
                or all(isinstance(b, Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, b in enumerate(betas[:2]):
            if isinstance(b, Tensor) and b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable,
                    "fused": fused, "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        init_moments(param, state)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_state(param)

    def _update(self, param, grad, state, group) -> None:
        if _fused.usable(group, param, grad, *self._state_arrays(state, group)):
            self._fused_update(param, grad, state, group)
            return
        step, _, tmp = update_moments(self, param, grad, state, group)
        exp_avg, exp_avg_sq = moments(state)
        if group["amsgrad"]:
            exp_avg_sq = np.maximum(state["max_exp_avg_sq"]._data, exp_avg_sq,
                                    out=state["max_exp_avg_sq"]._data)
        bias_correction1 = 1 - step.beta1 ** step.count
        bias_correction2_sqrt = (1 - step.beta2 ** step.count) ** 0.5
        # p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps), with sqrt(bc2) moved out of
        # the denominator so that the array work is one sqrt, one add and one divide.
        np.sqrt(exp_avg_sq, out=tmp)
        tmp += group["eps"] * bias_correction2_sqrt
        np.divide(exp_avg, tmp, out=tmp)
        tmp *= -step.lr / bias_correction1 * bias_correction2_sqrt
        param += tmp

    @staticmethod
    def _state_arrays(state, group):
        if group["amsgrad"]:
            return moments(state) + (state["max_exp_avg_sq"]._data,)
        return moments(state)

    def _fused_update(self, param, grad, state, group) -> None:
        """The same step as one native pass over the parameter (see ``_fused.adam_step``)."""
        step = start_step(param, state, group)
        _fused.adam_step(
            param, grad, *moments(state),
            state["max_exp_avg_sq"]._data if group["amsgrad"] else None,
            lr=step.lr, beta1=step.beta1, beta2=step.beta2, eps=group["eps"],
            weight_decay=group["weight_decay"] if step.coupled_decay else 0.0,
            maximize=group["maximize"], bias_correction1=1 - step.beta1 ** step.count,
            bias_correction2_sqrt=(1 - step.beta2 ** step.count) ** 0.5)
