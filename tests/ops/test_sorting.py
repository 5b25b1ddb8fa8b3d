"""Focused tests for ember/ops/sorting.py: cumulative ops, sorting and selection,
sets and counting (ties, NaN, empty and 0-dim inputs, errors, PyTorch parity)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
NAN = float("nan")


def t64(values, requires_grad=False):
    return ember.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def _brute_cumprod_grad(x, w):
    """d/dx_k sum_i w_i prod_{j<=i} x_j, without any division."""
    n = len(x)
    return np.array([sum(w[i] * np.prod([x[j] for j in range(i + 1) if j != k])
                         for i in range(k, n)) for k in range(n)])


# ---------------------------------------------------------------------------
# cumulative ops


def test_cumsum_and_cumprod_of_0_dim_and_empty():
    x = ember.tensor(3.0)
    assert ember.cumsum(x, 0).item() == 3.0 and tuple(ember.cumsum(x, -1).shape) == ()
    assert ember.cumprod(x, 0).item() == 3.0
    assert tuple(ember.cumsum(ember.zeros(0, 2), 0).shape) == (0, 2)
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        ember.cumsum(x, 1)


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, -1.5], [0.0, 2.0, 0.0, 1.5],
                                    [1.5, 2.0, -1.0, 0.0], [0.0, 0.0, 2.0, 3.0]])
def test_cumprod_gradient_with_zeros(values):
    w = np.array([0.5, -1.0, 2.0, 1.5])
    x = t64(values, requires_grad=True)
    (ember.cumprod(x, 0) * t64(w)).sum().backward()
    assert_close(x.grad, _brute_cumprod_grad(np.array(values), w))
    y = t64(values, requires_grad=True)
    assert gradcheck(lambda a: ember.cumprod(a, 0), (y,))
    assert gradgradcheck(lambda a: ember.cumprod(a, 0), (y,))


def test_cumprod_gradient_with_zeros_along_a_middle_dim():
    x = t64(np.array([[[1.0, 0.0], [2.0, 3.0], [0.0, 2.0]], [[0.5, 1.0], [0.0, 0.0],
                                                                [1.0, -2.0]]]),
            requires_grad=True)
    assert gradcheck(lambda a: ember.cumprod(a, 1), (x,))
    assert gradgradcheck(lambda a: ember.cumprod(a, 1), (x,))


def test_inplace_cumsum_and_cumprod():
    x = t64([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]], requires_grad=True)

    def scan(fn):
        def run(a):
            b = a * 1.0
            out = fn(b)
            assert out is b
            return b
        return run

    assert gradcheck(scan(lambda b: b.cumsum_(1)), (x,))
    assert gradgradcheck(scan(lambda b: b.cumprod_(1)), (x,))
    assert scan(lambda b: b.cumprod_(0))(x).grad_fn.name() == "CumprodBackward0"
    y = t64([1.0, 2.0, 3.0])
    version = y._version.value
    y.cumsum_(0)
    assert y.tolist() == [1.0, 3.0, 6.0] and y._version.value == version + 1
    i = ember.tensor([1, 2, 3], dtype=ember.int32)
    assert i.cumprod_(0).tolist() == [1, 2, 6] and i.dtype is ember.int32
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.cumsum_(0)


def test_cummax_takes_the_latest_of_ties_and_propagates_nan():
    out = ember.cummax(ember.tensor([1.0, 2.0, 2.0, 1.0, 3.0, 3.0]), 0)
    assert type(out).__name__ == "cummax"
    assert out.values.tolist() == [1.0, 2.0, 2.0, 2.0, 3.0, 3.0]
    assert out.indices.tolist() == [0, 1, 2, 2, 4, 5]
    out = ember.cummin(ember.tensor([1.0, 2.0, 1.0, 1.0, 0.0, 0.0]), 0)
    assert out.indices.tolist() == [0, 0, 2, 3, 4, 5]
    out = ember.cummax(ember.tensor([1.0, NAN, 2.0, 1.0]), 0)
    assert out.indices.tolist() == [0, 1, 1, 1] and np.isnan(out.values[3].item())
    assert ember.cummax(ember.tensor(2.0), 0).indices.item() == 0


def test_cummax_gradient_accumulates_on_repeated_indices():
    x = t64([3.0, 1.0, 2.0, 4.0], requires_grad=True)
    ember.cummax(x, 0).values.sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 0.0, 1.0]
    assert gradgradcheck(lambda a: ember.cummax(a, 0).values, (x.detach().requires_grad_(),))


def test_logcumsumexp_is_stable():
    x = t64([1000.0, 1000.0, -1000.0, 0.0])
    expected = np.logaddexp.accumulate(x.numpy())
    assert_close(ember.logcumsumexp(x, 0), expected)
    assert ember.logcumsumexp(t64([-1000.0, 0.0]), 0)[0].item() == -1000.0
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        ember.logcumsumexp(ember.tensor([1, 2]), 0)


def test_logcumsumexp_gradient_with_negative_upstream():
    data = np.array([[0.3, -1.2, 2.0, 0.5], [1.0, 1.0, -3.0, 0.0]])
    w = np.array([[1.0, -2.0, 0.5, -0.25], [0.0, 3.0, -1.0, 2.0]])
    x = t64(data, requires_grad=True)
    (ember.logcumsumexp(x, 1) * t64(w)).sum().backward()
    y = np.logaddexp.accumulate(data, axis=1)
    expected = np.array([[sum(w[r, i] * np.exp(data[r, k] - y[r, i]) for i in range(k, 4))
                          for k in range(4)] for r in range(2)])
    assert_close(x.grad, expected)


# ---------------------------------------------------------------------------
# sort, argsort, topk


def test_sort_is_stable_in_both_directions():
    x = ember.tensor([1.0, 2.0, 2.0, 1.0, 2.0, 1.0])
    asc = ember.sort(x)
    assert type(asc).__name__ == "sort"
    assert asc.indices.tolist() == [0, 3, 5, 1, 2, 4]
    desc = ember.sort(x, descending=True)
    assert desc.values.tolist() == [2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
    assert desc.indices.tolist() == [1, 2, 4, 0, 3, 5]
    assert ember.argsort(x, descending=True).tolist() == [1, 2, 4, 0, 3, 5]
    assert x.sort(stable=True, dim=0).indices.dtype is ember.int64


def test_sort_places_nan_last_ascending_and_first_descending():
    x = ember.tensor([1.0, NAN, 2.0, 1.0])
    assert ember.sort(x).indices.tolist() == [0, 3, 2, 1]
    assert ember.sort(x, descending=True).indices.tolist() == [1, 2, 0, 3]


def test_sort_of_0_dim_bool_and_2d():
    out = ember.sort(ember.tensor(3.0))
    assert out.values.item() == 3.0 and out.indices.item() == 0
    b = ember.tensor([True, False, True])
    assert ember.sort(b).values.tolist() == [False, True, True]
    m = ember.tensor([[3, 1], [1, 3]])
    assert ember.sort(m, 0, True).indices.tolist() == [[0, 1], [1, 0]]
    assert ember.msort(m).tolist() == [[1, 1], [3, 3]]


def test_sort_gradient():
    x = t64([[0.3, -1.0, 2.0], [1.5, 0.2, -0.7]], requires_grad=True)
    v = ember.sort(x, 1, descending=True).values
    (v * t64([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert x.grad.tolist() == [[2.0, 3.0, 1.0], [4.0, 5.0, 6.0]]


def test_topk():
    x = ember.tensor([1.0, 2.0, 2.0, 1.0, 2.0, 1.0])
    out = ember.topk(x, 2)
    assert type(out).__name__ == "topk"
    assert out.values.tolist() == [2.0, 2.0] and out.indices.tolist() == [1, 2]
    assert ember.topk(x, 3, largest=False).indices.tolist() == [0, 3, 5]
    assert tuple(ember.topk(ember.zeros(2, 3), 0).values.shape) == (2, 0)
    assert ember.topk(ember.tensor([1.0, 5, 2, 4, 3, 0]), 3, sorted=False).values.tolist() == [
        5.0, 4.0, 3.0]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(ember.tensor([1.0, 2.0]), 3)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(ember.tensor([1.0, 2.0]), -1)


# ---------------------------------------------------------------------------
# kthvalue, median, mode


def test_kthvalue():
    x = ember.tensor([[3.0, 1.0, 2.0], [1.0, 3.0, 2.0]])
    out = ember.kthvalue(x, 2, 0, True)
    assert type(out).__name__ == "kthvalue"
    assert out.values.tolist() == [[3.0, 3.0, 2.0]] and out.indices.tolist() == [[0, 1, 1]]
    assert ember.kthvalue(ember.tensor([1.0, 2.0, 2.0, 3.0]), 2).indices.item() == 1
    assert ember.kthvalue(ember.tensor(3.0), 1).values.item() == 3.0
    for k in (0, 3):
        with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range"):
            ember.kthvalue(ember.tensor([1.0, 2.0]), k)


def test_median_without_dim():
    assert ember.median(ember.tensor([4.0, 1.0, 3.0, 2.0])).item() == 2.0  # the lower one
    assert np.isnan(ember.median(ember.tensor([1.0, NAN, 2.0])).item())
    assert ember.nanmedian(ember.tensor([1.0, NAN, 2.0, 0.0])).item() == 1.0
    assert np.isnan(ember.median(ember.tensor([])).item())
    assert np.isnan(ember.nanmedian(ember.tensor([NAN, NAN])).item())
    x = t64([1.0, 2.0, 2.0, 3.0], requires_grad=True)
    ember.median(x).backward()
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0]


def test_median_with_dim():
    x = ember.tensor([[1.0, NAN, 2.0], [3.0, 1.0, 2.0], [NAN, 1.0, NAN]])
    out = ember.median(x, 1)
    assert type(out).__name__ == "median"
    assert out.indices.tolist() == [1, 2, 0]
    assert out.values[1].item() == 2.0 and np.isnan(out.values[0].item())
    nan_out = ember.nanmedian(x, 1, keepdim=True)
    assert type(nan_out).__name__ == "nanmedian"
    assert nan_out.values.tolist() == [[1.0], [2.0], [1.0]]
    assert nan_out.indices.tolist() == [[0], [2], [1]]
    all_nan = ember.nanmedian(ember.tensor([[NAN, NAN]]), 1)
    assert all_nan.indices.tolist() == [0] and np.isnan(all_nan.values[0].item())
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have"):
        ember.median(ember.tensor([]), 0)


def test_mode():
    out = ember.mode(ember.tensor([1.0, 2.0, 2.0, 1.0, 2.0, 1.0]))
    assert type(out).__name__ == "mode"
    assert out.values.item() == 1.0 and out.indices.item() == 5
    out = ember.mode(ember.tensor([5.0, 2.0, 7.0, 2.0, 5.0, 5.0, 2.0]))
    assert out.values.item() == 2.0 and out.indices.item() == 6
    out = ember.mode(ember.tensor([[3.0, 1.0, 2.0], [1.0, 3.0, 2.0]]), 0, keepdim=True)
    assert out.values.tolist() == [[1.0, 1.0, 2.0]] and out.indices.tolist() == [[1, 0, 1]]
    assert ember.mode(ember.tensor(3.0)).indices.item() == 0


def test_selection_gradients_go_to_the_index():
    x = t64([[0.3, -1.0, 2.0, 0.9], [1.5, 0.2, -0.7, 0.1]], requires_grad=True)
    for fn, expected in [
        (lambda a: ember.kthvalue(a, 2, 1).values, [[1, 0, 0, 0], [0, 0, 0, 1]]),
        (lambda a: ember.median(a, 1).values, [[1, 0, 0, 0], [0, 0, 0, 1]]),
        (lambda a: ember.topk(a, 1, 1).values, [[0, 0, 1, 0], [1, 0, 0, 0]]),
        (lambda a: ember.mode(a, 1).values, [[0, 1, 0, 0], [0, 0, 1, 0]]),
    ]:
        x.grad = None
        fn(x).sum().backward()
        assert x.grad.tolist() == expected


# ---------------------------------------------------------------------------
# unique, bincount, histc, searchsorted, bucketize


def test_unique():
    x = ember.tensor([[3, 1], [1, 3]])
    assert ember.unique(x).tolist() == [1, 3]
    values, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    assert inverse.tolist() == [[1, 0], [0, 1]] and counts.tolist() == [2, 2]
    assert inverse.dtype is ember.int64 and counts.dtype is ember.int64
    values, inverse = x.unique(sorted=False, return_inverse=True)
    assert values.tolist() == [1, 3]
    rows = ember.tensor([[1, 2], [1, 2], [0, 5]])
    values, inverse, counts = ember.unique(rows, dim=0, return_inverse=True,
                                           return_counts=True)
    assert values.tolist() == [[0, 5], [1, 2]] and inverse.tolist() == [1, 1, 0]
    assert counts.tolist() == [1, 2]
    values, inverse, counts = ember.unique(ember.tensor(3), return_inverse=True,
                                           return_counts=True)
    assert values.tolist() == [3] and tuple(inverse.shape) == () and counts.tolist() == [1]
    nan = ember.unique(ember.tensor([NAN, 1.0, NAN]))
    assert nan.shape[0] == 3  # NaNs are not equal to each other
    f = ember.tensor([2.0, 1.0, 2.0], requires_grad=True)
    assert not ember.unique(f).requires_grad


def test_unique_consecutive():
    x = ember.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    values, inverse, counts = ember.unique_consecutive(x, return_inverse=True,
                                                       return_counts=True)
    assert values.tolist() == [1, 2, 3, 1, 2]
    assert inverse.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert counts.tolist() == [2, 2, 1, 2, 1]
    rows = ember.tensor([[1, 1], [1, 1], [2, 3]])
    values, inverse, counts = ember.unique_consecutive(rows, True, True, dim=0)
    assert values.tolist() == [[1, 1], [2, 3]] and inverse.tolist() == [0, 0, 1]
    assert counts.tolist() == [2, 1]
    assert ember.unique_consecutive(ember.tensor([[1, 1], [1, 2]]), True)[1].tolist() == [
        [0, 0], [0, 1]]


def test_bincount():
    x = ember.tensor([0, 1, 1, 3])
    assert ember.bincount(x).tolist() == [1, 2, 0, 1]
    assert ember.bincount(x).dtype is ember.int64
    assert ember.bincount(x, minlength=6).tolist() == [1, 2, 0, 1, 0, 0]
    w32 = ember.bincount(x, weights=ember.tensor([1.0, 2.0, 3.0, 4.0]))
    assert w32.tolist() == [1.0, 5.0, 0.0, 4.0] and w32.dtype is ember.float32
    assert ember.bincount(x, weights=ember.tensor([1, 2, 3, 4])).dtype is ember.float64
    assert ember.bincount(ember.tensor([], dtype=ember.int64), minlength=3).tolist() == [0] * 3
    for bad in (ember.tensor([-1, 1]), ember.tensor([[1, 1]])):
        with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
            ember.bincount(bad)
    with pytest.raises(NotImplementedError, match="Float"):
        ember.bincount(ember.tensor([1.0]))


def test_histc():
    x = ember.tensor([1.0, 2.0, 1.0, 4.0])
    assert ember.histc(x, bins=4).tolist() == [2.0, 1.0, 0.0, 1.0]
    assert ember.histc(x, bins=4, min=0, max=3).tolist() == [0.0, 2.0, 1.0, 0.0]
    assert ember.histc(ember.tensor([1.0, 1.0]), bins=4).tolist() == [0.0, 0.0, 2.0, 0.0]
    assert x.histc(4).dtype is ember.float32
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        ember.histc(x, bins=4, min=3, max=0)
    with pytest.raises(NotImplementedError, match="Long"):
        ember.histc(ember.tensor([1, 2]))


def test_searchsorted_and_bucketize():
    seq = ember.tensor([1, 3, 5, 7])
    values = ember.tensor([3, 6, 9])
    assert ember.searchsorted(seq, values).tolist() == [1, 3, 4]
    assert ember.searchsorted(seq, values, right=True).tolist() == [2, 3, 4]
    assert ember.searchsorted(seq, values, side="right").tolist() == [2, 3, 4]
    assert ember.searchsorted(seq, values, out_int32=True).dtype is ember.int32
    scalar = ember.searchsorted(seq, 3)
    assert scalar.item() == 1 and tuple(scalar.shape) == ()
    rows = ember.tensor([[1, 3, 5, 7], [2, 4, 6, 8]])
    assert ember.searchsorted(rows, ember.tensor([[3, 6, 9], [3, 6, 9]]),
                              side="right").tolist() == [[2, 3, 4], [1, 3, 4]]
    unsorted = ember.tensor([3, 1, 5, 7])
    assert ember.searchsorted(unsorted, values, sorter=ember.tensor([1, 0, 2, 3])).tolist() == [
        1, 3, 4]
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        ember.searchsorted(rows, values)
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(seq, values, side="left", right=True)
    assert ember.bucketize(ember.tensor([[3, 6], [9, 1]]), seq).tolist() == [[1, 3], [4, 0]]
    assert ember.bucketize(ember.tensor([3.0, 6.0]), seq, right=True).tolist() == [2, 3]
    assert ember.bucketize(3, seq).item() == 1
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        ember.bucketize(values, rows)


# ---------------------------------------------------------------------------
# PyTorch parity


PARITY = [
    lambda m, x: m.cumsum(x, 1), lambda m, x: m.cumprod(x, 0), lambda m, x: m.cumsum(x > 0, 2),
    lambda m, x: tuple(m.cummax(x, 1)), lambda m, x: tuple(m.cummin(x, 2)),
    lambda m, x: m.logcumsumexp(x, 2), lambda m, x: tuple(m.sort(x, 1)),
    lambda m, x: tuple(m.sort(x, 0, True)), lambda m, x: m.argsort(x, 2),
    lambda m, x: m.msort(x), lambda m, x: tuple(m.topk(x, 2, 1)),
    lambda m, x: tuple(m.topk(x, 3, largest=False)), lambda m, x: tuple(m.kthvalue(x, 2, 1)),
    lambda m, x: m.median(x), lambda m, x: tuple(m.median(x, 2, True)),
    lambda m, x: tuple(m.nanmedian(x, 1)), lambda m, x: tuple(m.mode((x * 2).round(), 2)),
    lambda m, x: m.unique((x * 2).round(), return_inverse=True, return_counts=True),
    lambda m, x: m.unique_consecutive((x > 0).long(), return_counts=True, dim=2),
    lambda m, x: m.bincount((x.flatten() * 2).round().long() + 4),
    lambda m, x: m.histc(x, 7), lambda m, x: m.searchsorted(m.sort(x.flatten()).values, x),
    lambda m, x: m.bucketize(x, m.tensor([-1.0, 0.0, 1.0], dtype=x.dtype), right=True),
]


@needs_torch
@pytest.mark.parametrize("case", range(len(PARITY)))
def test_parity_with_torch(case):
    fn = PARITY[case]
    data = np.random.default_rng(case).uniform(-2, 2, size=(2, 3, 4))
    tx = torch.tensor(data, requires_grad=True)
    ex = ember.tensor(data, requires_grad=True)
    touts, eouts = fn(torch, tx), fn(ember, ex)
    touts = touts if isinstance(touts, tuple) else (touts,)
    eouts = eouts if isinstance(eouts, tuple) else (eouts,)
    for t, e in zip(touts, eouts):
        assert str(t.dtype) == "torch." + e.dtype.name
        assert tuple(t.shape) == tuple(e.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    if touts[0].requires_grad and touts[0].grad_fn.name() != "Unique2Backward0":
        assert eouts[0].grad_fn.name() == touts[0].grad_fn.name()
        weights = np.random.default_rng(1).uniform(-1, 1, size=tuple(touts[0].shape))
        (touts[0] * torch.tensor(weights)).sum().backward()
        (eouts[0] * ember.tensor(weights)).sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
