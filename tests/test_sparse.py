"""ember.sparse: the COO tensor, its few ops, sparse gradients in the engine and the
optimizers that take them (SGD, Adagrad, SparseAdam)."""

import copy
import pickle

import numpy as np
import pytest

import ember
from ember import nn
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def _example():
    return ember.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], [3.0, 4.0, 5.0], (2, 3))


def test_construction_and_queries():
    s = _example()
    assert s.is_sparse and s.layout == ember.sparse_coo == "sparse_coo"
    assert s.shape == (2, 3) and s.dim() == 2 and s.numel() == 6
    assert s.dtype is ember.float32 and s.device == ember.device("cpu")
    assert s._nnz() == 3 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert not s.is_coalesced()
    assert_close(s.to_dense(), np.array([[0.0, 0.0, 3.0], [9.0, 0.0, 0.0]]))
    assert s._indices().tolist() == [[0, 1, 1], [2, 0, 0]]
    assert s._values().tolist() == [3.0, 4.0, 5.0]
    assert not ember.tensor([1.0]).is_sparse


def test_size_inferred_and_dense_dims():
    s = ember.sparse_coo_tensor([[0, 3]], [[1.0, 2.0], [3.0, 4.0]])
    assert s.shape == (4, 2) and s.sparse_dim() == 1 and s.dense_dim() == 1
    assert_close(s.to_dense(), np.array([[1.0, 2.0], [0, 0], [0, 0], [3.0, 4.0]]))
    assert ember.sparse_coo_tensor([[0, 1]], [1, 2]).dtype is ember.int64


def test_coalesce_sums_duplicates_and_sorts():
    c = _example().coalesce()
    assert c.is_coalesced() and c._nnz() == 2
    assert c.indices().tolist() == [[0, 1], [2, 0]]
    assert c.values().tolist() == [3.0, 9.0]
    assert c.coalesce() is c


def test_indices_of_uncoalesced_tensor_raise():
    with pytest.raises(RuntimeError, match="uncoalesced"):
        _example().indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        _example().values()


@pytest.mark.parametrize("indices, values, size, message", [
    ([0, 1], [1.0, 2.0], (2,), "sparse_dim x nnz"),
    ([[0, 1]], [1.0], (2,), "same nnz"),
    ([[0, 5]], [1.0, 2.0], (2,), "size is inconsistent"),
    ([[0, -1]], [1.0, 2.0], (2,), "negative index"),
    ([[0, 1]], [1.0, 2.0], (2, 2), "number of dimensions"),
])
def test_construction_errors(indices, values, size, message):
    with pytest.raises(RuntimeError, match=message):
        ember.sparse_coo_tensor(indices, values, size)


def test_dense_plus_sparse_and_in_place_add():
    d = ember.ones(2, 3)
    assert_close(d + _example(), np.array([[1.0, 1, 4], [10, 1, 1]]))
    d.add_(_example(), alpha=2)
    assert_close(d, np.array([[1.0, 1, 7], [19, 1, 1]]))
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
        _example() + ember.ones(2, 3)


def test_dense_plus_sparse_is_differentiable_in_the_dense_operand():
    d = ember.ones(2, 3, requires_grad=True)
    (d + _example()).sum().backward()
    assert_close(d.grad, np.ones((2, 3)))


def test_sparse_arithmetic():
    s = _example()
    assert (s + s)._nnz() == 6
    assert_close((s + s).to_dense(), 2 * s.to_dense())
    assert_close((s * 2).to_dense(), 2 * s.to_dense())
    assert_close((2 * s).to_dense(), 2 * s.to_dense())
    assert_close((s / 2).to_dense(), s.to_dense() / 2)
    assert_close((-s).to_dense(), -s.to_dense())
    assert_close((s - s).to_dense(), np.zeros((2, 3)))
    assert float(s.sum()) == 12.0
    t = s.clone().mul_(3)
    assert_close(t.to_dense(), 3 * s.to_dense())
    assert s.clone().zero_()._nnz() == 0


