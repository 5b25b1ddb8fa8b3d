"""LAPACK's factorizations as array code, and where they fail, as LAPACK reports it.

`factor_arrays` is getrf, the LU factorization with partial pivoting (ops/linalg_lu.py
builds on it; NumPy has no LU of its own).

NumPy's ``linalg.inv`` and ``linalg.cholesky`` raise one LinAlgError for a whole batch and
say nothing more, while PyTorch names the batch element and the failing position, and its
``inv_ex`` / ``cholesky_ex`` return one ``info`` per matrix: for an inverse (getrf) the
1-based index of the first pivot that is exactly zero; for a Cholesky factor (potrf) the
order of the first leading minor that is not positive-definite.  `zero_pivot` and
`failed_minor` find them; they run only after a factorization failed, on the failing
matrices.
"""

from __future__ import annotations

import numpy as np

from ._util import xp_of


def factor_arrays(a) -> tuple:
    """(packed LU, int32 pivots, int32 info) of the batch of matrices `a` (..., m, n):
    L's strict lower triangle (its unit diagonal implied) and U's upper one in one array,
    the 1-based rows swapped in at each of the min(m, n) steps, and per matrix the 1-based
    index of the first zero pivot (0: none)."""
    xp = xp_of(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = a.copy().reshape((-1, m, n))
    batch = xp.arange(lu.shape[0])
    pivots = xp.zeros((lu.shape[0], k), np.int32)
    info = xp.zeros(lu.shape[0], np.int32)
    for j in range(k):
        row = j + xp.argmax(xp.abs(lu[:, j:, j]), axis=1)
        pivots[:, j] = row + 1
        swapped = lu[batch, row].copy()
        lu[batch, row] = lu[:, j]
        lu[:, j] = swapped
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        # (a zero pivot leaves its column as it is, and the update adds nothing)
        lu[:, j + 1:, j] /= xp.where(zero, 1, pivot)[:, None]
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    shape = a.shape[:-2]
    return lu.reshape(a.shape), pivots.reshape(shape + (k,)), info.reshape(shape)


def zero_pivot(a: np.ndarray) -> int:
    """The 1-based index of the first exactly-zero pivot of the square `a`'s LU with
    partial pivoting (`factor_arrays`), 0 when none is."""
    return int(factor_arrays(a)[2])


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


def first_failure(info: np.ndarray):
    """(batch element's flat index, its info) of the first nonzero `info`, or None."""
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    return (int(bad[0]), int(flat[bad[0]])) if bad.size else None
