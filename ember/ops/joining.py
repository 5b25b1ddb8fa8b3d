"""Shape ops that copy: cat/stack and their variants, repeat/tile/repeat_interleave,
flip/roll/rot90, tril/triu and fill_diagonal_.

The views are in ``shape.py`` (reshape, transpose, ...) and ``slicing.py`` (split,
unbind, diagonal, ...; also diag and diagonal_copy, beside diagonal).
"""

from __future__ import annotations

import math

import numpy as np

from .._core.function import Function
from .._core.tensor import Tensor, _make
from . import _parallel
from ._inplace import inplace_form
from ._util import check_same_device, result_type, cast, wrap_dim, xp_of
from .shape import _INTS, _int_tuple, atleast_1d, atleast_2d, atleast_3d


def _tensor_list(tensors, op: str) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected a sequence of Tensors, got "
                            f"{type(t).__name__}")
    if not tensors:
        raise ValueError(f"torch.{op}(): expected a non-empty list of Tensors")
    check_same_device(op, *tensors)
    return list(tensors)


def _promoted(tensors: list) -> list:
    """All tensors cast (differentiably) to their common dtype, as PyTorch's cat does."""
    target = result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype
    return [cast(t, target) for t in tensors]


# ----------------------------------------------------------------------
# cat / stack


class Cat(Function):
    _grads_are_slices = True  # (each input's gradient a slice of the incoming one)

    @staticmethod
    def forward(ctx, *xs, dim):
        ctx.dim = dim
        ctx.sizes = [None if _skipped(x) else x.shape[dim] for x in xs]
        kept = [x for x in xs if not _skipped(x)]
        if not kept:
            return xs[0].copy()
        xp = xp_of(xs[0])
        if xp is np and dim > 0 and _parallel.threads() > 1:
            return _concatenate_on_threads(kept, dim)
        return xp.ascontiguousarray(xp.concatenate(kept, axis=dim))

    @staticmethod
    def backward(ctx, grad):
        out, start = [], 0
        for s in ctx.sizes:
            if s is None:
                out.append(None)
                continue
            out.append(grad.narrow(ctx.dim, start, s))
            start += s
        return tuple(out)


# From this many elements, a concatenation along a dim past the first is split over
# ember's threads by its leading rows.  NOTE: the GPT's q, k, v gradients, three (32, 64,
# 128) float32 arrays joined along the last dim: 316 us on one thread, 229 us split (a
# 3 MB copy is bound by one core's bandwidth here; 2-core Intel Xeon, 2026-12-05).
CONCATENATE_SPLIT_MIN = 1 << 19


def _concatenate_on_threads(arrays: list, dim: int) -> np.ndarray:
    """``np.concatenate(arrays, axis=dim)`` (dim > 0, one dtype), large ones split over
    the threads by the leading dim."""
    shape = list(arrays[0].shape)
    shape[dim] = sum(x.shape[dim] for x in arrays)
    dtype = np.result_type(*arrays)
    if math.prod(shape) < CONCATENATE_SPLIT_MIN or shape[0] < 2 \
            or any(x.dtype != dtype for x in arrays):
        return np.ascontiguousarray(np.concatenate(arrays, axis=dim))
    out = np.empty(shape, dtype)
    _parallel.run_parts(lambda rows: np.concatenate([x[rows] for x in arrays], axis=dim,
                                                    out=out[rows]),
                        _parallel.split(shape[0], _parallel.threads()))
    return out


def _skipped(x) -> bool:
    # NOTE: PyTorch's legacy rule: 1-d empty tensors are ignored by cat, whatever the shape
    # of the others (they were the "empty tensor" of old).
    return x.ndim == 1 and x.shape[0] == 0


def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dim (the others must match); dtypes are promoted.

    >>> ember.cat([ember.zeros(2, 3), ember.ones(1, 3)]).shape
    ember.Size([3, 3])
    """
    tensors = _tensor_list(tensors, "cat")
    kept = [(i, t) for i, t in enumerate(tensors) if not _skipped(t._data)]
    if not kept:
        return Cat.apply(*_promoted(tensors), dim=0)
    first_i, first = kept[0]
    ndim = first.ndim
    for i, t in kept:
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    d = wrap_dim(dim, ndim, "cat")
    for i, t in kept[1:]:
        if t.ndim != ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ndim} and "
                               f"{t.ndim}")
        for k in range(ndim):
            if k != d and t.shape[k] != first.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{first.shape[k]} but got size {t.shape[k]} for tensor number {i} in the "
                    "list.")
    return Cat.apply(*_promoted(tensors), dim=d)


concat = concatenate = cat


class Stack(Function):
    _grads_are_slices = True  # (each input's gradient a slice of the incoming one)

    @staticmethod
    def forward(ctx, *xs, dim):
        ctx.dim = dim
        xp = xp_of(xs[0])
        return xp.ascontiguousarray(xp.stack(xs, axis=dim))

    @staticmethod
    def backward(ctx, grad):
        return grad.unbind(ctx.dim)


def stack(tensors, dim: int = 0) -> Tensor:
    """Join equally shaped tensors along a new dim `dim`."""
    tensors = _tensor_list(tensors, "stack")
    shape = tuple(tensors[0].shape)
    for i, t in enumerate(tensors[1:], 1):
        if tuple(t.shape) != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t.shape)} at entry {i}")
    d = wrap_dim(dim, len(shape) + 1, "stack")
    return Stack.apply(*_promoted(tensors), dim=d)


def hstack(tensors) -> Tensor:
    """Join along dim 1 (dim 0 for 1-d tensors)."""
    tensors = atleast_1d(_tensor_list(tensors, "hstack"))
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Join along dim 0, 1-d tensors counting as rows."""
    return cat(atleast_2d(_tensor_list(tensors, "vstack")), 0)


