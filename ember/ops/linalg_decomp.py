# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""Linear algebra, part 2: inverses, determinants, solvers and decompositions.

Each decomposition is one Function whose backward is the standard formula written
with ember ops (matmul, solve, inverse and the masked helpers of ``linalg.py``), so
that second derivatives work too.  The formulas for svd and eigh divide by the
differences of singular/eigen values: the gradient is not defined where two of them
coincide (as in PyTorch).
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import Tensor, _make
from . import _lapack_info
from .linalg import (
    _short, const_like, diag_embed, diagonal, eye_like, matmul, mH, mT, no_complex_grad, tril,
    unsqueeze_last,
)
from ._util import check_same_device, with_out, xp_of
from .complex import times_conj


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive-definite)."""


linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
svd_result = namedtuple("svd", ["U", "S", "V"])
qr_result = namedtuple("qr", ["Q", "R"])
slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])


def _check_float(op: str, A: Tensor) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A._data.dtype.kind not in "fc" and A.dtype.name != "bfloat16":
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {_short(A)}")
    if A._data.dtype.itemsize == 2:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_short(A)}")


def _check_square(op: str, A: Tensor) -> None:
    _check_float(op, A)
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _lapack(op: str, what: str, fn, *args, **kwargs):
    """Call a backend routine, turning NumPy's LinAlgError into ours (with the op's name)."""
    try:
        return fn(*args, **kwargs)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"{op}: {what}") from None


_SINGULAR = "The input matrix is singular, the computation could not be completed."
_NOT_POSITIVE = ("The factorization could not be completed because the input is not "
                 "positive-definite")


def _failures(A, factor, find) -> np.ndarray | None:
    """Each matrix's LAPACK info for the factorization `factor` (NumPy's inv or cholesky)
    of the batch `A` (an int32 array of the batch's shape: `find`'s position where one
    failed, else 0), or None for arrays that are not NumPy's.  Each matrix is tried on
    its own: `find`'s own arithmetic may round differently from LAPACK's, so it only
    places a failure that LAPACK reported (at the last position if it finds none)."""
    if type(A) is not np.ndarray:
        return None
    flat = A.reshape((-1,) + A.shape[-2:])
    info = np.zeros(len(flat), np.int32)
    for i, m in enumerate(flat):
        try:
            factor(m)
        except np.linalg.LinAlgError:
            info[i] = find(m) or m.shape[-1]
    return info.reshape(A.shape[:-2])


def _failure_error(op: str, A, info, what) -> LinAlgError:
    """PyTorch's error for the first failed matrix of `A` (`what(position)` says why),
    naming its batch element when `A` is a batch; the generic one without `info`."""
    first = None if info is None else _lapack_info.first_failure(info)
    if first is None:
        return LinAlgError(f"{op}: {what(None)}")
    element, position = first
    prefix = f"(Batch element {element}): " if A.ndim > 2 else ""
    return LinAlgError(f"{op}: {prefix}{what(position)}")


def _singular(position) -> str:
    if position is None:
        return _SINGULAR
    return (f"The diagonal element {position} is zero, the inversion could not be completed "
            "because the input matrix is singular.")


def _not_positive(position) -> str:
    if position is None:
        return _NOT_POSITIVE + "."
    return f"{_NOT_POSITIVE} (the leading minor of order {position} is not positive-definite)."


def _solver_failed(position) -> str:
    return "The solver failed because the input matrix is singular."


def _without_failures(A: Tensor, info) -> tuple:
    """(`A` with its failed matrices, those whose `info` is nonzero, swapped for identity
    matrices, a bool tensor marking them (broadcastable to A)): the factorization then
    runs on the whole batch, and gradients reach the matrices that succeeded."""
    failed = _make(np.asarray(info != 0)[..., None, None])
    return A.where(~failed, eye_like(A.shape[-1], A)), failed


# ---------------------------------------------------------------------------
# inverse, determinants, solve


class Inv(Function):
    _name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx, A):
        xp = xp_of(A)
        try:
            out = xp.linalg.inv(A)
        except np.linalg.LinAlgError:
            info = _failures(A, np.linalg.inv, _lapack_info.zero_pivot)
            raise _failure_error("linalg.inv", A, info, _singular) from None
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (inv_a,) = ctx.saved_tensors
        inv_h = mH(inv_a)
        return -matmul(matmul(inv_h, grad), inv_h)


@with_out("linalg.inv")
def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix (or of each matrix in a batch)."""
    _check_square("linalg.inv", A)
    return Inv.apply(A)


