"""Embedding lookups: embedding (rows of a table picked by integer indices) and
embedding_bag (sums, means or maxima of bags of rows, without materializing each row).

The gradient of a lookup adds each incoming row into the row of the table it came
from.  It is dense (a table-sized array) by default, or, with ``sparse=True``, a
sparse COO tensor holding only the rows that were looked up (``ops/sparse_coo.py``).
"""

from __future__ import annotations

import numpy as np

from .._core.backend import scatter_add
from .._core.function import Function
from .._core.grad_mode import no_grad
from .._core.tensor import Tensor, _make
from . import _native_embedding
from ._util import xp_of
from .sparse_coo import wrap_coo

__all__ = ["embedding", "embedding_bag"]


def _row_factors(xp, flat, num_weights: int, padding_idx: int, scale_grad_by_freq: bool,
                 dtype):
    """Per looked-up index, the weight of its gradient row (0 at padding_idx, 1/count when
    scaling by frequency); None when every factor is 1."""
    if padding_idx < 0 and not scale_grad_by_freq:
        return None
    factors = xp.ones(flat.shape, dtype=dtype)
    if scale_grad_by_freq:
        counts = xp.bincount(flat, minlength=num_weights)
        factors /= counts[flat]
    if padding_idx >= 0:
        factors[flat == padding_idx] = 0
    return factors


