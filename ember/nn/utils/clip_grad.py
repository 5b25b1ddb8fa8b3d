"""Gradient clipping: rescale or clamp the ``.grad`` of parameters in place."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

from ..._core.grad_mode import no_grad
from ..._core.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters: list) -> list:
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The `norm_type`-norm of all `tensors` together, as if concatenated into one vector.

    ``norm_type`` may be ``inf`` (the largest absolute value).  With
    `error_if_nonfinite`, a nan or inf total raises RuntimeError.  `foreach` is
    accepted for compatibility (ember has a single implementation).
    """
    from ...ops.joining import stack
    from ...ops.linalg_norms import vector_norm
    from ...ops.creation import tensor as make_tensor

    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return make_tensor(0.0)
    device = tensors[0].device
    norms = [vector_norm(t, norm_type).to(device) for t in tensors]
    total = vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


@no_grad()
def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = _grads(_as_list(parameters))
    if not grads:
        return
    # NOTE: the 1e-6 keeps the coefficient finite when all gradients are zero.
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.device))


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Rescale the gradients of `parameters` so that their total norm is at most `max_norm`.

    The norm is taken over all gradients together (as one vector); returns that total
    norm (before clipping).

    >>> total = clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    parameters = _as_list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient element of `parameters` into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    for g in _grads(_as_list(parameters)):
        g.clamp_(min=-clip_value, max=clip_value)
