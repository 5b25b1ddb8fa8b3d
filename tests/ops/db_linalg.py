# ruff: noqa: N803 - matrices are capital letters, as in the math
"""Op table entries for ember/ops/linalg*.py and einsum.py.

Matrix functions get well-conditioned inputs: symmetric positive-definite ones are
built inside the op (``M M^T + n I``), as PyTorch's own tests do, so that gradcheck
perturbs M freely while the decomposition sees a valid matrix.  Decompositions whose
outputs are only defined up to signs (svd, eigh) are checked through sign-invariant
functions of their outputs.
"""

import numpy as np

import ember
from tests.ops.opinfo import FLOATS, FLOATS_AND_INTS, OpInfo, Sample

INF = float("inf")
LOOSE = {"atol": 1e-4, "rtol": 1e-3}   # float32 forward of matrix functions


def _pairs(*shape_pairs, low=-2.0, high=2.0):
    def samples(rng):
        return [Sample(tuple(rng.uniform(low, high, size=s) for s in shapes))
                for shapes in shape_pairs]
    return samples


def _one(*shapes, kwargs=None, low=-2.0, high=2.0):
    def samples(rng):
        return [Sample((rng.uniform(low, high, size=s),), dict(kwargs or {})) for s in shapes]
    return samples


def _mT(a):  # noqa: N802
    return a.transpose(-2, -1) if isinstance(a, ember.Tensor) else np.swapaxes(a, -1, -2)


def _spd(m):
    """M M^T + n I: symmetric positive-definite, well conditioned."""
    n = m.shape[-1]
    if isinstance(m, ember.Tensor):
        return ember.matmul(m, _mT(m)) + n * ember.eye(n, dtype=m.dtype)
    return m @ _mT(m) + n * np.eye(n)


def _sym(m):
    return m + _mT(m)


def _well_conditioned(*shapes):
    """Square matrices with a dominant diagonal (invertible, not too ill-conditioned)."""
    def samples(rng):
        out = []
        for s in shapes:
            a = rng.uniform(-1.0, 1.0, size=s)
            out.append(Sample((a + 3 * np.eye(s[-1]),)))
        return out
    return samples


def _flat(*parts):
    """Several outputs as one flat tensor/array.

    NOTE: the generic no-reference-cycle test keeps its loop variable alive, so an op in
    the table returns one differentiable output; the pieces are all compared anyway.
    """
    if isinstance(parts[0], ember.Tensor):
        return ember.cat([p.reshape(-1) for p in parts])
    return np.concatenate([np.reshape(p, -1) for p in parts])


def _svd_invariants(U, S, Vh):
    """Functions of an SVD that do not depend on the signs of the singular vectors."""
    return _flat(S, U @ Vh, U * U, Vh * Vh)


def _svd_op(a, full_matrices=False):
    return _svd_invariants(*ember.linalg.svd(a, full_matrices=full_matrices))


def _svd_ref(a, full_matrices=False):
    return _svd_invariants(*np.linalg.svd(a, full_matrices=full_matrices))


def _eigh_op(a, UPLO="L"):
    L, V = ember.linalg.eigh(_sym(a), UPLO=UPLO)
    return _flat(L, V * V)


def _eigh_ref(a, UPLO="L"):
    L, V = np.linalg.eigh(_sym(a), UPLO=UPLO)
    return _flat(L, V * V)


def _qr_ref(a, mode="reduced"):
    return _flat(*np.linalg.qr(a, mode=mode))


def _np_vector_norm(a, ord=2, dim=None, keepdim=False):
    axis = None if dim is None else (dim if isinstance(dim, tuple) else (dim,))
    x = np.abs(a)
    if ord == INF:
        return x.max(axis=axis, keepdims=keepdim)
    if ord == -INF:
        return x.min(axis=axis, keepdims=keepdim)
    return (x ** ord).sum(axis=axis, keepdims=keepdim) ** (1.0 / ord)


def _np_matrix_norm(a, ord="fro", keepdim=False):
    return np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=keepdim)


def _np_pinv(a, hermitian=False):
    return np.linalg.pinv(a, hermitian=hermitian)


