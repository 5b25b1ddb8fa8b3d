# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""Norms: vector_norm, matrix_norm, linalg.norm and the legacy torch.norm (`legacy_norm`,
also ``Tensor.norm``), plus the condition number.

Matrix norms are compositions of ``vector_norm`` and ``svdvals``, so their
gradients come from those two.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor
from . import _kernels
from .linalg import _short, const_like, matmul, no_complex_grad, widen
from .linalg_decomp import _check_float, _check_square, inv
from .linalg_svd import svdvals
from ._util import normalize_dims, with_out, wrap_dim, xp_of

# norms


def _is_float(t: Tensor) -> bool:
    return t._data.dtype.kind in "fc" or t.dtype is dtypes.bfloat16


class VectorNorm(Function):
    _name = "LinalgVectorNormBackward0"
    _fresh_grads = True  # (the gradient is a new product: Node._fresh_grads)

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        xp = xp_of(x)
        ctx.ord, ctx.dims, ctx.keepdim, ctx.shape = ord, dims, keepdim, x.shape
        dtype = x.real.dtype if x.dtype.kind == "c" else x.dtype
        if ord == 2 and x.dtype.kind == "f":  # (|x|^2 is x^2: no pass for the abs)
            w = widen(x)[0]
            # (NumPy's: the sums of squares in one pass, without the squares' array)
            squares = (_kernels.sums_of_products(w, w, dims, keepdim)
                       if xp is np and w.ndim <= 26 else (w * w).sum(axis=dims, keepdims=keepdim))
            out = xp.sqrt(squares)
            out = xp.asarray(out, dtype=dtype)
            ctx.save_for_backward(x, out)
            return out
        a = xp.abs(widen(x)[0])
        if ord == 2:
            out = xp.sqrt((a * a).sum(axis=dims, keepdims=keepdim))
        elif ord == math.inf:
            out = a.max(axis=dims, keepdims=keepdim)
        elif ord == -math.inf:
            out = a.min(axis=dims, keepdims=keepdim)
        elif ord == 0:
            out = (a != 0).sum(axis=dims, keepdims=keepdim).astype(a.dtype)
        elif ord == 1:
            out = a.sum(axis=dims, keepdims=keepdim)
        else:
            with np.errstate(divide="ignore"):
                out = ((a ** ord).sum(axis=dims, keepdims=keepdim)) ** (1.0 / ord)
        # NOTE: a full reduction gives a NumPy scalar; make it an array so that saving it
        # below ties it to the output (double backward goes through it).
        out = xp.asarray(out, dtype=dtype)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, norm = ctx.saved_tensors
        no_complex_grad("linalg.vector_norm", x)
        ord = ctx.ord
        if ord == 0:
            return None
        if not ctx.keepdim:
            kept = [1 if i in ctx.dims else s for i, s in enumerate(ctx.shape)]
            grad, norm = grad.reshape(kept), norm.reshape(kept)
        xd = x._data
        xp = xp_of(xd)
        if ord == 2:
            # NOTE: at a zero norm the gradient is taken as zero (not nan), as in PyTorch.
            zero = const_like(norm._data == 0, norm)
            return x * (grad / (norm + zero))  # (one pass over x: the ratio is small)
        signs = xp.where(xd != xd, 0, xp.sign(xd))   # (sgn(nan) is 0, as in PyTorch)
        sign = const_like(signs, x)
        if ord == 1:
            return grad * sign
        if ord in (math.inf, -math.inf):
            # the gradient shared by the elements at the norm (none where it is nan)
            hit = xp.abs(xd) == norm._data
            count = xp.maximum(hit.sum(axis=ctx.dims, keepdims=True), 1)
            return grad * sign * const_like(hit / count, x)
        # d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) / norm^(p-1).
        # NOTE: zeros of x (their sign is 0) and zero norms (every |x|^(p-1) / norm^(p-1)
        # there is 0 for p < 1, and every x is 0 for p > 1) are moved to 1 and masked, so
        # that no inf or nan appears, in this gradient or in its own derivatives.
        nd = norm._data
        scale = ((x.abs() + const_like(xd == 0, x)).pow(ord - 1)
                 / (norm + const_like(nd == 0, norm)).pow(ord - 1))
        return grad * const_like(signs * (nd != 0), x) * scale


