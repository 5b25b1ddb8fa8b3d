"""Adam: adaptive moment estimation (Kingma & Ba, 2015), with AMSGrad and decoupled decay."""

from __future__ import annotations

import numpy as np

from .._core.tensor import Tensor
from .optimizer import (
    Optimizer, check_betas, check_hyper, check_lr, scalar, step_tensor, zeros_state,
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
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        check_lr(lr)
        check_hyper("epsilon value", eps)
        check_betas(betas)
        check_hyper("weight_decay value", weight_decay)
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
        state["step"] = step_tensor()
        state["exp_avg"] = zeros_state(param)
        state["exp_avg_sq"] = zeros_state(param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_state(param)

    def _update(self, param, grad, state, group) -> None:
        lr = scalar(group["lr"])
        beta1, beta2 = (scalar(b) for b in group["betas"])
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
        if group["amsgrad"]:
            exp_avg_sq = np.maximum(state["max_exp_avg_sq"]._data, exp_avg_sq,
                                    out=state["max_exp_avg_sq"]._data)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        # p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps), with sqrt(bc2) moved out of
        # the denominator so that the array work is one sqrt, one add and one divide.
        np.sqrt(exp_avg_sq, out=tmp)
        tmp += group["eps"] * bias_correction2_sqrt
        np.divide(exp_avg, tmp, out=tmp)
        tmp *= -lr / bias_correction1 * bias_correction2_sqrt
        param += tmp
