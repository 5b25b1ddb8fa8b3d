"""``ember.sparse``: sparse COO tensors (``torch.sparse``).

A pure re-export list: the tensor type and its ops live in ``ember/ops/sparse_coo.py``
and ``ember/ops/sparse_matmul.py``, below the method table.
"""

from __future__ import annotations

from .ops.sparse_coo import (
    SparseTensor, sparse_coo, sparse_coo_tensor, strided, sum, to_sparse,
)
from .ops.sparse_coo import _rebuild_sparse  # noqa: F401 - pickles made before the move name it
from .ops.sparse_matmul import sparse_addmm as addmm
from .ops.sparse_matmul import sparse_mm as mm
from .ops.sparse_softmax import log_softmax, softmax

__all__ = ["sparse_coo", "strided", "SparseTensor", "sparse_coo_tensor", "to_sparse", "sum",
           "mm", "addmm", "softmax", "log_softmax"]
