"""A small sparse COO tensor: what sparse gradients need, and little more.

``Embedding(sparse=True)`` produces a gradient that touches only the rows it looked
up; storing it as (indices, values) pairs keeps a step over a 100k-word vocabulary
cheap.  ``sparse_coo_tensor(indices, values, size)`` builds one: `indices` is an
integer (sparse_dim, nnz) array and `values` has shape ``(nnz,) + size[sparse_dim:]``.
Entry ``k`` says ``dense[tuple(indices[:, k])] += values[k]`` (repeated indices add up
until ``coalesce()`` merges them).

What a sparse tensor supports: ``coalesce``, ``to_dense``, ``indices``/``values``,
``_nnz``, shape/dtype/device queries, ``dense + sparse`` and ``dense.add_(sparse)``,
``sparse + sparse`` (concatenation), multiplication and division by a number,
negation, ``to``/``clone``/``detach``, a full ``sum()`` and ``zero_()``, and the product of
a 2-D sparse matrix with a dense matrix on either side (``mm``, ``addmm``, ``@``,
``ember.spmm``; ops/sparse_matmul.py), differentiable in the dense operand.  A dense
tensor becomes one with ``to_sparse()``.  Every other op raises NotImplementedError
naming it: this is not a general sparse library.

How it fits in: a `SparseTensor` is a `Tensor` whose ``_data`` is a `CooData` (the
index and value arrays plus the dense shape).  `CooData` answers the few array
attributes the autograd engine reads from a gradient (shape, dtype, ndim), so sparse
gradients flow through the engine and accumulate into ``.grad`` like dense ones.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.backend import device_of, module_of, scatter_add, to_backend
from .._core.device import CPU
from .._core.grad_mode import is_grad_enabled
from .._core.function import Function
from .._core.tensor import Size, Tensor, _make
from .._core.tensor import _wrap_dim
from ._util import normalize_dims
from .arithmetic import Add
from .conversion import _parse_to_args
from .creation import tensor as make_tensor
from .sparse_matmul import matmul_with_sparse

__all__ = ["sparse_coo", "strided", "SparseTensor", "sparse_coo_tensor", "to_sparse", "sum",
           "wrap_coo", "refuse_dense_methods"]

sparse_coo = "sparse_coo"
"""The layout name of sparse COO tensors (``t.layout``; dense tensors say ``strided``)."""
strided = "strided"
"""The layout name of dense tensors (``t.layout``)."""


class CooData:
    """What a sparse tensor holds in ``_data``: index and value arrays and the dense shape.

    NumPy hands ``dense_array + coo`` over to ``__array_ufunc__``, which makes a dense
    result, so the ordinary ``add``/``add_`` ops accept a sparse operand; any other
    array function raises NotImplementedError.
    """

    __slots__ = ("indices", "values", "shape", "coalesced")

    def __init__(self, indices, values, shape: tuple, coalesced: bool = False):
        self.indices = indices
        self.values = values
        self.shape = tuple(int(s) for s in shape)
        self.coalesced = coalesced

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.values.itemsize

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + self.indices.nbytes

    @property
    def sparse_dim(self) -> int:
        return self.indices.shape[0]

    def transposed(self) -> CooData:
        """The entries of the transposed 2-D matrix: rows and columns swapped, values shared
        (not coalesced: the swapped indices are no longer sorted)."""
        return CooData(self.indices[::-1], self.values, self.shape[::-1], False)

    def copy(self) -> CooData:
        return CooData(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def fill(self, value) -> None:
        """Zero the tensor in place (drops every entry); other fill values are refused."""
        if value != 0:
            raise NotImplementedError("fill_() of a sparse tensor with a non-zero value is not "
                                      "supported by ember")
        self.indices = self.indices[:, :0]
        self.values = self.values[:0]
        self.coalesced = True

    def to_dense(self, dtype=None):
        xp = module_of(self.values)
        out = xp.zeros(self.shape, dtype=self.values.dtype if dtype is None else dtype)
        if self.values.shape[0]:
            scatter_add(xp, out, tuple(self.indices), self.values.astype(out.dtype, copy=False))
        return out

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc in (np.add, np.subtract) and method == "__call__" and len(inputs) == 2 and (
                not kwargs and inputs[1] is self and inputs[0] is not self):
            # dense + coo, dense - coo: dense results (what add(dense, sparse) computes)
            other = self if ufunc is np.add else CooData(self.indices, -self.values, self.shape,
                                                         self.coalesced)
            return other.__radd__(inputs[0])
        raise _unsupported_error(ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        raise _unsupported_error(func.__name__)

    def __radd__(self, dense):
        """``dense_array + coo`` (a new dense array)."""
        if tuple(dense.shape) != self.shape:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self "
                               f"has size {list(dense.shape)} while other has size "
                               f"{list(self.shape)}")
        xp = module_of(dense)
        out = xp.array(dense, dtype=np.result_type(dense.dtype, self.values.dtype), copy=True)
        if self.values.shape[0]:
            scatter_add(xp, out, tuple(self.indices), self.values.astype(out.dtype, copy=False))
        return out

    def __array__(self, dtype=None, copy=None):
        raise _unsupported_error("this operation")


def _unsupported_error(name: str) -> NotImplementedError:
    what = name if " " in name else f"{name}()"
    return NotImplementedError(
        f"{what} is not supported on ember's sparse COO tensors (they offer coalesce, "
        "to_dense, indices, values, addition, scaling by a number and a few more); call "
        "to_dense() first")


def _unsupported(name: str):
    def method(self, *args, **kwargs):
        raise _unsupported_error(name)
    method.__name__ = name
    return method


class SparseTensor(Tensor):
    """A sparse tensor in COO layout (see the module docstring for what it supports)."""

    is_sparse = True
    layout = sparse_coo
    _grad_values = None  # the values as a Tensor in the autograd graph, when they need grad

    @property
    def requires_grad(self) -> bool:
        """True when the values were given as a tensor that requires grad: ``to_dense``,
        ``sparse.mm``, ``softmax`` and the other value-preserving ops pass gradients to it."""
        return self._grad_values is not None and self._grad_values.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    # -- structure ---------------------------------------------------------------------

    @property
    def device(self):
        return device_of(self._data.values)

    def sparse_dim(self) -> int:
        """How many leading dimensions the indices address."""
        return self._data.sparse_dim

    def dense_dim(self) -> int:
        """How many trailing dimensions each stored value has."""
        return len(self._data.shape) - self._data.sparse_dim

    def _nnz(self) -> int:
        """The number of stored entries (duplicates counted until coalesced)."""
        return int(self._data.values.shape[0])

    def is_coalesced(self) -> bool:
        """True when the indices are sorted and unique."""
        return self._data.coalesced

    def coalesce(self) -> SparseTensor:
        """The same tensor with sorted, unique indices (duplicate entries summed)."""
        data = self._data
        if data.coalesced:
            return self
        xp = module_of(data.values)
        sparse_shape = data.shape[:data.sparse_dim]
        if data.values.shape[0] == 0:
            return wrap_coo(data.indices, data.values, data.shape, True)
        flat = xp.ravel_multi_index(tuple(data.indices), sparse_shape)
        unique, inverse = xp.unique(flat, return_inverse=True)
        values = xp.zeros((unique.shape[0],) + data.values.shape[1:], dtype=data.values.dtype)
        scatter_add(xp, values, inverse.reshape(-1), data.values)
        indices = xp.stack(xp.unravel_index(unique, sparse_shape)).astype(np.int64)
        indices = indices.reshape(len(sparse_shape), -1)
        if self._grad_values is not None:  # the same sums, recorded for the gradient
            summed = self._grad_values.new_zeros(values.shape)
            summed = summed.index_add(0, _make(inverse.reshape(-1)), self._grad_values)
            return with_values(indices, summed, data.shape, True)
        return wrap_coo(indices, values, data.shape, True)

    def indices(self) -> Tensor:
        """The (sparse_dim, nnz) index tensor of a coalesced tensor."""
        if not self._data.coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return _make(self._data.indices)

    def values(self) -> Tensor:
        """The (nnz, *dense_shape) value tensor of a coalesced tensor."""
        if not self._data.coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return values_of(self)

    def _indices(self) -> Tensor:
        """The stored indices, coalesced or not."""
        return _make(self._data.indices)

    def _values(self) -> Tensor:
        """The stored values, coalesced or not."""
        return values_of(self)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None,
                  dense_dim=None) -> SparseTensor:
        """Itself (already sparse)."""
        return self

    to_sparse_coo = to_sparse

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense tensor this sparse tensor stands for (differentiable in the values)."""
        if self._grad_values is not None and is_grad_enabled():
            values = self._grad_values if dtype is None else self._grad_values.to(dtype)
            return ToDense.apply(values, indices=self._data.indices, shape=self._data.shape)
        return _make(self._data.to_dense(None if dtype is None else dtypes.to_dtype(
            dtype).np_dtype))

    # -- shape -------------------------------------------------------------------------

    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        """Swap two sparse dimensions (two rows of the indices; the values are shared)."""
        data = self._data
        d0 = _wrap_dim(dim0, len(data.shape), "transpose")
        d1 = _wrap_dim(dim1, len(data.shape), "transpose")
        if d0 >= data.sparse_dim or d1 >= data.sparse_dim:
            raise RuntimeError(f"sparse transpose: transposed dimensions must be sparse Got "
                               f"sparse_dim: {data.sparse_dim}, d0: {d0}, d1: {d1}")
        order = list(range(len(data.shape)))
        order[d0], order[d1] = d1, d0
        shape = Size(data.shape[d] for d in order)
        indices = data.indices[order[:data.sparse_dim]]
        return with_values(indices, values_of(self), shape, self._nnz() <= 1 or d0 == d1)

    swapaxes = swapdims = transpose

    def t(self) -> SparseTensor:
        """The transpose of a sparse matrix (a sparse vector is returned as it is)."""
        if self.sparse_dim() > 2 or self.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} dense "
                               "dimensions")
        return self if self.dim() < 2 else self.transpose(0, 1)

    # -- autograd and copies -----------------------------------------------------------

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        if requires_grad:
            raise NotImplementedError("ember's sparse tensors do not record gradients "
                                      "(requires_grad=True is not supported)")
        return self

    def detach(self) -> SparseTensor:
        return wrap_coo(self._data.indices, self._data.values, self._data.shape,
                     self._data.coalesced)

    @property
    def data(self) -> SparseTensor:
        return self.detach()

    def clone(self, *, memory_format=None) -> SparseTensor:
        """A copy with its own index and value arrays."""
        data = self._data.copy()
        return wrap_coo(data.indices, data.values, data.shape, data.coalesced)

    def to(self, *args, **kwargs) -> SparseTensor:
        """The tensor with another dtype and/or device (itself when nothing changes)."""
        dev, dt, copy = _parse_to_args(args, dict(kwargs))
        data = self._data
        indices, values = data.indices, data.values
        if dev is not None and dev != self.device and not (
                dev.type == self.device.type and dev.index is None):
            indices, values = to_backend(indices, dev), to_backend(values, dev)
        if dt is not None and values.dtype != dt.np_dtype:
            values = values.astype(dt.np_dtype)
        if indices is data.indices and values is data.values:
            return self.clone() if copy else self
        return wrap_coo(indices, values, data.shape, data.coalesced)

    def cpu(self, memory_format=None) -> SparseTensor:
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> SparseTensor:
        return self.to("cuda" if device is None else device)

    def float(self, memory_format=None) -> SparseTensor:
        return self.to(dtypes.float32)

    def double(self, memory_format=None) -> SparseTensor:
        return self.to(dtypes.float64)

    def type(self, dtype=None, non_blocking: bool = False):
        if dtype is None:
            return "ember.sparse." + Tensor.type(_make(self._data.values)).split(".")[-1]
        return self.to(dtype)

    def __reduce_ex__(self, protocol):
        data = self._data
        return (_rebuild_sparse, (to_backend(data.indices, CPU), to_backend(data.values, CPU),
                                  data.shape, data.coalesced, str(self.device)))

    # -- arithmetic --------------------------------------------------------------------

    def __add__(self, other):
        if isinstance(other, SparseTensor):
            return _concat(self, other)
        if isinstance(other, Tensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, SparseTensor):
            return _concat(other, self)
        if isinstance(other, Tensor):
            return _dense_plus_sparse(other, self)
        return NotImplemented

    def add(self, other, *, alpha=1):
        """``self + alpha * other`` for a sparse `other`."""
        return self.__add__(other if alpha == 1 else other * alpha)

    def __sub__(self, other):
        if isinstance(other, SparseTensor):
            return _concat(self, -other)
        return self.__add__(other)

    def __rsub__(self, other):
        return (-self).__radd__(other)

    def sub(self, other, *, alpha=1):
        """``self - alpha * other`` for a sparse `other`."""
        return self.__sub__(other if alpha == 1 else other * alpha)

    def __neg__(self):
        return self._scaled(-1)

    neg = __neg__

    def __mul__(self, other):
        if isinstance(other, Tensor) and other.dim() == 0 and not other.is_sparse:
            other = other.item()
        if isinstance(other, (int, float, np.number)) and not isinstance(other, bool):
            return self._scaled(other)
        raise NotImplementedError("ember's sparse tensors can only be multiplied by a number")

    __rmul__ = __mul__
    mul = __mul__

    def __matmul__(self, other):
        """``self @ other`` for a dense matrix: a dense matrix (see ``ember.sparse.mm``)."""
        if not isinstance(other, Tensor):
            return NotImplemented
        return matmul_with_sparse("matmul", self, other)

    def __rmatmul__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return matmul_with_sparse("matmul", other, self)

    def mm(self, mat2):
        """``self @ mat2`` for a dense matrix `mat2`."""
        return matmul_with_sparse("mm", self, mat2)

    def matmul(self, other):
        """``self @ other`` for a dense matrix `other`."""
        return matmul_with_sparse("matmul", self, other)

    def __truediv__(self, other):
        if isinstance(other, (int, float, np.number)) and not isinstance(other, bool):
            return self._scaled(1.0 / other)
        raise NotImplementedError("ember's sparse tensors can only be divided by a number")

    div = __truediv__

    def mul_(self, other) -> SparseTensor:
        """In-place multiplication by a number."""
        scaled = self.__mul__(other)
        self._data = scaled._data
        self._version.value += 1
        return self

    def zero_(self) -> SparseTensor:
        """Drop every stored entry (the tensor becomes all zeros)."""
        self._data = self._data.copy()
        self._data.fill(0)
        self._version.value += 1
        return self

    def sum(self, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
        """The sum of all elements (a dense 0-dim tensor), or over `dim`: a sparse tensor
        over the sparse dims that remain, dense when no sparse dim remains."""
        data = self._data
        values = data.values
        xp = module_of(values)
        if dtype is not None:
            values = values.astype(dtypes.to_dtype(dtype).np_dtype)
        if dim is None:
            if self._grad_values is not None and is_grad_enabled():
                return self._grad_values.sum(dtype=dtype)
            return _make(xp.asarray(values.sum()))
        if keepdim:
            raise NotImplementedError("sum(keepdim=True) of a sparse tensor is not supported")
        dims = normalize_dims(dim, len(data.shape), "sparse.sum")
        n_sparse = data.sparse_dim
        dense_axes = tuple(1 + d - n_sparse for d in dims if d >= n_sparse)
        if dense_axes:
            values = values.sum(axis=dense_axes)
        kept = [d for d in range(n_sparse) if d not in dims]
        dense_shape = tuple(size for d, size in enumerate(data.shape)
                            if d >= n_sparse and d not in dims)
        if not kept:  # every sparse dim summed: the result is dense
            return _make(xp.asarray(values.sum(axis=0)))
        shape = Size(tuple(data.shape[d] for d in kept) + dense_shape)
        return wrap_coo(data.indices[kept], values, shape, False).coalesce()

    def _scaled(self, factor) -> SparseTensor:
        data = self._data
        if self._grad_values is not None:
            return with_values(data.indices, self._grad_values * factor, data.shape,
                               data.coalesced)
        values = data.values * factor
        if values.dtype != data.values.dtype and data.values.dtype.kind == "f":
            values = values.astype(data.values.dtype)
        return wrap_coo(data.indices, values, data.shape, data.coalesced)

    # -- printing and refusals ---------------------------------------------------------

    def __repr__(self, *, tensor_contents=None) -> str:
        data = self._data
        pad = " " * 7
        indices = _indent(repr(_make(data.indices)), len("tensor(indices="))
        values = repr(_make(data.values)).replace(f", dtype={self.dtype})", ")")
        values = _indent(values, len("tensor(values="))
        extra = "" if self.device.type == "cpu" else f", device='{self.device}'"
        if self.dtype is not dtypes.get_default_dtype():
            extra += f", dtype={self.dtype}"
        return (f"tensor(indices={indices},\n{pad}values={values},\n{pad}size="
                f"{tuple(data.shape)}, nnz={self._nnz()}{extra}, layout=ember.sparse_coo)")

    def numpy(self, *, force: bool = False):
        raise NotImplementedError("numpy() of a sparse tensor: call to_dense() first")

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError("a sparse tensor can't be turned into an array: call "
                                  "to_dense() first")

    def stride(self, dim=None):
        raise RuntimeError("Sparse tensors do not have strides")

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError("Sparse tensors do not have is_contiguous")


def refuse_dense_methods(methods, properties) -> None:
    """Make every dense method and property (names from the method table) that SparseTensor
    does not define refuse sparse tensors with a clear message, instead of failing deep
    inside; called by ``ember/_tensor_methods.py`` when it attaches the table."""
    for name in list(methods) + ["item", "tolist", "__bool__", "__float__", "__int__",
                                 "__iter__", "data_ptr", "cpu_array", "storage_offset",
                                 "untyped_storage"]:
        if name not in SparseTensor.__dict__:
            setattr(SparseTensor, name, _unsupported(name))
    for name in properties:
        if name not in SparseTensor.__dict__:
            setattr(SparseTensor, name, property(_unsupported(name)))


def _indent(text: str, width: int) -> str:
    return text.replace("\n", "\n" + " " * width)


def wrap_coo(indices, values, shape, coalesced: bool) -> SparseTensor:
    """A sparse tensor around index and value arrays (no copy, no checks)."""
    return _make(CooData(indices, values, shape, coalesced), cls=SparseTensor)


def values_of(s: SparseTensor) -> Tensor:
    """The stored values of `s` as a Tensor, in the autograd graph when they need grad."""
    return s._grad_values if s._grad_values is not None else _make(s._data.values)


def with_values(indices, values: Tensor, shape, coalesced: bool) -> SparseTensor:
    """A sparse tensor around `indices` and the Tensor `values`, which it keeps as the
    source of its gradient when they require grad."""
    out = wrap_coo(indices, values._data, shape, coalesced)
    if values.requires_grad and is_grad_enabled():
        out._grad_values = values
    return out


class ToDense(Function):
    """The dense tensor of (indices, values): its gradient to the values is the dense
    gradient read at the indices (repeated indices each get the same gradient)."""

    _name = "ToDenseBackward0"

    @staticmethod
    def forward(ctx, values, *, indices, shape):
        ctx.indices = indices
        return CooData(indices, values, shape).to_dense()

    @staticmethod
    def backward(ctx, grad):
        return grad[tuple(_make(row) for row in ctx.indices)]


def _rebuild_sparse(indices, values, shape, coalesced, device_str):
    out = wrap_coo(indices, values, shape, coalesced)
    return out if device_str == "cpu" else out.to(device_str)


def _check_pair(op: str, a: SparseTensor, b: SparseTensor) -> None:
    if a._data.shape != b._data.shape:
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(a.shape)} while other has size {list(b.shape)}")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"{op}: expected same sparse dims, got {a.sparse_dim()} and "
                           f"{b.sparse_dim()}")
    if a.device != b.device:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, {a.device} and {b.device}!")


