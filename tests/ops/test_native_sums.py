"""Sums and means over trailing dims by the row kernel (ops/_native_sums.py): values
against float64 sums, the cases that stay on NumPy, and the ops that reach it."""

import numpy as np
import pytest

import ember
from ember.ops import _native as native
from ember.ops import _native_sums as sums

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.fixture
def small(monkeypatch):
    """The kernel from a few elements on, rows of a whole sum of 64 (a tail left).
    (CHUNK is read when the kernel compiles: rows of over 512 elements take several.)"""
    monkeypatch.setattr(sums, "MIN_SIZE", 8)
    monkeypatch.setattr(sums, "BLOCK", 64)


@pytest.mark.parametrize("shape, dims", [
    ((7, 300), (1,)), ((3, 1100), (-1,)), ((5, 6, 7, 8), (2, 3)), ((5, 6, 7, 8), (-1, -2)),
    ((5, 6, 7, 8), (1, 2, 3)), ((1001,), None), ((13, 17, 3), None), ((1, 700), (1,)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_and_means_match_float64(small, shape, dims, dtype):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(dtype)
    exact = x.astype(np.float64).sum(axis=dims, keepdims=True)
    count = x.size // exact.size
    for keepdim in (False, True):
        for mean in (False, True):
            got = sums.trailing_sums(x, dims, keepdim, mean)
            want = exact / count if mean else exact
            if not keepdim:
                want = want.reshape(np.sum(x, axis=dims).shape)
            assert got.dtype == dtype and got.shape == want.shape
            # float32: one rounding of a sum whose chunks were added in float32
            tol = 1e-6 if dtype == np.float32 else 1e-13
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(x).sum())


def test_what_stays_on_numpy(small):
    x = np.random.default_rng(1).standard_normal((6, 7, 8)).astype(np.float32)
    assert sums.trailing_sums(x, (0,), False) is None          # leading dims
    assert sums.trailing_sums(x, (1,), False) is None          # a middle dim
    assert sums.trailing_sums(x, (0, 2), False) is None
    assert not sums.supports(x.transpose(0, 2, 1))              # not C-contiguous
    assert not sums.supports(x.astype(np.int64))
    assert not sums.supports(x[:1, :1, :1])                     # too small
    with native.use_numba(False):
        assert not sums.supports(x)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_non_finite_values_spread_as_in_numpy(small):
    x = np.random.default_rng(2).standard_normal((4, 100)).astype(np.float32)
    x[1, 5], x[2, 7], x[3, 1], x[3, 2] = np.nan, np.inf, np.inf, -np.inf
    got = sums.trailing_sums(x, (1,), False)
    np.testing.assert_array_equal(np.isnan(got), [False, True, False, True])
    assert got[2] == np.inf


def test_ops_take_it(small, monkeypatch):
    """Tensor.sum and mean over trailing dims, all dims and global average pooling go
    through the kernel, with PyTorch's shapes, dtypes and gradients."""
    calls = []
    real = sums.trailing_sums
    monkeypatch.setattr(sums, "trailing_sums",
                        lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    a = np.random.default_rng(3).standard_normal((4, 6, 5, 5)).astype(np.float32)
    x = ember.tensor(a, requires_grad=True)
    s = x.sum(-1)
    m = x.mean((-2, -1), keepdim=True)
    p = ember.nn.functional.adaptive_avg_pool2d(x, 1)
    t = x.sum()
    assert len(calls) == 4
    np.testing.assert_allclose(s.detach().numpy(), a.sum(-1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(m.detach().numpy(), a.mean((-2, -1), keepdims=True),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(p.detach().numpy(), m.detach().numpy(), rtol=0, atol=0)
    assert t.shape == () and t.dtype == ember.float32
    (s.sum() + m.sum() + t).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(a.shape, 2 + 1 / 25), rtol=1e-6)
