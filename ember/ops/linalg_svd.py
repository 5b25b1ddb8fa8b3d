# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""Linear algebra, part 3: the spectral decompositions (svd, eigh) and what is built on
them: svdvals, eigvalsh, pinv, matrix_rank, lstsq.

The svd and eigh gradients divide by differences of singular/eigen values: they are
not defined where two of them coincide (as in PyTorch).
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.grad_mode import STATE
from .._core.tensor import Tensor, _make
from .linalg import (
    const_like, diag_embed, diagonal, eye_like, matmul, mH, mT, no_complex_grad, unsqueeze_last,
)
from .complex import conj
from .linalg_decomp import (
    _check_float, _check_square, _lapack, linalg_eigh, linalg_lstsq, linalg_svd, svd_result,
)
from ._util import with_out, xp_of

# ---------------------------------------------------------------------------
# svd and eigh


class Svd(Function):
    _name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A, full_matrices):
        U, S, Vh = _lapack("linalg.svd", "The algorithm failed to converge.",
                           xp_of(A).linalg.svd, A, full_matrices=full_matrices)
        ctx.save_for_backward(U, S, Vh)
        ctx.full = full_matrices
        ctx.set_materialize_grads(False)  # outputs without a gradient arrive as None
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        no_complex_grad("linalg.svd", U)
        return _svd_backward(gU, gS, gVh, U, S, Vh, ctx.full)


def _zeros_as(t: Tensor) -> Tensor:
    return _make(xp_of(t._data).zeros(t._data.shape, dtype=t._data.dtype))


def _svd_backward(gU, gS, gVh, U, S, Vh, full):
    """PyTorch's formula (real and complex alike, up to the gauge check):
    gA = U [sym-part / E + diag(gS)] Vh, plus the projections out of span(U) / span(V)."""
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if gS is None:
        gS = _zeros_as(S)
    if full and m != n:
        # Only the first k singular vectors are determined by A: keep those.
        U = matmul(U, eye_like(m, U, k))
        Vh = matmul(mT(eye_like(n, Vh, k)), Vh)
        gU = None if gU is None else matmul(gU, eye_like(m, gU, k))
        gVh = None if gVh is None else matmul(mT(eye_like(n, gVh, k)), gVh)
    if gU is None and gVh is None:
        return matmul(U * gS.reshape(tuple(gS.shape[:-1]) + (1, k)), Vh)
    gU = _zeros_as(U) if gU is None else gU
    gVh = _zeros_as(Vh) if gVh is None else gVh
    S_row = S.reshape(tuple(S.shape[:-1]) + (1, k))
    S_col = unsqueeze_last(S)
    S2 = S * S
    E = S2.reshape(S_row.shape) - unsqueeze_last(S2)     # E[j, l] = S_l^2 - S_j^2
    E = E + eye_like(k, E)                                # diagonal: avoid 0/0 (zeroed below)
    V, gV = mH(Vh), mH(gVh)
    UhgU = matmul(mH(U), gU)
    VhgV = matmul(Vh, gV)
    inner = ((UhgU - mH(UhgU)) * S_row + S_col * (VhgV - mH(VhgV))) / E
    inner = inner * const_like(1 - np.eye(k), inner)
    inner = inner + diag_embed(gS)
    if m > n:
        gA = matmul(U, inner)
        gU_sinv = gU / S_row
        gA = gA + gU_sinv - matmul(U, matmul(mH(U), gU_sinv))
        return matmul(gA, Vh)
    if m < n:
        gA = matmul(inner, Vh)
        sinv_gVh = gVh / S_col
        gA = gA + sinv_gVh - matmul(matmul(sinv_gVh, V), Vh)
        return matmul(U, gA)
    return matmul(matmul(U, inner), Vh)


@with_out("linalg.svd")
def svd(A: Tensor, full_matrices: bool = True, *, driver=None):
    """Singular value decomposition ``A = U diag(S) Vh``; S descending.

    With ``full_matrices=False`` U is m x k and Vh k x n (k = min(m, n)).
    """
    _check_float("linalg.svd", A)
    if A.dim() < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    return linalg_svd(*Svd.apply(A, bool(full_matrices)))


@with_out("linalg.svdvals")
def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """The singular values of `A`, in descending order."""
    _check_float("linalg.svdvals", A)
    if A.dim() < 2:
        raise RuntimeError("linalg.svdvals: The input tensor A must have at least 2 dimensions.")
    if A.requires_grad and STATE.enabled:
        return Svd.apply(A, False)[1]
    xp = xp_of(A._data)
    return _make(_lapack("linalg.svdvals", "The algorithm failed to converge.",
                         xp.linalg.svd, A._data, compute_uv=False))


