"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter, 2019)."""

from __future__ import annotations

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam whose weight decay shrinks the weights directly instead of entering the moments.

    Each step first scales ``p *= 1 - lr * weight_decay``, then takes the Adam step
    (see ``Adam``).  Same arguments as ``Adam`` except the default `weight_decay`
    (0.01) and that the decay is always decoupled.

    >>> opt = ember.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
