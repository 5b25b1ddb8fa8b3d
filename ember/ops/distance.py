"""Distances between vectors (cosine_similarity, pdist, cdist) and one_hot.

(pairwise_distance lives in loss_margin.py, beside the triplet losses that use it.)

The distances are compositions of existing ember ops, so their gradients (of any order)
come from autograd, except cdist's matrix-product form for many Euclidean distances, a
Function whose backward is written with ops too; one_hot has none.
"""

from __future__ import annotations

from .._core.function import Function
from .._core.tensor import Tensor, _make
from ._broadcast import broadcast_shapes
from ._util import cpp_name, wrap_dim, xp_of
from .linalg_norms import vector_norm
from .normalization import normalize


def _check(op: str, *tensors) -> None:
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument 'x{i + 1}' (position {i + 1}) must be Tensor, "
                            f"not {type(t).__name__}")


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(|x1|, eps) * max(|x2|, eps))`` along `dim` (inputs broadcast).

    >>> cosine_similarity(ember.tensor([[1., 0.]]), ember.tensor([[1., 1.]]))
    tensor([0.7071])
    """
    _check("cosine_similarity", x1, x2)
    shape = broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    if not (x1.is_floating_point() or x2.is_floating_point()):
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{x1.dtype.name.capitalize().replace('Int64', 'Long')}")
    dim = wrap_dim(dim, len(shape), "cosine_similarity")
    a, b = x1.expand(shape), x2.expand(shape)
    # (each side's a / max(|a|, eps): normalize's one node where it applies)
    return (normalize(a, 2.0, dim, eps) * normalize(b, 2.0, dim, eps)).sum(dim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distance between every pair of rows i < j of an (N, M) input, as a
    vector of N(N-1)/2 entries (the upper triangle of the distance matrix, row by row)."""
    _check("pdist", input)
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    xp = xp_of(input._data)
    n = input.shape[0]
    i, j = xp.triu_indices(n, 1)
    diff = input[_make(i)] - input[_make(j)]
    return vector_norm(diff, p, -1)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of `x1` (..., P, M) and each row of `x2`
    (..., R, M): a (..., P, R) tensor; leading dims broadcast.

    Euclidean distances between more than 25 rows on a side (or always, with
    ``compute_mode="use_mm_for_euclid_dist"``) come from one matrix product,
    ``|a|^2 + |b|^2 - 2 a.b``, as in PyTorch: faster, slightly less precise for close rows.
    """
    _check("cdist", x1, x2)
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.dim()}D")
        if not t.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{cpp_name(t.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    batch = broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    a = x1.expand(batch + tuple(x1.shape[-2:]))
    b = x2.expand(batch + tuple(x2.shape[-2:]))
    rows_a, rows_b = a.shape[-2], b.shape[-2]
    by_product = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == _CDIST_MODES[0] and (rows_a > 25 or rows_b > 25)))
    if by_product:
        return EuclideanCdist.apply(a, b)
    return vector_norm(a.unsqueeze(-2) - b.unsqueeze(-3), p, -1)


class EuclideanCdist(Function):
    """``sqrt(max(|a_i|^2 + |b_j|^2 - 2 a_i.b_j, 0))`` for every pair of rows, by one matrix
    product.  Gradient: with ``W = grad / D`` (0 where D is 0), ``a * rowsum(W) - W b``
    for `a` and ``b * colsum(W) - W^T a`` for `b`."""

    _name = "CdistBackward0"

    @staticmethod
    def forward(ctx, a, b):
        xp = xp_of(a)
        squares = (a * a).sum(-1)[..., :, None] + (b * b).sum(-1)[..., None, :]
        squares -= 2 * xp.matmul(a, xp.swapaxes(b, -1, -2))
        out = xp.sqrt(xp.maximum(squares, 0))
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        w = (grad / out.where(out > 0, 1.0)).where(out > 0, 0.0)
        ga = a * w.sum(-1, keepdim=True) - w.matmul(b) if ctx._edges[0][0] is not None else None
        gb = b * w.sum(-2).unsqueeze(-1) - w.mT.matmul(a) if ctx._edges[1][0] is not None \
            else None
        return ga, gb


class OneHot(Function):
    """``one_hot`` (no gradient; a Function so that the profiler and ONNX export see it)."""

    @staticmethod
    def forward(ctx, x, num_classes):
        xp = xp_of(x)
        return (x[..., None] == xp.arange(num_classes)).astype(xp.int64)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 indices (*) -> (*, num_classes) int64 with a 1 at each index, zeros elsewhere.
    ``num_classes=-1`` uses the largest index + 1.

    >>> one_hot(ember.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    if not isinstance(tensor, Tensor) or tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = tensor._data
    if num_classes == -1:
        if data.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(data.max()) + 1
    if data.size:
        if int(data.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(data.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return OneHot.apply(tensor, int(num_classes))
