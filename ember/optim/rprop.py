"""Rprop: resilient backpropagation, steps from gradient signs only (Riedmiller & Braun)."""

from __future__ import annotations

import numpy as np

from .._core.tensor import _make
from .optimizer import Optimizer, check_lr, scalar, start_state
from ..ops._util import xp_of

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop: per-coordinate step sizes that grow while the gradient keeps its sign.

    Each step compares the sign of ``g`` with that of the previous gradient: the step
    size is multiplied by ``etaplus`` when it is the same, by ``etaminus`` when it
    flipped (and that coordinate is not moved, its gradient taken as 0), and kept
    otherwise; it is clipped to `step_sizes`.  Then ``p -= sign(g) * step_size``.

    State per parameter: ``step``, ``prev`` (the last gradient) and ``step_size``
    (starting at `lr`).

    Args:
        params: parameters or parameter groups to optimize.
        lr: initial step size (a float or a one-element tensor).
        etas: (etaminus, etaplus), the shrinking and growing factors.
        step_sizes: (minimum, maximum) step size.
        maximize: ascend the objective instead of descending it.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _init_state(self, param, state, group) -> None:
        start_state(param, state, "prev")
        data = param._data

        lr = scalar(group["lr"])
        value = complex(lr, lr) if data.dtype.kind == "c" else lr
        state["step_size"] = _make(xp_of(data).full_like(data, value))

    def _update(self, param, grad, state, group) -> None:
        xp = xp_of(param)
        etaminus, etaplus = group["etas"]
        step_min, step_max = group["step_sizes"]
        state["step"]._data += 1
        prev, step_size = state["prev"]._data, state["step_size"]._data
        g = -grad if group["maximize"] else grad
        tmp = self._scratch(param)
        np.multiply(g, prev, out=tmp)
        factor = xp.where(tmp > 0, etaplus, xp.where(tmp < 0, etaminus, 1.0))
        step_size *= factor.astype(step_size.dtype, copy=False)
        np.clip(step_size, step_min, step_max, out=step_size)
        # a coordinate whose gradient changed sign is not moved, and is remembered as 0
        prev[...] = g
        prev[tmp < 0] = 0
        np.sign(prev, out=tmp)
        tmp *= step_size
        param -= tmp