@with_out("linalg.vector_norm")
def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The `ord`-norm of the entries over `dim` (all dims when None), as one vector.

    `ord` may be any real number, ``inf`` (max abs), ``-inf`` (min abs) or 0 (count of
    nonzeros).
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.vector_norm(): argument 'x' must be Tensor, not "
                        f"{type(x).__name__}")
    if not _is_float(x):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_short(x)}")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got '{ord}'")
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        dim = None
    dims = normalize_dims(dim, x.dim(), "linalg.vector_norm")
    if x.dim() == 0:
        dims = ()
    if (ord < 0 or ord == math.inf) and x.numel() == 0:
        name = {math.inf: "inf", -math.inf: "-inf"}.get(ord, f"{ord:g}")
        if dim is None:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty "
                               "tensor because the operation does not have an identity")
        for d in dims:
            if x.shape[d] == 0:
                raise RuntimeError(
                    f"linalg.vector_norm cannot compute the {name} norm on the dimension {d} "
                    "because this dimension is empty and the operation does not have an "
                    "identity")
    if x.is_complex():  # the norm of |x|: Abs carries the complex gradient rule
        x = x.abs()
    return VectorNorm.apply(x, float(ord), dims, keepdim)


def _move_matrix_dims(A: Tensor, dim, op: str):
    """Permute the two matrix dims to the end; returns the permuted tensor and the dims."""
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {list(dim)}")
    d0, d1 = (wrap_dim(d, A.dim(), op) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    rest = [d for d in range(A.dim()) if d not in (d0, d1)]
    if rest + [d0, d1] != list(range(A.dim())):
        A = A.permute(rest + [d0, d1])
    return A, (d0, d1)


@with_out("linalg.matrix_norm")
def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """A matrix norm over the two dims `dim`: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    op = "linalg.matrix_norm"
    if not _is_float(A):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {_short(A)}")
    if dtype is not None:
        A = A.to(dtype)
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"{op}: Order {ord} not supported.")
    elif ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    M, (d0, d1) = _move_matrix_dims(A, tuple(dim), op)
    if ord == "fro":
        out = vector_norm(M, 2, dim=(-2, -1))
    elif ord == "nuc":
        out = svdvals(M).sum(-1)
    elif ord in (2, -2):
        out = vector_norm(svdvals(M), math.inf if ord == 2 else -math.inf, dim=-1)
    else:
        inner_dim = -2 if ord in (1, -1) else -1
        reduce = math.inf if ord > 0 else -math.inf
        out = vector_norm(vector_norm(M, 1, dim=inner_dim), reduce, dim=-1)
    if keepdim:
        shape = list(A.shape)
        shape[d0] = shape[d1] = 1
        out = out.reshape(shape)
    return out


@with_out("linalg.norm")
def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *,
         dtype=None) -> Tensor:
    """``linalg.norm``: a vector norm or a matrix norm depending on `dim` and `ord`.

    With neither, the 2-norm of all entries; an int `dim` (or a 1-D input with `ord`)
    gives a vector norm, a pair `dim` (or a 2-D input with `ord`) a matrix norm.
    """
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        dim = tuple(dim)
        if len(dim) == 1:
            return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.dim() == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                       f"1D or 2D. Got {A.dim()}D.")


def legacy_norm(input: Tensor, p="fro", dim=None, keepdim: bool = False,
                dtype=None) -> Tensor:
    """``torch.norm`` / ``Tensor.norm``: the vector p-norm over `dim` (all elements by
    default), or the nuclear norm of the matrices over `dim` for ``p='nuc'``.

    `p` may be 'fro' (the 2-norm of the entries), 'nuc', inf, -inf, 0 (the number of
    non-zeros) or any real number.  Prefer ``linalg.vector_norm``/``linalg.matrix_norm``.
    """
    if isinstance(p, str):
        if p == "nuc":
            return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                               dtype=dtype)
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        p = 2
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


@with_out("linalg.cond")
def cond(A: Tensor, p=None) -> Tensor:
    """The condition number of `A` in the norm `p` (default: 2, from singular values)."""
    _check_float("linalg.cond", A)
    if p in (None, 2, -2):
        s = svdvals(A)
        top, bottom = _ends(s)
        return top / bottom if p != -2 else bottom / top
    _check_square("linalg.cond", A)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def _ends(s: Tensor):
    """(largest, smallest) singular values along the last dim, differentiably."""
    k = s.shape[-1]
    first = matmul(s, _basis(s, k, 0))
    last = matmul(s, _basis(s, k, k - 1))
    return first, last


def _basis(like: Tensor, k: int, i: int) -> Tensor:
    e = np.zeros(k)
    e[i] = 1
    return const_like(e, like)
