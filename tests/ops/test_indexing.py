"""Indexing, gather/scatter and the index_* family beyond the op table: keys, errors,
in-place variants, gradients with repeated indices, PyTorch parity."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
RNG = np.random.default_rng(2)
A = RNG.uniform(-2, 2, size=(3, 4, 5))


def arr(t):
    return np.asarray(t.detach().cpu_array())


def lib_tensor(m, data, **kw):
    return m.tensor(np.asarray(data), **kw)


def raises_like_torch(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(ember)
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc):
                fn(torch)


# ----------------------------------------------------------------------
# __getitem__


KEYS = {
    "int": lambda m: 1,
    "neg_int": lambda m: -1,
    "slice_step": lambda m: (slice(None), slice(0, None, 2)),
    "slice_out_of_range": lambda m: slice(5, 10),
    "slice_neg": lambda m: (slice(-10, 2), slice(-2, None)),
    "none_ellipsis": lambda m: (None, Ellipsis, None, 0),
    "ellipsis_middle": lambda m: (0, Ellipsis, 1),
    "bool_true": lambda m: True,
    "bool_false": lambda m: (Ellipsis, False),
    "list": lambda m: [2, 0, 2],
    "empty_list": lambda m: [],
    "two_lists": lambda m: ([0, 2], [1, 3]),
    "separated": lambda m: ([0, 2], slice(None), [1, 3]),
    "int_then_list": lambda m: (0, slice(None), [1, 4]),
    "broadcast_lists": lambda m: ([[0], [2]], [1, 3]),
    "tensor_0d": lambda m: m.tensor(2),
    "tensor_0d_bool": lambda m: m.tensor(True),
    "tensor": lambda m: m.tensor([[0, 1], [2, 2]]),
    "int32_tensor": lambda m: m.tensor([0, 2], dtype=m.int32),
    "mask": lambda m: m.tensor(A[..., 0] > 0),
    "mask_2d_middle": lambda m: (slice(None), m.tensor(A[0] > 0)),
    "list_of_bools": lambda m: [True, False, True],
    "mask_then_list": lambda m: (m.tensor([True, False, True]), slice(None), [0, 1]),
    "numpy_array": lambda m: np.array([1, 0]),
    "numpy_int": lambda m: np.int64(2),
    "tuple_in_tuple": lambda m: ((0, 1),),
    "none_list_none": lambda m: (None, [0, 1], None, [0, 1]),
    "slice_with_tensor_bounds": lambda m: slice(m.tensor(1), m.tensor(3)),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(KEYS))
def test_getitem_matches_pytorch(name):
    ours = ember.tensor(A)[KEYS[name](ember)]
    theirs = torch.tensor(A)[KEYS[name](torch)]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(arr(ours), theirs.numpy())


@needs_torch
@pytest.mark.parametrize("name", sorted(KEYS))
def test_getitem_gradient_matches_pytorch(name):
    x = ember.tensor(A, requires_grad=True)
    t = torch.tensor(A, requires_grad=True)
    w = RNG.uniform(-1, 1, size=tuple(t[KEYS[name](torch)].shape))
    (x[KEYS[name](ember)] * ember.tensor(w)).sum().backward()
    (t[KEYS[name](torch)] * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(arr(x.grad), t.grad.numpy())


def test_repeated_indices_sum_their_gradients():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_nested_list_is_a_legacy_tuple():
    x = ember.tensor(A[0])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        out = x[[[0, 1], [1, 2]]]
    assert out.tolist() == [A[0, 0, 1], A[0, 1, 2]]


def test_basic_indexing_gives_views():
    x = ember.tensor(A.copy())
    for key in (1, (slice(1, 3), 0), (Ellipsis, None), (slice(None), slice(None, None, 2))):
        v = x[key]
        assert v._version is x._version and np.shares_memory(v.cpu_array(), x.cpu_array())
    assert x[...]._version is x._version
    c = x[[0, 1]]
    assert c._version is not x._version and not np.shares_memory(c.cpu_array(), x.cpu_array())


INDEX_ERRORS = [
    (lambda m: m.zeros(3)[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3, 2)[:, -3], IndexError,
     "index -3 is out of bounds for dimension 1 with size 2"),
    (lambda m: m.zeros(3)[m.tensor([5])], IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3)[[0, -4]], IndexError,
     "index -4 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3, 4)[m.zeros(3, 3, dtype=m.bool)], IndexError,
     r"The shape of the mask \[3, 3\] at index 1 does not match the shape of the indexed tensor "
     r"\[3, 4\] at index 1"),
    (lambda m: m.zeros(3)[::-1], ValueError, "step must be greater than zero"),
    (lambda m: m.zeros(3)[0:2:0], ValueError, "slice step cannot be zero"),
    (lambda m: m.zeros(3)[1.0], IndexError, "only integers, slices"),
    (lambda m: m.zeros(3)[m.tensor([1.0])], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda m: m.zeros(3, 4)[0, 0, 0], IndexError, "too many indices for tensor of dimension 2"),
    (lambda m: m.zeros(())[0], IndexError, "invalid index of a 0-dim tensor"),
    (lambda m: m.zeros(3, 4)[[0, 1], [0, 1, 2]], IndexError, "shape mismatch"),
]


@pytest.mark.parametrize("case", range(len(INDEX_ERRORS)))
def test_index_errors(case):
    raises_like_torch(*INDEX_ERRORS[case])


# ----------------------------------------------------------------------
# __setitem__


SETS = {
    "row_scalar": (lambda m: 0, lambda m: 5.0),
    "column_tensor": (lambda m: (slice(None), 1), lambda m: m.tensor([7.0, 8.0, 9.0])),
    "broadcast": (lambda m: slice(0, 2), lambda m: m.tensor([1.0, 2.0, 3.0, 4.0])),
    "leading_ones": (lambda m: 1, lambda m: m.ones(1, 1, 4)),
    "ellipsis": (lambda m: Ellipsis, lambda m: 2.5),
    "list_rows": (lambda m: [0, 2], lambda m: m.tensor([5.0, 6.0, 7.0, 8.0])),
    "two_lists": (lambda m: ([1, 2], [0, 0]), lambda m: -1.0),
    "mask": (lambda m: m.tensor(A[0, :3, :4] > 0), lambda m: 0.0),
    "int_and_list": (lambda m: (1, [0, 3]), lambda m: m.tensor([3.0, 4.0])),
    "slice_and_list": (lambda m: (slice(1, 3), [0, 3]), lambda m: m.tensor([[1.0], [2.0]])),
    "repeated_rows_last_wins": (lambda m: [0, 0], lambda m: m.tensor([[1.0] * 4, [2.0] * 4])),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(SETS))
def test_setitem_matches_pytorch(name):
    key, value = SETS[name]
    x = ember.tensor(A[0, :3, :4].copy())
    t = torch.tensor(A[0, :3, :4].copy())
    x[key(ember)] = value(ember) if not isinstance(value(ember), ember.Tensor) else \
        value(ember).to(ember.float64)
    t[key(torch)] = value(torch) if not isinstance(value(torch), torch.Tensor) else \
        value(torch).double()
    np.testing.assert_allclose(arr(x), t.numpy())
    assert x._version.value == t._version


def test_setitem_casts_scalars_and_checks_tensor_dtypes():
    x = ember.zeros(3, dtype=ember.int64)
    x[0] = 2.7
    assert x.tolist() == [2, 0, 0]
    y = ember.zeros(3)
    y[0:2] = ember.tensor([1, 2])  # basic: copy_ converts
    assert y.tolist() == [1.0, 2.0, 0.0]
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Float for the destination and "
                                           "Long for the source."):
        y[ember.tensor([1, 2])] = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape \\[3\\] "
                                           "cannot be broadcast to indexing result of shape "
                                           "\\[2\\]"):
        y[[0, 1]] = ember.ones(3)


# ----------------------------------------------------------------------
# index_put


def test_index_put_accumulates_repeated_indices():
    x = ember.zeros(3)
    out = x.index_put_((ember.tensor([0, 0, 2]),), ember.tensor([1.0, 2.0, 5.0]),
                       accumulate=True)
    assert out is x and x.tolist() == [3.0, 0.0, 5.0] and x._version.value == 1
    y = ember.index_put(ember.zeros(2, 3), (ember.tensor([1]),), ember.tensor(4.0))
    assert y.tolist() == [[0, 0, 0], [4, 4, 4]]
    z = ember.zeros(2, 3).index_put_((None, ember.tensor([0, 2])), ember.tensor(1.0))
    assert z.tolist() == [[1, 0, 1], [1, 0, 1]]


def test_index_put_without_an_index_tensor_raises():
    for indices in [(), (None,)]:
        with pytest.raises(RuntimeError, match="at least one index tensor"):
            ember.zeros(3).index_put(indices, ember.tensor(1.0))


def test_index_put_gradients():
    x = ember.tensor(A[0], requires_grad=True)
    v = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    out = ember.index_put(x, (ember.tensor([0, 0]), ember.tensor([1, 1])), v, accumulate=True)
    (out * 3).sum().backward()
    assert x.grad.tolist() == [[3.0] * 5] * 4 and v.grad.tolist() == [3.0, 3.0]
    x.grad = None
    out = ember.index_put(x, (ember.tensor([2]),), ember.tensor(0.0, dtype=ember.float64))
    out.sum().backward()
    assert x.grad[2].tolist() == [0.0] * 5 and x.grad[1].tolist() == [1.0] * 5


# ----------------------------------------------------------------------
# gather / scatter


SCATTER_ERRORS = [
    (lambda m: m.zeros(3, 4).gather(0, m.tensor([[0, 1]]).float()), RuntimeError,
     r"gather\(\): Expected dtype int32/int64 for index"),
    (lambda m: m.zeros(3, 4).gather(0, m.tensor([0])), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda m: m.zeros(3, 4).gather(1, m.zeros(4, 2, dtype=m.int64)), RuntimeError,
     r"Size does not match at dimension 0 expected index \[4, 2\] to be no larger than self "
     r"\[3, 4\] apart from dimension 1"),
    (lambda m: m.zeros(3).gather(0, m.tensor([5])), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3, 4).scatter(0, m.tensor([[0, 1]]), m.ones(1, 2, dtype=m.float64)),
     RuntimeError, r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda m: m.zeros(3, 4).scatter(0, m.tensor([[0, 1]]), m.ones(1, 1)), RuntimeError,
     "to be no larger size than src"),
    (lambda m: m.zeros(3, 4).scatter(0, m.tensor([[0]]), m.tensor(1.0)), RuntimeError,
     "Index tensor must have the same number of dimensions as src tensor"),
    (lambda m: m.zeros(3, 4).scatter(0, m.tensor([[0, 1]]), 1.0, reduce="max"), RuntimeError,
     "reduce argument must be either add or multiply."),
    (lambda m: m.zeros(3, 4).scatter_reduce(0, m.tensor([[0]]), m.ones(1, 1), "foo"),
     RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda m: m.zeros(3, 4).index_select(0, m.tensor([[0]])), IndexError,
     r"index_select\(\): Index is supposed to be a vector"),
    (lambda m: m.zeros(3, 4).index_select(0, m.tensor([0.0])), RuntimeError,
     r"index_select\(\): Expected dtype int32 or int64 for index"),
    (lambda m: m.zeros(3).index_select(0, m.tensor([5])), IndexError,
     "index out of range in self"),
    (lambda m: m.zeros(3, 4).index_add(0, m.tensor([0]), m.ones(1, 4, dtype=m.float64)),
     RuntimeError, r"index_add_\(\): self \(Float\) and source \(Double\) must have the same "
     "scalar type"),
    (lambda m: m.zeros(3, 4).index_add(0, m.tensor([0]), m.ones(1, 3)), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension"),
    (lambda m: m.zeros(3, 4).index_add(0, m.tensor([0, 1]), m.ones(1, 4)), RuntimeError,
     r"Number of indices \(2\) should be equal to source.size\(dim\): \(1\), for dim: 0"),
    (lambda m: m.zeros(3, 4).index_add(0, m.tensor([5]), m.ones(1, 4)), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3, 4).index_copy(0, m.tensor([5]), m.ones(1, 4)), IndexError,
     r"index_copy_\(\): index 5 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3, 4).index_copy(0, m.tensor([0]), m.ones(1, 4, dtype=m.float64)),
     RuntimeError, r"index_copy_\(\): self and source expected to have the same dtype"),
    (lambda m: m.zeros(3, 4).index_fill(0, m.tensor([5]), 1), IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3, 4).index_fill(0, m.tensor([0.0]), 1), IndexError,
     r"index_fill_\(\): Expected dtype int64 for index."),
    (lambda m: m.zeros(3, 4).index_fill(0, m.tensor([1]), m.tensor([1.0])), RuntimeError,
     "index_fill_ only supports a 0-dimensional value tensor"),
    (lambda m: m.zeros(2, 3).index_reduce(0, m.tensor([0, 0]), m.ones(2, 3), "sum"),
     RuntimeError, "Expected reduce to be one of prod, mean, amax or amin but got sum."),
    (lambda m: m.zeros(3, 4).take_along_dim(m.tensor([0]), 1), RuntimeError,
     "input and indices should have the same number of dimensions"),
]


@pytest.mark.parametrize("case", range(len(SCATTER_ERRORS)))
def test_scatter_family_errors(case):
    raises_like_torch(*SCATTER_ERRORS[case])


def test_gather_accepts_int32_and_0dim():
    x = ember.tensor(A[0])
    i = ember.tensor([[0, 1]], dtype=ember.int32)
    assert x.gather(1, i).tolist() == [[A[0, 0, 0], A[0, 0, 1]]]
    assert ember.tensor(3.0).gather(0, ember.tensor(0)).item() == 3.0


def test_scatter_legacy_reduce():
    x = ember.tensor([1.0, 2.0, 3.0])
    out = x.scatter(0, ember.tensor([0, 0]), ember.tensor([4.0, 5.0]), reduce="multiply")
    assert out.tolist() == [20.0, 2.0, 3.0]
    out = x.scatter(0, ember.tensor([0, 2]), 2.0, reduce="add")
    assert out.tolist() == [3.0, 2.0, 5.0]
    y = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="reduce"):
        y.scatter(0, ember.tensor([0]), 2.0, reduce="add").sum().backward()


def test_scatter_names_and_padded_src_gradient():
    x = ember.tensor(A[0, :3, :4], requires_grad=True)
    src = ember.tensor(A[1, :3, :5], requires_grad=True)
    index = ember.tensor([[0, 1], [2, 0]])
    out = x.scatter(0, index, src)
    assert out.grad_fn.name() == "ScatterBackward0"
    assert x.scatter(0, index, 1.0).grad_fn.name() == "ScatterBackward1"
    out.sum().backward()
    expected = np.zeros((3, 5))
    expected[:2, :2] = 1  # only the leading index-shaped block of src is read
    np.testing.assert_allclose(arr(src.grad), expected)


REDUCE_CASES = [(r, s) for r in ("sum", "prod", "mean", "amax", "amin") for s in (True, False)]


@needs_torch
@pytest.mark.parametrize("reduce,include_self", REDUCE_CASES)
def test_scatter_reduce_with_ties_and_zeros_matches_pytorch(reduce, include_self):
    # x never equals a result it is excluded from: PyTorch then counts it among the ties
    # (its gradient share is dropped, so the shares do not add up to 1); see the next test.
    x = np.array([[1.5, 0.5, 2.5], [3.5, 3.25, -1.5]])
    src = np.array([[3.0, 0.0, 2.0], [1.0, 0.0, 2.0], [3.0, 5.0, 0.0]])
    index = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 1]])
    results = []
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        st = m.tensor(src, requires_grad=True)
        out = xt.scatter_reduce(0, m.tensor(index), st, reduce, include_self=include_self)
        (out * m.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
        results.append((out.detach().numpy(), xt.grad.numpy(), st.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs)


def test_scatter_reduce_amax_ties_share_the_gradient():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    src = ember.tensor([0.0, 0.0, -1.0], requires_grad=True)
    out = x.scatter_reduce(0, ember.tensor([0, 0, 0]), src, "amax", include_self=False)
    out.sum().backward()
    assert out.tolist() == [0.0, 1.0]
    # Two tied src elements share position 0; x[0] is left out (PyTorch would count it as a
    # third tie and give each src element 1/3).
    assert src.grad.tolist() == [0.5, 0.5, 0.0] and x.grad.tolist() == [0.0, 1.0]


@needs_torch
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "prod"])
def test_scatter_reduce_integers_match_pytorch(reduce):
    x, src, index = [1, -2, 3], [4, -5, 7, 8], [0, 0, 1, 0]
    for include_self in (True, False):
        ours = ember.tensor(x).scatter_reduce(0, ember.tensor(index), ember.tensor(src), reduce,
                                              include_self=include_self)
        theirs = torch.tensor(x).scatter_reduce(0, torch.tensor(index), torch.tensor(src),
                                                reduce, include_self=include_self)
        assert ours.tolist() == theirs.tolist() and ours.dtype.name == "int64"


def test_scatter_reduce_prod_double_backward_with_zeros_is_refused():
    x = ember.tensor([2.0, 3.0], requires_grad=True)
    src = ember.tensor([0.0, 4.0], requires_grad=True)
    out = x.scatter_reduce(0, ember.tensor([0, 0]), src, "prod")
    g = ember.autograd.grad(out.sum(), src, retain_graph=True)[0]
    assert g.tolist() == [8.0, 0.0]
    with pytest.raises(NotImplementedError, match="prod"):
        ember.autograd.grad(out.sum(), src, create_graph=True)


# ----------------------------------------------------------------------
# index_*, masks, take/put


INPLACE_CALLS = {
    "index_add_": lambda m, t: t.index_add_(0, m.tensor([0, 0]), m.ones(2, 4), alpha=2),
    "index_copy_": lambda m, t: t.index_copy_(1, m.tensor([3]), m.ones(3, 1)),
    "index_fill_": lambda m, t: t.index_fill_(1, m.tensor([0, 2]), -1.0),
    "scatter_": lambda m, t: t.scatter_(1, m.tensor([[1], [2], [0]]), 9.0),
    "scatter_add_": lambda m, t: t.scatter_add_(0, m.tensor([[2, 2, 2, 2]]), m.ones(1, 4)),
    "scatter_reduce_": lambda m, t: t.scatter_reduce_(0, m.tensor([[1, 1, 1, 1]]),
                                                      m.ones(1, 4) * 4, "amax"),
    "masked_fill_": lambda m, t: t.masked_fill_(m.tensor([True, False, True, False]), 0.5),
    "masked_scatter_": lambda m, t: t.masked_scatter_(m.tensor([False, True, False, True]),
                                                      m.ones(8)),
    "index_put_": lambda m, t: t.index_put_((m.tensor([1]),), m.tensor(3.0)),
    "put_": lambda m, t: t.put_(m.tensor([0, 11]), m.tensor([7.0, 8.0])),
    "index_reduce_": lambda m, t: t.index_reduce_(0, m.tensor([2]), m.ones(1, 4) * 3, "prod"),
}


@pytest.mark.parametrize("name", sorted(INPLACE_CALLS))
def test_inplace_variants_return_self_and_bump_the_version(name):
    t = ember.tensor(np.arange(12.0).reshape(3, 4), dtype=ember.float32)
    out = INPLACE_CALLS[name](ember, t)
    assert out is t and t._version.value == 1
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = INPLACE_CALLS[name](torch, torch.arange(12.0).reshape(3, 4))
        np.testing.assert_allclose(arr(t), ref.numpy())


def test_index_fill_with_tensor_value_gradient():
    x = ember.tensor(A[0, :2, :3], requires_grad=True)
    v = ember.tensor(2.0, requires_grad=True)
    out = x.index_fill(1, ember.tensor([0, 2]), v)
    assert out.grad_fn.name() == "IndexFillBackward1"
    (out * 3).sum().backward()
    assert v.grad.item() == 12.0
    assert x.grad.tolist() == [[0.0, 3.0, 0.0]] * 2


def test_index_select_0dim_and_index_add_alpha():
    s = ember.tensor(5.0)
    assert s.index_select(0, ember.tensor([0])).item() == 5.0
    x = ember.zeros(3, 2).index_add(0, ember.tensor([1, 1]), ember.ones(2, 2), alpha=-2)
    assert x.tolist() == [[0, 0], [-4, -4], [0, 0]]


MASK_ERRORS = [
    (lambda m: m.zeros(3).masked_fill(m.ones(3), 1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype float"),
    (lambda m: m.zeros(3).masked_fill(m.ones(3, dtype=m.bool), m.ones(1)), RuntimeError,
     "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
     r"dimension\(s\)."),
    (lambda m: m.zeros(3).masked_fill_(m.ones(2, 3, dtype=m.bool), 1.0), RuntimeError,
     r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
    (lambda m: m.zeros(3, 4).masked_select(m.ones(4)), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    (lambda m: m.zeros(3, 4).masked_select(m.ones(3, dtype=m.bool)), RuntimeError,
     r"The size of tensor a \(4\) must match the size of tensor b \(3\) at non-singleton "
     "dimension 1"),
    (lambda m: m.zeros(2).masked_scatter(m.ones(2, dtype=m.bool), m.ones(1)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    (lambda m: m.zeros(2).masked_scatter(m.ones(2, dtype=m.bool), m.ones(2, dtype=m.float64)),
     RuntimeError, "masked_scatter: expected self and source to have same dtypes"),
    (lambda m: m.zeros(3, 4).take(m.tensor([12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements."),
    (lambda m: m.zeros(3, 4).put_(m.tensor([-13]), m.ones(1)), IndexError,
     "out of range: tried to access index -13 on a tensor of 12 elements."),
]


@pytest.mark.parametrize("case", range(len(MASK_ERRORS)))
def test_mask_take_put_errors(case):
    raises_like_torch(*MASK_ERRORS[case])


def test_masked_fill_options():
    x = ember.zeros(3, dtype=ember.int64)
    assert x.masked_fill(ember.ones(3, dtype=ember.bool), 1.5).tolist() == [1, 1, 1]
    assert x.masked_fill(ember.tensor([True, False, True]), ember.tensor(7)).tolist() == [7, 0, 7]
    out = ember.zeros(3).masked_fill(ember.ones(2, 3, dtype=ember.bool), 1.0)
    assert tuple(out.shape) == (2, 3)
    y = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = ember.tensor(0.5, requires_grad=True)
    (y.masked_fill(ember.tensor([[True, False, False], [True, True, False]]), v) * 2).sum() \
        .backward()
    assert y.grad.tolist() == [0.0, 2.0, 4.0] and v.grad.item() == 6.0


def test_masked_scatter_and_select_gradients():
    x = ember.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    src = ember.tensor([10.0, 20.0, 30.0], requires_grad=True)
    mask = ember.tensor([True, False, True, False])
    out = x.masked_scatter(mask, src)
    assert out.tolist() == [10.0, 2.0, 20.0, 4.0]
    (out * ember.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 0.0, 4.0] and src.grad.tolist() == [1.0, 3.0, 0.0]
    x.grad = None
    picked = x.masked_select(ember.tensor([[True, False, True, False], [True] * 4]))
    picked.sum().backward()
    assert picked.tolist() == [1.0, 3.0, 1.0, 2.0, 3.0, 4.0] and x.grad.tolist() == [2, 1, 2, 1]


def test_take_and_put():
    x = ember.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    out = x.take(ember.tensor([[0, -1], [5, 0]]))
    assert out.tolist() == [[0.0, 5.0], [5.0, 0.0]]
    out.sum().backward()
    assert x.grad.tolist() == [[2, 0, 0], [0, 0, 2]]
    y = ember.zeros(2, 3)
    y.put_(ember.tensor([1, 1, 4]), ember.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert y.tolist() == [[0, 3, 0], [0, 3, 0]]
    z = ember.zeros(2, 3).t()  # non-contiguous target: positions follow the logical order
    z.put_(ember.tensor([1]), ember.tensor([9.0]))
    assert z.tolist() == [[0, 9], [0, 0], [0, 0]]


def test_nonzero_argwhere_where():
    x = ember.tensor([[0, 1], [2, 0]])
    assert x.nonzero().tolist() == [[0, 1], [1, 0]]
    rows, cols = x.nonzero(as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]
    assert ember.argwhere(x).dtype is ember.int64
    assert [t.tolist() for t in ember.where(x > 0)] == [[0, 1], [1, 0]]
    assert tuple(ember.nonzero(ember.tensor(5)).shape) == (1, 0)
    assert ember.tensor(0).nonzero(as_tuple=True)[0].tolist() == []
    assert tuple(ember.zeros(0, 3).nonzero().shape) == (0, 2)


@pytest.mark.parametrize("ufunc", [np.multiply, np.maximum, np.minimum])
@pytest.mark.parametrize("transposed", [False, True])
def test_ufunc_at_in_rounds_matches_numpy(ufunc, transposed):
    """The scatter path of array modules other than NumPy (CuPy), run on NumPy: repeated
    positions combine as np.<ufunc>.at combines them, also into a strided view."""
    from ember.ops.scatter import _at_in_rounds

    rng = np.random.default_rng(7)
    for _ in range(20):
        base = rng.uniform(0.5, 2.0, (5, 4) if transposed else (4, 5))
        out = base.T if transposed else base
        expected = out.copy()
        key = (rng.integers(0, 4, (6, 5)), np.arange(5).reshape(1, 5))
        values = rng.uniform(0.5, 2.0, (6, 5))
        ufunc.at(expected, key, values)
        _at_in_rounds(np, ufunc, out, key, values)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("value", [0.0, -2.5, 3, True, float("nan"), float("-inf"), 1e40])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_fill_by_the_select_kernel_gives_the_copyto_paths_values(value, dtype):
    # a mask of the input's shape goes through the select kernel (no branch per element);
    # the same values as numba off (NumPy's copyto), gradients included
    from ember.ops import _native as native

    rng = np.random.default_rng(11)
    x0 = rng.standard_normal((70, 90)).astype(dtype)
    mask0 = rng.standard_normal((70, 90)) > 0
    results = []
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            y = x.masked_fill(ember.tensor(mask0), value)
            y.backward(ember.ones_like(y))
            results.append((y.detach().numpy(), x.grad.numpy()))
    assert results[0][0].dtype == dtype
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    with np.errstate(over="ignore"):
        want = np.where(mask0, np.asarray(value).astype(dtype), x0)
    np.testing.assert_array_equal(results[0][0], want)
    np.testing.assert_array_equal(results[0][1], np.where(mask0, 0, 1).astype(dtype))
    inplace = ember.tensor(x0)
    assert inplace.masked_fill_(ember.tensor(mask0), value) is inplace
    np.testing.assert_array_equal(inplace.numpy(), want)
