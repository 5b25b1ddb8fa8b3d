"""Shape ops that are views: reshape/view, flatten, squeeze, transpose/permute, expand
and broadcasting.

View ops set ``_is_view``: their output shares memory and the version counter with
the input, as in PyTorch, and an in-place write through one is seen through the
others.  Views of a part of a tensor (basic indexing, narrow, select, split, unbind,
diagonal, unfold, as_strided) are in ``slicing.py``; copying shape ops (cat, stack,
repeat, flip, ...) in ``joining.py``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._core.function import Function
from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Size, Tensor, _make
from ._broadcast import broadcast_shapes as _broadcast_shapes
from . import _parallel
from ._util import wrap_dim, xp_of
from .._core import dtype as dtypes

_INTS = (int, np.integer)


def _int_tuple(sizes) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all as ``(2, 3)``."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
        sizes = tuple(sizes[0])
    return tuple(int(s) for s in sizes)


def _infer_shape(shape, numel: int, op: str) -> tuple:
    shape = _int_tuple(shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# ----------------------------------------------------------------------
# reshape family


class View(Function):
    """A reshape that must not copy (``view``)."""

    _is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        if x.flags.c_contiguous:  # (never copied; the copy keyword costs ~0.4 us a call)
            return x.reshape(shape)
        try:
            return x.reshape(shape, copy=False)
        except ValueError:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one "
                "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
            ) from None

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


class Reshape(Function):
    """A reshape that has to copy (the input's strides allow no view)."""

    _name = "UnsafeViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        if type(x) is np.ndarray:   # (the copy on the threads when large)
            x = _parallel.contiguous(x)
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


class ViewDtype(Function):
    """``view(dtype)``: the same bytes read as another dtype (no gradient, as in PyTorch)."""

    _marks_outputs = True

    @staticmethod
    def forward(ctx, x, np_dtype):
        out = x.view(np_dtype)
        ctx.mark_non_differentiable(out)
        return out


def _view_dtype(input: Tensor, dtype) -> Tensor:
    target = dtypes.to_dtype(dtype)
    data = input._data
    old, new = data.dtype.itemsize, target.np_dtype.itemsize
    if old != new:
        what = f"to view {input.dtype} as {target} (different element sizes)"
        if data.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if data.shape[-1] != 1 and data.strides[-1] != old:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got "
                               f"{data.strides[-1] // old}")
        if new > old and data.shape[-1] * old % new:
            raise RuntimeError(f"self.size(-1) must be divisible by {new // old} {what}, but "
                               f"got {data.shape[-1]}")
    out = ViewDtype.apply(input, target.np_dtype)
    out._version = input._version  # the same memory
    return out


def view(input: Tensor, *shape) -> Tensor:
    """The same memory seen with another shape (one dim may be -1), or, given a dtype, the
    same bytes read as that dtype (the last dim shrinks or grows when the sizes differ)."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list, Size)):
        return _view_dtype(input, shape[0])
    return View.apply(input, _infer_shape(shape, input._data.size, "view"))


def reshape(input: Tensor, *shape) -> Tensor:
    """Another shape with the same elements: a view when possible, else a copy.

    The shape is a tuple or separate ints, in the function form too (PyTorch's
    ``torch.reshape`` takes a tuple only)."""
    return _reshape_to(input, _infer_shape(shape, input._data.size, "reshape"))


def _reshape_to(input: Tensor, shape: tuple) -> Tensor:
    """`reshape` to a shape of ints already checked against the input's size."""
    if _can_view(input._data, shape):
        return View.apply(input, shape)
    return Reshape.apply(input, shape)


def _can_view(data, shape) -> bool:
    if data.flags.c_contiguous:
        return True
    try:
        data.reshape(shape, copy=False)
        return True
    except ValueError:
        return False