@with_out("linalg.inv_ex")
def inv_ex(A: Tensor, *, check_errors: bool = False):
    """``inv`` that reports failure in `info` instead of raising: ``(inverse, info)``, `info`
    per matrix the 1-based index of the first zero pivot of its LU factorization (0 where
    it is invertible, as LAPACK's getrf).  A failed matrix's inverse is nan."""
    _check_square("linalg.inv_ex", A)
    xp = xp_of(A._data)
    try:
        return linalg_inv_ex(Inv.apply(A), _make(xp.zeros(A.shape[:-2], dtype=np.int32)))
    except LinAlgError:
        info = _failures(A._data, np.linalg.inv, _lapack_info.zero_pivot)
        if check_errors or info is None:
            raise
    fixed, failed = _without_failures(A, info)
    return linalg_inv_ex(Inv.apply(fixed).masked_fill(failed, float("nan")), _make(info))


class Det(Function):
    _name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, A):
        out = xp_of(A).linalg.det(A)
        out = xp_of(A).asarray(out, dtype=A.dtype)
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        A, det_a = ctx.saved_tensors
        g = unsqueeze_last(times_conj(grad, det_a), 2)  # (complex: see ops/complex.py)
        try:
            return g * mH(inv(A))
        except LinAlgError:
            pass
        no_complex_grad("linalg.det at a singular matrix", A)
        # NOTE: at a singular matrix, det's gradient is the cofactor matrix, found from
        # an SVD here; it is not itself differentiable.
        if STATE.enabled:
            raise NotImplementedError(
                "linalg.det: double backward at a singular matrix is not implemented")
        return unsqueeze_last(grad, 2) * const_like(_cofactor(A._data), A)


def _cofactor(a):
    """The cofactor matrix (transposed adjugate) of each matrix, valid for singular ones."""
    xp = xp_of(a)
    u, s, vh = xp.linalg.svd(a)
    n = s.shape[-1]
    prods = xp.stack([xp.prod(s[..., :i], axis=-1) * xp.prod(s[..., i + 1:], axis=-1)
                      for i in range(n)], axis=-1)
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    adj = xp.matmul(vh.swapaxes(-1, -2).conj() * prods[..., None, :], u.swapaxes(-1, -2).conj())
    return (adj * sign[..., None, None]).swapaxes(-1, -2)


@with_out("linalg.det")
def det(A: Tensor) -> Tensor:
    """The determinant of a square matrix (or of each matrix in a batch)."""
    _check_square("linalg.det", A)
    return Det.apply(A)


class Slogdet(Function):
    _name = "LinalgSlogdetBackward0"
    _marks_outputs = True  # (the sign)

    @staticmethod
    def forward(ctx, A):
        sign, logabs = xp_of(A).linalg.slogdet(A)
        xp = xp_of(A)
        sign = xp.asarray(sign, dtype=A.dtype)
        logabs = xp.asarray(logabs, dtype=A.real.dtype)
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def backward(ctx, grad_sign, grad_logabs):
        (A,) = ctx.saved_tensors
        no_complex_grad("linalg.slogdet", A)
        return unsqueeze_last(grad_logabs, 2) * mH(inv(A))


@with_out("linalg.slogdet")
def slogdet(A: Tensor):
    """``(sign, log|det|)`` of a square matrix: a determinant that cannot overflow."""
    _check_square("linalg.slogdet", A)
    return linalg_slogdet(*Slogdet.apply(A))


def legacy_slogdet(input: Tensor):
    """``torch.slogdet``: the same as ``linalg.slogdet``."""
    return slogdet_result(*slogdet(input))


def logdet(input: Tensor) -> Tensor:
    """log(det(input)); nan where the determinant is negative."""
    sign, logabs = slogdet(input)
    bad = const_like(xp_of(sign._data).where(sign._data < 0, np.nan, 0.0), logabs)
    return logabs + bad


def _solve_arrays(A, B):
    """X with A X = B, batch dimensions broadcast (NumPy does; CuPy needs them equal)."""
    xp = xp_of(A)
    if xp is not np and A.shape[:-2] != B.shape[:-2]:
        batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
        A = xp.broadcast_to(A, batch + A.shape[-2:])
        B = xp.broadcast_to(B, batch + B.shape[-2:])
    return xp.linalg.solve(A, B)