row_stack = vstack


def dstack(tensors) -> Tensor:
    """Join along dim 2, after making every tensor at least 3-d."""
    return cat(atleast_3d(_tensor_list(tensors, "dstack")), 2)


def column_stack(tensors) -> Tensor:
    """Join along dim 1, 0-d and 1-d tensors counting as columns."""
    tensors = _tensor_list(tensors, "column_stack")
    cols = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors]
    return cat(cols, 1)


# ----------------------------------------------------------------------
# repeat / tile / repeat_interleave


class Repeat(Function):
    @staticmethod
    def forward(ctx, x, repeats):
        shape = (1,) * (len(repeats) - x.ndim) + x.shape
        ctx.shape, ctx.repeats, ctx.in_shape = shape, repeats, x.shape
        return xp_of(x).tile(x.reshape(shape), repeats)

    @staticmethod
    def backward(ctx, grad):
        # Split every dim into (repeat, size) and sum over the repeats.
        split = []
        for r, s in zip(ctx.repeats, ctx.shape):
            split += [r, s]
        summed = grad.reshape(split).sum(tuple(range(0, len(split), 2)))
        return summed.reshape(ctx.in_shape)


def repeat(input: Tensor, *sizes) -> Tensor:
    """Tile `input` `sizes[i]` times along each dim (leading sizes add new dims)."""
    sizes = _int_tuple(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    return Repeat.apply(input, sizes)


def tile(input: Tensor, dims) -> Tensor:
    """``repeat`` with missing leading repeats taken as 1."""
    dims = _int_tuple((dims,) if isinstance(dims, _INTS) else (dims,))
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element (or each slice along `dim`) `repeats` times in place:
    ``[1, 2] -> [1, 1, 2, 2]``.  `repeats` is an int or a tensor of one count per element.

    With only a tensor of counts, returns the indices ``0, 1, ...`` each repeated.
    """
    if repeats is None:  # repeat_interleave(counts)
        return _repeated_indices(input, None)
    if dim is None:
        input = input.reshape(-1)
        d = 0
    else:
        d = wrap_dim(dim, input.ndim, "repeat_interleave")
    n = input.shape[d] if input.ndim else 1
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim <= 1:
        repeats = int(repeats.item())
    if isinstance(repeats, _INTS):
        r = int(repeats)
        if r < 0:
            raise RuntimeError("repeats can not be negative")
        if input.ndim == 0:
            input = input.reshape(1)
        shape = list(input.shape)
        expanded = input.unsqueeze(d + 1).expand(shape[:d + 1] + [r] + shape[d + 1:])
        shape[d] *= r
        return expanded.clone().view(shape)  # (a fresh tensor, never a view of the input)
    if not isinstance(repeats, Tensor):
        repeats = _make(np.asarray(list(repeats), dtype=np.int64))
    if repeats.ndim != 1 or repeats.shape[0] != n:
        raise RuntimeError(
            "repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{repeats.numel()} and input.size({d}) = {n}")
    # (imported here: index_dim imports indexing, which imports slicing, which imports cat
    # and stack from this module)
    from .index_dim import index_select

    return index_select(input, d, _repeated_indices(repeats, input))


def _repeated_indices(counts: Tensor, like: Tensor | None) -> Tensor:
    """``0, 1, 2, ...`` with index i repeated ``counts[i]`` times (an int64 tensor)."""
    if counts.ndim > 1 or counts.dtype.name not in ("int64", "int32", "int16", "int8",
                                                    "uint8"):
        raise RuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim integer tensor")
    data = counts._data.reshape(-1)
    if like is not None and type(data) is not type(like._data):
        check_same_device("repeat_interleave", like, counts)
    xp = xp_of(data)
    if bool((data < 0).any()):
        raise RuntimeError("repeats can not be negative")
    if xp is np:
        return _make(np.repeat(np.arange(data.size, dtype=np.int64), data))
    counts = data.get()  # CuPy's repeat takes the counts as host values
    return _make(xp.asarray(np.repeat(np.arange(data.size, dtype=np.int64), counts)))


# ----------------------------------------------------------------------
# flip / roll / rot90


class Flip(Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        key = tuple(slice(None, None, -1) if i in dims else slice(None) for i in range(x.ndim))
        return x[key].copy()

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(ctx.dims)


def _dims_arg(dims, ndim: int, op: str) -> tuple:
    dims = (dims,) if isinstance(dims, _INTS) else tuple(dims)
    out = tuple(wrap_dim(int(d), ndim, op) for d in dims)
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def flip(input: Tensor, *dims, **kwargs) -> Tensor:
    """A copy with the order of elements reversed along each of `dims`.

    `dims` is a sequence (``flip(x, (0, 2))``, ``flip(x, dims=[1])``) or, as a method,
    varargs (``x.flip(0, 2)``).
    """
    if "dims" in kwargs:
        dims = kwargs.pop("dims")
    elif len(dims) == 1 and not isinstance(dims[0], int):
        dims = dims[0]
    if kwargs:
        raise TypeError(f"flip() got unexpected keyword arguments {sorted(kwargs)}")
    return Flip.apply(input, _dims_arg(dims, input.ndim, "flip"))


def fliplr(input: Tensor) -> Tensor:
    """Reverse the order of columns (dim 1)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """Reverse the order of rows (dim 0)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class Roll(Function):
    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        xp = xp_of(x)
        if dims is None:  # the flattened tensor, shape kept
            return xp.roll(x, shifts[0])
        return xp.ascontiguousarray(xp.roll(x, shifts, axis=dims))

    @staticmethod
    def backward(ctx, grad):
        if ctx.dims is None:
            return grad.roll(-ctx.shifts[0])
        return grad.roll(tuple(-s for s in ctx.shifts), ctx.dims)


def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements cyclically by `shifts` along `dims` (the flattened tensor without)."""
    shifts = (shifts,) if isinstance(shifts, _INTS) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               "dims:0")
        return Roll.apply(input, (int(shifts[0]),), None)
    dims = (dims,) if isinstance(dims, _INTS) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    dims = tuple(wrap_dim(int(d), input.ndim, "roll") for d in dims)
    return Roll.apply(input, tuple(int(s) for s in shifts), dims)