def _concat(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    """``a + b`` for two sparse tensors: their entries side by side (not coalesced)."""
    _check_pair("add", a, b)
    xp = module_of(a._data.values)
    dtype = np.result_type(a._data.values.dtype, b._data.values.dtype)
    indices = xp.concatenate([a._data.indices, b._data.indices], axis=1)
    values = xp.concatenate([a._data.values.astype(dtype, copy=False),
                             b._data.values.astype(dtype, copy=False)])
    return wrap_coo(indices, values, a._data.shape, a._nnz() + b._nnz() == 0)


def _dense_plus_sparse(dense: Tensor, sparse: SparseTensor) -> Tensor:
    """``dense + sparse``: a dense tensor, differentiable in `dense` (and in the sparse
    values when they require grad)."""
    if dense.device != sparse.device:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, {dense.device} and {sparse.device}!")
    if sparse._grad_values is not None:
        return dense + sparse.to_dense()
    return Add.apply(dense, sparse)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants=None, is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor from (sparse_dim, nnz) `indices` and (nnz, *dense) `values`.

    Without `size`, each sparse dimension is one more than its largest index and the
    dense dimensions are those of `values`.

    >>> s = ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], [3., 4., 5.], (2, 3))
    >>> s.to_dense()
    tensor([[0., 0., 3.],
            [9., 0., 0.]])
    """
    if requires_grad:
        raise NotImplementedError("ember's sparse tensors do not record gradients "
                                  "(requires_grad=True is not supported)")
    idx = indices if isinstance(indices, Tensor) else make_tensor(indices, dtype=dtypes.int64)
    vals = values if isinstance(values, Tensor) else make_tensor(values, dtype=dtype)
    if idx._data.dtype.kind not in "iu":
        raise RuntimeError(f"indices must be an int64 tensor, got {idx.dtype}")
    if dtype is not None:
        vals = vals.to(dtypes.to_dtype(dtype))
    if device is not None:
        idx, vals = idx.to(device), vals.to(device)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    sparse_dim, nnz = idx.shape
    if vals.dim() == 0 or vals.shape[0] != nnz:
        got = vals.shape[0] if vals.dim() else 0
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {got}")
    index_array = idx._data.astype(np.int64)
    xp = module_of(index_array)
    if nnz and int(index_array.min()) < 0:
        dim = int(xp.nonzero((index_array < 0).any(axis=1))[0][0])
        raise RuntimeError(f"found negative index {int(index_array[dim].min())} for dim {dim}")
    dense_shape = tuple(vals.shape[1:])
    if size is None:
        sparse_shape = tuple(int(m) + 1 for m in index_array.max(axis=1)) if nnz else (
            (0,) * sparse_dim)
        shape = sparse_shape + dense_shape
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != sparse_dim + len(dense_shape):
            raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + "
                               f"dense_dim ({len(dense_shape)}), but got {len(shape)}")
        if shape[sparse_dim:] != dense_shape:
            expected = [nnz] + list(shape[sparse_dim:])
            raise RuntimeError(f"values has incorrect size, expected {expected}, got "
                               f"{list(vals.shape)}")
        if nnz:
            top = index_array.max(axis=1)
            for d in range(sparse_dim):
                if int(top[d]) >= shape[d]:
                    raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size "
                                       f"is {shape[d]} but found index {int(top[d])}")
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    return with_values(index_array, vals, Size(shape), coalesced)


def to_sparse(input: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim: int | None = None) -> SparseTensor:
    """The entries of a dense tensor that are not zero, as a coalesced COO tensor
    (``Tensor.to_sparse``).  With `sparse_dim` (or `dense_dim`) below ``dim()``, the
    indices address the leading dims and each stored value is a slice holding a non-zero.

    NaN counts as non-zero.  ember's sparse tensors record no gradient, so a tensor that
    requires one is refused (detach it first).
    """
    if isinstance(input, SparseTensor):
        return input
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError(f"to_sparse(layout={layout}): ember's sparse tensors have "
                                  "the COO layout only")
    ndim = input.dim()
    if sparse_dim is None:
        sparse_dim = ndim if dense_dim is None else ndim - dense_dim
    if ndim and not 0 < sparse_dim <= ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [1,{ndim}] range, "
                           f"but {sparse_dim} is given")
    if input.requires_grad and is_grad_enabled():
        raise NotImplementedError("to_sparse() of a tensor that requires grad: ember's sparse "
                                  "tensors record no gradient; call detach() first")
    data = input._data
    xp = module_of(data)
    if ndim == 0:  # one value, stored when it is not zero
        nnz = int(bool(data != 0))
        return wrap_coo(xp.zeros((0, nnz), np.int64), data.reshape(1)[:nnz], Size(()), True)
    nonzero = data != 0
    if sparse_dim < ndim:  # a slice is stored when any of its entries is not zero
        nonzero = nonzero.reshape(data.shape[:sparse_dim] + (-1,)).any(axis=-1)
    where = xp.nonzero(nonzero)  # in row-major order: the result is coalesced
    indices = xp.stack(where).astype(np.int64)
    return wrap_coo(indices, data[where], Size(data.shape), True)


def sum(input: SparseTensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 - torch.sparse.sum
    """The sum of a sparse tensor: of all elements (dense 0-dim), or over `dim` (sparse while
    sparse dims remain)."""
    return input.sum(dim, dtype=dtype)
