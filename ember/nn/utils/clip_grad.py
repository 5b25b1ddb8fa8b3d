"""Gradient clipping: rescale or clamp the ``.grad`` of parameters in place."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import numpy as np

from ..._core.grad_mode import no_grad
from ..._core.tensor import Tensor, _make
from ...ops.creation import tensor as make_tensor
from ...ops.joining import stack
from ...ops import _parallel
from ...ops.linalg_norms import vector_norm

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
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return make_tensor(0.0)
    total = _total_two_norm(tensors) if norm_type == 2.0 else None
    if total is None:
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


def _total_two_norm(tensors: list) -> Tensor | None:
    """The 2-norm of dense float32/float64 NumPy tensors of one dtype, from one dot product
    per tensor (a single pass over its memory, no temporaries; the per-tensor norm and
    the stack cost three passes and two full-size temporaries).  None for anything else,
    or when a sum of squares is not finite (the general path then gives the same inf/nan)."""
    dtype = tensors[0]._data.dtype
    if dtype not in (np.float32, np.float64):
        return None
    total = 0.0
    for t in tensors:
        data = t._data
        if type(data) is not np.ndarray or data.dtype != dtype or t.is_sparse:
            return None
        flat = data.reshape(-1)  # a copy only for a non-contiguous gradient
        total += _sum_of_squares(flat)
    if not math.isfinite(total):
        return None
    return _make(np.asarray(math.sqrt(total), dtype=dtype))


# From this many elements a gradient's sum of squares and its scaling are split over
# ember's threads, a half each (NumPy's dot and multiply let go of the GIL).  NOTE: the
# LSTM LM of benchmarks/run.py (6.2M parameters, two of 2.56M), 2-core Intel Xeon,
# 2026-12-05: the norm took 1.65 ms and the scaling 1.5 ms a step on one thread.
SPLIT_MIN = 1 << 20


def _halves(flat: np.ndarray) -> list | None:
    """Two halves of a large 1-D array for ember's threads, or None (small, one thread)."""
    if flat.size < SPLIT_MIN or _parallel.threads() < 2:
        return None
    return _parallel.split(flat.size, 2)


def _sum_of_squares(flat: np.ndarray) -> float:
    """``flat . flat``, by halves on two threads when `flat` is large."""
    halves = _halves(flat)
    if halves is None:
        return float(np.dot(flat, flat))
    return sum(_parallel.run_parts(lambda s: float(np.dot(flat[s], flat[s])), halves))


def _scale_in_place(data: np.ndarray, factor: float) -> None:
    """``data *= factor`` (cast back to data's dtype), by halves on two threads when
    `data` is large and contiguous."""
    halves = _halves(data) if data.flags.c_contiguous else None
    if halves is None:
        np.multiply(data, factor, out=data, casting="unsafe")
        return
    flat = data.reshape(-1)
    _parallel.run_parts(lambda s: np.multiply(flat[s], factor, out=flat[s], casting="unsafe"),
                        halves)


@no_grad()
def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = _grads(_as_list(parameters))
    if not grads:
        return
    # NOTE: the 1e-6 keeps the coefficient finite when all gradients are zero.
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    factor = None
    if type(coef._data) is np.ndarray:
        factor = coef._data.item()
    for g in grads:
        data = g._data
        if (factor is not None and type(data) is np.ndarray and data.flags.writeable
                and data.dtype.kind == "f" and not g.is_sparse):
            # in place on the array (as mul_ does, without its new array and copy back)
            _scale_in_place(data, factor)
            g._version.value += 1
        else:
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
