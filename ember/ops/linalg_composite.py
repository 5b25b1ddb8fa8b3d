# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""Linear algebra, part 5: the matrix exponential, and the solvers and helpers PyTorch
offers on top of the others (Cholesky solves, the legacy triangular_solve, solve_ex,
tensorinv/tensorsolve, Vandermonde matrices).

Everything but `matrix_exp` is written with existing ops, so its gradients (of any
order) come from theirs.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor, _make
from .joining import cat
from .linalg import _short, eye_like, matmul, mH
from . import _lapack_info
from .linalg_decomp import (
    LinAlgError, _check_square, _failures, _without_failures, inv, multi_dot, solve,
    solve_triangular,
)
from ._util import xp_of

triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"])

# Taylor terms of exp used after scaling the matrix to a 1-norm of at most 1/2: the
# remainder is below 0.5^19 / 19! ~ 1e-23, far under float64's rounding.
_TAYLOR_TERMS = 18


def _expm_array(a):
    """exp of each square matrix in `a`: scaling and squaring around a Taylor polynomial."""
    xp = xp_of(a)
    norm = float(xp.abs(a).sum(axis=-2).max()) if a.size else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    scaled = a / (2.0 ** squarings)
    eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    result = eye.copy()
    term = eye
    for k in range(1, _TAYLOR_TERMS + 1):
        term = (term @ scaled) / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