def legacy_svd(input: Tensor, some: bool = True, compute_uv: bool = True):
    """``torch.svd``: returns ``(U, S, V)`` with V (not Vh); reduced unless ``some=False``."""
    if not compute_uv:
        m, n = input.shape[-2:]
        S = svdvals(input)
        xp = xp_of(input._data)
        batch = tuple(input.shape[:-2])
        zeros_u = _make(xp.zeros(batch + (m, m), dtype=input._data.dtype))
        zeros_v = _make(xp.zeros(batch + (n, n), dtype=input._data.dtype))
        return svd_result(zeros_u, S, zeros_v)
    U, S, Vh = svd(input, full_matrices=not some)
    return svd_result(U, S, mH(Vh))


class _Eigenpairs(Function):
    """What Eig and Eigh share.  Both gradients are
    ``gA = outer(diag(gL) + F / conj(E) off the diagonal)``, E[i, j] = L[j] - L[i], where
    the subclass makes F from V^H gV (`_vector_term`) and gives the `outer` map."""

    def _save_pairs(self, L, V):
        """Save (L, V) for backward, which takes a missing gradient as None; return them."""
        self.save_for_backward(L, V)
        self.set_materialize_grads(False)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        inner = diag_embed(_zeros_as(L) if gL is None else gL)
        if gV is not None:
            k = L.shape[-1]
            E = L.unsqueeze(-2) - unsqueeze_last(L)  # E[i, j] = L[j] - L[i]
            E = E + eye_like(k, E)  # (the diagonal is dropped below)
            off = ctx._vector_term(V, matmul(mH(V), gV)) / conj(E)
            inner = inner + off * const_like(1 - np.eye(k), off)
        return ctx._outer(V, inner)


class Eigh(_Eigenpairs):
    """gA = V (diag(gL) + (V^H gV) / E) V^H, E real, and its symmetric part."""

    _name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A, uplo):
        L, V = _lapack("linalg.eigh", "The algorithm failed to converge.",
                       xp_of(A).linalg.eigh, A, UPLO=uplo)
        return ctx._save_pairs(L, V)

    def _vector_term(self, V, VhgV):
        if VhgV.is_complex():
            _check_phase_invariant("linalg.eigh", diagonal(VhgV))
        return VhgV

    def _outer(self, V, inner):
        if inner.dtype != V.dtype:  # (Hermitian input: real eigenvalues, complex vectors)
            inner = inner.to(V.dtype)
        gA = matmul(matmul(V, inner), mH(V))
        # only the symmetric part is seen by a symmetric input (PyTorch returns it too)
        return 0.5 * (gA + mH(gA))


def _check_phase_invariant(op: str, diag: Tensor) -> None:
    """RuntimeError if a loss depends on the phases of complex singular/eigen vectors (each
    is defined only up to a factor e^(i phi)): Im(diag(V^H gV)) must vanish."""
    phase = float(diag.imag.abs().max()) if diag.numel() else 0.0
    if phase > 1e-6 * max(1.0, float(diag.abs().max())):
        raise RuntimeError(f"{op} backward: the vectors are only defined up to a complex "
                           "phase (multiplication by e^(i phi)); this loss depends on it, so "
                           "its gradient is not defined")


@with_out("linalg.eigh")
def eigh(A: Tensor, UPLO: str = "L"):  # noqa: N803 - PyTorch's name
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric/Hermitian matrix,
    reading only its lower ('L') or upper ('U') triangle."""
    _check_square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return linalg_eigh(*Eigh.apply(A, UPLO))


@with_out("linalg.eigvalsh")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of a symmetric/Hermitian matrix."""
    _check_square("linalg.eigvalsh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    if A.requires_grad and STATE.enabled:
        return Eigh.apply(A, UPLO)[0]
    xp = xp_of(A._data)
    return _make(xp.linalg.eigvalsh(A._data, UPLO=UPLO))


# ---------------------------------------------------------------------------
# pinv, rank, powers, least squares, condition number


def _tolerances(A: Tensor, atol, rtol, op: str):
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):
        raise NotImplementedError(f"{op}: tensor-valued atol/rtol are not supported")
    eps = float(np.finfo(A._data.dtype).eps)
    if rtol is None:
        rtol = eps * max(A.shape[-2:]) if (atol is None or atol <= 0) else 0.0
    return (0.0 if atol is None else float(atol)), float(rtol)


