# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""Linear algebra, part 1: products (matmul and its family, tensordot, kron,
the ``add*`` fused products, trace, cross) and norms.

Decompositions and solvers (inv, det, solve, cholesky, qr, svd, eigh, ...) live in
``linalg_decomp.py``.  Backward formulas are written with these same ops, so the
gradients can be differentiated again.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function, record_node
from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Tensor, _make
from ._broadcast import broadcast_shapes, broadcasts_to
from . import _parallel
from ._kernels import sum_leading
from ._autocast import casts_together
from ._util import check_same_device, promote, with_out, wrap_dim, xp_of
from .sparse_matmul import matmul_with_sparse
from .complex import conj as complex_conj

# C++ names PyTorch prints in dtype-mismatch messages of the matrix products.
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}
_SHORT_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}


# ---------------------------------------------------------------------------
# small differentiable helpers shared with linalg_decomp.py


def const_like(array, like: Tensor) -> Tensor:
    """A constant tensor (no grad) on `like`'s device with `like`'s dtype."""
    xp = xp_of(like._data)
    return _make(xp.asarray(array, dtype=like._data.dtype))


def eye_like(n: int, like: Tensor, m: int | None = None) -> Tensor:
    """The identity matrix as a constant tensor beside `like`."""
    xp = xp_of(like._data)
    return _make(xp.eye(n, n if m is None else m, dtype=like._data.dtype))