def _add_rows(xp, out, index, rows) -> None:
    """``out[index[k]] += rows[k]`` for every k, repeated indices summed."""
    if xp is not np:
        scatter_add(xp, out, index, rows)
        return
    if _native_embedding.supports(out, index, rows):
        _native_embedding.add_rows(out, index, rows)
        return
    # NOTE: sorting and summing runs of equal indices (reduceat) is several times faster
    # than np.add.at, which handles repeated indices one element at a time.  But reduceat
    # pays ~1 us per run: when most indices are distinct (a large vocabulary), the first
    # row of each run goes in with one fancy-indexed add and np.add.at takes the few
    # repeats (LSTM LM, 700 lookups in 10,000 rows: 1.0 ms -> 0.3 ms).
    order = np.argsort(index, kind="stable")
    ordered = index[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    starts = np.flatnonzero(first)
    ordered_rows = rows[order]
    if 2 * starts.size < index.size:
        out[ordered[starts]] += np.add.reduceat(ordered_rows, starts, axis=0)
        return
    out[ordered[starts]] += ordered_rows[starts]
    if starts.size < index.size:
        repeats = ~first
        np.add.at(out, ordered[repeats], ordered_rows[repeats])


class Embedding(Function):
    """``weight[indices]``; the gradient flows back to the rows that were picked."""

    _name = "EmbeddingBackward0"
    _fresh_grads = True  # a new table-sized array

    @staticmethod
    def forward(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
        xp = xp_of(weight)
        # a copy: later writes to the index tensor cannot reach backward
        indices = indices.astype(np.int64)
        ctx.indices = indices
        ctx.num_weights = weight.shape[0]
        ctx.options = (padding_idx, scale_grad_by_freq, sparse)
        return xp.take(weight, indices, axis=0)

    @staticmethod
    def backward(ctx, grad):
        padding_idx, scale_grad_by_freq, sparse = ctx.options
        if sparse:
            return _sparse_grad(ctx, grad), None
        gw = EmbeddingDenseBackward.apply(grad, indices=ctx.indices, num_weights=ctx.num_weights,
                                          padding_idx=padding_idx,
                                          scale_grad_by_freq=scale_grad_by_freq)
        return gw, None


class EmbeddingDenseBackward(Function):
    """The table-sized gradient of a lookup: each grad row added into its table row."""

    @staticmethod
    def forward(ctx, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
        xp = xp_of(grad)
        dim = grad.shape[-1]
        flat = indices.reshape(-1)
        rows = grad.reshape(-1, dim)
        factors = _row_factors(xp, flat, num_weights, padding_idx, scale_grad_by_freq,
                               grad.dtype)
        ctx.indices, ctx.factors = indices, factors
        out = xp.zeros((num_weights, dim), dtype=grad.dtype)
        if flat.size:
            _add_rows(xp, out, flat, rows if factors is None else rows * factors[:, None])
        return out

    @staticmethod
    def backward(ctx, gg):
        # The map grad -> table gradient is linear; its adjoint is a lookup of gg.
        out = Embedding.apply(gg, ctx.indices)
        if ctx.factors is not None:
            out = out * _make(ctx.factors.reshape(ctx.indices.shape + (1,)))
        return out


def _sparse_grad(ctx, grad: Tensor):
    if grad.requires_grad:
        raise NotImplementedError("embedding: double backward through a sparse gradient is "
                                  "not supported (use sparse=False)")
    padding_idx, scale_grad_by_freq, _ = ctx.options
    data = grad._data
    xp = xp_of(data)
    flat = ctx.indices.reshape(-1)
    rows = data.reshape(-1, data.shape[-1])
    factors = _row_factors(xp, flat, ctx.num_weights, padding_idx, scale_grad_by_freq,
                           data.dtype)
    if factors is not None:
        rows = rows * factors[:, None]
    if padding_idx >= 0:
        keep = flat != padding_idx
        flat, rows = flat[keep], rows[keep]
    else:
        rows = rows.copy()  # the gradient must not alias grad_output
    return wrap_coo(flat.reshape(1, -1).astype(np.int64), rows,
                    (ctx.num_weights, data.shape[-1]), flat.size <= 1)


# ----------------------------------------------------------------------
# argument checks shared by embedding and embedding_bag


def _check_indices(op: str, input, weight: Tensor):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'indices' must be Tensor, not {type(input).__name__}")
    if input.dtype.name not in ("int64", "int32"):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.type()} instead (while checking arguments for "
            f"{op})")
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if weight.device != input.device:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, {weight.device} and {input.device}! (when checking "
                           f"arguments for {op})")
    data = input._data
    if data.size and (int(data.min()) < 0 or int(data.max()) >= weight.shape[0]):
        raise IndexError("index out of range in self")
    return data


def _padding_index(padding_idx, num_weights: int) -> int:
    """PyTorch's normalization of padding_idx: negative counts from the end, None is -1."""
    if padding_idx is None:
        return -1
    if not -num_weights <= padding_idx < num_weights:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_weights if padding_idx < 0 else padding_idx


def renorm_rows_(weight: Tensor, indices, max_norm: float, norm_type: float) -> None:
    """Scale, in place and outside autograd, the looked-up rows whose norm exceeds max_norm."""
    data = weight._data
    xp = xp_of(data)
    rows = xp.unique(indices.reshape(-1))
    if rows.size == 0:
        return
    picked = data[rows]
    absolute = xp.abs(picked.astype(np.float64))
    if norm_type == float("inf"):
        norms = absolute.max(axis=1)
    elif norm_type == 0:
        norms = (absolute != 0).sum(axis=1).astype(np.float64)
    else:
        norms = (absolute ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    over = norms > max_norm
    if bool(over.any()):
        scale = (max_norm / (norms[over] + 1e-7)).astype(data.dtype)
        data[rows[over]] = picked[over] * scale[:, None]
        weight._version.value += 1


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of `weight` picked by the integer tensor `input`: shape ``input.shape + (D,)``.

    Args:
        input: int64/int32 indices into the rows of `weight` (num_embeddings, D).
        padding_idx: a row that gets no gradient (negative counts from the end).
        max_norm: rows looked up whose `norm_type`-norm exceeds it are first rescaled to
            it, in place in `weight` (outside autograd).
        scale_grad_by_freq: divide each row's gradient by how often it occurs in `input`.
        sparse: the gradient of `weight` is a sparse COO tensor (only the rows used).

    >>> embedding(ember.tensor([[0, 2]]), ember.eye(3))
    tensor([[[1., 0., 0.],
             [0., 0., 1.]]])
    """
    indices = _check_indices("embedding", input, weight)
    pad = _padding_index(padding_idx, weight.shape[0])
    if max_norm is not None:
        with no_grad():
            renorm_rows_(weight, indices, max_norm, norm_type)
    return Embedding.apply(weight, input, padding_idx=pad,
                           scale_grad_by_freq=bool(scale_grad_by_freq), sparse=bool(sparse))


# ----------------------------------------------------------------------
# embedding_bag


def _bags(input: Tensor, offsets, include_last_offset: bool):
    """(flat indices, the bag of each (an array), the number of bags, and the positions
    in `input` of the flat indices, or None when they are all of it in order)."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
        bags, per_bag = input.shape
        bag_of = np.repeat(np.arange(bags), per_bag)
        return input.reshape(-1), bag_of, bags, None
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if not isinstance(offsets, Tensor) or offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    starts = offsets.cpu_array().astype(np.int64)
    n = input.shape[0]
    if starts.size and starts[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(starts[0])}")
    if starts.size and starts[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {int(starts[-1])}")
    if include_last_offset:  # offsets[-1] is where the last bag ends
        ends, starts = starts[1:], starts[:-1]
    else:
        ends = np.append(starts[1:], n)
    bags = starts.size
    lengths = np.maximum(ends - starts, 0)
    bag_of = np.repeat(np.arange(bags), lengths)
    positions = np.concatenate([np.arange(s, s + k) for s, k in zip(starts, lengths)]) if (
        bags) else np.zeros(0, dtype=np.int64)
    if positions.size == n and (positions == np.arange(n)).all():
        return input, bag_of, bags, None
    return _make(input._data[positions]), bag_of, bags, positions


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows: shape (num_bags, D).

    A 2-D `input` (B, N) is B bags of N indices each.  A 1-D `input` is cut into bags by
    `offsets` (the start of each bag; with `include_last_offset`, one more entry giving
    the end of the last bag).  Indices equal to `padding_idx` are left out of their bag;
    an empty bag gives zeros.  `per_sample_weights` (the shape of `input`, mode 'sum'
    only) scales each row before it is summed.

    >>> embedding_bag(ember.tensor([0, 1, 2]), ember.eye(3), ember.tensor([0, 2]), mode="sum")
    tensor([[1., 1., 0.],
            [0., 0., 1.]])
    """
    _check_indices("embedding_bag", input, weight)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub.")
        if per_sample_weights.shape != input.shape:
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape})"
                             " is not None, then it must have the same shape as the input "
                             f"({input.shape})")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    num = weight.shape[0]
    if padding_idx is not None and not -num <= padding_idx < num:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, {-num} "
                           f"through {num - 1}, but got {padding_idx}")
    pad = _padding_index(padding_idx, num)
    flat, bag_of, bags, positions = _bags(input, offsets, include_last_offset)
    indices = flat.cpu_array().astype(np.int64, copy=False)  # bag bookkeeping on the host
    if max_norm is not None:
        with no_grad():
            renorm_rows_(weight, xp_of(weight._data).asarray(indices), max_norm, norm_type)
    keep = None if pad < 0 else indices != pad
    if keep is not None:
        indices, bag_of = indices[keep], bag_of[keep]
    xp = xp_of(weight._data)
    dim = weight.shape[1]
    out = _make(xp.zeros((bags, dim), dtype=weight._data.dtype))
    rows = Embedding.apply(weight, xp.asarray(indices), padding_idx=-1,
                           scale_grad_by_freq=bool(scale_grad_by_freq), sparse=bool(sparse))
    bag_index = _make(xp.asarray(bag_of))
    if mode == "max" and indices.size:
        return out.index_add(0, *_bag_maxima(rows, bag_of, xp))
    if per_sample_weights is not None:
        psw = per_sample_weights.reshape(-1)
        if positions is not None:
            psw = psw[_make(xp.asarray(positions))]
        if keep is not None:
            psw = psw[_make(xp.asarray(np.nonzero(keep)[0]))]
        rows = rows * psw.unsqueeze(1).to(rows.dtype)
    elif mode == "mean":
        counts = np.bincount(bag_of, minlength=bags)
        rows = rows * _make(xp.asarray((1.0 / counts[bag_of])[:, None], dtype=rows._data.dtype))
    return out.index_add(0, bag_index, rows)


def _bag_maxima(rows: Tensor, bag_of, xp):
    """(non-empty bag ids, their per-feature maxima) for mode='max'; the gradient reaches
    the first row holding each maximum."""
    values = rows._data
    starts = np.flatnonzero(np.r_[True, bag_of[1:] != bag_of[:-1]])
    starts_x = xp.asarray(starts)
    top = np.maximum.reduceat(values, starts_x, axis=0) if xp is np else (
        xp.stack([values[s:e].max(axis=0) for s, e in zip(starts, np.r_[starts[1:], len(bag_of)])]))
    segment = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, len(bag_of)]))
    row_ids = xp.arange(values.shape[0])[:, None]
    candidate = xp.where(values == top[xp.asarray(segment)], row_ids, values.shape[0])
    if xp is np:
        first = np.minimum.reduceat(candidate, starts, axis=0)
    else:
        first = xp.stack([candidate[s:e].min(axis=0)
                          for s, e in zip(starts, np.r_[starts[1:], len(bag_of)])])
    picked = rows.gather(0, _make(first.astype(np.int64)))
    return _make(xp.asarray(bag_of[starts])), picked
