"""Views of a part of a tensor: basic indexing (``x[1:3, 0]``), narrow, select, split,
chunk, tensor_split, unbind, diagonal, ``Tensor.unfold`` and ``as_strided``; beside
diagonal, the copies diag_embed, diag and diagonal_copy.

Each is a view (``_is_view``): it shares memory and the version counter with its
input.  Its gradient writes the incoming gradient into zeros of the input's shape, at
the viewed region.
"""

from __future__ import annotations

import math

from .._core.backend import scatter_add
from .._core.function import Function
from .._core.tensor import Tensor
from ._util import wrap_dim, xp_of
from .joining import cat, stack
from .shape import _INTS


def as_strided_array(x, shape, strides_in_elements, offset: int = 0):
    """A view of backend array `x` (starting `offset` elements in) with the given strides."""
    xp = xp_of(x)
    if offset:  # only contiguous arrays are given an offset
        x = x.reshape(-1)[offset:]
    item = x.itemsize
    return xp.lib.stride_tricks.as_strided(
        x, shape=tuple(shape), strides=tuple(s * item for s in strides_in_elements))


# ----------------------------------------------------------------------
# slicing views: basic indexing, narrow, select, split, unbind


class Subview(Function):
    """``x[key]`` for a basic key: a tuple of ints, slices with positive steps and None.

    The key always ends with an Ellipsis, so that NumPy returns a 0-dim view (not a
    scalar copy) when every dim is indexed by an int.
    """

    _is_view = True

    @staticmethod
    def forward(ctx, x, key):
        ctx.in_shape, ctx.key = x.shape, key
        return x[key]

    @staticmethod
    def backward(ctx, grad):
        return SubviewBackward.apply(grad, ctx.in_shape, ctx.key)

    def name(self) -> str:
        key = self.key
        if any(isinstance(k, _INTS) for k in key):
            return "SelectBackward0"
        if any(isinstance(k, slice) for k in key):
            return "SliceBackward0"
        return "UnsqueezeBackward0" if None in key else "AliasBackward0"


class SubviewBackward(Function):
    """Zeros of the input's shape with the gradient written into the viewed region."""

    _name = "SliceBackwardBackward0"

    @staticmethod
    def forward(ctx, grad, shape, key):
        ctx.key = key
        out = xp_of(grad).zeros(shape, dtype=grad.dtype)
        out[key] = grad
        return out

    @staticmethod
    def backward(ctx, grad):
        return Subview.apply(grad, ctx.key)


def subview(input: Tensor, key: tuple) -> Tensor:
    """The view ``input[key]`` of an already checked basic key (see indexing.py)."""
    if not any(k is Ellipsis for k in key):
        key = key + (Ellipsis,)
    return Subview.apply(input, key)