def mT(t: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """Transpose of the last two dims (a view)."""
    return t.transpose(-2, -1)


def conj(t: Tensor) -> Tensor:
    """The complex conjugate (`t` itself when real)."""
    return complex_conj(t)


def mH(t: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """Conjugate transpose of the last two dims."""
    return conj(t.transpose(-2, -1))


def no_complex_grad(op: str, *tensors) -> None:
    """NotImplementedError where a backward formula is written for real inputs only."""
    if any(t is not None and t._data.dtype.kind == "c" for t in tensors):
        raise NotImplementedError(f"{op}: gradients of complex tensors are not implemented")


def unsqueeze_last(t: Tensor, count: int = 1) -> Tensor:
    """`t` with `count` trailing size-1 dims added (a reshape)."""
    return t.reshape(tuple(t.shape) + (1,) * count)


def diagonal(t: Tensor) -> Tensor:
    """The diagonal of the last two (square) dims: ``(t * I).sum(-1)``."""
    n = t.shape[-1]
    return (t * eye_like(n, t)).sum(-1)


def diag_embed(v: Tensor) -> Tensor:
    """Square matrices with `v` (over its last dim) on their diagonal."""
    n = v.shape[-1]
    return unsqueeze_last(v) * eye_like(n, v)


def tril(t: Tensor, k: int = 0) -> Tensor:
    """The lower triangle of the last two dims (others zeroed), by a constant mask."""
    n, m = t.shape[-2], t.shape[-1]
    return t * const_like(np.tri(n, m, k), t)


def _cpp(t: Tensor) -> str:
    return _CPP_NAMES[t.dtype.name]


def _short(t: Tensor) -> str:
    return _SHORT_NAMES[t.dtype.name]


def _shape_str(shape) -> str:
    return "x".join(str(s) for s in shape)


def _check_matrix_dtypes(a: Tensor, b: Tensor) -> None:
    if a._data.dtype != b._data.dtype and not casts_together(a, b):
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {_cpp(a)} != {_cpp(b)}")
    if a._data.dtype == np.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")


def _either_sparse(a, b) -> bool:
    return getattr(a, "is_sparse", False) or getattr(b, "is_sparse", False)


def _check_tensor(op: str, *items) -> None:
    for t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument must be Tensor, not {type(t).__name__}")
    check_same_device(op, *items)


# ---------------------------------------------------------------------------
# matmul and its special cases


def widen(*arrays):
    """float16/bfloat16 arrays as float32 (NumPy has no fast or same-dtype kernels for them)."""
    return tuple(a.astype(np.float32) if a.dtype.itemsize == 2 and a.dtype.kind != "i" else a
                 for a in arrays)


def _matmul_arrays(a, b):
    """`a @ b` with NumPy's rules, folding the batch of `a` into one GEMM when `b` is 2-D."""
    dtype = a.dtype
    if (dtype.itemsize == 2 or b.dtype.itemsize == 2) and xp_of(a) is np:
        a, b = widen(a, b)
    if a.ndim > 2 and b.ndim == 2:
        lead = a.shape[:-1]
        out = _parallel.matmul(a.reshape(-1, a.shape[-1]), b).reshape(lead + (b.shape[-1],))
    else:
        out = _parallel.matmul(a, b)
    return out.astype(dtype, copy=False)


class MatMul(Function):
    """``a @ b`` for every rank combination matmul accepts (1-D operands included)."""

    _fresh_grads = True  # each gradient is a new product (see Node._fresh_grads)

    @staticmethod
    def forward(ctx, a, b, name="MmBackward0"):
        ctx._name = name
        ctx.save_for_backward(a, b)
        ctx.ndims = (a.ndim, b.ndim)
        if a.ndim == 1 and b.ndim == 1:
            xp = xp_of(a)
            return xp.asarray(xp.dot(*widen(a, b)), dtype=a.dtype)
        return _matmul_arrays(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        na, nb = ctx.ndims
        need_a = ctx._edges[0][0] is not None
        need_b = ctx._edges[1][0] is not None
        if na == 1 and nb == 1:
            return (grad * conj(b) if need_a else None), (grad * conj(a) if need_b else None)
        if na == 2 and nb == 2 and _plain_matrices(grad, a, b):
            return _matrix_grads(grad, a, b, need_a, need_b)
        if na == nb > 2 and _plain_stacks(grad, a, b):
            return _stack_grads(grad, a, b, need_a, need_b)
        a2 = a.reshape(1, -1) if na == 1 else a
        b2 = b.reshape(-1, 1) if nb == 1 else b
        out_shape = tuple(grad.shape)
        g2 = grad.reshape(out_shape[:len(out_shape) - (na > 1) - (nb > 1)]
                          + (a2.shape[-2], b2.shape[-1]))
        ga = gb = None
        if need_a:
            if na == 2 and nb > 2:
                # sum over the batch folded into one product: (n, B*m) @ (B*m, k)
                batch = g2.dim() - 2
                perm = (batch,) + tuple(range(batch)) + (batch + 1,)
                g_cat = g2.permute(perm).reshape(g2.shape[-2], -1)
                b_cat = b2.expand(tuple(g2.shape[:-2]) + tuple(b2.shape[-2:]))
                b_cat = b_cat.permute(perm).reshape(b2.shape[-2], -1)
                ga = matmul(g_cat, mH(b_cat))
            else:
                ga = matmul(g2, mH(b2))
            if na == 1:
                ga = ga.reshape(tuple(ga.shape[:-2]) + (ga.shape[-1],))
        if need_b:
            if nb == 2 and na > 2:
                k = a2.shape[-1]
                gb = _right_grad(a2.reshape(-1, k), g2.reshape(-1, g2.shape[-1]), b2)
            else:
                gb = _right_grad(a2, g2, b2)
            if nb == 1:
                gb = gb.reshape(tuple(gb.shape[:-1]))
        return ga, gb


def _plain_matrices(g: Tensor, a: Tensor, b: Tensor) -> bool:
    """A first-order backward of a real, dense 2-D product: its gradients can be taken
    on the arrays (`_matrix_grads`), with no graph recorded."""
    return not (STATE.enabled or g.is_sparse or a.is_sparse or b.is_sparse) \
        and a._data.dtype.kind == "f" and b._data.dtype.kind == "f"


def _input_shape(ctx) -> tuple:
    """The shape of a node's first input, from the edge to it (the metadata the engine
    checks gradients against); only asked when that input needs a gradient."""
    node, nr = ctx._edges[0]
    return node._out_meta[nr][0]


def _bias_grad(g: Tensor) -> Tensor:
    """A linear layer's bias gradient: `g`'s column sums, on the array (the engine would
    sum it through two recorded-form ops, ~15 us per layer)."""
    summed = sum_leading(g._data, (0,), False)  # (the same sums as ember.sum's)
    return _make(g._data.sum(axis=0) if summed is None else summed)


def _plain_stacks(g: Tensor, a: Tensor, b: Tensor) -> bool:
    """A first-order backward of a product of two real stacks of matrices of one batch
    shape (no broadcasting), float32 or float64 NumPy arrays of one dtype: its gradients
    can be taken on the arrays (`_stack_grads`)."""
    gd, ad, bd = g._data, a._data, b._data
    return (type(gd) is type(ad) is type(bd) is np.ndarray and _plain_matrices(g, a, b)
            and gd.dtype == ad.dtype == bd.dtype and gd.dtype.itemsize >= 4
            and ad.shape[:-2] == bd.shape[:-2] == gd.shape[:-2])


def _stack_grads(g: Tensor, a: Tensor, b: Tensor, need_a: bool, need_b: bool) -> tuple:
    """``(g @ b^H, a^H @ g)`` for stacks of real matrices (`_plain_stacks`), each written
    in the memory order of the input it is the gradient of (``np.empty_like``, whose
    order 'K' lays the dims out in the order of the input's strides).

    NOTE: why.  Attention's q, k and v are views of one projection's output, split by
    heads and transposed: (B, H, T, D) views of (B, T, H*D) memory.  Gradients made
    C-contiguous in (B, H, T, D) then had to be copied back into (B, T, H*D) order by
    the backward of the view (GPT benchmark: four copies of 262K elements a step, ~90
    us each); laid out like their inputs, the backward of the transposes and views are
    free views, as in the forward.
    """
    gd, ad, bd = g._data, a._data, b._data
    ga = _product_into(gd, np.swapaxes(bd, -1, -2), np.empty_like(ad)) if need_a else None
    gb = _product_into(np.swapaxes(ad, -1, -2), gd, np.empty_like(bd)) if need_b else None
    return (None if ga is None else _make(ga)), (None if gb is None else _make(gb))


def _product_into(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[...] = x @ y`` for stacks of matrices; where out's matrices are column-major
    it computes ``y^T @ x^T`` into out's transpose, whose matrices are row-major (BLAS
    writes row-major blocks; NumPy's matmul into a transposed `out` takes its slow loop)."""
    if out.ndim >= 2 and out.strides[-2] == out.itemsize and out.strides[-1] != out.itemsize:
        _parallel.matmul(np.swapaxes(y, -1, -2), np.swapaxes(x, -1, -2),
                         out=np.swapaxes(out, -1, -2))
    else:
        _parallel.matmul(x, y, out=out)
    return out


def _matrix_grads(g: Tensor, a: Tensor, b: Tensor, need_a: bool, need_b: bool) -> tuple:
    """``(g @ b^T, a^T @ g)`` on the arrays, laid out as `_right_grad` lays them out.

    NOTE: as ember ops each product also made a transposed view and ran a Function
    (~10 us per linear layer's backward, a batch-1 layer's whole cost)."""
    gd, ad, bd = g._data, a._data, b._data
    transposed = bd.flags.f_contiguous and not bd.flags.c_contiguous  # see _right_grad
    if need_a and need_b and gd.dtype == ad.dtype == bd.dtype and gd.dtype.kind == "f" \
            and gd.dtype.itemsize >= 4:
        # the two products side by side (see `_parallel.matmul_pair`); half precision
        # goes through `_matmul_arrays`, which computes it in float32 (`widen`)
        ga, gb = _parallel.matmul_pair(gd, bd.T, *((gd.T, ad) if transposed else (ad.T, gd)))
        return _make(ga), _make(gb.T if transposed else gb)
    ga = _make(_matmul_arrays(gd, bd.T)) if need_a else None
    gb = None
    if need_b:
        if transposed:
            gb = _make(_matmul_arrays(gd.T, ad).T)
        else:
            gb = _make(_matmul_arrays(ad.T, gd))
    return ga, gb


def _right_grad(a: Tensor, g: Tensor, b: Tensor) -> Tensor:
    """``mH(a) @ g``, the gradient of `b` in ``a @ b``, laid out like `b`.

    When `b` is a transposed matrix (``weight.t()`` in a linear layer), it is computed as
    ``mH(mH(g) @ a)``: the same product, but the weight's own gradient then comes out
    C-contiguous, and its leaf keeps it as ``.grad`` without a copy.
    """
    data = b._data
    if data.ndim == 2 and data.flags.f_contiguous and not data.flags.c_contiguous:
        return mH(matmul(mH(g), a))
    return matmul(mH(a), g)


def _matmul_name(na: int, nb: int) -> str:
    if na == 1 and nb == 1:
        return "DotBackward0"
    if na == 2 and nb == 1:
        return "MvBackward0"
    if na == 2 and nb == 2:
        return "MmBackward0"
    if na == 1 and nb == 2:
        return "SqueezeBackward4"
    return "UnsafeViewBackward0"


@with_out("matmul")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with NumPy's rules: 1-D operands are vectors, leading dims broadcast.

    >>> ember.matmul(ember.ones(5, 2, 3), ember.ones(3, 4)).shape
    ember.Size([5, 2, 4])
    """
    if _either_sparse(input, other):
        return matmul_with_sparse("matmul", input, other)
    _check_tensor("matmul", input, other)
    na, nb = input.dim(), other.dim()
    if na == 0 or nb == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D")
    sa, sb = tuple(input.shape), tuple(other.shape)
    if na == 1 and nb == 1:
        return dot(input, other)
    if na == 2 and nb == 1:
        return mv(input, other)
    _check_matrix_dtypes(input, other)
    k_a = sa[-1]
    k_b = sb[-2] if nb > 1 else sb[0]
    if k_a != k_b:
        if nb == 1:
            rows = math.prod(sa[:-1])
            raise RuntimeError(
                f"size mismatch, got input ({rows}), mat ({rows}x{k_a}), vec ({k_b})")
        if nb == 2:
            rows = math.prod(sa[:-1])
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k_a} and "
                               f"{_shape_str(sb)})")
        batch = broadcast_shapes(sa[:-2], sb[:-2])
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{math.prod(batch)}, {k_a}] but got: [{math.prod(batch)}, {k_b}].")
    broadcast_shapes(sa[:-2], sb[:-2])
    return MatMul.apply(input, other, name=_matmul_name(na, nb))


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices (2-D only; no broadcasting)."""
    if _either_sparse(input, mat2):
        return matmul_with_sparse("mm", input, mat2)
    _check_tensor("mm", input, mat2)
    if input.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({_shape_str(input.shape)} and {_shape_str(mat2.shape)})")
    _check_matrix_dtypes(input, mat2)
    return MatMul.apply(input, mat2, name="MmBackward0")


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size."""
    _check_tensor("bmm", input, mat2)
    if input.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, _, k = input.shape
    if tuple(mat2.shape[:2]) != (b, k):
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but "
            f"got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    if input._data.dtype != mat2._data.dtype and not casts_together(input, mat2):
        raise RuntimeError(f"expected scalar type {_short(input)} but found {_short(mat2)}")
    _check_matrix_dtypes(input, mat2)
    return MatMul.apply(input, mat2, name="BmmBackward0")


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix-vector product."""
    _check_tensor("mv", input, vec)
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {input.dim()}, {vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        n, k = input.shape
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({vec.shape[0]})")
    if input._data.dtype != vec._data.dtype:
        names = (_short(vec), _short(input), _short(vec))  # (result, mat, vec) as PyTorch
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {names[0]}, {names[1]}, and "
            f"{names[2]}")
    _check_matrix_dtypes(input, vec)
    return MatMul.apply(input, vec, name="MvBackward0")


def dot(input: Tensor, tensor: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of the same length (a 0-dim result)."""
    _check_tensor("dot", input, tensor)
    if input.dim() != 1 or tensor.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.dim()}D and {tensor.dim()}D tensors")
    if input.shape[0] != tensor.shape[0]:
        n, m = input.shape[0], tensor.shape[0]
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
            f"number of elements, but got {n} and {m} elements respectively")
    if input._data.dtype != tensor._data.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_short(input)} and {_short(tensor)}")
    _check_matrix_dtypes(input, tensor)
    return MatMul.apply(input, tensor, name="DotBackward0")


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """Dot product of 1-D tensors, conjugating the first one when it is complex."""
    if isinstance(input, Tensor) and input.is_complex():
        _check_tensor("vdot", input, other)
        if input.dim() != 1 or other.dim() != 1:
            raise RuntimeError(
                f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
        return dot(conj(input), other)
    out = dot(input, other)
    if out.grad_fn is not None:
        out.grad_fn._name = "VdotBackward0"
    return out


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sum of products over the last dim of both tensors (a product for 0-dim ones)."""
    _check_tensor("inner", input, other)
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """Outer product of two vectors: ``out[i, j] = input[i] * vec2[j]``."""
    _check_tensor("outer", input, vec2)
    for name, t in (("vec1", input), ("vec2", vec2)):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    return input.reshape(-1, 1) * vec2


ger = outer


@with_out("tensordot")
def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Contract the last `dims` dims of `a` with the first `dims` of `b`, or the dims
    listed in a pair ``(dims_a, dims_b)``."""
    _check_tensor("tensordot", a, b)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a = list(range(a.dim() - dims, a.dim()))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    dims_a = [wrap_dim(d, a.dim(), "tensordot") for d in dims_a]
    dims_b = [wrap_dim(d, b.dim(), "tensordot") for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    out_shape = [a.shape[d] for d in free_a] + [b.shape[d] for d in free_b]
    k = math.prod(a.shape[d] for d in dims_a)
    a2 = a.permute(free_a + dims_a).reshape(-1, k)
    b2 = b.permute(dims_b + free_b).reshape(k, -1)
    return mm(a2, b2).reshape(out_shape)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: blocks ``input[i, j] * other`` laid out on a grid."""
    _check_tensor("kron", input, other)
    nd = max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    # interleave: a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...]
    a_shape, b_shape = [], []
    for sa, sb in zip(a.shape, b.shape):
        a_shape += [sa, 1]
        b_shape += [1, sb]
    prod = a.reshape(a_shape) * b.reshape(b_shape)
    return prod.reshape([sa * sb for sa, sb in zip(a.shape, b.shape)])


# ---------------------------------------------------------------------------
# fused products: beta * input + alpha * (product)


class AddProduct(Function):
    """``beta * input + alpha * product(a, b)`` for addmm, addmv, addr, baddbmm, addbmm."""

    _fresh_grads = True  # (input's gradient may be `grad` itself: the engine checks)

    @staticmethod
    def forward(ctx, input, a, b, kind="addmm", beta=1, alpha=1):
        # (ember's calls pass the scalars as keywords, so that the node's edges are its
        # three tensors', as PyTorch's AddmmBackward0 has three next_functions; traces
        # saved before that pass them by position, and still load)
        ctx.kind, ctx.beta, ctx.alpha = kind, beta, alpha
        ctx._name = _ADD_NAMES[kind]
        ctx.save_for_backward(a, b)
        xp = xp_of(a)
        dtype = a.dtype
        if (kind == "addmm" and beta == 1 and alpha == 1 and _linear_arrays(input, a, b)
                and dtype.itemsize >= 4):
            # a linear layer's: the bias added by the threads computing the product's parts
            return _parallel.matmul(a, b, bias=input)
        if kind == "addr":
            prod = xp.multiply.outer(a, b)
        elif kind == "addbmm":
            prod = xp.matmul(*widen(a, b)).sum(axis=0)
        else:
            prod = _matmul_arrays(a, b)
        if alpha != 1:
            prod = prod * alpha
        if beta == 0:  # NOTE: input is ignored then, even when it holds nan or inf
            return prod.astype(dtype, copy=False)
        shift = input * beta if beta != 1 else input
        if shift.dtype == prod.dtype and broadcasts_to(shift.shape, prod.shape):
            prod += shift  # into the fresh product: no second result array (a linear's bias)
            return prod.astype(dtype, copy=False)
        return (shift + prod).astype(dtype, copy=False)

    @classmethod
    def record_linear(cls, bias: Tensor, input: Tensor, weight_t: Tensor) -> Tensor:
        """What ``apply(bias, input, weight_t, kind="addmm", beta=1, alpha=1)`` does for a
        linear layer's operands (`_direct.plain_linear`'s) while recording, without apply's
        general steps: its argument loop, the check for shared arrays, the forward's
        checks of dtypes and shapes.

        NOTE: ~4 us of a small layer's ~30 alone, more inside a training step, where each
        line of Python after a product runs from colder caches."""
        if PROCESS.observer is not None:  # (a profiler or a tracer sees the op as usual)
            return cls.apply(bias, input, weight_t, kind="addmm", beta=1, alpha=1)
        b, x, wt = bias._data, input._data, weight_t._data
        ctx = _new_node(cls)
        ctx.kind, ctx.beta, ctx.alpha = "addmm", 1, 1
        ctx._name = "AddmmBackward0"
        ctx._to_save = (x, wt)
        result = _make(_parallel.matmul(x, wt, bias=b))
        record_node(ctx, (bias, input, weight_t), (b, x, wt), (result,))
        return result

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        kind, beta, alpha = ctx.kind, ctx.beta, ctx.alpha
        g_in = ga = gb = None
        if ctx._edges[0][0] is not None and beta != 0:
            g_in = grad * beta if beta != 1 else grad
        g = grad * alpha if alpha != 1 else grad
        if kind == "addr":
            ga = matmul(g, conj(b)) if ctx._edges[1][0] is not None else None
            gb = matmul(mT(g), conj(a)) if ctx._edges[2][0] is not None else None
            return g_in, ga, gb
        if kind == "addmm" and _plain_matrices(g, a, b):
            if g_in is not None and _input_shape(ctx) == g_in.shape[1:]:
                g_in = _bias_grad(g_in)
            return (g_in,) + _matrix_grads(g, a, b, ctx._edges[1][0] is not None,
                                           ctx._edges[2][0] is not None)
        if kind == "addbmm":
            g = g.expand((a.shape[0],) + tuple(g.shape))
        if ctx._edges[1][0] is not None:
            ga = matmul(g.reshape(-1, 1), mH(unsqueeze_last(b))) \
                if kind == "addmv" else matmul(g, mH(b))
        if ctx._edges[2][0] is not None:
            gb = _right_grad(a, g, b)
        return g_in, ga, gb


_new_node = object.__new__


class AddProductInplace(AddProduct):
    _inplace = True


_ADD_NAMES = {"addmm": "AddmmBackward0", "addmv": "AddmvBackward0", "addr": "AddrBackward0",
              "baddbmm": "BaddbmmBackward0", "addbmm": "AddbmmBackward0"}


def _linear_arrays(c, x, y) -> bool:
    """Whether ``c + x @ y`` is a linear layer's addmm on arrays: CPU float matrices of one
    dtype and a bias row `c` (N,)."""
    return (type(x) is type(y) is type(c) is np.ndarray and x.dtype == y.dtype == c.dtype
            and x.dtype.kind == "f" and x.ndim == y.ndim == 2 and x.shape[1] == y.shape[0]
            and c.shape == y.shape[1:])


def _usual_addmm(input, a, b) -> bool:
    """A linear layer's addmm (`_linear_arrays`, on the tensors).  It passes every check
    of `_add_product`, which cost ~5 us, a batch-1 layer's whole time."""
    return _linear_arrays(*(getattr(t, "_data", None) for t in (input, a, b)))


def _add_product(kind: str, input, a, b, beta, alpha, inplace: bool = False) -> Tensor:
    if kind == "addmm" and not inplace and _usual_addmm(input, a, b):
        return AddProduct.apply(input, a, b, kind=kind, beta=beta, alpha=alpha)
    _check_tensor(kind, input, a, b)
    dims = {"addmm": (2, 2), "addmv": (2, 1), "addr": (1, 1), "baddbmm": (3, 3),
            "addbmm": (3, 3)}[kind]
    if (a.dim(), b.dim()) != dims:
        if kind == "addr":
            bad = ("vec1", a) if a.dim() != 1 else ("vec2", b)
            raise RuntimeError(f"addr: Expected 1-D argument {bad[0]}, but got {bad[1].dim()}-D")
        if kind == "addmv":
            raise RuntimeError(
                f"vector + matrix @ vector expected, got {input.dim()}, {a.dim()}, {b.dim()}")
        what = ("mat1", "mat2") if kind == "addmm" else ("batch1", "batch2")
        bad = what[0] if a.dim() != dims[0] else what[1]
        raise RuntimeError(f"{bad} must be a {'matrix' if dims[0] == 2 else '3D tensor'}")
    if not (input._data.dtype == a._data.dtype == b._data.dtype) and not casts_together(
            input, a, b):
        raise RuntimeError(
            f"{kind} input tensors must have the same dtype, but got {_short(input)}, "
            f"{_short(a)}, and {_short(b)}" if kind in ("addmv", "addr")
            else f"expected m1 and m2 to have the same dtype, but got: {_cpp(a)} != {_cpp(b)}"
            if a._data.dtype != b._data.dtype
            else f"self and mat2 must have the same dtype, but got {_short(input)} and "
                 f"{_short(b)}")
    if kind == "addr":
        out_shape = (a.shape[0], b.shape[0])
    elif kind in ("baddbmm", "addbmm"):
        if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: "
                f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
        out_shape = ((a.shape[0],) if kind == "baddbmm" else ()) + (a.shape[1], b.shape[2])
    else:
        k_b = b.shape[0]
        if a.shape[1] != k_b:
            if kind == "addmv":
                n, k = a.shape
                rows = input.shape[0] if input.dim() else 1
                raise RuntimeError(
                    f"size mismatch, got input ({rows}), mat ({n}x{k}), vec ({k_b})")
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({_shape_str(a.shape)} and {_shape_str(b.shape)})")
        out_shape = (a.shape[0],) + tuple(b.shape[1:])
    in_shape = tuple(input.shape)
    try:
        full = broadcast_shapes(in_shape, out_shape)
    except RuntimeError:
        full = None
    if full != tuple(out_shape) or (inplace and in_shape != tuple(out_shape)):
        raise RuntimeError(f"The expanded size of the tensor ({out_shape[-1]}) must match the "
                           f"existing size ({in_shape[-1] if in_shape else 1}) at non-singleton "
                           f"dimension {len(out_shape) - 1}.  Target sizes: {list(out_shape)}."
                           f"  Tensor sizes: {list(in_shape)}")
    if a._data.dtype.kind in "iu":  # integer tensors take the scalars as integers (truncated)
        beta, alpha = int(beta), int(alpha)
    cls = AddProductInplace if inplace else AddProduct
    return cls.apply(input, a, b, kind=kind, beta=beta, alpha=alpha)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` (input broadcasts to the product)."""
    return _add_product("addmm", input, mat1, mat2, beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _add_product("addmv", input, mat, vec, beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return _add_product("addr", input, vec1, vec2, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return _add_product("baddbmm", input, batch1, batch2, beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2).sum(0)``."""
    return _add_product("addbmm", input, batch1, batch2, beta, alpha)


def _inplace_variant(kind: str):
    def method(input: Tensor, a: Tensor, b: Tensor, *, beta=1, alpha=1) -> Tensor:
        return _add_product(kind, input, a, b, beta, alpha, inplace=True)
    method.__name__ = kind + "_"
    method.__doc__ = f"In-place ``{kind}`` (the result is written into `input`)."
    return method


addmm_ = _inplace_variant("addmm")
addmv_ = _inplace_variant("addmv")
addr_ = _inplace_variant("addr")
baddbmm_ = _inplace_variant("baddbmm")
addbmm_ = _inplace_variant("addbmm")


# ---------------------------------------------------------------------------
# trace and cross


class Trace(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return xp_of(x).asarray(xp_of(x).trace(x))

    @staticmethod
    def backward(ctx, grad):
        n, m = ctx.shape
        return grad * eye_like(n, grad, m)


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix (integers sum in int64)."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input._data.dtype.kind in "biu":
        return Trace.apply(input.to(dtypes.int64))
    return Trace.apply(input)


class Cross(Function):
    _name = "LinalgCrossBackward0"

    @staticmethod
    def forward(ctx, a, b, dim):
        ctx.dim = dim
        ctx.save_for_backward(a, b)
        return xp_of(a).cross(a, b, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        a, b = conj(a), conj(b)  # (complex: the conjugate convention of ops/complex.py)
        ga = Cross.apply(b, grad, ctx.dim) if ctx._edges[0][0] is not None else None
        gb = Cross.apply(grad, a, ctx.dim) if ctx._edges[1][0] is not None else None
        return ga, gb


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along `dim` (the other dims broadcast)."""
    _check_tensor("linalg.cross", input, other)
    if input.dim() != other.dim():
        raise RuntimeError(
            "linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
    d = wrap_dim(dim, len(shape), "linalg.cross")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
            f"{other.shape[d]}")
    a, b = promote("linalg.cross", input, other)
    if tuple(a.shape) != shape:
        a = a.expand(shape)
    if tuple(b.shape) != shape:
        b = b.expand(shape)
    return Cross.apply(a, b, d)


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """Cross product along `dim`; without `dim`, along the first dim of size 3."""
    if dim is None:
        import warnings

        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either "
            "pass the dim explicitly or simply use torch.linalg.cross.\nThe default value of "
            "dim will change to agree with that of linalg.cross in a future release.",
            UserWarning, stacklevel=2)
        shape = broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)