def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``view(other.shape)``."""
    return view(input, tuple(other.shape))


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``reshape(other.shape)``."""
    return reshape(input, tuple(other.shape))


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when the strides allow).

    >>> ember.zeros(2, 3, 4).flatten(1).shape
    ember.Size([2, 12])
    """
    ndim = input._data.ndim
    if ndim == 0:
        return reshape(input, (1,))
    start = wrap_dim(start_dim, ndim, "flatten")
    end = wrap_dim(end_dim, ndim, "flatten")
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input._data.shape
    merged = 1
    for s in shape[start:end + 1]:
        merged *= s
    return _reshape_to(input, shape[:start] + (merged,) + shape[end + 1:])


def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split dim `dim` into `sizes` (one of them may be -1); the inverse of flatten."""
    ndim = input._data.ndim
    d = wrap_dim(dim, ndim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input._data.shape[d]
    try:
        sizes = _infer_shape((sizes,), n, "unflatten")
    except RuntimeError:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({n}) in the input tensor"
        ) from None
    shape = input._data.shape
    return view(input, shape[:d] + sizes + shape[d + 1:])


def ravel(input: Tensor) -> Tensor:
    """All elements in one dim (a view when the input is contiguous)."""
    return reshape(input, (-1,))


# ----------------------------------------------------------------------
# squeeze / unsqueeze


class Squeeze(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, dims, kind=0):
        ctx.in_shape, ctx.kind = x.shape, kind
        return xp_of(x).squeeze(x, axis=dims) if dims else x.view()

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)

    def name(self) -> str:
        return self._name or f"SqueezeBackward{self.kind}"


