"""Tensors built from pieces of others: diff, block_diag, combinations.
Each is written with differentiable ops (slicing, cat, index_select), so gradients
follow."""

from __future__ import annotations

import itertools

from .._core import dtype as dtypes
from .._core.tensor import Tensor
from ._util import result_type, wrap_dim
from .creation import zeros
from .creation import tensor as make_tensor
from .joining import cat


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along `dim` (``x[1:] - x[:-1]``, n times), after
    `prepend` and `append` are attached at the ends; bool tensors give ``x[1:] != x[:-1]``.
    """
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, input.dim())
    if n == 0 and prepend is None and append is None:
        return input.clone()  # a new tensor, as in PyTorch
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat([_along(p, input, dim) for p in parts], dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = later != earlier if x.dtype is dtypes.bool else later - earlier
    return x


def _along(part, input: Tensor, dim: int) -> Tensor:
    """A prepend/append value as a tensor of `input`'s rank (a number fills one slice)."""
    if isinstance(part, Tensor):
        return part
    shape = list(input.shape)
    shape[dim] = 1
    return make_tensor(part, dtype=input.dtype).expand(shape)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-D) placed along the diagonal of one matrix, zeros elsewhere.
    """
    blocks = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): argument 'tensors' must be a sequence of Tensors, "
                            f"found {type(t).__name__} at position {i}")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.dim()} dimensions")
        blocks.append(t.reshape(1, 1) if t.dim() == 0 else t.unsqueeze(0) if t.dim() == 1 else t)
    d = result_type(*blocks) if blocks else dtypes.get_default_dtype()
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        pieces = [zeros(r, left, dtype=d, device=b.device), b.to(d),
                  zeros(r, width - left - c, dtype=d, device=b.device)]
        rows.append(cat(pieces, 1))
        left += c
    return cat(rows, 0) if rows else zeros(0, 0, dtype=d)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-`r` combinations of the elements of a 1-D tensor, one row each, in the
    order of ``itertools.combinations`` (or ``combinations_with_replacement``)."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    index = [i for combo in pick(range(input.shape[0]), r) for i in combo]
    chosen = input.index_select(0, make_tensor(index, dtype=dtypes.int64, device=input.device))
    return chosen.reshape(-1, r)
