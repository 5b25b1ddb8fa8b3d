"""ember.linalg: PyTorch's ``torch.linalg`` namespace (re-exports only).

The ops live in ``ember/ops/linalg*.py`` and ``ember/ops/einsum.py``.
"""

from .ops.linalg import linalg_cross as cross
from .ops.linalg import matmul
from .ops.linalg_decomp import (
    LinAlgError, cholesky, cholesky_ex, det, inv, inv_ex, matrix_power, multi_dot, slogdet,
    solve, solve_triangular, vecdot,
)
from .ops.linalg_decomp import qr
from .ops.linalg_composite import linalg_diagonal as diagonal
from .ops.linalg_composite import linalg_vander as vander
from .ops.linalg_composite import (
    householder_product, matrix_exp, solve_ex, tensorinv, tensorsolve,
)
from .ops.linalg_eig import eig, eigvals
from .ops.linalg_lu import lu, lu_factor, lu_factor_ex, lu_solve
from .ops.linalg_norms import cond, matrix_norm, norm, vector_norm
from .ops.linalg_svd import eigh, eigvalsh, lstsq, matrix_rank, pinv, svd, svdvals

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh",
    "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "lstsq", "lu", "lu_factor",
    "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
    "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
    "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
    "vector_norm",
]