class Solve(Function):
    _name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, A, B):
        try:
            out = _solve_arrays(A, B)
        except np.linalg.LinAlgError:
            info = _failures(A, np.linalg.inv, _lapack_info.zero_pivot)
            raise _failure_error("torch.linalg.solve", A, info, _solver_failed) from None
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        A, X = ctx.saved_tensors
        gB = Solve.apply(mH(A), grad)
        gA = -matmul(gB, mH(X)) if ctx._edges[0][0] is not None else None
        return gA, gB


@with_out("linalg.solve")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (or ``X A = B`` when ``left=False``).

    `B` is a batch of vectors when it is 1-D or has the shape ``A.shape[:-1]``.
    """
    _check_square("linalg.solve", A)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    check_same_device("linalg.solve", A, B)
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {_short(A)} and B of type {_short(B)} instead")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and B.shape == A.shape[:-1])
    if not left:
        if vector:
            raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                               "supported for left=False. In this case linalg.solve is "
                               "equivalent to B / A.squeeze(-1)")
        return mH(solve(mH(A), mH(B)))
    B2 = unsqueeze_last(B) if vector else B
    n = A.shape[-1]
    if B2.dim() < 2 or B2.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({n}x{n} and {B2.shape[-2]}x{B2.shape[-1]})")
    X = Solve.apply(A, B2)
    if vector:
        X = X.reshape(tuple(X.shape[:-1]))
    return X


@with_out("linalg.solve_triangular")
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """Solve ``A X = B`` reading only the upper or lower triangle of `A`."""
    _check_square("linalg.solve_triangular", A)
    n = A.shape[-1]
    k = 1 if unitriangular else 0
    if upper:
        T = mH(tril(mH(A), -k))
    else:
        T = tril(A, -k)
    if unitriangular:
        T = T + eye_like(n, A)
    return solve(T, B, left=left)


# ---------------------------------------------------------------------------
# cholesky


class Cholesky(Function):
    _name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, A):
        try:
            out = xp_of(A).linalg.cholesky(A)
        except np.linalg.LinAlgError:
            info = _failures(A, np.linalg.cholesky, _lapack_info.failed_minor)
            raise _failure_error("linalg.cholesky", A, info, _not_positive) from None
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (L,) = ctx.saved_tensors
        # Murray (2016): gA = L^-H Phi(L^H gL) L^-1, Phi = lower triangle, diagonal halved,
        # then symmetrized.
        phi = tril(matmul(mH(L), grad))
        phi = phi - 0.5 * diag_embed(diagonal(phi))
        L_inv = inv(L)
        gA = matmul(matmul(mH(L_inv), phi), L_inv)
        return 0.5 * (gA + mH(gA))


@with_out("linalg.cholesky")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor L (lower, ``A = L L^H``) of a Hermitian positive-definite matrix;
    its conjugate transpose with ``upper=True``.  Only the lower (upper) triangle is read."""
    _check_square("linalg.cholesky", A)
    if upper:
        return mH(Cholesky.apply(mH(A)))
    return Cholesky.apply(A)


@with_out("linalg.cholesky_ex")
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False):
    """``cholesky`` reporting failure in `info` instead of raising: ``(L, info)``, `info` per
    matrix the order of its first leading minor that is not positive-definite (0 where
    the factorization succeeds, as LAPACK's potrf).  A failed matrix's factor is zeros."""
    _check_square("linalg.cholesky_ex", A)
    xp = xp_of(A._data)
    try:
        L = cholesky(A, upper=upper)
        return linalg_cholesky_ex(L, _make(xp.zeros(A.shape[:-2], dtype=np.int32)))
    except LinAlgError:
        # (an upper factor reads the upper triangle: the lower one of A's conjugate transpose)
        data = A._data if not upper else np.conj(np.swapaxes(A._data, -1, -2))
        info = _failures(data, np.linalg.cholesky, _lapack_info.failed_minor)
        if check_errors or info is None:
            raise
    fixed, failed = _without_failures(A, info)
    return linalg_cholesky_ex(cholesky(fixed, upper=upper).masked_fill(failed, 0.0),
                              _make(info))


def legacy_cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky`` (deprecated): ``linalg.cholesky``."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    return cholesky(input, upper=upper)


# ---------------------------------------------------------------------------
# qr


