"""Weight averaging: stochastic weight averaging (SWA) and exponential moving averages.

``AveragedModel`` keeps a copy of a model whose parameters are the running average of
the model's parameters over the times ``update_parameters(model)`` was called (equal
weights by default, or an EMA with ``get_ema_multi_avg_fn``); ``SWALR`` anneals the
learning rate to a constant SWA rate; ``update_bn`` recomputes batch-norm statistics
for the averaged weights with one pass over the data.
"""

from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

import numpy as np

from .._core import dtype as dtypes
from .._core.grad_mode import no_grad
from .._core.tensor import Tensor
from ..nn import Module
from .adam import lerp_
from .lr_scheduler import LRScheduler, _format_param
from ..ops.creation import tensor

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _lerp_arrays(averaged: list, current: list, weight: float) -> None:
    """``a += weight * (c - a)`` for each pair of tensors, in place (any dtype)."""
    for a, c in zip(averaged, current):
        avg, cur = a._data, c._data
        if avg.dtype.kind in "fc":
            lerp_(avg, cur.astype(avg.dtype, copy=False), weight, np.empty_like(avg))
        else:
            avg[...] = (avg * (1 - weight) + cur * weight).astype(avg.dtype)
        a._version.value += 1


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An averaging function for ``AveragedModel(multi_avg_fn=...)``: an EMA with `decay`.

    It updates a list of averaged tensors in place: ``a = decay * a + (1 - decay) * p``.
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    def ema_update(ema_params, current_params, num_averaged) -> None:
        _lerp_arrays(list(ema_params), list(current_params), 1 - decay)

    return ema_update


def get_swa_multi_avg_fn():
    """An averaging function for ``AveragedModel(multi_avg_fn=...)``: the equal-weight mean."""

    def swa_update(averaged_params, current_params, num_averaged) -> None:
        n = float(num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged)
        _lerp_arrays(list(averaged_params), list(current_params), 1 / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """An averaging function for ``AveragedModel(avg_fn=...)``: returns the next EMA value."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An averaging function for ``AveragedModel(avg_fn=...)``: returns the next mean."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` holding the average of its parameters over updates.

    Call ``update_parameters(model)`` after optimizer steps; the first call copies the
    parameters, later ones average them in (equal weights by default; pass
    `multi_avg_fn` or `avg_fn`, e.g. ``get_ema_multi_avg_fn(0.999)``, for an EMA).
    Buffers are copied from the model, or averaged too when `use_buffers` is True.
    Calling the averaged model runs the copy.

    Args:
        model: the model to average.
        device: where to keep the averaged copy (default: where the model is).
        avg_fn: ``avg_fn(averaged, current, num_averaged) -> new averaged`` per tensor.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, num_averaged)``,
            updating the averaged tensors in place.
        use_buffers: average the buffers as well as the parameters.

    >>> swa_model = AveragedModel(model)
    >>> swa_model.update_parameters(model)
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)

        self.register_buffer("n_averaged", tensor(0, dtype=dtypes.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Average the parameters of `model` (same architecture) into this copy."""
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        n = int(self.n_averaged.item())
        with no_grad():
            averaged = [p.detach() for p in mine]
            current = [p.detach().to(a.device) for p, a in zip(theirs, averaged)]
            if n == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.avg_fn is not None:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
            else:
                update = self.multi_avg_fn or get_swa_multi_avg_fn()
                update(averaged, current, self.n_averaged)
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged.add_(1)


def _is_batch_norm(module: Module) -> bool:
    """Batch-norm layers: they keep running statistics that ``reset_running_stats`` clears."""
    return (hasattr(module, "running_mean") and hasattr(module, "reset_running_stats")
            and hasattr(module, "momentum"))


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running statistics of `model`'s batch-norm layers over `loader`.

    The statistics are reset and accumulated as a plain average over one pass of the
    data (momentum None), in training mode; the model's mode is restored afterwards.
    Batches that are lists or tuples contribute their first element.
    """
    momenta = {}
    for module in model.modules():
        if _is_batch_norm(module):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate to a constant `swa_lr` over `anneal_epochs`, then hold it.

    The annealing is a cosine or linear interpolation (`anneal_strategy`) from the rate
    at the scheduler's creation.

    >>> swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=5)
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr),
                             optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please "
                          "use `get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # recover the rate the annealing started from, then move one step further
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else (
            self._linear_anneal)

    def state_dict(self) -> dict:
        """The scheduler's state, without the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state returned by ``state_dict``."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
