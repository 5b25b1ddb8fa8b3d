"""Products of a 2-D sparse COO matrix and a dense matrix: ``sparse @ dense`` and
``dense @ sparse`` (a graph convolution's ``adj @ features``).

Each stored entry (i, j, v) of the sparse matrix S adds ``v * dense[j]`` to row i of
``S @ dense``; duplicate entries of an uncoalesced S simply add up.  ember's sparse
S is usually a constant of the product and only the dense operand gets a gradient:
``S^T @ grad`` (or ``grad @ S^T``), computed by the same Function on the transposed
entries, which makes every order of derivative work.  When S's values require grad (S was
built from a tensor that does), the product is written with ember ops on the values instead,
so both sides get gradients.
"""

from __future__ import annotations

from .._core.backend import module_of, scatter_add
from .._core.function import Function
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor, _make
from ._util import cpp_name

__all__ = ["sparse_mm", "sparse_addmm", "spmm"]


def _coo_times_dense(coo, dense):
    """``S @ dense`` on arrays, for a 2-D COO matrix S and a dense matrix."""
    xp = module_of(dense)
    out = xp.zeros((coo.shape[0], dense.shape[1]), dtype=dense.dtype)
    rows, cols = coo.indices[0], coo.indices[1]
    if rows.size:
        scatter_add(xp, out, rows, coo.values[:, None] * dense[cols])
    return out


class SparseMatmul(Function):
    """``S @ dense``, or ``dense @ S`` with `sparse_right`, for a constant 2-D COO matrix
    S given as `coo` (a CooData).  Gradient of dense: ``S^T @ grad`` (``grad @ S^T``)."""

    @staticmethod
    def forward(ctx, dense, *, coo, sparse_right=False, name="MmBackward0"):
        ctx._name = name
        ctx.coo, ctx.sparse_right = coo, sparse_right
        if sparse_right:  # dense @ S = (S^T @ dense^T)^T
            product = _coo_times_dense(coo.transposed(), dense.T).T
            return module_of(product).ascontiguousarray(product)
        return _coo_times_dense(coo, dense)

    @staticmethod
    def backward(ctx, grad):
        return SparseMatmul.apply(grad, coo=ctx.coo.transposed(),
                                  sparse_right=ctx.sparse_right, name=ctx._name)


def _check_operands(op: str, sparse: Tensor, dense: Tensor, sparse_right: bool) -> None:
    if not isinstance(dense, Tensor) or not isinstance(sparse, Tensor):
        raise TypeError(f"{op}(): expected Tensor operands")
    if dense.is_sparse:
        raise NotImplementedError(f"{op}: the product of two sparse tensors is not supported by "
                                  "ember; call to_dense() on one of them")
    if sparse.sparse_dim() != 2 or sparse.dense_dim() != 0:
        raise NotImplementedError(f"{op}: ember multiplies 2-D sparse matrices only (got "
                                  f"sparse_dim {sparse.sparse_dim()}, dense_dim "
                                  f"{sparse.dense_dim()})")
    if dense.dim() != 2:
        raise RuntimeError(f"{op}: expected a 2-D dense matrix, got {dense.dim()}-D with shape "
                           f"{list(dense.shape)}")
    inner_sparse = sparse.shape[0] if sparse_right else sparse.shape[1]
    inner_dense = dense.shape[1] if sparse_right else dense.shape[0]
    if inner_sparse != inner_dense:
        first, second = (dense, sparse) if sparse_right else (sparse, dense)
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied "
                           f"({first.shape[0]}x{first.shape[1]} and "
                           f"{second.shape[0]}x{second.shape[1]})")
    if sparse.dtype != dense.dtype:
        raise RuntimeError(f"expected scalar type {cpp_name(sparse.dtype)} but found "
                           f"{cpp_name(dense.dtype)} (when checking arguments for {op})")
    if sparse.device != dense.device:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, {sparse.device} and {dense.device}! (when checking "
                           f"arguments for {op})")


def _recorded_product(sparse: Tensor, dense: Tensor, sparse_right: bool) -> Tensor:
    """``S @ dense`` (``dense @ S``) written with ember ops on the values of S, for an S whose
    values require grad: each entry (i, j, v) adds ``v * dense[j]`` to row i (``v *
    dense[:, i]`` to column j), so the gradient reaches the values and the dense side."""
    rows, cols = (_make(r) for r in sparse._data.indices)
    values = sparse._grad_values
    if sparse_right:
        out = dense.new_zeros((dense.shape[0], sparse.shape[1]))
        return out.index_add(1, cols, dense.index_select(1, rows) * values)
    out = dense.new_zeros((sparse.shape[0], dense.shape[1]))
    return out.index_add(0, rows, values.unsqueeze(1) * dense.index_select(0, cols))


def _product(sparse: Tensor, dense: Tensor, sparse_right: bool = False,
             name: str = "MmBackward0") -> Tensor:
    if sparse._grad_values is not None and is_grad_enabled():
        return _recorded_product(sparse, dense, sparse_right)
    return SparseMatmul.apply(dense, coo=sparse._data, sparse_right=sparse_right, name=name)


def sparse_mm(sparse: Tensor, dense: Tensor, *, name: str = "SparseAddmmBackward0") -> Tensor:
    """``sparse @ dense`` for a 2-D sparse COO matrix and a dense matrix: a dense matrix,
    differentiable in `dense` (``torch.sparse.mm``).

    >>> adj = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1., 1.], (2, 2))
    >>> ember.sparse.mm(adj, ember.tensor([[1., 2.], [3., 4.]]))
    tensor([[3., 4.],
            [1., 2.]])
    """
    if not sparse.is_sparse:
        from .linalg import mm  # (lazy: linalg imports this module for sparse operands)

        return matmul_with_sparse("mm", sparse, dense) if dense.is_sparse else mm(sparse, dense)
    _check_operands("mm", sparse, dense, sparse_right=False)
    return _product(sparse, dense, name=name)


def matmul_with_sparse(op: str, input: Tensor, other: Tensor) -> Tensor:
    """``input @ other`` where one operand is a 2-D sparse COO matrix (``mm``, ``matmul``,
    ``@``, ``spmm``): a dense matrix, differentiable in the dense operand."""
    if input.is_sparse:
        _check_operands(op, input, other, sparse_right=False)
        return _product(input, other)
    _check_operands(op, other, input, sparse_right=True)
    return _product(other, input, sparse_right=True)


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """``input @ mat2`` for a 2-D sparse COO `input` and a dense `mat2` (``torch.spmm``)."""
    return matmul_with_sparse("spmm", input, mat2)


def sparse_addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse `mat1` and dense `mat` and
    `mat2` (``torch.sparse.addmm``), differentiable in `mat` and `mat2`."""
    product = sparse_mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # as in addmm, `mat` is ignored then (even its nan and inf)
        return product
    return (mat * beta if beta != 1 else mat) + product

