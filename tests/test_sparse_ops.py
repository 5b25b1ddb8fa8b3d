"""Sparse COO ops of issue 16: t/transpose, neg, sparse.softmax/log_softmax, gradients to
the values (to_dense, sparse.mm, coalesce) and to the dense side, and dense + sparse."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing import assert_close

INDICES = [[0, 1, 1], [2, 0, 2]]
VALUES = [3.0, 4.0, 5.0]
DENSE = np.array([[0.0, 0.0, 3.0], [4.0, 0.0, 5.0]])


def _example(values=VALUES, dtype=None):
    return ember.sparse_coo_tensor(INDICES, values, (2, 3), dtype=dtype)


def _masked_softmax(dense, present, axis, log=False):
    """NumPy reference: softmax over the present entries only (others are -inf)."""
    scores = np.where(present, dense, -np.inf)
    top = scores.max(axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    exp = np.where(present, np.exp(scores - top), 0.0)
    total = exp.sum(axis=axis, keepdims=True)
    if log:
        return np.where(present, scores - top - np.log(np.where(total > 0, total, 1.0)), 0.0)
    return np.where(present, exp / np.where(total > 0, total, 1.0), 0.0)


def test_t_and_transpose_swap_the_indices():
    s = _example()
    for out in (s.t(), s.transpose(0, 1), s.transpose(-1, -2), s.swapaxes(0, 1), ember.t(s),
                ember.transpose(s, 0, 1)):
        assert out.is_sparse and out.shape == (3, 2)
        assert_close(out.to_dense(), DENSE.T)
    assert not s.coalesce().t().is_coalesced()  # swapped indices are no longer sorted
    assert s.transpose(1, 1).to_dense().tolist() == DENSE.tolist()


def test_transpose_of_a_dense_dim_and_t_of_3d_raise():
    s = ember.sparse_coo_tensor([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], (2, 2))
    with pytest.raises(RuntimeError, match="transposed dimensions must be sparse"):
        s.transpose(0, 1)
    s3 = ember.sparse_coo_tensor([[0], [1], [0]], [1.0], (2, 2, 2))
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 sparse"):
        s3.t()


def test_transpose_3d_sparse_dims():
    s = ember.sparse_coo_tensor([[0, 1], [1, 0], [2, 1]], [1.0, 2.0], (2, 2, 3))
    assert_close(s.transpose(0, 2).to_dense(), np.swapaxes(s.to_dense().numpy(), 0, 2))


def test_neg_in_every_form():
    s = _example()
    for out in (ember.neg(s), s.neg(), -s, ember.negative(s)):
        assert out.is_sparse
        assert_close(out.to_dense(), -DENSE)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_over_stored_entries_matches_numpy(dim, log):
    s = _example(dtype=ember.float64)
    fn = ember.sparse.log_softmax if log else ember.sparse.softmax
    out = fn(s, dim)
    assert out.is_sparse and out.is_coalesced() and out._nnz() == 3
    expected = _masked_softmax(DENSE, DENSE != 0, dim, log)
    assert_close(out.to_dense(), expected)


def test_softmax_over_a_dense_dim_and_with_dtype():
    s = ember.sparse_coo_tensor([[0, 1]], [[1.0, 2.0], [3.0, 5.0]], (3, 2))
    out = ember.sparse.softmax(s, 1)
    rows = np.array([[1.0, 2.0], [3.0, 5.0]])
    expected = np.exp(rows) / np.exp(rows).sum(1, keepdims=True)
    assert_close(out.to_dense(), np.array([expected[0], expected[1], [0.0, 0.0]]),
                 check_dtype=False)
    assert ember.sparse.softmax(_example(), 1, dtype=ember.float64).dtype is ember.float64


def test_softmax_sums_duplicates_first():
    s = ember.sparse_coo_tensor([[0, 0, 0], [1, 1, 2]], [1.0, 1.0, 2.0], (1, 3))
    out = ember.sparse.softmax(s, 1).to_dense()
    assert_close(out, np.array([[0.0, 0.5, 0.5]]))


def test_to_dense_gradient_reaches_the_values():
    v = ember.tensor(VALUES, requires_grad=True)
    s = ember.sparse_coo_tensor(INDICES, v, (2, 3))
    assert s.requires_grad
    weights = ember.arange(6.0).reshape(2, 3)
    (s.to_dense() * weights).sum().backward()
    assert v.grad.tolist() == [2.0, 3.0, 5.0]  # the weights at (0, 2), (1, 0), (1, 2)
    assert not ember.sparse_coo_tensor(INDICES, VALUES, (2, 3)).requires_grad


def test_gradients_through_values_pass_gradcheck():
    v = ember.tensor(VALUES, dtype=ember.float64, requires_grad=True)
    d = ember.arange(6.0, dtype=ember.float64).reshape(3, 2).requires_grad_()
    left = ember.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=ember.float64, requires_grad=True)

    def dense_of(values):
        return ember.sparse_coo_tensor(INDICES, values, (2, 3)).to_dense()

    def product(values, dense):
        return ember.sparse.mm(ember.sparse_coo_tensor(INDICES, values, (2, 3)), dense)

    def product_right(values, dense):
        return dense @ ember.sparse_coo_tensor(INDICES, values, (2, 3))

    def softmax(values):
        s = ember.sparse_coo_tensor(INDICES, values, (2, 3))
        return ember.sparse.log_softmax(s, 1).to_dense()

    def coalesced(values):
        s = ember.sparse_coo_tensor([[0, 0, 1]], values, (2,))
        return s.coalesce().to_dense() * ember.tensor([2.0, 3.0], dtype=ember.float64)

    assert gradcheck(dense_of, (v,))
    assert gradcheck(product, (v, d))
    assert gradcheck(product_right, (v, left))
    assert gradcheck(softmax, (v,))
    assert gradcheck(coalesced, (v,))


def test_mm_gradients_by_hand():
    v = ember.tensor(VALUES, requires_grad=True)
    d = ember.ones(3, 2, requires_grad=True)
    ember.sparse.mm(ember.sparse_coo_tensor(INDICES, v, (2, 3)), d).sum().backward()
    assert v.grad.tolist() == [2.0, 2.0, 2.0]  # each entry meets one row of ones, twice
    assert d.grad.tolist() == [[4.0, 4.0], [0.0, 0.0], [8.0, 8.0]]  # S^T @ ones
    d2 = ember.ones(3, 2, requires_grad=True)
    ember.sparse.mm(_example(), d2).sum().backward()  # constant S: the dense side only
    assert d2.grad.tolist() == [[4.0, 4.0], [0.0, 0.0], [8.0, 8.0]]


def test_dense_plus_sparse_is_dense_in_every_form():
    d = ember.ones(2, 3, requires_grad=True)
    s = _example()
    for out, expected in ((d + s, 1 + DENSE), (ember.add(d, s), 1 + DENSE),
                          (d.add(s), 1 + DENSE), (d.add(s, alpha=2), 1 + 2 * DENSE),
                          (ember.sub(d, s), 1 - DENSE), (d - s, 1 - DENSE)):
        assert not out.is_sparse
        assert_close(out, expected, check_dtype=False)
    ember.add(d, s).sum().backward()
    assert d.grad.tolist() == [[1.0] * 3] * 2
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + d


def test_dense_plus_sparse_with_values_that_need_grad():
    v = ember.tensor(VALUES, requires_grad=True)
    s = ember.sparse_coo_tensor(INDICES, v, (2, 3))
    (ember.zeros(2, 3) + s).sum().backward()
    assert v.grad.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------------------------------
# PyTorch parity (skips without torch)


def _torch_example(torch, values=VALUES):
    return torch.sparse_coo_tensor(INDICES, values, (2, 3))


def test_ops_match_pytorch():
    torch = pytest.importorskip("torch")
    s, ts = _example(), _torch_example(torch)
    assert_close(s.t().to_dense(), ts.t().to_dense().numpy())
    assert_close(ember.neg(s).to_dense(), torch.neg(ts).to_dense().numpy())
    for dim in (0, 1):
        assert_close(ember.sparse.softmax(s, dim).to_dense(),
                     torch.sparse.softmax(ts, dim).to_dense().numpy())
        assert_close(ember.sparse.log_softmax(s, dim).to_dense(),
                     torch.sparse.log_softmax(ts, dim).to_dense().numpy())
    d, td = ember.ones(2, 3), torch.ones(2, 3)
    assert_close(ember.add(d, s, alpha=3), torch.add(td, ts, alpha=3).numpy())
    assert_close(d.sub(s), td.sub(ts).numpy())


def test_value_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    v, tv = ember.tensor(VALUES, requires_grad=True), torch.tensor(VALUES, requires_grad=True)
    w = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], dtype=np.float32)
    s = ember.sparse_coo_tensor(INDICES, v, (2, 3))
    ts = torch.sparse_coo_tensor(INDICES, tv, (2, 3))
    d, td = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    (ember.sparse.mm(s, d) ** 2).sum().backward()
    (torch.sparse.mm(ts, td) ** 2).sum().backward()
    assert_close(v.grad, tv.grad.numpy())
    assert_close(d.grad, td.grad.numpy())
    v2, tv2 = ember.tensor(VALUES, requires_grad=True), torch.tensor(VALUES, requires_grad=True)
    ember.sparse.softmax(ember.sparse_coo_tensor(INDICES, v2, (2, 3)), 1).to_dense()[1, 2] \
        .backward()
    torch.sparse.softmax(torch.sparse_coo_tensor(INDICES, tv2, (2, 3)), 1).to_dense()[1, 2] \
        .backward()
    assert_close(v2.grad, tv2.grad.numpy())


def test_sum_and_values_keep_the_gradient():
    v = ember.tensor(VALUES, requires_grad=True)
    s = ember.sparse_coo_tensor(INDICES, v, (2, 3))
    (ember.sparse.sum(s) * 2).backward()
    assert v.grad.tolist() == [2.0, 2.0, 2.0]
    v.grad = None
    (s.coalesce().values() ** 2).sum().backward()  # d/dv of v^2: 2v
    assert v.grad.tolist() == [6.0, 8.0, 10.0]
    assert not _example().coalesce().values().requires_grad
