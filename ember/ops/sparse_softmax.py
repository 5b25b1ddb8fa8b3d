"""Softmax over a dimension of a sparse COO tensor (``torch.sparse.softmax``).

The entries that are not stored count as minus infinity: the softmax runs over the stored
entries of each slice only, and the result has the same sparsity as the (coalesced)
input.  Written with ember ops on the values, so gradients reach values that require grad.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as dtypes
from .._core.backend import module_of
from .._core.grad_mode import no_grad
from .._core.tensor import _make, _wrap_dim
from .activation import log_softmax as _dense_log_softmax
from .activation import softmax as _dense_softmax
from .sparse_coo import SparseTensor, values_of, with_values

__all__ = ["softmax", "log_softmax"]


def _groups(data, dim: int):
    """For each stored entry, the number of its slice along `dim` (entries that agree on
    every other sparse index share a slice), and the number of slices."""
    xp = module_of(data.indices)
    others = [d for d in range(data.sparse_dim) if d != dim]
    if not others:
        return xp.zeros(data.indices.shape[1], dtype=np.int64), 1
    key = xp.ravel_multi_index(tuple(data.indices[others]), tuple(data.shape[d] for d in others))
    unique, inverse = xp.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(unique.shape[0])


def _softmax(input: SparseTensor, dim: int, dtype, log: bool) -> SparseTensor:
    if not isinstance(input, SparseTensor):
        raise TypeError(f"sparse.{'log_' if log else ''}softmax(): expected a sparse COO tensor")
    s = input.coalesce()
    data = s._data
    dim = _wrap_dim(dim, len(data.shape), "softmax")
    values = values_of(s)
    if dtype is not None:
        values = values.to(dtypes.to_dtype(dtype))
    if dim >= data.sparse_dim:  # a dense dim: an ordinary softmax inside each stored value
        dense = _dense_log_softmax if log else _dense_softmax
        out = dense(values, dim - data.sparse_dim + 1)
        return with_values(data.indices, out, data.shape, True)
    slot, n = _groups(data, dim)
    index = _make(slot)
    spread = index.reshape((-1,) + (1,) * (values.dim() - 1)).expand(values.shape)
    with no_grad():  # NOTE: the max of each slice is a constant shift (log-sum-exp trick)
        top = values.new_zeros((n,) + tuple(values.shape[1:]))
        top = top.scatter_reduce(0, spread, values, "amax", include_self=False)
    shifted = values - top.index_select(0, index)
    exp = shifted.exp()
    total = exp.new_zeros(top.shape).index_add(0, index, exp)
    if log:
        out = shifted - total.log().index_select(0, index)
    else:
        out = exp / total.index_select(0, index)
    return with_values(data.indices, out, data.shape, True)


def softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """Softmax along `dim` over the stored entries (missing ones count as -inf, so they
    stay missing); a sparse tensor of the input's sparsity.

    >>> s = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
    >>> ember.sparse.softmax(s, 1).to_dense()
    tensor([[0.0000, 0.0000, 1.0000],
            [0.2689, 0.0000, 0.7311]])
    """
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input: SparseTensor, dim: int, *, dtype=None) -> SparseTensor:
    """The logarithm of ``sparse.softmax`` (computed without forming the softmax)."""
    return _softmax(input, dim, dtype, log=True)
