# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""LU factorization with partial pivoting: ``linalg.lu``, ``lu_factor``, ``lu_factor_ex``,
``lu_solve`` and ``lu_unpack``, as PyTorch computes them on the CPU (LAPACK's getrf).

The factorization itself is getrf written with array operations
(`_lapack_info.factor_arrays`: NumPy has no LU of its own); this module unpacks it,
gives it gradients and solves with it.

Gradients: `LU` and `LUFactor` share one formula (square, tall and wide matrices);
`lu_solve` and `lu_unpack` are written with differentiable ops.
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor, _make
from . import _lapack_info
from ._util import xp_of
from .joining import cat
from .linalg import eye_like, matmul, mH, tril
from .linalg_decomp import _check_float, solve_triangular

linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"])
linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])


def permutation(pivots, m: int, dtype):
    """The permutation matrices P (..., m, m) of LAPACK `pivots` (1-based row swaps, in
    order): ``A = P L U``."""
    xp = xp_of(pivots)
    flat = pivots.reshape((-1, pivots.shape[-1])) - 1
    order = xp.tile(xp.arange(m), (flat.shape[0], 1))
    rows = xp.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        other = flat[:, j]
        here = order[:, j].copy()
        order[:, j] = order[rows, other]
        order[rows, other] = here
    # row i of P^T A is row order[i] of A, so P holds a 1 at (order[i], i)
    P = xp.zeros((flat.shape[0], m, m), dtype)
    P[rows[:, None], order, xp.arange(m)[None, :]] = 1
    return P.reshape(pivots.shape[:-1] + (m, m))


def _unpacked(lu) -> tuple:
    """(L, U) arrays of a packed `lu` (..., m, n): L (m, k) unit lower, U (k, n) upper."""
    xp = xp_of(lu)
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
    U = xp.triu(lu[..., :k, :])
    return L, U


def _square_grad(L: Tensor, U: Tensor, gL, gU) -> Tensor:
    """The gradient in A of A = L U (square, invertible; the permutation left out) from
    those of L and U: ``L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H``."""
    inner = None
    if gL is not None:
        inner = tril(matmul(mH(L), gL), -1)
    if gU is not None:
        upper = mH(tril(mH(matmul(gU, mH(U)))))
        inner = upper if inner is None else inner + upper
    # L^-H inner U^-H, as two triangular solves (Y U^-H is (U^-1 Y^H)^H)
    left = solve_triangular(mH(L), inner, upper=True, unitriangular=True)
    return mH(solve_triangular(U, mH(left), upper=True))


def _lu_grad(P: Tensor, L: Tensor, U: Tensor, gL, gU) -> Tensor:
    """The gradient in A of A = P L U from those of L (m, k) and U (k, n).

    A rectangular A splits into a square factorization and a solve: a tall one (m > n)
    is ``[L1; L2] U`` with ``L2 = A2 U^-1``, a wide one (m < n) is ``L [U1 U2]`` with
    ``U2 = L^-1 A2``; the square part takes `_square_grad`, with what the solved block's
    gradient adds to that of U (tall) or L (wide)."""
    m, n = L.shape[-2], U.shape[-1]
    if gL is None:
        gL = L * 0
    if gU is None:
        gU = U * 0
    if m == n:
        return matmul(P, _square_grad(L, U, gL, gU))
    if m > n:
        L1, L2, gL1, gL2 = L[..., :n, :], L[..., n:, :], gL[..., :n, :], gL[..., n:, :]
        # gA2 = gL2 U^-H; L2 = A2 U^-1 adds -L2^H gL2 U^-H to U's gradient
        gA2 = mH(solve_triangular(U, mH(gL2), upper=True))
        gU = gU - matmul(mH(L2), gA2)
        gA = cat([_square_grad(L1, U, gL1, gU), gA2], -2)
    else:
        U1, U2, gU1, gU2 = U[..., :, :m], U[..., :, m:], gU[..., :, :m], gU[..., :, m:]
        # gA2 = L^-H gU2; U2 = L^-1 A2 adds -L^-H gU2 U2^H to L's gradient
        gA2 = solve_triangular(mH(L), gU2, upper=True, unitriangular=True)
        gL = gL - tril(matmul(gA2, mH(U2)), -1)
        gA = cat([_square_grad(L, U1, gL, gU1), gA2], -1)
    return matmul(P, gA)


def _check_pivot(op: str, A: Tensor, pivot: bool) -> None:
    _check_float(op, A)
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not pivot:   # (PyTorch names lu_factor here whichever op was called)
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def _raise_if_singular(op: str, A: Tensor, info: Tensor) -> None:
    """PyTorch's error for the first matrix with a zero pivot (`info`), if any."""
    first = _lapack_info.first_failure(np.asarray(info.tolist(), np.int64))   # (on the host)
    if first is None:
        return
    element, position = first
    prefix = f"(Batch element {element}): " if A.dim() > 2 else ""
    raise RuntimeError(f"torch.{op}: {prefix}U[{position},{position}] is zero and using "
                       "it on lu_solve would result in a division by zero. If you still want "
                       "to perform the factorization, consider calling linalg.lu(A, pivot) or "
                       "linalg.lu_factor_ex(A, pivot)")