def _np_addmm(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * (a @ b)


def _np_addr(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * np.outer(a, b)


def _np_addbmm(i, a, b, beta=1, alpha=1):
    return beta * i + alpha * (a @ b).sum(0)


def _np_solve(a, b):
    if b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]):
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _np_lstsq(a, b):
    return np.linalg.pinv(a) @ b


def _np_matrix_power(a, n):
    return np.linalg.matrix_power(a, n)


def _np_multi_dot(a, b, c):
    return np.linalg.multi_dot([a, b, c])


def _np_cond(a, p=None):
    return np.linalg.cond(a, p)


def _np_expm(a):
    """exp of each matrix by its eigen-decomposition (the samples are diagonalizable)."""
    values, vectors = np.linalg.eig(a)
    out = vectors @ (np.exp(values)[..., None] * np.linalg.inv(vectors))
    return out.real.astype(a.dtype)


def _np_lu_packed(a):
    """LAPACK's packed LU with partial pivoting, one matrix at a time, written plainly
    (the reference for ops/linalg_lu.py)."""
    a = np.array(a, dtype=np.float64)
    out = a.reshape((-1,) + a.shape[-2:]).copy()
    for m in out:
        rows, cols = m.shape
        for j in range(min(rows, cols)):
            p = j + int(np.argmax(np.abs(m[j:, j])))
            m[[j, p]] = m[[p, j]]
            for i in range(j + 1, rows):
                m[i, j] /= m[j, j]
                m[i, j + 1:] -= m[i, j] * m[j, j + 1:]
    return out.reshape(a.shape)


def _np_householder_product(a, tau):
    """First n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T (one matrix)."""
    m, n = a.shape
    q = np.eye(m)
    for i in range(tau.shape[-1]):
        v = np.where(np.arange(m) > i, a[:, i], 0.0) + (np.arange(m) == i)
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q[:, :n]


def _square(*shapes):
    """Samples for ops on square matrices (inv, det, ...)."""
    return _well_conditioned(*shapes)