def test_conversions_and_copies():
    s = _example()
    d = s.double()
    assert d.is_sparse and d.dtype is ember.float64
    assert s.to(ember.float32) is s
    assert s.detach().is_sparse and s.clone()._values() is not s._values()
    for other in (copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        assert other.is_sparse and other._indices().tolist() == s._indices().tolist()
    assert "layout=ember.sparse_coo" in repr(s) and "nnz=3" in repr(s)


def test_other_ops_raise_not_implemented():
    s = _example()
    for fn in (lambda: s.exp(), lambda: ember.exp(s), lambda: s[0], lambda: s.T,
               lambda: s.numpy(), lambda: s * ember.ones(2, 3), lambda: s.item()):
        with pytest.raises(NotImplementedError, match="sparse"):
            fn()
    with pytest.raises(NotImplementedError, match="gradients"):
        s.requires_grad_()


def test_sparse_gradients_accumulate_in_the_engine():
    emb = nn.Embedding(6, 3, sparse=True)
    emb(ember.tensor([1, 2])).sum().backward()
    first = emb.weight.grad
    assert first.is_sparse and first._nnz() == 2
    emb(ember.tensor([2, 3])).sum().backward()  # sparse + sparse: entries concatenated
    assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 4
    assert_close(emb.weight.grad.to_dense().sum(1), np.array([0.0, 3, 6, 3, 0, 0]))
    # one weight reached twice in a graph: the engine sums the two sparse gradients
    emb.weight.grad = None
    (emb(ember.tensor([1])).sum() + emb(ember.tensor([1, 4])).sum()).backward()
    assert_close(emb.weight.grad.to_dense().sum(1), np.array([0.0, 6, 0, 0, 3, 0]))
    # sparse + dense (a tied weight): the sum is dense
    emb.weight.grad = None
    (emb(ember.tensor([1])).sum() + (emb.weight * 2).sum()).backward()
    grad = emb.weight.grad
    assert not grad.is_sparse
    assert_close(grad.sum(1), np.array([6.0, 9, 6, 6, 6, 6]))


def test_zero_grad_without_set_to_none_empties_a_sparse_gradient():
    emb = nn.Embedding(4, 2, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.1)
    emb(ember.tensor([1])).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert emb.weight.grad.is_sparse and emb.weight.grad._nnz() == 0


def _train(lib, sparse, opt_name, options, weight, steps):
    emb = lib.nn.Embedding(6, 3, sparse=sparse)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(weight))
    opt = getattr(lib.optim, opt_name)(emb.parameters(), **options)
    for idx in steps:
        opt.zero_grad()
        (emb(lib.tensor(idx)) ** 2).sum().backward()
        opt.step()
    return emb.weight.detach().numpy().copy()


OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1}),
]
STEPS = [np.array([[0, 2, 0], [4, 2, 1]]), np.array([[5, 5, 1], [0, 3, 3]])] * 2