def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """Elements ``start .. start+length-1`` along `dim` (a view)."""
    ndim = input._data.ndim
    d = wrap_dim(dim, ndim, "narrow")
    size = input._data.shape[d]
    start, length = int(start), int(length)
    if start < -size or start > size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return subview(input, (slice(None),) * d + (slice(start, start + length),))


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at `index` along `dim`, that dim removed (a view)."""
    ndim = input._data.ndim
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, ndim, "select")
    size = input._data.shape[d]
    index = int(index)
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {d}")
    return subview(input, (slice(None),) * d + (index % size,))


class Split(Function):
    """Pieces of `sizes` along `dim`, all views of the input."""

    _is_view = True

    @staticmethod
    def forward(ctx, x, dim, sizes, with_sizes=False):
        ctx.dim = dim
        if with_sizes:  # split(list): PyTorch's split_with_sizes
            ctx._name = "SplitWithSizesBackward0"
        out, start = [], 0
        lead = (slice(None),) * dim
        for s in sizes:
            out.append(x[lead + (slice(start, start + s), Ellipsis)])
            start += s
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.dim)


class Unbind(Function):
    """Every slice along `dim`, that dim removed, all views of the input."""

    _is_view = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        lead = (slice(None),) * dim
        return tuple(x[lead + (i, Ellipsis)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.dim)


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Pieces along `dim`: of `split_size` each (the last may be smaller), or of the listed
    sizes; the pieces are views."""
    ndim = tensor._data.ndim
    if ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, ndim, "split")
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (_INTS, Tensor)):
        size = int(split_size_or_sections)
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size="
                               f"{size}")
        if size == 0:
            if n != 0:
                raise RuntimeError("split_size can only be 0 if dimension size is 0, but got "
                                   f"dimension size of {n}")
            sizes = (0,)
        else:
            sizes = tuple(min(size, n - s) for s in range(0, n, size)) or (0,)
        return Split.apply(tensor, d, sizes)
    else:
        sizes = tuple(int(s) for s in split_size_or_sections)
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's "
                f"size at dimension {d}), but got split_sizes={list(sizes)}")
    return Split.apply(tensor, d, sizes, True)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0) -> tuple:
    """``split`` with an explicit list of sizes."""
    return split(input, list(split_sizes), dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """At most `chunks` equal pieces along `dim` (the last may be smaller); views."""
    chunks = int(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    ndim = input._data.ndim
    if ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = input._data.shape[wrap_dim(dim, ndim, "chunk")]
    size = -(-n // chunks)
    if size == 0:  # an empty dim: `chunks` empty pieces
        return split(input, [0] * chunks, dim)
    return split(input, size, dim)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """Pieces along `dim`: `sections` near-equal ones (the first ones one longer), or cut at
    the given indices (like ``numpy.array_split``); views."""
    ndim = input._data.ndim
    if ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, ndim, "tensor_split")
    n = input._data.shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.dtype.name != "int64":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {spec.dtype}")
        spec = spec.item() if spec.ndim == 0 else spec.tolist()
    if isinstance(spec, _INTS):
        sections = int(spec)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        base, extra = divmod(n, sections)
        bounds, start = [], 0
        for i in range(sections):
            stop = start + base + (1 if i < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        cuts = [int(i) for i in spec]
        edges = [0] + cuts + [n]
        bounds = []
        for a, b in zip(edges, edges[1:]):
            a = min(max(a + n if a < 0 else a, 0), n)
            b = min(max(b + n if b < 0 else b, 0), n)
            bounds.append((a, max(a, b)))
    lead = (slice(None),) * d
    return tuple(subview(input, lead + (slice(a, b),)) for a, b in bounds)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """Every slice along `dim`, with that dim removed (views)."""
    ndim = input._data.ndim
    if ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Unbind.apply(input, wrap_dim(dim, ndim, "unbind"))


# ----------------------------------------------------------------------
# diagonal, unfold, as_strided


def _diagonal_array(x, offset: int, d1: int, d2: int):
    """The writable strided view of a diagonal of backend array `x` (last dim = diagonal)."""
    n1, n2 = x.shape[d1], x.shape[d2]
    start = [0] * x.ndim
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        start[d2] = min(offset, n2)
    else:
        length = max(0, min(n1 + offset, n2))
        start[d1] = min(-offset, n1)
    if length:
        x = x[tuple(slice(s, None) for s in start)]
    item = x.itemsize
    keep = [i for i in range(x.ndim) if i not in (d1, d2)]
    shape = [x.shape[i] for i in keep] + [length]
    strides = [x.strides[i] // item for i in keep] + [(x.strides[d1] + x.strides[d2]) // item]
    return as_strided_array(x, shape, strides)


class _StridedView(Function):
    """A view made by ``_view(x, *args)`` on the input's memory.  Its gradient is
    ``_adjoint.apply(grad, input shape, *args)``: each gradient element added back where
    it was viewed from (the adjoint's own gradient is the view again)."""

    _is_view = True

    @staticmethod
    def forward(ctx, x, *args):
        ctx.in_shape, ctx.args = x.shape, args
        return ctx._view(x, *args)

    @staticmethod
    def backward(ctx, grad):
        return ctx._adjoint.apply(grad, ctx.in_shape, *ctx.args)


class DiagonalBackward(Function):
    """Zeros of the input's shape with the gradient on the diagonal (also diag_embed)."""

    _name = "DiagEmbedBackward0"

    @staticmethod
    def forward(ctx, grad, shape, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        out = xp_of(grad).zeros(shape, dtype=grad.dtype)
        _diagonal_array(out, offset, d1, d2)[...] = grad
        return out

    @staticmethod
    def backward(ctx, grad):
        return Diagonal.apply(grad, *ctx.args)


class Diagonal(_StridedView):
    """(x, offset, dim1, dim2): a diagonal as the last dim."""

    _view = staticmethod(_diagonal_array)
    _adjoint = DiagonalBackward


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, as the last dim of a view.

    ``offset`` > 0 takes a diagonal above the main one, < 0 below it.
    """
    ndim = input._data.ndim
    d1 = wrap_dim(dim1, ndim, "diagonal")
    d2 = wrap_dim(dim2, ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, int(offset), d1, d2)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A tensor whose (dim1, dim2) diagonals hold the last dim of `input`, zeros elsewhere."""
    ndim = input._data.ndim + 1
    d1 = wrap_dim(dim1, ndim, "diag_embed")
    d2 = wrap_dim(dim2, ndim, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = int(offset)
    n = input._data.shape[-1] + abs(offset) if input._data.ndim else 1 + abs(offset)
    rest = iter(input._data.shape[:-1])
    shape = tuple(n if i in (d1, d2) else next(rest) for i in range(ndim))
    return DiagonalBackward.apply(input, shape, offset, d1, d2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d tensor -> the matrix with it on a diagonal; a matrix -> a copy of a diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return diagonal_copy(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``diagonal`` as a copy with its own memory."""
    return diagonal(input, offset, dim1, dim2).clone()


def _unfold_array(x, dim: int, size: int, step: int):
    """The windows of backend array `x` along `dim` as a strided view (window = last dim)."""
    if x.ndim == 0:
        return x.reshape(1)
    count = (x.shape[dim] - size) // step + 1
    item = x.itemsize
    strides = [s // item for s in x.strides]
    shape = list(x.shape)
    shape[dim] = count
    strides_out = list(strides)
    strides_out[dim] = strides[dim] * step
    return as_strided_array(x, shape + [size], strides_out + [strides[dim]])


class UnfoldBackward(Function):
    """Windows summed back into place (overlapping windows add up)."""

    @staticmethod
    def forward(ctx, grad, shape, dim, size, step):
        ctx.args = (dim, size, step)
        if len(shape) == 0:
            return grad.reshape(())
        out = xp_of(grad).zeros(shape, dtype=grad.dtype)
        count = grad.shape[dim]
        lead = (slice(None),) * dim
        for k in range(size):  # element k of every window at once
            out[lead + (slice(k, k + step * (count - 1) + 1, step),)] += grad[..., k]
        return out

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, *ctx.args)


class Unfold(_StridedView):
    """``Tensor.unfold``: (x, dim, size, step), sliding windows along one dim, as a new
    last dim (a view)."""

    _view = staticmethod(_unfold_array)
    _adjoint = UnfoldBackward


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All windows of `size` elements, `step` apart, along `dimension`; a view whose new
    last dim holds the window."""
    ndim = input._data.ndim
    d = wrap_dim(dimension, ndim, "unfold")
    n = input._data.shape[d] if ndim else 1
    size, step = int(size), int(step)
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    return Unfold.apply(input, d, size, step)


class AsStridedBackward(Function):
    """Each element of the gradient added into the input element it viewed (an element
    viewed more than once gets the sum)."""

    @staticmethod
    def forward(ctx, grad, shape, size, stride, offset):
        ctx.args = (size, stride, offset)
        xp = xp_of(grad)
        n = math.prod(shape)
        where = as_strided_array(xp.arange(n), size, stride, offset)
        out = xp.zeros(n, dtype=grad.dtype)
        scatter_add(xp, out, where.reshape(-1), grad.reshape(-1))
        return out.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return AsStrided.apply(grad.contiguous(), *ctx.args)


class AsStrided(_StridedView):
    """(x, size, stride, offset): sizes and strides in elements over x's memory."""

    _view = staticmethod(as_strided_array)
    _adjoint = AsStridedBackward


def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view with the given sizes and strides (in elements) over `input`'s memory.

    Strides count from `input`'s first element, which must be contiguous; reading past
    its last element is refused.
    """
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    offset = 0 if storage_offset is None else int(storage_offset)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} vs "
                           f"{len(size)}")
    if not input._data.flags.c_contiguous:
        raise RuntimeError("as_strided: ember supports only contiguous inputs; call "
                           ".contiguous() first")
    if any(s < 0 for s in stride) or any(s < 0 for s in size):
        raise RuntimeError("as_strided: negative sizes or strides are not supported")
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > input._data.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {input._data.itemsize} requiring a storage size of "
            f"{needed * input._data.itemsize} are out of bounds for storage of size "
            f"{input._data.size * input._data.itemsize}")
    return AsStrided.apply(input, size, stride, offset)