class Unsqueeze(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return xp_of(x).expand_dims(x, dim)

    @staticmethod
    def backward(ctx, grad):
        return grad.squeeze(ctx.dim)


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Remove dims of size 1: all of them, or those among `dim` (an int or a tuple)."""
    shape = input._data.shape
    ndim = len(shape)
    if dim is None:
        dims, kind = tuple(i for i, s in enumerate(shape) if s == 1), 0
    else:
        kind = 1 if isinstance(dim, _INTS) else 2
        wanted = (dim,) if kind == 1 else tuple(dim)
        wrapped = [wrap_dim(int(d), ndim, "squeeze") for d in wanted]
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"dim {wrapped[0]} appears multiple times in the list of dims")
        dims = tuple(sorted(d for d in set(wrapped) if ndim and shape[d] == 1))
    return Squeeze.apply(input, dims, kind)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a dim of size 1 at position `dim` (a view)."""
    return Unsqueeze.apply(input, wrap_dim(dim, input._data.ndim + 1, "unsqueeze"))


# ----------------------------------------------------------------------
# transposes


class Permute(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(inverse)


class Transpose(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, dim0, dim1):
        ctx.dims = (dim0, dim1)
        return x.swapaxes(dim0, dim1) if x.ndim else x.view()  # (0-dim: dims 0 and -1)

    @staticmethod
    def backward(ctx, grad):
        return grad.transpose(*ctx.dims)


class T(Function):
    """``t()``: the transpose of a matrix, a view of a vector or scalar as it is."""

    _is_view = True

    @staticmethod
    def forward(ctx, x):
        return x.transpose()

    @staticmethod
    def backward(ctx, grad):
        if not STATE.enabled and PROCESS.observer is None and type(grad._data) is np.ndarray:
            # what `T.apply` does when nothing records (a view sharing the version
            # counter), without its ~3 us: each linear layer's backward runs one
            out = _make(grad._data.transpose())
            out._version = grad._version
            return out
        return grad.t()


def permute(input: Tensor, *dims) -> Tensor:
    """Reorder the dimensions (a view)."""
    dims = _int_tuple(dims)
    ndim = input._data.ndim
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {ndim} is not "
            f"equal to len(dims) = {len(dims)}"
        )
    dims = tuple(wrap_dim(int(d), ndim, "permute") for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, dims)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    if input.is_sparse:  # swaps two rows of the indices (ops/sparse_coo.py)
        return input.transpose(dim0, dim1)
    ndim = input._data.ndim
    return Transpose.apply(input, wrap_dim(dim0, ndim, "transpose"),
                           wrap_dim(dim1, ndim, "transpose"))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims (a 0-d or 1-d tensor is returned as it is)."""
    if input.is_sparse:
        return input.t()
    if input._data.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    return T.apply(input)


def movedim(input: Tensor, source, destination) -> Tensor:
    """Move dims at `source` to positions `destination` (ints or sequences); a view."""
    ndim = input._data.ndim
    src = (source,) if isinstance(source, _INTS) else tuple(source)
    dst = (destination,) if isinstance(destination, _INTS) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)")
    src = [wrap_dim(int(d), ndim, "movedim") for d in src]
    dst = [wrap_dim(int(d), ndim, "movedim") for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(dims)})")
    order = [-1] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [next(rest) if o == -1 else o for o in order]
    return Permute.apply(input, tuple(order))


moveaxis = movedim


# Properties (attached as Tensor.T, .mT, .H, .mH).

def T_property(input: Tensor) -> Tensor:
    """All dims reversed (deprecated by PyTorch for tensors that are not 2-D)."""
    ndim = input._data.ndim
    if ndim != 2:
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` "
            "to reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
    return Permute.apply(input, tuple(range(ndim - 1, -1, -1)))


def mT_property(input: Tensor) -> Tensor:
    """The last two dims swapped (a batch of matrices transposed)."""
    if input._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {input._data.ndim}-D tensor.")
    return transpose(input, -2, -1)


def _conj(t: Tensor) -> Tensor:
    return t.conj() if t.is_complex() else t


def H_property(input: Tensor) -> Tensor:
    """The conjugate transpose of a matrix."""
    ndim = input._data.ndim
    if ndim not in (0, 2):
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {ndim}-D tensor.")
    return _conj(T.apply(input))


def mH_property(input: Tensor) -> Tensor:
    """The conjugate transpose of a batch of matrices."""
    if input._data.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {input._data.ndim}-D tensor.")
    return _conj(transpose(input, -2, -1))


def adjoint(input: Tensor) -> Tensor:
    """``input.mH``."""
    return mH_property(input)


# ----------------------------------------------------------------------
# expand / broadcast


class Expand(Function):
    _is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return xp_of(x).broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.sum_to_size(*ctx.in_shape)


def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast singleton dims to `sizes` without copying (-1 keeps a dim)."""
    sizes = _int_tuple(sizes)
    shape = tuple(input._data.shape)
    if len(sizes) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({len(shape)})"
        )
    lead = len(sizes) - len(shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"expand: the expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i}")
            out.append(s)
            continue
        d = shape[i - lead]
        if s == -1:
            s = d
        if d != s and d != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({d}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(shape)}"
            )
        out.append(s)
    return Expand.apply(input, tuple(out))


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``expand(other.shape)``."""
    return expand(input, tuple(other.shape))


def broadcast_to(input: Tensor, size) -> Tensor:
    """`input` broadcast to `size` (a view, as ``expand``)."""
    return expand(input, tuple(size))


def broadcast_shapes(*shapes) -> Size:
    """The shape tensors of `shapes` (ints or sequences) broadcast to."""
    norm = [(int(s),) if isinstance(s, _INTS) else tuple(int(d) for d in s) for s in shapes]

    def mismatch(index, dim, size, partial):
        raise RuntimeError(
            f"Attempting to broadcast a dimension of length {size} at {dim}! Mismatching "
            f"argument at index {index} had {norm[index]}; but expected shape should be "
            f"broadcastable to {partial}")

    return Size(_broadcast_shapes(*norm, on_mismatch=mismatch))


def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common broadcast shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(t if tuple(t.shape) == shape else expand(t, shape) for t in tensors)


def _atleast(tensors, fix):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fix(t) for t in tensors[0])
    if len(tensors) == 1:
        return fix(tensors[0])
    return tuple(fix(t) for t in tensors)


def atleast_1d(*tensors):
    """Each tensor viewed with at least one dim (a tuple when given several)."""
    return _atleast(tensors, lambda t: reshape(t, (1,)) if t.ndim == 0 else t)


def atleast_2d(*tensors):
    """Each tensor viewed with at least two dims (a 1-d tensor becomes a row)."""
    def fix(t):
        return reshape(t, (1, 1)) if t.ndim == 0 else unsqueeze(t, 0) if t.ndim == 1 else t
    return _atleast(tensors, fix)


def atleast_3d(*tensors):
    """Each tensor viewed with at least three dims: (n) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    def fix(t):
        if t.ndim == 0:
            return reshape(t, (1, 1, 1))
        if t.ndim == 1:
            return unsqueeze(unsqueeze(t, 0), 2)
        return unsqueeze(t, 2) if t.ndim == 2 else t
    return _atleast(tensors, fix)