class MatrixExp(Function):
    """exp(A) = sum A^k / k!; its gradient is the top-right block of the exponential of
    [[A^H, G], [0, A^H]] (the Fréchet derivative of exp in the direction G)."""

    _name = "LinalgMatrixExpBackward0"

    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        return _expm_array(A)

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        n = A.shape[-1]
        AH = mH(A)
        top = cat([AH, grad], -1)
        bottom = cat([grad.new_zeros(grad.shape), AH], -1)
        return MatrixExp.apply(cat([top, bottom], -2))[..., :n, n:]


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix in `A`."""
    _check_square("linalg.matrix_exp", A)
    return MatrixExp.apply(A)


class CholeskySolve(Function):
    """X = A^-1 B for A = L L^H (or U^H U): the forward reads only the factor's triangle;
    the backward treats the factor as a full matrix, as PyTorch's does: with
    gB = A^-1 G and gA = -gB X^H, the factor's gradient is (gA + gA^H) L (or U (...))."""

    _name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx, B, L, upper):
        xp = xp_of(L)
        T = xp.triu(L) if upper else xp.tril(L)
        first, second = (T.conj().swapaxes(-1, -2), T) if upper else (T, T.conj().swapaxes(-1, -2))
        X = xp.linalg.solve(second, xp.linalg.solve(first, B))
        ctx.upper = upper
        ctx.save_for_backward(L, X)
        return X

    @staticmethod
    def backward(ctx, grad):
        L, X = ctx.saved_tensors
        gB = CholeskySolve.apply(grad, L, ctx.upper)
        gA = -matmul(gB, mH(X))
        sym = gA + mH(gA)
        gL = matmul(L, sym) if ctx.upper else matmul(sym, L)
        return gB, gL, None


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """The solution X of ``A X = B`` given the Cholesky factor of A (``A = L L^H``, or
    ``U^H U`` with `upper`); only the factor's triangle is read."""
    _check_square("cholesky_solve", L)
    if B.dim() < 2:
        raise RuntimeError(f"cholesky_solve: b should have at least 2 dimensions, but has "
                           f"{B.dim()} dimensions instead")
    if B.dtype != L.dtype:
        raise RuntimeError(f"cholesky_solve: Expected b and A to have the same dtype, but found "
                           f"b of type {_short(B)} and A of type {_short(L)} instead.")
    return CholeskySolve.apply(B, L, bool(upper))


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A = L L^H`` (or ``U^H U`` with `upper`) from its Cholesky factor."""
    _check_square("cholesky_inverse", L)
    return cholesky_solve(eye_like(L.shape[-1], L).expand(tuple(L.shape)), L, upper)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """The legacy form of ``linalg.solve_triangular``: solves ``A X = b`` (``A^T X = b``
    with `transpose`); returns ``(solution, cloned_coefficient)``."""
    if b.dim() < 2 or A.dim() < 2:
        raise RuntimeError("triangular_solve: b and A should have at least 2 dimensions")
    coefficient = A.transpose(-2, -1) if transpose else A
    solution = solve_triangular(coefficient, b, upper=upper != transpose,
                                unitriangular=unitriangular)
    batch = tuple(solution.shape[:-2])
    return triangular_solve_result(solution, A.expand(batch + tuple(A.shape[-2:])).clone())


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """``linalg.solve`` returning ``(result, info)`` instead of raising: `info` per matrix of
    `A` the 1-based index of the first zero pivot of its LU factorization (0 where the
    system was solved, as LAPACK's getrf); a singular system's result is nan."""
    try:
        result = solve(A, B, left=left)
        return linalg_solve_ex(result, A.new_zeros(tuple(A.shape[:-2]), dtype=dtypes.int32))
    except LinAlgError:
        info = _failures(A._data, np.linalg.inv, _lapack_info.zero_pivot)
        if check_errors or info is None:
            raise
    fixed, failed = _without_failures(A, info)
    result = solve(fixed, B, left=left)
    if B.dim() < A.dim():   # (a batch of vectors: one value fewer per matrix)
        failed = failed.squeeze(-1)
    return linalg_solve_ex(result.masked_fill(failed, float("nan")), _make(info))


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of ``H_1 ... H_k`` for the (m, n) `A` and `tau` (k), k <= n <= m:
    ``H_i = I - tau_i v_i v_i^H``, v_i column i of `A` below the diagonal, 1 on it and 0
    above (how LAPACK's geqrf stores Q, and orgqr rebuilds it).  Written with
    differentiable ops, the reflectors applied to the identity last to first."""
    op = "torch.linalg.householder_product"
    if A.dim() < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.dim() < 1 or tau.shape[-1] > n:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if A.dtype is not tau.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")
    xp = xp_of(A._data)
    rows = xp.arange(m)
    Q = eye_like(m, A, n)
    for i in reversed(range(tau.shape[-1])):
        below = _make((rows > i).astype(A._data.dtype))
        v = (A[..., :, i] * below + _make((rows == i).astype(A._data.dtype))).unsqueeze(-1)
        Q = Q - tau[..., i].unsqueeze(-1).unsqueeze(-1) * matmul(v, matmul(mH(v), Q))
    return Q


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """``linalg.householder_product`` under its LAPACK name (``torch.orgqr``)."""
    return householder_product(input, tau)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of `A` seen as a linear map from its last dims to its first `ind` dims,
    so that ``tensordot(tensorinv(A, ind), A, ind)`` is the identity."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape = tuple(A.shape[ind:]) + tuple(A.shape[:ind])
    rows = math.prod(A.shape[:ind])
    cols = math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(out_shape)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """The X with ``tensordot(A, X, X.dim()) == B``; `dims` are dims of `A` moved to the
    end first."""
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        rest = [d for d in range(A.dim()) if d not in dims]
        A = A.permute(rest + dims)
    x_shape = tuple(A.shape[B.dim():])
    rows, cols = B.numel(), math.prod(x_shape)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           f"]) == prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    return solve(A.reshape(rows, cols), B.reshape(rows)).reshape(x_shape)


def linalg_vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrix of `x` (over its last dim): columns x^0, x^1, ..., x^(N-1)."""
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n < 2:
        raise RuntimeError("linalg.vander: N must be greater than 1.")
    columns = [x.new_ones(tuple(x.shape)).unsqueeze(-1), x.unsqueeze(-1)]
    for _ in range(2, n):
        columns.append(columns[-1] * x.unsqueeze(-1))
    return cat(columns, -1)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """``torch.vander``: the Vandermonde matrix of a 1-D `x`, powers decreasing left to right
    unless `increasing`."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        return x.new_zeros((x.shape[0], 0))
    x = x if x.is_floating_point() or x.is_complex() else x.to(dtypes.int64)
    columns = [x.new_ones((x.shape[0], 1))]
    for _ in range(1, n):
        columns.append(columns[-1] * x.unsqueeze(-1))
    out = cat(columns, -1)
    return out if increasing else out.flip(-1)


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``linalg.diagonal``: ``A.diagonal(offset, dim1, dim2)`` with matrix defaults."""
    return A.diagonal(offset, dim1, dim2)


def chain_matmul(*matrices) -> Tensor:
    """The product of 2-D matrices in order (deprecated in PyTorch for
    ``linalg.multi_dot``)."""
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


__all__ = ["matrix_exp", "cholesky_solve", "cholesky_inverse", "triangular_solve", "solve_ex",
           "tensorinv", "tensorsolve", "linalg_vander", "vander", "linalg_diagonal",
           "chain_matmul"]