def _cutoff_mask(s, atol: float, rtol: float):
    """Which singular values (descending or by abs, last dim) lie above the cutoff."""
    xp = xp_of(s)
    a = xp.abs(s)
    top = a.max(axis=-1, keepdims=True) if a.shape[-1] else a
    return a > xp.maximum(atol, rtol * top)


class Pinv(Function):
    _name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        xp = xp_of(A)
        if hermitian:
            w, v = xp.linalg.eigh(A)
            keep = _cutoff_mask(w, atol, rtol)
            w_inv = xp.where(keep, 1 / xp.where(keep, w, 1), 0).astype(A.dtype)
            out = xp.matmul(v * w_inv[..., None, :], v.swapaxes(-1, -2).conj())
        else:
            u, s, vh = xp.linalg.svd(A, full_matrices=False)
            keep = _cutoff_mask(s, atol, rtol)
            s_inv = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(A.dtype)
            out = xp.matmul(vh.swapaxes(-1, -2).conj() * s_inv[..., None, :],
                            u.swapaxes(-1, -2).conj())
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        A, P = ctx.saved_tensors
        no_complex_grad("linalg.pinv", A)
        # Golub & Pereyra: valid where the rank of A is locally constant.
        m, n = A.shape[-2:]
        Ph = mH(P)
        proj_left = eye_like(m, A) - matmul(A, P)      # I - A P   (m x m)
        proj_right = eye_like(n, A) - matmul(P, A)     # I - P A   (n x n)
        gh = mH(grad)
        return (-matmul(matmul(Ph, grad), Ph)
                + matmul(matmul(proj_left, gh), matmul(P, Ph))
                + matmul(matmul(Ph, P), matmul(gh, proj_right)))


@with_out("linalg.pinv")
def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False,
         rcond=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse; singular values at or below
    ``max(atol, rtol * largest)`` count as zero."""
    _check_float("linalg.pinv", A)
    if A.dim() < 2:
        raise RuntimeError("linalg.pinv: The input tensor A must have at least 2 dimensions.")
    if rcond is not None:
        rtol = rcond
    atol, rtol = _tolerances(A, atol, rtol, "linalg.pinv")
    return Pinv.apply(A, atol, rtol, bool(hermitian))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with a relative cutoff `rcond`."""
    return pinv(input, rtol=rcond)


@with_out("linalg.matrix_rank")
def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """The number of singular values above ``max(atol, rtol * largest)`` (int64)."""
    _check_float("linalg.matrix_rank", A)
    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_rank: The input tensor A must have at least 2 dimensions.")
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _tolerances(A, atol, rtol, "linalg.matrix_rank")
    xp = xp_of(A._data)
    if hermitian:
        s = xp.linalg.eigvalsh(A._data)
    else:
        s = xp.linalg.svd(A._data, compute_uv=False)
    return _make(_cutoff_mask(s, atol, rtol).sum(axis=-1).astype(np.int64))


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B``: ``(solution, residuals, rank, singular_values)``.

    The solution is ``pinv(A) @ B``; residuals (squared, per column) are given for tall
    full-rank `A` with the drivers 'gelsd', 'gelss' and 'gels', as in PyTorch.
    """
    _check_float("linalg.lstsq", A)
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           f"gelsy, gelsd, gelss), but got {driver}")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {A.dtype} and other's dtype {B.dtype}")
    m, n = A.shape[-2:]
    vector = B.dim() == A.dim() - 1
    B2 = unsqueeze_last(B) if vector else B
    if B2.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    rtol = rcond if rcond is not None else float(np.finfo(A._data.dtype).eps) * max(m, n)
    X = matmul(pinv(A, rtol=rtol), B2)
    xp = xp_of(A._data)
    s = xp.linalg.svd(A._data, compute_uv=False)
    rank_arr = _cutoff_mask(s, 0.0, rtol).sum(axis=-1).astype(np.int64)
    driver = driver or "gelsy"
    empty = _make(xp.zeros((0,), dtype=A._data.dtype))
    residuals = empty
    if driver != "gelsy" and m > n and bool((rank_arr == n).all()):
        r = matmul(A, X) - B2
        residuals = (r * r).sum(-2)
    rank = _make(rank_arr) if driver != "gels" else _make(xp.zeros((0,), dtype=np.int64))
    sv = _make(s) if driver in ("gelsd", "gelss") else empty
    if vector:
        X = X.reshape(tuple(X.shape[:-1]))
        if residuals is not empty:
            residuals = residuals.reshape(tuple(residuals.shape[:-1]))
    return linalg_lstsq(X, residuals, rank, sv)


