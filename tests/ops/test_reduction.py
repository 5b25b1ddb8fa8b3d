"""Focused tests for ember/ops/reduction.py and reduction_stats.py: what the op table
does not cover (named tuples, keepdim shapes, result dtypes, ties, errors, empty and
0-dim inputs, gradients at special points, PyTorch parity)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import grad, gradcheck, gradgradcheck
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def t64(values, requires_grad=False):
    return ember.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# ---------------------------------------------------------------------------
# named tuples and keepdim shapes


def test_max_with_dim_is_a_named_tuple():
    x = ember.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    out = ember.max(x, 1)
    assert isinstance(out, tuple) and type(out).__name__ == "max"
    values, indices = out
    assert out.values is values and out.indices is indices
    assert values.tolist() == [5.0, 6.0] and indices.tolist() == [1, 2]
    assert indices.dtype is ember.int64
    assert "values=" in repr(out) and "indices=" in repr(out)
    assert type(ember.min(x, dim=0)).__name__ == "min"
    mm = ember.aminmax(x, dim=1)
    assert mm.min.tolist() == [1.0, 2.0] and mm.max.tolist() == [5.0, 6.0]


def test_named_tuples_pickle():
    out = ember.max(ember.tensor([1.0, 3.0]), 0)
    plain = type(out)(1, 2)
    assert pickle.loads(pickle.dumps(plain)) == plain
    assert ember.return_types.max is type(out)


@pytest.mark.parametrize("fn,shape", [
    (lambda x: x.sum(1, keepdim=True), (2, 1, 4)),
    (lambda x: x.sum((0, 2), keepdim=True), (1, 3, 1)),
    (lambda x: x.sum(None, True), (1, 1, 1)),
    (lambda x: x.mean(-1, True), (2, 3, 1)),
    (lambda x: x.mean(None, True), (1, 1, 1)),
    (lambda x: x.prod(1, True), (2, 1, 4)),
    (lambda x: x.max(1, keepdim=True).values, (2, 1, 4)),
    (lambda x: x.max(1, keepdim=True).indices, (2, 1, 4)),
    (lambda x: x.amax((0, 1), True), (1, 1, 4)),
    (lambda x: x.amin(keepdim=True), (1, 1, 1)),
    (lambda x: x.argmax(keepdim=True), (1, 1, 1)),
    (lambda x: x.argmin(2, True), (2, 3, 1)),
    (lambda x: x.var(1, keepdim=True), (2, 1, 4)),
    (lambda x: x.std((0, 1), keepdim=True), (1, 1, 4)),
    (lambda x: x.logsumexp(2, True), (2, 3, 1)),
    (lambda x: x.norm(2, 1, True), (2, 1, 4)),
    (lambda x: x.all(1, True), (2, 1, 4)),
    (lambda x: x.any(keepdim=True), (1, 1, 1)),
    (lambda x: x.count_nonzero((0, 2)), (3,)),
    (lambda x: ember.aminmax(x, dim=0, keepdim=True).max, (1, 3, 4)),
    (lambda x: ember.aminmax(x, keepdim=True).min, (1, 1, 1)),
])
def test_keepdim_shapes(fn, shape):
    x = ember.tensor(np.random.default_rng(0).uniform(-1, 1, size=(2, 3, 4)))
    assert tuple(fn(x).shape) == shape


# ---------------------------------------------------------------------------
# result dtypes


@pytest.mark.parametrize("dtype", [ember.int32, ember.int8, ember.uint8, ember.bool])
def test_integer_sum_and_prod_give_int64(dtype):
    x = ember.tensor([1, 0, 1], dtype=dtype)
    assert x.sum().dtype is ember.int64
    assert x.sum(0).dtype is ember.int64
    assert x.prod().dtype is ember.int64
    assert x.nansum().dtype is ember.int64
    assert ember.cumsum(x, 0).dtype is ember.int64
    assert ember.cumprod(x, 0).dtype is ember.int64


def test_dtype_argument():
    x = ember.tensor([1, 2, 3], dtype=ember.int32)
    assert x.sum(dtype=ember.float64).dtype is ember.float64
    assert x.prod(dtype=ember.float32).dtype is ember.float32
    assert ember.mean(x, dtype=ember.float64).item() == 2.0
    assert ember.cumsum(x, 0, dtype=ember.float32).dtype is ember.float32
    assert ember.tensor([1.0, 2.0]).norm(dtype=ember.float64).dtype is ember.float64


def test_float_results_keep_the_dtype():
    x = ember.tensor([1.0, 2.0, 4.0])
    for out in (x.sum(), x.mean(), x.prod(), x.max(), x.amax(), x.var(), x.std(),
                x.norm(), x.logsumexp(0), x.cumsum(0), x.median()):
        assert out.dtype is ember.float32


def test_integer_extrema_keep_the_dtype():
    x = ember.tensor([3, 1, 2], dtype=ember.int32)
    assert x.max().dtype is ember.int32
    assert x.amin().dtype is ember.int32
    assert x.max(0).values.dtype is ember.int32
    assert x.argmax().dtype is ember.int64
    assert ember.tensor([1, 2]).logsumexp(0).dtype is ember.float32


def test_logical_reductions():
    x = ember.tensor([[1, 0], [2, 3]])
    assert x.all().dtype is ember.bool and not x.all().item()
    assert x.any(1).tolist() == [True, True]
    assert x.all(1).tolist() == [False, True]
    assert x.all(dim=(0, 1)).item() is False
    u = ember.tensor([1, 0], dtype=ember.uint8)
    assert u.all().dtype is ember.uint8
    assert x.count_nonzero().item() == 3 and x.count_nonzero().dtype is ember.int64
    assert x.count_nonzero(0).tolist() == [2, 1]


def test_mean_of_integers_raises():
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input "
                       r"dtype must be either a floating point or complex dtype. Got: Long"):
        ember.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match="nanmean"):
        ember.nanmean(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        ember.tensor([1, 2]).var()
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point"):
        ember.tensor([1, 2]).norm()


# ---------------------------------------------------------------------------
# errors


def test_dim_out_of_range():
    x = ember.zeros(2, 3)
    msg = r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"
    for fn in (lambda: x.sum(2), lambda: x.mean(2), lambda: x.max(2), lambda: x.amax(2),
               lambda: x.argmax(2), lambda: x.var(2), lambda: x.prod(2), lambda: x.norm(2, 2),
               lambda: x.logsumexp(2), lambda: x.all(2), lambda: x.cumsum(2), lambda: x.sort(2)):
        with pytest.raises(IndexError, match=msg):
            fn()
    with pytest.raises(IndexError, match=r"but got -3\)"):
        x.sum((0, -3))


def test_empty_reductions_without_identity():
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified "
                       r"for input.numel\(\) == 0"):
        ember.tensor([]).max()
    with pytest.raises(RuntimeError, match="amin"):
        ember.zeros(0, 3).amin()
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero"):
        ember.zeros(0, 3).max(0)
    with pytest.raises(IndexError, match="argmax"):
        ember.tensor([]).argmax()
    out = ember.zeros(0, 3).max(1)
    assert tuple(out.values.shape) == (0,) and tuple(out.indices.shape) == (0,)
    assert tuple(ember.zeros(0, 3).amax(1).shape) == (0,)


def test_empty_reductions_with_identity():
    e = ember.zeros(0, 3)
    assert e.sum().item() == 0 and e.sum(0).tolist() == [0, 0, 0]
    assert e.prod().item() == 1
    assert np.isnan(e.mean().item())
    assert e.norm().item() == 0
    assert e.logsumexp((0, 1)).item() == -np.inf
    assert e.all().item() is True and e.any().item() is False
    assert e.count_nonzero().item() == 0


def test_zero_dim_inputs():
    x = ember.tensor(3.0)
    assert x.sum(0).item() == 3.0 and tuple(x.sum(0).shape) == ()
    assert x.mean(-1).item() == 3.0
    values, indices = x.max(0)
    assert values.item() == 3.0 and indices.item() == 0 and tuple(values.shape) == ()
    assert tuple(x.max(0, keepdim=True).values.shape) == ()
    assert x.amax(0).item() == 3.0 and x.argmax(0).item() == 0 and x.argmax().item() == 0
    assert x.logsumexp(0).item() == 3.0 and x.norm(1, 0).item() == 3.0
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        x.sum(1)


# ---------------------------------------------------------------------------
# ties


def test_max_with_dim_returns_the_first_of_ties():
    x = ember.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    assert x.max(1).indices.tolist() == [1, 0]
    assert x.min(1).indices.tolist() == [0, 2]
    assert x.argmax(1).tolist() == [1, 0]
    assert ember.tensor([0.0, 1.0, 1.0]).argmax().item() == 1


def test_max_with_dim_gradient_goes_to_the_index():
    x = t64([3.0, 1.0, 3.0], requires_grad=True)
    x.max(0).values.backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("fn", [lambda x: x.max(), lambda x: x.amax(), lambda x: x.amax(0)])
def test_gradient_of_max_is_shared_among_ties(fn):
    x = t64([3.0, 1.0, 3.0, 2.0], requires_grad=True)
    fn(x).backward()
    assert_close(x.grad, np.array([0.5, 0.0, 0.5, 0.0]))


def test_gradient_of_amin_is_shared_along_dims():
    x = t64([[1.0, 1.0, 2.0], [0.0, 3.0, 0.0]], requires_grad=True)
    x.amin(1).sum().backward()
    assert_close(x.grad, np.array([[0.5, 0.5, 0.0], [0.5, 0.0, 0.5]]))


def test_nan_propagates_through_max():
    x = ember.tensor([1.0, float("nan"), 2.0, float("nan")])
    assert np.isnan(x.max().item()) and x.argmax().item() == 1
    assert x.max(0).indices.item() == 1
    assert np.isnan(x.amin().item())


# ---------------------------------------------------------------------------
# gradients at special points


def test_prod_gradient_with_one_zero():
    x = t64([2.0, 0.0, 3.0], requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 6.0, 0.0]


def test_prod_gradient_with_two_zeros():
    x = t64([0.0, 2.0, 0.0], requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, -1.0], [0.0, 2.0, 0.0, 1.5],
                                    [0.0, 0.0, 0.0, 2.0]])
def test_prod_double_backward_with_zeros(values):
    x = t64(values, requires_grad=True)
    assert gradcheck(ember.prod, (x,))
    assert gradgradcheck(ember.prod, (x,))
    assert gradgradcheck(lambda a: a.reshape(2, 2).prod(0), (x,))


def test_norm_gradient_at_zero_is_zero():
    for p in (2, "fro", 1, 3, 0.5, float("inf")):
        x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
        ember.norm(x, p).backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0], p


def test_norm_p_below_one_with_a_zero_entry():
    x = t64([1.0, 0.0, 2.0], requires_grad=True)
    ember.norm(x, 0.5).backward()
    assert np.isfinite(x.grad.numpy()).all() and x.grad[1].item() == 0.0


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, float("inf")])
def test_norm_double_backward_is_finite_at_zero_rows(p):
    x = t64([[0.0, 0.0], [1.0, -2.0]], requires_grad=True)
    (g,) = grad(ember.norm(x, p, 1).sum(), x, create_graph=True)
    assert np.isfinite(g.detach().numpy()).all()
    if g.requires_grad:  # p = 1 and inf have piecewise-constant gradients
        (h,) = grad((g * t64([[1.0, 2.0], [3.0, 4.0]])).sum(), x)
        assert np.isfinite(h.numpy()).all()
    assert gradgradcheck(lambda a: ember.norm(a, p, 1), (x[1:].detach().requires_grad_(),))


def test_std_gradient_of_constant_input_is_zero():
    x = t64([2.0, 2.0, 2.0], requires_grad=True)
    x.std().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_logsumexp_is_stable_and_its_gradient_is_softmax():
    x = t64([1000.0, 1000.0, -1000.0], requires_grad=True)
    y = ember.logsumexp(x, 0)
    assert_close(y, np.array(1000.0 + np.log(2.0)))
    y.backward()
    assert_close(x.grad, np.array([0.5, 0.5, 0.0]))
    inf = ember.tensor([float("-inf"), float("-inf")]).logsumexp(0)
    assert inf.item() == float("-inf")


@pytest.mark.parametrize("fn", [
    lambda a: a.prod(), lambda a: a.std(), lambda a: a.var(), lambda a: a.norm(),
    lambda a: a.norm(3), lambda a: a.logsumexp((0, 1)), lambda a: a.mean(), lambda a: a.max(),
])
def test_full_reductions_to_0_dim_double_backward(fn):
    x = t64([[0.5, 1.5], [-1.0, 2.0]], requires_grad=True)
    assert gradgradcheck(fn, (x,))


# ---------------------------------------------------------------------------
# var / std arguments


def test_var_correction_and_unbiased():
    data = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    x = ember.tensor(data)
    assert_close(x.var(), np.array(np.var(data, ddof=1)))
    assert_close(x.var(1, False), np.var(data, axis=1))
    assert_close(ember.var(x, False), np.array(np.var(data)))
    assert_close(x.var(1, correction=2), np.var(data, axis=1, ddof=2))
    assert_close(x.std(0, unbiased=True, keepdim=True), np.std(data, axis=0, ddof=1,
                                                                  keepdims=True))
    v, m = ember.var_mean(x, 1)
    assert_close(v, np.var(data, axis=1, ddof=1))
    assert_close(m, data.mean(axis=1))
    s, m = ember.std_mean(x, correction=0)
    assert_close(s, np.array(np.std(data)))
    with pytest.raises(RuntimeError):
        x.var(1, True, correction=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isinf(x.var(1, correction=3)).all()


def test_nan_reductions():
    x = t64([[1.0, float("nan")], [2.0, 4.0]], requires_grad=True)
    assert x.nansum().item() == 7.0
    assert x.nanmean(1).tolist() == [1.0, 3.0]
    x.nanmean().backward()
    assert_close(x.grad, np.array([[1 / 3, 0.0], [1 / 3, 1 / 3]]))


def test_binary_max_delegates_to_maximum():
    a, b = ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0])
    assert ember.max(a, b).tolist() == [3.0, 5.0]
    assert a.min(b).tolist() == [1.0, 2.0]
    assert ember.max(a, other=b).tolist() == [3.0, 5.0]


# ---------------------------------------------------------------------------
# PyTorch parity


PARITY = [
    lambda m, x: m.sum(x, (0, 2)), lambda m, x: m.nansum(x, 1), lambda m, x: m.mean(x, 2, True),
    lambda m, x: m.prod(x, 1), lambda m, x: m.max(x), lambda m, x: tuple(m.max(x, 1)),
    lambda m, x: tuple(m.min(x, -1, True)), lambda m, x: m.amax(x, (1, 2)),
    lambda m, x: m.amin(x, 0), lambda m, x: tuple(m.aminmax(x, dim=1)),
    lambda m, x: m.argmax(x), lambda m, x: m.argmin(x, 2), lambda m, x: m.var(x, 1),
    lambda m, x: m.std(x, (0, 2), correction=0), lambda m, x: m.logsumexp(x, 1),
    lambda m, x: m.norm(x), lambda m, x: m.norm(x, 1, 2), lambda m, x: m.norm(x, 3, (0, 1)),
    lambda m, x: m.norm(x, float("inf"), 1), lambda m, x: m.norm(x, -2.5, 2),
    lambda m, x: m.all(x > 0, 1), lambda m, x: m.any(x > 1, (0, 1)),
    lambda m, x: m.count_nonzero(x > 0, 2),
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
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    if touts[0].requires_grad:
        if "aminmax" not in touts[0].grad_fn.name().lower():  # ours: two nodes, not one
            assert eouts[0].grad_fn.name() == touts[0].grad_fn.name()
        touts[0].sum().backward()
        eouts[0].sum().backward()
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
def test_parity_error_messages():
    for name, call in [("mean", lambda m: m.tensor([1, 2]).mean()),
                       ("max", lambda m: m.tensor([]).max()),
                       ("dim", lambda m: m.zeros(2, 3).sum(2)),
                       ("max_dim", lambda m: m.zeros(0, 3).max(0))]:
        with pytest.raises(Exception) as te:
            call(torch)
        with pytest.raises(Exception) as ee:
            call(ember)
        assert type(ee.value) is type(te.value), name
        assert str(ee.value) == str(te.value), name
