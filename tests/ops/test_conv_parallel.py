"""Convolution and max pooling split over two threads give the serial results.

The op table's shapes are too small to reach the parallel path; these are just large
enough.  The serial run is the same kernel with ``_parallel`` switched off.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _threads
from ember.ops import _parallel


def _run(fn, parallel: bool, monkeypatch):
    monkeypatch.setattr(_parallel, "_DISABLED", not parallel)
    return fn()


@pytest.fixture
def two_threads():
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def _conv_case(transposed: bool):
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((6, 16, 20, 20)), requires_grad=True)
    shape = (16, 32, 3, 3) if transposed else (32, 16, 3, 3)
    w = ember.tensor(rng.standard_normal(shape), requires_grad=True)
    b = ember.tensor(rng.standard_normal(32), requires_grad=True)

    def fn():
        for t in (x, w, b):
            t.grad = None
        op = F.conv_transpose2d if transposed else F.conv2d
        y = op(x, w, b, stride=1, padding=1)
        (y * y).sum().backward()
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()
    return fn


@pytest.mark.parametrize("transposed", [False, True])
def test_conv_parallel_matches_serial(transposed, two_threads, monkeypatch):
    if _threads._openblas() is None:
        pytest.skip("needs OpenBLAS to pin the thread count")
    calls = []
    real_split = _parallel.split

    def counting_split(fn, n, *args, **kwargs):
        calls.append(n)
        return real_split(fn, n, *args, **kwargs)

    fn = _conv_case(transposed)
    serial = _run(fn, False, monkeypatch)
    monkeypatch.setattr(_parallel, "split", counting_split)
    parallel = _run(fn, True, monkeypatch)
    assert calls, "the parallel path was not taken"
    for got, want in zip(parallel, serial):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-10)
    assert ember.get_num_threads() == 2  # BLAS's thread count is restored


def test_conv_parallel_matches_numpy(two_threads, monkeypatch):
    """The parallel forward against a direct NumPy sum over kernel positions."""
    monkeypatch.setattr(_parallel, "_DISABLED", False)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 16, 24, 24))
    w = rng.standard_normal((32, 16, 3, 3))
    got = F.conv2d(ember.tensor(x), ember.tensor(w)).numpy()
    want = np.zeros((4, 32, 22, 22))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nchw,oc->nohw", x[:, :, i:i + 22, j:j + 22], w[:, :, i, j])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_max_pool_parallel_matches_serial(two_threads, monkeypatch):
    rng = np.random.default_rng(2)
    values = rng.standard_normal((8, 16, 64, 64)).astype(np.float32)
    values[0, 0, :2, :2] = np.nan  # NaN wins its window
    x = ember.tensor(values, requires_grad=True)

    def fn():
        x.grad = None
        y, idx = F.max_pool2d(x, 2, return_indices=True)
        y.sum().backward()
        return y.detach().numpy(), idx.numpy(), x.grad.numpy()

    serial = _run(fn, False, monkeypatch)
    parallel = _run(fn, True, monkeypatch)
    for got, want in zip(parallel, serial):
        np.testing.assert_array_equal(got, want)
    assert np.isnan(parallel[0][0, 0, 0, 0])
