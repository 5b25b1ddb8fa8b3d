"""Which matrix of a batch a factorization failed on, and where, as LAPACK reports it.

NumPy's ``linalg.inv`` and ``linalg.cholesky`` raise one LinAlgError for a whole batch and
say nothing more, while PyTorch names the batch element and the failing position, and its
``inv_ex`` / ``cholesky_ex`` return one ``info`` per matrix: for an inverse (LU with
partial pivoting, LAPACK's getrf) the 1-based index of the first pivot that is exactly
zero; for a Cholesky factor (potrf) the order of the first leading minor that is not
positive-definite.  These loops find them.  They run only after a factorization failed,
on the failing matrices: their speed does not matter.
"""

from __future__ import annotations

import numpy as np


def zero_pivot(a: np.ndarray) -> int:
    """LU of the square `a` with partial pivoting, in its own dtype: the 1-based index of
    the first pivot that is exactly zero, 0 when none is."""
    u = np.array(a, copy=True)
    n = u.shape[0]
    first = 0
    for k in range(n):
        row = k + int(np.argmax(np.abs(u[k:, k])))
        if u[row, k] == 0:
            first = first or k + 1
            continue   # (LAPACK goes on with the next column; only the first is reported)
        if row != k:
            u[[k, row]] = u[[row, k]]
        u[k + 1:, k] /= u[k, k]
        u[k + 1:, k + 1:] -= np.outer(u[k + 1:, k], u[k, k + 1:])
    return first


def failed_minor(a: np.ndarray) -> int:
    """The order of the first leading minor of the Hermitian `a` (its lower triangle read)
    that is not positive-definite, as the Cholesky factorization finds it; 0 when none."""
    n = a.shape[0]
    low = np.zeros_like(a)
    for j in range(n):
        d = (a[j, j] - np.vdot(low[j, :j], low[j, :j])).real
        if not d > 0:   # (nan fails too)
            return j + 1
        low[j, j] = np.sqrt(d)
        low[j + 1:, j] = (a[j + 1:, j] - low[j + 1:, :j] @ low[j, :j].conj()) / low[j, j]
    return 0


def per_matrix(a: np.ndarray, find) -> np.ndarray:
    """`find` (`zero_pivot` or `failed_minor`) of each matrix of the batch `a` (..., n, n),
    as an int32 array of the batch's shape."""
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    return np.array([find(m) for m in flat], np.int32).reshape(batch)


def first_failure(info: np.ndarray):
    """(batch element's flat index, its info) of the first nonzero `info`, or None."""
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    return (int(bad[0]), int(flat[bad[0]])) if bad.size else None