@pytest.mark.parametrize("name, options", OPTIMIZERS)
def test_sparse_steps_equal_dense_steps(name, options):
    weight = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    sparse = _train(ember, True, name, options, weight, STEPS)
    dense = _train(ember, False, name, options, weight, STEPS)
    assert_close(sparse, dense, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("name, options", OPTIMIZERS + [("SparseAdam", {"lr": 0.1})])
def test_sparse_steps_match_pytorch(name, options):
    weight = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    ours = _train(ember, True, name, options, weight, STEPS)
    theirs = _train(torch, True, name, options, weight, STEPS)
    assert_close(ours, theirs, rtol=1e-4, atol=1e-6)


def test_sparse_adam_refuses_dense_and_sgd_refuses_weight_decay():
    emb = nn.Embedding(4, 2)
    emb(ember.tensor([1])).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        ember.optim.SparseAdam(emb.parameters()).step()
    sparse = nn.Embedding(4, 2, sparse=True)
    sparse(ember.tensor([1])).sum().backward()
    with pytest.raises(RuntimeError, match="add\\(sparse, dense\\)"):
        ember.optim.SGD(sparse.parameters(), lr=0.1, weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match="weight_decay"):
        ember.optim.Adagrad(sparse.parameters(), weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match="sparse gradients"):
        ember.optim.Adam(sparse.parameters()).step()


# --- sparse @ dense products ---------------------------------------------------------------


def _adjacency(dtype=ember.float64):
    # 3x4, uncoalesced: (0, 1) is stored twice and adds up
    return ember.sparse_coo_tensor([[0, 1, 2, 0, 2], [1, 0, 3, 1, 2]],
                                   [1.5, -2.0, 0.5, 1.0, 3.0], (3, 4), dtype=dtype)


def _adjacency_array():
    return np.array([[0, 2.5, 0, 0], [-2.0, 0, 0, 0], [0, 0, 3.0, 0.5]])


@pytest.mark.parametrize("product", [
    lambda s, d: ember.sparse.mm(s, d), lambda s, d: ember.mm(s, d),
    lambda s, d: ember.matmul(s, d), lambda s, d: s @ d, lambda s, d: s.mm(d),
    lambda s, d: s.matmul(d), lambda s, d: ember.spmm(s, d)])
def test_sparse_times_dense_equals_the_dense_product(product):
    d = np.random.default_rng(0).standard_normal((4, 5))
    out = product(_adjacency(), ember.tensor(d))
    assert not out.is_sparse
    assert_close(out, _adjacency_array() @ d)


def test_dense_times_sparse_and_addmm():
    rng = np.random.default_rng(1)
    d, m, d2 = rng.standard_normal((2, 3)), rng.standard_normal((3, 5)), rng.standard_normal((4, 5))
    assert_close(ember.tensor(d) @ _adjacency(), d @ _adjacency_array())
    assert_close(ember.mm(ember.tensor(d), _adjacency()), d @ _adjacency_array())
    out = ember.sparse.addmm(ember.tensor(m), _adjacency(), ember.tensor(d2), beta=0.5, alpha=2)
    assert_close(out, 0.5 * m + 2 * _adjacency_array() @ d2)


def test_sparse_products_of_empty_and_float32_matrices():
    empty = ember.sparse_coo_tensor(ember.zeros((2, 0), dtype=ember.int64), ember.zeros(0),
                                    (3, 4))
    out = ember.sparse.mm(empty, ember.ones(4, 2))
    assert out.dtype is ember.float32 and out.tolist() == [[0.0, 0.0]] * 3
    d = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = ember.sparse.mm(_adjacency(ember.float32), ember.tensor(d))
    assert out.dtype is ember.float32
    assert_close(out, (_adjacency_array() @ d).astype(np.float32))


def test_sparse_product_gradients():
    s = _adjacency()
    d = ember.tensor(np.random.default_rng(2).standard_normal((4, 2)), requires_grad=True)
    e = ember.tensor(np.random.default_rng(3).standard_normal((2, 3)), requires_grad=True)
    out = ember.sparse.mm(s, d)
    assert out.grad_fn.name() == "SparseAddmmBackward0"
    assert (s @ d).grad_fn.name() == "MmBackward0"
    g = np.arange(6.0).reshape(3, 2)
    out.backward(ember.tensor(g))
    assert_close(d.grad, _adjacency_array().T @ g)  # S^T @ grad
    (e @ s).backward(ember.tensor(np.ones((2, 4))))
    assert_close(e.grad, np.ones((2, 4)) @ _adjacency_array().T)  # grad @ S^T
    assert ember.autograd.gradcheck(lambda x: ember.sparse.mm(s, x), (d,))
    assert ember.autograd.gradgradcheck(lambda x: (s @ x).pow(2), (d,))
    assert ember.autograd.gradgradcheck(lambda x: (x @ s).pow(2), (e,))


def test_sparse_product_errors():
    s, d = _adjacency(), ember.ones(4, 2, dtype=ember.float64)
    with pytest.raises(NotImplementedError, match="two sparse tensors"):
        ember.sparse.mm(s, _adjacency())
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(3x4 and 3x2\)"):
        ember.sparse.mm(s, ember.ones(3, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match=r"cannot be multiplied \(2x2 and 3x4\)"):
        ember.ones(2, 2, dtype=ember.float64) @ s
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        ember.sparse.mm(s, ember.ones(4, 2))
    with pytest.raises(RuntimeError, match="2-D dense matrix"):
        s @ ember.ones(4, dtype=ember.float64)
    hybrid = ember.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(NotImplementedError, match="2-D sparse matrices only"):
        hybrid @ ember.ones(2, 2)
    assert d.grad is None


def test_a_graph_convolution_trains_with_a_sparse_adjacency():
    # Kipf & Welling's layer, relu(A X W), with A normalized: the loss goes down.
    ember.manual_seed(0)
    edges = [[0, 1, 1, 2, 2, 3, 0, 1, 2, 3], [1, 0, 2, 1, 3, 2, 0, 1, 2, 3]]
    adj = ember.sparse_coo_tensor(edges, [0.5] * 10, (4, 4))
    x, y = ember.randn(4, 3), ember.tensor([0, 0, 1, 1])
    w1, w2 = nn.Linear(3, 8), nn.Linear(8, 2)
    opt = ember.optim.Adam(list(w1.parameters()) + list(w2.parameters()), lr=0.05)
    losses = []
    for _ in range(30):
        h = ember.spmm(adj, w1(x)).relu()
        loss = nn.functional.cross_entropy(ember.sparse.mm(adj, w2(h)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_sparse_products_match_pytorch():
    rng = np.random.default_rng(4)
    indices, values = [[0, 1, 2, 0, 2], [1, 0, 3, 1, 2]], rng.standard_normal(5)
    d, e, g = rng.standard_normal((4, 2)), rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    results = []
    for lib in (ember, torch):
        s = lib.sparse_coo_tensor(lib.tensor(indices), lib.tensor(values), (3, 4))
        dt = lib.tensor(d, requires_grad=True)
        et = lib.tensor(e, requires_grad=True)
        out = lib.sparse.mm(s, dt)
        out.backward(lib.tensor(g))
        right = et @ s
        right.sum().backward()
        results.append([t.detach().numpy() for t in (out, dt.grad, right, et.grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


# --- dense -> sparse -----------------------------------------------------------------------


def test_to_sparse_keeps_the_non_zero_entries_coalesced():
    x = ember.tensor([[0.0, 2.0, 0.0], [float("nan"), 0.0, 0.0], [0.0, 0.0, -1.0]])
    s = x.to_sparse()
    assert s.is_sparse and s.is_coalesced() and s.shape == (3, 3)
    assert s.indices().tolist() == [[0, 1, 2], [1, 0, 2]]
    assert_close(s.values(), np.array([2.0, np.nan, -1.0]), equal_nan=True)
    assert_close(s.to_dense(), x.numpy(), equal_nan=True)
    assert x.to_sparse_coo().indices().tolist() == s.indices().tolist()
    rows = x.to_sparse(1)  # hybrid: the rows holding a non-zero
    assert rows.sparse_dim() == 1 and rows.indices().tolist() == [[0, 1, 2]]
    assert x.to_sparse(dense_dim=1).indices().tolist() == [[0, 1, 2]]
    assert s.to_sparse() is s and x.to_dense() is x
    assert ember.tensor([[1, 0], [0, 2]]).to_sparse().values().tolist() == [1, 2]
    assert ember.zeros(2, 2).to_sparse()._nnz() == 0
    assert ember.tensor(3.0).to_sparse()._nnz() == 1 and ember.tensor(0.0).to_sparse()._nnz() == 0


def test_to_sparse_errors():
    x = ember.ones(2, 3)
    for bad in (0, 3):
        with pytest.raises(RuntimeError, match=r"sparse_dim argument must be in \[1,2\] range"):
            x.to_sparse(bad)
    with pytest.raises(NotImplementedError, match="COO layout only"):
        x.to_sparse(layout="sparse_csr")
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="record no gradient"):
        w.to_sparse()
    with ember.no_grad():
        assert w.to_sparse()._nnz() == 2


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_to_sparse_matches_pytorch():
    x = np.array([[[0.0, 1.0], [0.0, 0.0]], [[2.0, 0.0], [0.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]]])
    for args in ((), (1,), (2,)):
        ours, theirs = ember.tensor(x).to_sparse(*args), torch.tensor(x).to_sparse(*args)
        assert ours.indices().tolist() == theirs.indices().tolist()
        np.testing.assert_array_equal(ours.values().numpy(), theirs.values().numpy())


def test_sum_over_dims_keeps_the_remaining_sparse_dims():
    i = ember.tensor([[0, 1, 1, 2, 1], [2, 0, 2, 1, 0]])
    s = ember.sparse_coo_tensor(i, ember.tensor([3.0, 4.0, 5.0, 6.0, 1.0]), (3, 3))
    rows = ember.sparse.sum(s, dim=1)
    assert rows.layout == ember.sparse_coo and rows.is_coalesced()
    assert rows.to_dense().tolist() == [3.0, 10.0, 6.0]
    assert s.sum(0).to_dense().tolist() == [5.0, 6.0, 8.0]
    assert ember.sparse.sum(s, dim=(0, 1)).item() == 19.0
    hybrid = ember.sparse_coo_tensor(i, ember.ones(5, 2), (3, 3, 2))  # one dense dim
    assert ember.sparse.sum(hybrid, dim=1).to_dense().tolist() == [[1, 1], [3, 3], [1, 1]]
    assert ember.sparse.sum(hybrid, dim=2).to_dense().tolist() == \
        (hybrid.to_dense().sum(2)).tolist()
    assert ember.sparse.sum(hybrid, dim=(0, 1)).tolist() == [5.0, 5.0]
    assert ember.sparse.sum(s, dim=1, dtype=ember.float64).dtype == ember.float64
