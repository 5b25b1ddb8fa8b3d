# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""Linear algebra, part 6: eigenvalues and eigenvectors of general (non-symmetric) matrices.

The results are complex (a real matrix may have complex eigenvalues), with each
eigenvector scaled to unit length as LAPACK's geev leaves it.  The gradient of
A = V diag(L) V^-1, in the conjugate convention of ``ops/complex.py``, is

    gA = V^-H (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(E)) V^H,

with E[i, j] = L[j] - L[i] off the diagonal (the diagonal of the quotient is dropped).  The
projection removes what only changes the eigenvectors' lengths, which the normalization
fixes.  Their phases are not fixed at all: a loss that depends on them has no gradient,
and backward says so.  Where two eigenvalues coincide the gradient is not defined.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .._core.tensor import Tensor
from .complex import Real
from .linalg import diagonal, matmul, mH
from .linalg_decomp import _check_square, _lapack, solve
from .linalg_svd import _check_phase_invariant, _Eigenpairs
from ._util import xp_of

linalg_eig = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])


class Eig(_Eigenpairs):
    """Eigenvalues and unit eigenvectors of a square matrix (complex outputs)."""

    _name = "LinalgEigBackward0"

    @staticmethod
    def forward(ctx, A):
        xp = xp_of(A)
        complex_dtype = np.result_type(A.dtype, np.complex64)
        L, V = _lapack("linalg.eig", "The algorithm failed to converge.", xp.linalg.eig, A)
        ctx.real_input = A.dtype.kind != "c"
        return ctx._save_pairs(L.astype(complex_dtype, copy=False),
                               V.astype(complex_dtype, copy=False))

    def _vector_term(self, V, VhgV):
        diag = diagonal(VhgV)
        _check_phase_invariant("linalg.eig", diag)
        # the projection: drop what only changes the eigenvectors' lengths
        return VhgV - matmul(mH(V), V * Real.apply(diag).unsqueeze(-2))

    def _outer(self, V, inner):
        gA = solve(mH(V), matmul(inner, mH(V)))  # V^-H inner V^H
        return Real.apply(gA) if self.real_input else gA


def eig(A: Tensor):
    """The eigenvalues and eigenvectors of a square matrix, as complex tensors:
    ``A @ V == V @ diag(L)``, each column of V of unit length."""
    _check_square("linalg.eig", A)
    return linalg_eig(*Eig.apply(A))


def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of a square matrix, as a complex tensor."""
    _check_square("linalg.eigvals", A)
    return Eig.apply(A)[0]
