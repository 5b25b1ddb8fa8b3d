"""Flatten parameters into one vector and back (used by second-order optimizers)."""

from __future__ import annotations

from collections.abc import Iterable

from ..._core.tensor import Tensor
from ...ops.joining import cat
from ..modules.module import _typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param: Tensor, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All `parameters` flattened and concatenated into one 1-D tensor (a copy)."""
    device = None
    pieces = []
    for param in parameters:
        device = _check_same_device(param, device)
        pieces.append(param.reshape(-1))
    return cat(pieces)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D `vec` into `parameters` (the inverse of
    ``parameters_to_vector``); the parameters then share memory with `vec`."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    device = None
    offset = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        param.data = vec[offset:offset + n].view_as(param).data
        offset += n
