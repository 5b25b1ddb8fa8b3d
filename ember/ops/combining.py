"""Tensors built from pieces of others: diff, block_diag, combinations, diagflat, the
hsplit/vsplit/dsplit splits, the select/slice/diagonal scatters, narrow_copy, dist and
renorm.
Each is written with differentiable ops (slicing, cat, index_select), so gradients
follow."""

from __future__ import annotations

import itertools

from .._core import dtype as dtypes
from .._core.grad_mode import no_grad
from .._core.tensor import Tensor
from ._util import result_type, wrap_dim
from .creation import zeros
from .creation import tensor as make_tensor
from .joining import cat
from .._core.memory_format import contiguous_format
from .slicing import diag
from .linalg_norms import vector_norm


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


def _split_along(op: str, input: Tensor, sections, dim: int, min_dims: int):
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {input.dim()} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size "
                           f"of the dimension {input.shape[dim]} is not divisible by the "
                           f"split_size {sections}!")
    return input.tensor_split(sections, dim)


def hsplit(input: Tensor, indices_or_sections):
    """Split along dim 1 (dim 0 for a 1-D tensor): equal sections or at the given indices."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input: Tensor, indices_or_sections):
    """Split along dim 0 of a tensor with at least 2 dims."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections):
    """Split along dim 2 of a tensor with at least 3 dims."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A 2-D matrix with the flattened input on diagonal `offset`."""
    return diag(input.reshape(-1), offset)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast), over all elements."""
    return vector_norm(input - other, p)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along `dim` scaled down to p-norm `maxnorm` where its norm exceeds it."""
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = wrap_dim(dim, input.dim())
    others = tuple(d for d in range(input.dim()) if d != dim)
    # Only the slices whose norm exceeds maxnorm are scaled (a nan norm does not): their
    # norms are taken of the input with every other slice zeroed, so that an unscaled
    # slice's nan or inf cannot reach the gradient through its norm.
    with no_grad():
        keep = ~(vector_norm(input, p, others, keepdim=True) > maxnorm)
    norms = vector_norm(input.masked_fill(keep, 0.0), p, others, keepdim=True)
    factor = (maxnorm / (norms + 1e-7)).masked_fill(keep, 1.0)
    return input * factor


def renorm_(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """In-place ``renorm``."""
    return input.copy_(renorm(input.clone(), p, dim, maxnorm))  # (clone: kept for backward)


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A contiguous copy of ``input.narrow(dim, start, length)``."""
    return input.narrow(dim, start, length).clone(memory_format=contiguous_format)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of `input` with ``select(dim, index)`` replaced by `src`."""
    out = input.clone()
    out.select(dim, index).copy_(src)
    return out


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None,
                  step: int = 1) -> Tensor:
    """A copy of `input` with the slice ``start:end:step`` along `dim` replaced by `src`."""
    out = input.clone()
    index = [slice(None)] * input.dim()
    index[wrap_dim(dim, input.dim())] = slice(start, end, step)
    out[tuple(index)] = src
    return out


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of `input` with its diagonal (`offset`, `dim1`, `dim2`) replaced by `src`."""
    out = input.clone()
    out.diagonal(offset, dim1, dim2).copy_(src)
    return out