_MATMUL_SHAPES = (((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                  ((2, 2, 3), (2, 3, 4)), ((2, 2, 3), (3, 4)), ((2, 3), (2, 3, 4)),
                  ((2, 2, 3), (3,)), ((3,), (2, 3, 4)), ((2, 1, 2, 3), (2, 3, 2)))

# A constant 3x4 sparse matrix for the sparse-dense products, uncoalesced: the entry at
# (0, 1) is stored twice and adds up.
_SPARSE_INDICES = [[0, 1, 2, 0, 2], [1, 0, 3, 1, 2]]
_SPARSE_VALUES = [1.5, -2.0, 0.5, 1.0, 3.0]
_SPARSE_ARRAY = np.zeros((3, 4))
np.add.at(_SPARSE_ARRAY, tuple(_SPARSE_INDICES), _SPARSE_VALUES)


def _sparse(dtype):
    return ember.sparse_coo_tensor(_SPARSE_INDICES, _SPARSE_VALUES, (3, 4), dtype=dtype)


OPS = [
    # products ---------------------------------------------------------------
    OpInfo("matmul", ember.matmul, np.matmul, _pairs(*_MATMUL_SHAPES), dtypes=FLOATS_AND_INTS),
    OpInfo("mm", ember.mm, np.matmul, _pairs(((2, 3), (3, 4)), ((1, 3), (3, 1))),
           dtypes=FLOATS_AND_INTS),
    OpInfo("bmm", ember.bmm, np.matmul, _pairs(((2, 2, 3), (2, 3, 4))), dtypes=FLOATS_AND_INTS),
    OpInfo("sparse.mm", lambda d: ember.sparse.mm(_sparse(d.dtype), d),
           lambda d: _SPARSE_ARRAY @ d, _one((4, 2), (4, 1))),
    OpInfo("matmul_dense_sparse", lambda d: d @ _sparse(d.dtype), lambda d: d @ _SPARSE_ARRAY,
           _one((2, 3), (1, 3))),
    OpInfo("mv", ember.mv, np.matmul, _pairs(((2, 3), (3,))), dtypes=FLOATS_AND_INTS),
    OpInfo("dot", ember.dot, np.dot, _pairs(((3,), (3,))), dtypes=FLOATS_AND_INTS),
    OpInfo("vdot", ember.vdot, np.vdot, _pairs(((4,), (4,)))),
    OpInfo("inner", ember.inner, np.inner, _pairs(((2, 3), (4, 3)), ((3,), (3,)), ((), (2, 3)))),
    OpInfo("outer", ember.outer, np.outer, _pairs(((2,), (3,)))),
    OpInfo("kron", ember.kron, np.kron, _pairs(((2, 3), (2, 2)), ((2,), (2, 3)))),
    OpInfo("tensordot", lambda a, b, dims: ember.tensordot(a, b, dims),
           lambda a, b, dims: np.tensordot(a, b, dims),
           lambda rng: [Sample((rng.uniform(-2, 2, (2, 3, 4)), rng.uniform(-2, 2, (3, 4, 2)), 2)),
                        Sample((rng.uniform(-2, 2, (2, 3, 4)), rng.uniform(-2, 2, (4, 2, 3)),
                                ([0, 2], [1, 0])))]),
    OpInfo("einsum", ember.einsum, np.einsum,
           lambda rng: [Sample(("ij,jk->ik", rng.uniform(-2, 2, (2, 3)),
                                rng.uniform(-2, 2, (3, 4)))),
                        Sample(("ii->i", rng.uniform(-2, 2, (3, 3)))),
                        Sample(("bij,bkj->bik", rng.uniform(-2, 2, (2, 2, 3)),
                                rng.uniform(-2, 2, (2, 4, 3)))),
                        Sample(("...ij,...jk", rng.uniform(-2, 2, (2, 2, 3)),
                                rng.uniform(-2, 2, (3, 2)))),
                        Sample(("ij,k->k", rng.uniform(-2, 2, (2, 3)), rng.uniform(-2, 2, (4,)))),
                        Sample(("ii", rng.uniform(-2, 2, (3, 3)))),
                        Sample(("ij,jk,kl->il", rng.uniform(-2, 2, (2, 3)),
                                rng.uniform(-2, 2, (3, 2)), rng.uniform(-2, 2, (2, 2))))]),
    OpInfo("addmm", ember.addmm, _np_addmm,
           lambda rng: [Sample((rng.uniform(-2, 2, (4,)), rng.uniform(-2, 2, (2, 3)),
                                rng.uniform(-2, 2, (3, 4))), {"beta": 0.5, "alpha": 2.0}),
                        Sample((rng.uniform(-2, 2, (2, 4)), rng.uniform(-2, 2, (2, 3)),
                                rng.uniform(-2, 2, (3, 4))))]),
    OpInfo("addmv", ember.addmv, _np_addmm,
           _pairs(((2,), (2, 3), (3,)))),
    OpInfo("addr", ember.addr, _np_addr,
           lambda rng: [Sample((rng.uniform(-2, 2, (2, 3)), rng.uniform(-2, 2, (2,)),
                                rng.uniform(-2, 2, (3,))), {"beta": 2.0, "alpha": -1.0})]),
    OpInfo("baddbmm", ember.baddbmm, _np_addmm,
           lambda rng: [Sample((rng.uniform(-2, 2, (2, 4)), rng.uniform(-2, 2, (3, 2, 3)),
                                rng.uniform(-2, 2, (3, 3, 4))), {"beta": 0.5, "alpha": 2.0})]),
    OpInfo("addbmm", ember.addbmm, _np_addbmm,
           lambda rng: [Sample((rng.uniform(-2, 2, (2, 4)), rng.uniform(-2, 2, (3, 2, 3)),
                                rng.uniform(-2, 2, (3, 3, 4))), {"beta": 0.5, "alpha": 2.0})]),
    OpInfo("trace", ember.trace, np.trace, _one((3, 3), (2, 4)), dtypes=FLOATS_AND_INTS),
    OpInfo("linalg.cross", ember.linalg.cross, np.cross,
           _pairs(((4, 3), (4, 3)), ((1, 3), (2, 3)))),
    OpInfo("cross_dim", lambda a, b: ember.cross(a, b, dim=0),
           lambda a, b: np.cross(a, b, axis=0), _pairs(((3, 2), (3, 2)))),
    # norms ------------------------------------------------------------------
    OpInfo("linalg.vector_norm", ember.linalg.vector_norm, _np_vector_norm,
           lambda rng: [Sample((rng.uniform(-2, 2, (3, 4)),)),
                        Sample((rng.uniform(-2, 2, (3, 4)), 1), {"dim": 1}),
                        Sample((rng.uniform(-2, 2, (3, 4)), INF), {"dim": (0, 1),
                                                                   "keepdim": True}),
                        Sample((rng.uniform(-2, 2, (3, 4)), -INF), {"dim": 0}),
                        Sample((rng.uniform(0.5, 2, (3, 4)), 3), {"dim": -1}),
                        Sample((rng.uniform(0.5, 2, (3, 4)), 0.5), {"dim": 0}),
                        Sample((rng.uniform(-2, 2, ()),))]),
    *[OpInfo(f"linalg.matrix_norm_{o}", lambda a, o=o: ember.linalg.matrix_norm(a, o),
             lambda a, o=o: _np_matrix_norm(a, o), _one((3, 3), (2, 3, 4)), **LOOSE)
      for o in ("fro", "nuc", 1, -1, 2, -2, INF, -INF)],
    OpInfo("linalg.norm", ember.linalg.norm, np.linalg.norm,
           lambda rng: [Sample((rng.uniform(-2, 2, (3, 4)),)),
                        Sample((rng.uniform(-2, 2, (3, 4)), 2)),
                        Sample((rng.uniform(-2, 2, (3, 4)), None, 1))], **LOOSE),
    OpInfo("linalg.cond", ember.linalg.cond, _np_cond,
           lambda rng: [Sample((rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3),)),
                        Sample((rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3), "fro"))], **LOOSE),
    # inverses, determinants, solvers -----------------------------------------
    OpInfo("linalg.inv", ember.linalg.inv, np.linalg.inv, _square((3, 3), (2, 3, 3)), **LOOSE),
    OpInfo("linalg.det", ember.linalg.det, np.linalg.det, _square((3, 3), (2, 3, 3)), **LOOSE),
    OpInfo("linalg.slogdet", ember.linalg.slogdet, lambda a: tuple(np.linalg.slogdet(a)),
           _square((3, 3), (2, 3, 3)), output_index=1, **LOOSE),
    OpInfo("logdet", lambda m: ember.logdet(_spd(m)), lambda m: np.linalg.slogdet(_spd(m))[1],
           _one((3, 3)), **LOOSE),
    OpInfo("linalg.solve", ember.linalg.solve, _np_solve,
           lambda rng: [Sample((rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3),
                                rng.uniform(-2, 2, (3, 2)))),
                        Sample((rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3),
                                rng.uniform(-2, 2, (3,)))),
                        Sample((rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3),
                                rng.uniform(-2, 2, (2, 3))))], **LOOSE),
    OpInfo("linalg.solve_triangular",
           lambda a, b: ember.linalg.solve_triangular(a, b, upper=True),
           lambda a, b: np.linalg.solve(np.triu(a), b),
           lambda rng: [Sample((rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3),
                                rng.uniform(-2, 2, (3, 2))))], **LOOSE),
    OpInfo("linalg.matrix_power", ember.linalg.matrix_power, _np_matrix_power,
           lambda rng: [Sample((rng.uniform(-1, 1, (3, 3)) + 2 * np.eye(3), 3)),
                        Sample((rng.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3), -2)),
                        Sample((rng.uniform(-1, 1, (3, 3)), 0))], **LOOSE),
    OpInfo("linalg.multi_dot", lambda a, b, c: ember.linalg.multi_dot([a, b, c]),
           _np_multi_dot, _pairs(((3,), (3, 4), (4, 2)), ((2, 3), (3, 4), (4,)))),
    OpInfo("linalg.vecdot", ember.linalg.vecdot, lambda a, b: (a * b).sum(-1),
           _pairs(((3, 4), (3, 4)), ((4,), (2, 4)))),
    # decompositions ----------------------------------------------------------
    OpInfo("linalg.cholesky", lambda m: ember.linalg.cholesky(_spd(m)),
           lambda m: np.linalg.cholesky(_spd(m)), _one((3, 3), (2, 3, 3)), **LOOSE),
    OpInfo("linalg.cholesky_upper", lambda m: ember.linalg.cholesky(_spd(m), upper=True),
           lambda m: _mT(np.linalg.cholesky(_spd(m))), _one((3, 3)), **LOOSE),
    OpInfo("linalg.qr", lambda a: _flat(*ember.linalg.qr(a)), _qr_ref,
           _one((3, 3), (4, 3), (3, 4), (2, 4, 3)), **LOOSE),
    OpInfo("linalg.svd", _svd_op, _svd_ref, _one((3, 3), (4, 3), (3, 4)), **LOOSE),
    OpInfo("linalg.svd_full", lambda a: ember.linalg.svd(a).S,
           lambda a: np.linalg.svd(a)[1], _one((4, 3), (3, 4)), **LOOSE),
    OpInfo("linalg.svdvals", ember.linalg.svdvals, lambda a: np.linalg.svd(a)[1],
           _one((3, 3), (2, 4, 3)), **LOOSE),
    OpInfo("linalg.eigh", _eigh_op, _eigh_ref,
           lambda rng: [Sample((rng.uniform(-2, 2, (3, 3)),)),
                        Sample((rng.uniform(-2, 2, (2, 3, 3)),), {"UPLO": "U"})], **LOOSE),
    OpInfo("linalg.eigvalsh", lambda a: ember.linalg.eigvalsh(_sym(a)),
           lambda a: np.linalg.eigvalsh(_sym(a)), _one((3, 3)), **LOOSE),
    OpInfo("linalg.pinv", ember.linalg.pinv, _np_pinv, _one((3, 3), (4, 3), (3, 4)), **LOOSE),
    OpInfo("linalg.pinv_hermitian", lambda a: ember.linalg.pinv(_sym(a), hermitian=True),
           lambda a: np.linalg.pinv(_sym(a), hermitian=True), _one((3, 3)), **LOOSE),
    OpInfo("linalg.householder_product", ember.linalg.householder_product,
           _np_householder_product, _pairs(((4, 3), (2,)), ((3, 3), (3,)))),
    OpInfo("linalg.lu_factor", lambda a: ember.linalg.lu_factor(a).LU, _np_lu_packed,
           _square((3, 3), (2, 3, 3)), **LOOSE),
    OpInfo("linalg.lu_solve",
           lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b), _np_solve,
           lambda rng: [Sample((rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3),
                                rng.uniform(-2, 2, (3, 2))))], **LOOSE),
    OpInfo("linalg.lstsq", lambda a, b: ember.linalg.lstsq(a, b).solution, _np_lstsq,
           _pairs(((4, 3), (4, 2))), **LOOSE),
    OpInfo("linalg.matrix_rank", ember.linalg.matrix_rank, np.linalg.matrix_rank,
           _one((3, 4), (2, 3, 3)), dtypes=FLOATS, grad_order=0),
    # the matrix exponential and the composite solvers ---------------------------
    OpInfo("linalg.matrix_exp", ember.linalg.matrix_exp, _np_expm,
           _one((3, 3), (2, 3, 3), low=-1.5, high=1.5), **LOOSE),
    OpInfo("cholesky_solve", lambda b, m: ember.cholesky_solve(b, ember.linalg.cholesky(_spd(m))),
           lambda b, m: np.linalg.solve(_spd(m), b), _pairs(((3, 2), (3, 3)),
                                                            ((2, 3, 1), (2, 3, 3))), **LOOSE),
    OpInfo("cholesky_inverse", lambda m: ember.cholesky_inverse(ember.linalg.cholesky(_spd(m))),
           lambda m: np.linalg.inv(_spd(m)), _one((3, 3)), **LOOSE),
]