class Rot90(Function):
    @staticmethod
    def forward(ctx, x, k, dims):
        ctx.k, ctx.dims = k, dims
        return xp_of(x).rot90(x, k, axes=dims).copy()

    @staticmethod
    def backward(ctx, grad):
        return grad.rot90(-ctx.k, ctx.dims)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees `k` times in the plane of `dims` (from the first towards the
    second)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0 = wrap_dim(int(dims[0]), input.ndim, "rot90")
    d1 = wrap_dim(int(dims[1]), input.ndim, "rot90")
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    return Rot90.apply(input, int(k) % 4, (d0, d1))


# ----------------------------------------------------------------------
# triangles and diagonals


class Tril(Function):
    _lower = True

    @staticmethod
    def forward(ctx, x, diagonal):
        ctx.diagonal = diagonal
        xp = xp_of(x)
        return (xp.tril if ctx._lower else xp.triu)(x, diagonal)

    @staticmethod
    def backward(ctx, grad):
        return grad.tril(ctx.diagonal) if ctx._lower else grad.triu(ctx.diagonal)


class Triu(Tril):
    _lower = False


TrilInplace = inplace_form(Tril)


TriuInplace = inplace_form(Triu)


def _check_matrix(op: str, input: Tensor) -> None:
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (on and below `diagonal`), zeros above."""
    _check_matrix("tril", input)
    return Tril.apply(input, int(diagonal))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (on and above `diagonal`), zeros below."""
    _check_matrix("triu", input)
    return Triu.apply(input, int(diagonal))


def tril_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place ``tril``."""
    _check_matrix("tril", input)
    return TrilInplace.apply(input, int(diagonal))


def triu_(input: Tensor, diagonal: int = 0) -> Tensor:
    """In-place ``triu``."""
    _check_matrix("triu", input)
    return TriuInplace.apply(input, int(diagonal))


def fill_diagonal_(input: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Write `fill_value` on the main diagonal of `input` in place (all dims equal when
    there are more than two).  With `wrap`, a tall matrix's diagonal starts again below
    the square part, every ``columns + 1`` rows."""
    if input.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(input.shape)
    if input.dim() > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    xp = xp_of(input._data)
    if input.dim() == 2:
        rows, cols = shape
        step = cols + 1
        end = input.numel() if wrap else min(rows, cols) * cols
    else:  # the element (i, i, ..., i) is at i * (1 + n + n**2 + ...) in row-major order
        step = sum(shape[0] ** k for k in range(input.dim()))
        end = input.numel()
    mask = xp.zeros(input.numel(), dtype=bool)
    mask[:end:step] = True
    return input.masked_fill_(_make(mask.reshape(shape)), fill_value)