def _split(packed: Tensor) -> tuple:
    """(strict lower triangle (m, k), upper triangle (k, n)) of a packed (m, n) tensor,
    k = min(m, n): L without its unit diagonal, and U (or their gradients)."""
    m, n = packed.shape[-2:]
    k = min(m, n)
    return tril(packed[..., :, :k], -1), mH(tril(mH(packed[..., :k, :])))


def _l_and_u(packed: Tensor) -> tuple:
    """L (unit diagonal added) and U of a packed LU tensor, with differentiable ops."""
    lower, U = _split(packed)
    return lower + eye_like(packed.shape[-2], packed, U.shape[-2]), U


class LU(Function):
    """(P, L, U) of A; P takes no gradient."""

    _name = "LinalgLuBackward0"
    _marks_outputs = True  # (P, a float output, is marked non-differentiable)

    @staticmethod
    def forward(ctx, A):
        lu, pivots, _ = _lapack_info.factor_arrays(A)
        L, U = _unpacked(lu)
        P = permutation(pivots, A.shape[-2], A.dtype)
        ctx.mark_non_differentiable(P)
        ctx.save_for_backward(L, U)
        ctx.P = P
        return P, L, U

    @staticmethod
    def backward(ctx, gP, gL, gU):
        L, U = ctx.saved_tensors
        return _lu_grad(_make(ctx.P), L, U, gL, gU)


class LUFactor(Function):
    """(packed LU, pivots, info) of A; only LU takes a gradient."""

    _name = "LinalgLuFactorExBackward0"

    @staticmethod
    def forward(ctx, A):
        lu, pivots, info = _lapack_info.factor_arrays(A)
        ctx.mark_non_differentiable(pivots, info)
        # (the packed output itself is saved, and L and U are taken from it in backward
        # with ember ops: arrays of its own would be constants to a second derivative)
        ctx.save_for_backward(lu)
        ctx.P = permutation(pivots, A.shape[-2], A.dtype)
        return lu, pivots, info

    @staticmethod
    def backward(ctx, g_lu, g_pivots, g_info):
        (lu,) = ctx.saved_tensors
        return _lu_grad(_make(ctx.P), *_l_and_u(lu), *_split(g_lu))


def lu(A: Tensor, *, pivot: bool = True):
    """``A = P L U``: P a permutation, L unit lower triangular (m, k), U upper (k, n),
    k = min(m, n) (partial pivoting, as LAPACK's getrf)."""
    _check_pivot("linalg.lu", A, pivot)
    return linalg_lu(*LU.apply(A))


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False):
    """``lu_factor`` with `info` per matrix: the 1-based index of the first zero pivot
    (0: none); with `check_errors` a singular matrix raises."""
    _check_pivot("linalg.lu_factor_ex", A, pivot)
    lu_t, pivots, info = LUFactor.apply(A)
    if check_errors:
        _raise_if_singular("linalg.lu_factor_ex", A, info)
    return linalg_lu_factor_ex(lu_t, pivots, info)


def lu_factor(A: Tensor, *, pivot: bool = True):
    """The LU factorization packed as LAPACK packs it: ``(LU, pivots)``, L's strict lower
    triangle and U in one matrix, `pivots` the 1-based rows swapped in (int32).  A
    singular matrix raises (``lu_factor_ex`` reports it instead)."""
    _check_pivot("linalg.lu_factor", A, pivot)
    lu_t, pivots, info = LUFactor.apply(A)
    _raise_if_singular("linalg.lu_factor", A, info)
    return linalg_lu_factor(lu_t, pivots)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True):
    """(P, L, U) from ``lu_factor``'s result; empty tensors for the parts not asked for."""
    m = LU_data.shape[-2]
    empty = LU_data.new_empty((0,))
    P = empty
    if unpack_pivots:
        P = _make(permutation(LU_pivots._data, m, LU_data._data.dtype))
    if not unpack_data:
        return lu_unpack_result(P, empty, empty)
    return lu_unpack_result(P, *_l_and_u(LU_data))


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False) -> Tensor:
    """The X with ``A X = B`` (``X A = B`` when not `left`; A^H with `adjoint`) for A given
    by ``lu_factor``'s (LU, pivots)."""
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError("linalg.lu_solve: Expected LU to be square")
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {LU.dtype} and B of type {B.dtype} instead")
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError("linalg.lu_solve: Expected pivots to be int32")
    if not left:   # X A = B  <=>  A^H X^H = B^H
        return mH(lu_solve(LU, pivots, mH(B), adjoint=not adjoint))
    P, L, U = lu_unpack(LU, pivots)
    if adjoint:   # A^H X = B, A^H = U^H L^H P^T
        y = solve_triangular(mH(U), B, upper=False)
        z = solve_triangular(mH(L), y, upper=True, unitriangular=True)
        return matmul(P, z)
    y = solve_triangular(L, matmul(mH(P), B), upper=False, unitriangular=True)
    return solve_triangular(U, y, upper=True)


def legacy_lu(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """``torch.lu`` (deprecated): ``linalg.lu_factor``, or ``lu_factor_ex`` with
    `get_infos`."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                  "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.",
                  UserWarning, stacklevel=2)
    if get_infos:
        return tuple(lu_factor_ex(A, pivot=pivot))
    return tuple(lu_factor(A, pivot=pivot))


def legacy_lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """``torch.lu_solve(b, LU_data, LU_pivots)`` (deprecated): ``linalg.lu_solve``."""
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    return lu_solve(LU_data, LU_pivots, b)
