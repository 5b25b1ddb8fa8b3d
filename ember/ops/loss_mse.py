"""The mean squared error loss (the other regression losses are in ``loss.py``)."""

from __future__ import annotations

from .._core.tensor import Tensor
from ._autocast import float32_inputs
from ._util import cpp_name
from .loss import _weighted, check_tensor, resolve_reduction, same_float_dtype, warn_size
from .loss_pointwise import MseLoss

__all__ = ["mse_loss"]


@float32_inputs  # (autocast: losses run in float32)
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error: ``(input - target) ** 2`` reduced by `reduction`.

    `reduction` is ``'mean'`` (default), ``'sum'`` or ``'none'``; `weight`, when
    given (of the input's shape), scales each squared error, and 'mean' is then the
    weighted mean: it divides by ``weight.sum()``, as PyTorch does.  Shapes that differ
    are broadcast, with a warning, as in PyTorch.

    >>> mse_loss(ember.tensor([1., 2.]), ember.tensor([1., 4.]))
    tensor(2.)
    """
    check_tensor("mse_loss", "input", input)
    check_tensor("mse_loss", "target", target)
    reduction = resolve_reduction(size_average, reduce, reduction)
    warn_size(input, target)
    if not (input.dtype.is_floating_point or target.dtype.is_floating_point):
        raise NotImplementedError(f"\"mse_cpu\" not implemented for '{cpp_name(input.dtype)}'")
    if weight is None and same_float_dtype(input, target):
        return MseLoss.apply(input, target, reduction=reduction)  # (one node, as PyTorch's)
    diff = input - target
    return _weighted(diff * diff, weight, reduction, input)
