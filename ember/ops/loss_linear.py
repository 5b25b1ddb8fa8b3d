"""linear_cross_entropy: cross entropy of a linear projection, ``cross_entropy(x W^T + b, y)``.

A composite of ``tensordot`` and ``cross_entropy`` (their gradients serve).  The weight may
carry extra dimensions, ``(C, d1, ..., dK, in_features)``, for a K-dimensional loss: the
logits are then ``(N, C, d1, ..., dK)``.
"""

from __future__ import annotations

from .._core.tensor import Tensor
from .linalg import tensordot
from .loss import cross_entropy

__all__ = ["linear_cross_entropy"]


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """Cross entropy between ``input @ linear_weight^T (+ linear_bias)`` and ``target``.

    ``input`` is ``(N, in_features)`` or ``(in_features,)``; ``target`` holds class
    indices or class probabilities shaped like the logits.  ``options`` (PyTorch's
    chunking settings) is accepted and has no effect: the logits are formed in full.
    """
    if input.dim() not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes = tuple(linear_weight.shape[:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != classes:
        raise RuntimeError(f"expected linear_bias shape {classes}, got "
                           f"{tuple(linear_bias.shape)}")
    if len(classes) > 1 and input.dim() == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {input.shape[-1]}), got unbatched input with shape "
            f"{tuple(input.shape)}")
    logits = tensordot(input, linear_weight, dims=([input.dim() - 1],
                                                   [linear_weight.dim() - 1]))
    if linear_bias is not None:
        logits = logits + linear_bias
    probabilities = tuple(target.shape) == tuple(logits.shape)
    if probabilities and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)
