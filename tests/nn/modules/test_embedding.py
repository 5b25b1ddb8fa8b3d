"""Embedding and EmbeddingBag (and F.embedding / F.embedding_bag)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close

RNG = np.random.default_rng(0)
W = RNG.standard_normal((6, 3))
IDX = np.array([[0, 2, 0, 5], [4, 2, 1, 3]])


def _w(requires_grad=True):
    return ember.tensor(W, requires_grad=requires_grad)


def test_embedding_values_and_shapes():
    out = F.embedding(ember.tensor(IDX), _w(False))
    assert out.shape == (2, 4, 3)
    assert_close(out, W[IDX])
    assert F.embedding(ember.tensor(3), _w(False)).shape == (3,)
    assert_close(F.embedding(ember.tensor(IDX, dtype=ember.int32), _w(False)), W[IDX])
    assert F.embedding(ember.tensor(IDX), _w()).grad_fn.name() == "EmbeddingBackward0"


def test_embedding_dense_gradient_padding_and_frequency():
    w = _w()
    F.embedding(ember.tensor(IDX), w, padding_idx=2).sum().backward()
    expected = np.zeros_like(W)
    np.add.at(expected, IDX.reshape(-1), 1.0)
    expected[2] = 0
    assert_close(w.grad, expected)
    w = _w()
    F.embedding(ember.tensor(IDX), w, padding_idx=-1, scale_grad_by_freq=True).sum().backward()
    expected = (np.bincount(IDX.reshape(-1), minlength=6) > 0).astype(float)[:, None] * np.ones(3)
    expected[5] = 0
    assert_close(w.grad, expected)


def test_embedding_sparse_gradient():
    w = _w()
    F.embedding(ember.tensor(IDX), w, sparse=True, padding_idx=0).sum().backward()
    g = w.grad
    assert g.is_sparse and g.shape == (6, 3)
    assert g._indices().tolist() == [[2, 5, 4, 2, 1, 3]]
    dense = _w()
    F.embedding(ember.tensor(IDX), dense, padding_idx=0).sum().backward()
    assert_close(g.to_dense(), dense.grad)


def test_embedding_max_norm_renormalizes_in_place():
    w = ember.tensor(W * 3)
    version = w._version.value
    F.embedding(ember.tensor([1, 4]), w, max_norm=1.0)
    norms = np.linalg.norm(w.numpy(), axis=1)
    assert np.all(norms[[1, 4]] <= 1.0 + 1e-6)
    assert_close(w.numpy()[[0, 2, 3, 5]], W[[0, 2, 3, 5]] * 3)  # rows not looked up stay
    assert w._version.value > version
    w1 = ember.tensor(W * 3)
    F.embedding(ember.tensor([1]), w1, max_norm=1.0, norm_type=1.0)
    assert np.abs(w1.numpy()[1]).sum() <= 1.0 + 1e-6


def test_embedding_gradcheck():
    idx = ember.tensor(IDX)
    assert gradcheck(lambda w: F.embedding(idx, w), (_w(),))


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"scale_grad_by_freq": True}])
def test_embedding_gradgradcheck(kwargs):
    # padding_idx and scale_grad_by_freq change the gradient on purpose (as in PyTorch), so
    # only the derivative of that gradient is checked numerically for them.
    idx = ember.tensor(IDX)
    assert gradgradcheck(lambda w: F.embedding(idx, w, **kwargs), (_w(),))


def test_embedding_errors():
    with pytest.raises(RuntimeError, match="Long, Int; but got ember.FloatTensor"):
        F.embedding(ember.tensor([1.0]), _w(False))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([6]), _w(False))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ember.tensor([-1]), _w(False))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ember.tensor([1]), _w(False), padding_idx=6)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(ember.tensor([1]), ember.ones(4))


def test_sparse_double_backward_is_refused():
    w = _w()
    out = F.embedding(ember.tensor([1, 2]), w, sparse=True)
    (g,) = ember.autograd.grad(out.sum(), w, create_graph=False)
    assert g.is_sparse
    gy = ember.ones(2, 3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="sparse"):
        ember.autograd.grad(out, w, gy, create_graph=True)


# ----------------------------------------------------------------------
# the Embedding module


def test_embedding_module_init_repr_and_padding_row():
    ember.manual_seed(0)
    m = nn.Embedding(10, 3, padding_idx=-2)
    assert m.padding_idx == 8 and m.weight.shape == (10, 3)
    assert_close(m.weight[8], np.zeros(3))
    assert repr(m) == "Embedding(10, 3, padding_idx=8)"
    full = nn.Embedding(10, 3, padding_idx=0, max_norm=1.0, norm_type=1.0,
                        scale_grad_by_freq=True, sparse=True)
    assert repr(full) == ("Embedding(10, 3, padding_idx=0, max_norm=1.0, norm_type=1.0, "
                          "scale_grad_by_freq=True, sparse=True)")
    big = nn.Embedding(2000, 50)
    assert abs(float(big.weight.std()) - 1.0) < 0.05  # N(0, 1) init
    with pytest.raises(AssertionError, match="Padding_idx"):
        nn.Embedding(5, 3, padding_idx=5)
    with pytest.raises(AssertionError, match="Shape of weight"):
        nn.Embedding(5, 3, _weight=ember.ones(4, 3))


def test_embedding_from_pretrained():
    table = ember.tensor(W)
    m = nn.Embedding.from_pretrained(table)
    assert not m.weight.requires_grad and repr(m) == "Embedding(6, 3)"
    assert_close(m(ember.tensor([1])), W[[1]])
    trainable = nn.Embedding.from_pretrained(table, freeze=False, padding_idx=1, sparse=True)
    assert trainable.weight.requires_grad and trainable.padding_idx == 1 and trainable.sparse
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(ember.ones(3))


# ----------------------------------------------------------------------
# embedding_bag

FLAT = np.array([0, 2, 0, 5, 4, 2, 1, 3])
OFFSETS = np.array([0, 3, 3, 5])
BAGS = [[0, 2, 0], [], [5, 4], [2, 1, 3]]


def _bag_reference(mode, weights=None, padding_idx=None):
    out = np.zeros((len(BAGS), 3))
    start = 0
    for b, bag in enumerate(BAGS):
        rows = [W[i] * (1.0 if weights is None else weights[start + k])
                for k, i in enumerate(bag) if i != padding_idx]
        start += len(bag)
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](rows, axis=0)
    return out


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_modes(mode, padding_idx):
    out = F.embedding_bag(ember.tensor(FLAT), _w(False), ember.tensor(OFFSETS), mode=mode,
                          padding_idx=padding_idx)
    assert_close(out, _bag_reference(mode, padding_idx=padding_idx))


def test_embedding_bag_2d_input_last_offset_and_weights():
    two_d = np.array([[0, 2, 3], [1, 1, 5]])
    assert_close(F.embedding_bag(ember.tensor(two_d), _w(False), mode="sum"),
                 W[two_d].sum(1))
    last = F.embedding_bag(ember.tensor(FLAT), _w(False), ember.tensor([0, 3, 3, 5]),
                           mode="sum", include_last_offset=True)
    assert last.shape == (3, 3)
    assert_close(last[2], W[FLAT[3:5]].sum(0))  # offsets[-1] ends the last bag
    psw = RNG.standard_normal(8)
    out = F.embedding_bag(ember.tensor(FLAT), _w(False), ember.tensor(OFFSETS), mode="sum",
                          per_sample_weights=ember.tensor(psw))
    assert_close(out, _bag_reference("sum", weights=psw))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck(mode):
    flat, offsets = ember.tensor(FLAT), ember.tensor(OFFSETS)
    fn = lambda w: F.embedding_bag(flat, w, offsets, mode=mode)  # noqa: E731
    assert gradcheck(fn, (_w(),))
    assert gradgradcheck(fn, (_w(),))


def test_embedding_bag_per_sample_weights_gradcheck():
    flat, offsets = ember.tensor(FLAT), ember.tensor(OFFSETS)
    psw = ember.tensor(RNG.standard_normal(8), requires_grad=True)
    fn = lambda w, p: F.embedding_bag(flat, w, offsets, mode="sum",  # noqa: E731
                                      per_sample_weights=p)
    assert gradcheck(fn, (_w(), psw))
    assert gradgradcheck(fn, (_w(), psw))


def test_embedding_bag_sparse_gradient():
    w = _w()
    F.embedding_bag(ember.tensor(FLAT), w, ember.tensor(OFFSETS), mode="mean",
                    sparse=True).sum().backward()
    dense = _w()
    F.embedding_bag(ember.tensor(FLAT), dense, ember.tensor(OFFSETS), mode="mean").sum().backward()
    assert w.grad.is_sparse
    assert_close(w.grad.to_dense(), dense.grad)


@pytest.mark.parametrize("call, error, message", [
    (lambda w: F.embedding_bag(ember.tensor([[0, 1]]), w, ember.tensor([0])), ValueError,
     "offsets has to be None"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w), ValueError, "1D Tensor but got None"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([[0]])), ValueError,
     "offsets has to be a 1D Tensor"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), mode="mean",
                               per_sample_weights=ember.ones(2)), NotImplementedError,
     "only supported for mode='sum'"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), mode="sum",
                               per_sample_weights=ember.ones(3)), ValueError, "same shape"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), mode="prod"),
     ValueError, "mode has to be one of sum, mean or max"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), mode="max",
                               sparse=True), ValueError, "max mode does not support sparse"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([1])), RuntimeError,
     "offsets\\[0\\] has to be 0"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0, 3])), RuntimeError,
     "offsets\\[-1\\] can not be greater"),
    (lambda w: F.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), padding_idx=9),
     RuntimeError, "padding_idx must be within"),
])
def test_embedding_bag_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(_w(False))


def test_embedding_bag_module():
    bag = nn.EmbeddingBag(6, 3, mode="sum", padding_idx=1)
    assert repr(bag) == "EmbeddingBag(6, 3, mode='sum', padding_idx=1)"
    assert repr(nn.EmbeddingBag(6, 3)) == "EmbeddingBag(6, 3, mode='mean')"
    assert_close(bag.weight[1], np.zeros(3))
    assert bag(ember.tensor(FLAT), ember.tensor(OFFSETS)).shape == (4, 3)
    pre = nn.EmbeddingBag.from_pretrained(ember.tensor(W), mode="max")
    assert not pre.weight.requires_grad
    assert_close(pre(ember.tensor(FLAT), ember.tensor(OFFSETS)), _bag_reference("max"))


@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_embedding_dense_gradient_of_many_repeated_lookups(numba_on, dtype):
    # a small table looked up many times (GPT's tokens): the numba kernel adds each row
    # into its table row, the NumPy path sums sorted runs; both equal float64 np.add.at
    from ember.ops import _native

    rng = np.random.default_rng(4)
    index = rng.integers(0, 13, (16, 64))
    grad = rng.standard_normal((16, 64, 32))
    weight = ember.tensor(rng.standard_normal((13, 32)), dtype=dtype, requires_grad=True)
    with _native.use_numba(numba_on):
        out = F.embedding(ember.tensor(index), weight)
        (got,) = ember.autograd.grad(out, weight, ember.tensor(grad, dtype=dtype))
    expected = np.zeros((13, 32))
    np.add.at(expected, index.reshape(-1), grad.reshape(-1, 32))
    tol = 1e-4 if dtype == ember.float32 else 1e-12
    np.testing.assert_allclose(got.numpy(), expected, rtol=tol, atol=tol)
