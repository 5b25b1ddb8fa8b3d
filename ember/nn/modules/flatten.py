"""Flatten and Unflatten: merge a range of dimensions into one, or split one into several."""

from __future__ import annotations

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Merge dimensions `start_dim`..`end_dim` into one (by default all but the batch).

    >>> Flatten()(ember.zeros(32, 1, 5, 5)).shape
    ember.Size([32, 25])
    """

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension `dim` into `unflattened_size` (whose product must equal its size).

    >>> Unflatten(1, (2, 5))(ember.zeros(3, 10)).shape
    ember.Size([3, 2, 5])
    """

    __constants__ = ["dim", "unflattened_size"]

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError(
                "Unflatten: named dimensions (a str dim) need named tensors, which ember "
                "does not support"
            )
        if not isinstance(dim, int):
            raise TypeError(f"invalid argument type for dim parameter: {type(dim).__name__}")
        _require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _require_tuple_int(sizes) -> None:
    if not isinstance(sizes, (tuple, list)):
        raise TypeError("unflattened_size must be a tuple of ints, but found type "
                        f"{type(sizes).__name__}")
    for idx, elem in enumerate(sizes):
        if not isinstance(elem, int):
            raise TypeError("unflattened_size must be tuple of ints, but found element of "
                            f"type {type(elem).__name__} at pos {idx}")