class Qr(Function):
    _name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, A, mode):
        xp = xp_of(A)
        ctx.mode, ctx.shape = mode, A.shape
        if mode == "r":
            R = xp.linalg.qr(A, mode="r")
            Q = xp.zeros((0,), dtype=A.dtype)
        else:
            Q, R = xp.linalg.qr(A, mode=mode)
        ctx.save_for_backward(Q, R)
        ctx.set_materialize_grads(False)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        m, n = ctx.shape[-2:]
        if ctx.mode == "r":
            raise RuntimeError(
                "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                "through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        Q, R = ctx.saved_tensors
        no_complex_grad("linalg.qr", R)
        if gQ is None:
            gQ = const_like(xp_of(Q._data).zeros(Q._data.shape), Q)
        if gR is None:
            gR = const_like(xp_of(R._data).zeros(R._data.shape), R)
        if m >= n:
            return _qr_backward_tall(gQ, gR, Q, R)
        # wide: A = [X | Y], R = [U | V] with X = Q U square, Y = Q V
        sel_x = eye_like(n, R, m)          # (n, m): picks the first m columns
        sel_y = eye_like(n, R)
        sel_y = sel_y - matmul(sel_x, mT(sel_x))
        gU = matmul(gR, sel_x)
        Y_part = matmul(Q, matmul(R, sel_y))   # Y, padded with zero columns where X was
        gV = matmul(gR, sel_y)
        gX = _qr_backward_tall(gQ + matmul(Y_part, mH(gV)), gU, Q, matmul(R, sel_x))
        return matmul(gX, mT(sel_x)) + matmul(Q, gV)


def _qr_backward_tall(gQ: Tensor, gR: Tensor, Q: Tensor, R: Tensor) -> Tensor:
    """gA = (gQ + Q sym(triu(gR R^H - Q^H gQ))) R^-H for m >= n."""
    M = matmul(gR, mH(R)) - matmul(mH(Q), gQ)
    upper = mH(tril(mH(M)))
    sym = upper + mH(upper) - diag_embed(diagonal(upper))
    gA = gQ + matmul(Q, sym)
    # gA R^-H = (R^-1 gA^H)^H
    return mH(solve(R, mH(gA)))


@with_out("linalg.qr")
def qr(A: Tensor, mode: str = "reduced"):
    """QR decomposition ``A = Q R`` (Q orthonormal columns, R upper triangular).

    `mode`: 'reduced' (Q is m x k), 'complete' (Q is m x m) or 'r' (only R; Q empty).
    """
    _check_float("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    if A.dim() < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    return linalg_qr(*Qr.apply(A, mode))


def legacy_qr(input: Tensor, some: bool = True):
    """``torch.qr`` (deprecated): ``linalg.qr`` with mode 'reduced' (some) or 'complete'."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
                  "future PyTorch release.", UserWarning, stacklevel=2)
    return qr_result(*qr(input, "reduced" if some else "complete"))


# ---------------------------------------------------------------------------
# powers and chains


@with_out("linalg.matrix_power")
def matrix_power(A: Tensor, n: int) -> Tensor:
    """`A` multiplied by itself `n` times (``n = 0``: identity, ``n < 0``: powers of inv(A))."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_power(): argument 'A' must be Tensor, not "
                        f"{type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    n = int(n)
    if n == 0:
        return A * 0 + eye_like(A.shape[-1], A)
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:  # square and multiply
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


@with_out("linalg.multi_dot")
def multi_dot(tensors) -> Tensor:
    """The product of a chain of matrices (the first/last may be vectors)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vec = tensors[0].dim() == 1
    last_vec = tensors[-1].dim() == 1
    for i, t in enumerate(tensors):
        want_1d = (i == 0 and first_vec) or (i == len(tensors) - 1 and last_vec)
        if t.dim() != 2 and not want_1d:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    if first_vec:
        tensors[0] = tensors[0].reshape(1, -1)
    if last_vec:
        tensors[-1] = tensors[-1].reshape(-1, 1)
    result = tensors[0]
    for t in tensors[1:]:
        result = matmul(result, t)
    if first_vec and last_vec:
        return result.reshape(())
    if first_vec:
        return result.reshape(-1)
    if last_vec:
        return result.reshape(-1)
    return result


@with_out("linalg.vecdot")
def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Dot products of vectors along `dim` (the first conjugated when complex)."""
    if x.is_complex():
        x = x.conj()
    return (x * y).sum(dim)

