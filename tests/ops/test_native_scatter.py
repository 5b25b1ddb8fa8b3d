"""The numba kernels of gather along a dim and of its gradient, a scatter-add
(ops/_native_scatter.py): the NumPy path's values and sums (the same order as
np.add.at), index blocks smaller than the input, other layouts, and bad indices."""

import numpy as np
import pytest

import ember
from ember.ops import _native as native
from ember.ops import _native_scatter

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim, x_shape, index_shape", [
    (1, (600, 40), (600, 12)), (0, (50, 300), (80, 300)), (2, (6, 30, 70), (6, 25, 40)),
    (1, (6, 30, 70), (5, 60, 70))])
def test_gather_and_its_gradient_give_the_numpy_paths_bits(dtype, dim, x_shape, index_shape):
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal(x_shape).astype(dtype)
    index = rng.integers(0, x_shape[dim], index_shape)   # (repeats: sums in one place)
    g0 = rng.standard_normal(index_shape).astype(dtype)
    results = []
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            y = ember.gather(x, dim, ember.tensor(index))
            y.backward(ember.tensor(g0))
            results.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    block = x0[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index_shape))]
    np.testing.assert_array_equal(results[0][0], np.take_along_axis(block, index, dim))


def test_scatter_add_by_the_kernel_equals_numpys_add_at():
    rng = np.random.default_rng(8)
    out0 = rng.standard_normal((300, 64)).astype(np.float32)
    index = rng.integers(0, 64, (300, 20))
    src = rng.standard_normal((300, 20)).astype(np.float32)
    got = ember.scatter_add(ember.tensor(out0), 1, ember.tensor(index), ember.tensor(src))
    want = out0.copy()
    np.add.at(want, (np.arange(300)[:, None], index), src)
    np.testing.assert_array_equal(got.numpy(), want)
    assert _native_scatter._along_last.has_run()   # (the last dim, contiguous rows)


def test_the_kernels_refuse_what_they_cannot_view_and_report_bad_indices():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((200, 64)).astype(np.float32)
    index = rng.integers(0, 64, (200, 30))
    strided = x[:, ::2]   # (a strided view still views as three dims)
    np.testing.assert_array_equal(_native_scatter.gather(strided, index % 32, 1),
                                  np.take_along_axis(strided, index % 32, 1))
    assert _native_scatter.gather(x.astype(np.float16), index, 1) is None
    assert _native_scatter.gather(x, index[:10, :5], 1) is None         # too few to gain
    bad = index.copy()
    bad[3, 4] = 64
    with pytest.raises(IndexError, match="gather: 1 indices outside dimension 1"):
        _native_scatter.gather(x, bad, 1)
    with pytest.raises(IndexError, match="scatter_add: 1 indices outside"):
        _native_scatter.scatter_add(np.zeros_like(x), bad, np.ones(bad.shape, np.float32), 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_cut_over_two_threads_give_the_serial_bits(dtype, on_two_threads, monkeypatch):
    """Along the last dim, the rows are cut over the two threads (a native part): the
    gather, the scatter-add and the gradient's zeroed rows give the same bits as one
    thread and as NumPy, and a bad index in either half is counted."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((513, 48)).astype(dtype)
    index = rng.integers(0, 48, (513, 24))
    src = rng.standard_normal((513, 24)).astype(dtype)
    rows = np.arange(513)[:, None]
    want_sum, want_added = np.zeros_like(x), x.copy()
    np.add.at(want_sum, (rows, index), src)
    np.add.at(want_added, (rows, index), src)
    results = []
    for split_min in (1, 1 << 40):   # cut from one element / never
        monkeypatch.setattr(native, "SPLIT_MIN", split_min)
        added, garbage = x.copy(), np.full_like(x, np.nan)   # (rows zeroed by the kernel)
        assert _native_scatter.scatter_add(added, index, src, 1)
        assert _native_scatter._run(garbage[:, :, None], index[:, :, None], src[:, :, None],
                                    _native_scatter.ZERO_AND_ADD) == 0
        results.append((_native_scatter.gather(x, index, 1), added,
                        _native_scatter.scatter_add_into_zeros(x.shape, index, src, 1),
                        garbage))
        bad = index.copy()
        bad[0, 0], bad[400, 3], bad[500, 7] = -1, 48, 99
        with pytest.raises(IndexError, match="gather: 3 indices outside dimension 1 of size 48"):
            _native_scatter.gather(x, bad, 1)
        with pytest.raises(IndexError, match="scatter_add: 3 indices outside"):
            _native_scatter.scatter_add_into_zeros(x.shape, bad, src, 1)
    for cut, serial in zip(*results):
        np.testing.assert_array_equal(cut, serial)
    np.testing.assert_array_equal(results[0][0], np.take_along_axis(x, index, 1))
    np.testing.assert_array_equal(results[0][1], want_added)
    np.testing.assert_array_equal(results[0][2], want_sum)
    np.testing.assert_array_equal(results[0][3], want_sum)


def test_gathers_gradient_zeroes_each_row_where_it_adds(monkeypatch):
    """Gather's first-order gradient along the last dim, with an index covering the
    other dims, is made in one pass (`scatter_add_into_zeros`); other layouts take a
    zeroed array."""
    calls = []
    real = _native_scatter.scatter_add_into_zeros

    def spy(*a):
        out = real(*a)
        calls.append((a[3], out is not None))
        return out

    monkeypatch.setattr(_native_scatter, "scatter_add_into_zeros", spy)
    rng = np.random.default_rng(11)
    for dim, x_shape, index_shape in [(1, (300, 40), (300, 30)), (0, (300, 40), (200, 40)),
                                      (1, (300, 40), (200, 30))]:
        x = ember.tensor(rng.standard_normal(x_shape), requires_grad=True)
        index = rng.integers(0, x_shape[dim], index_shape)
        g0 = rng.standard_normal(index_shape)
        ember.gather(x, dim, ember.tensor(index)).backward(ember.tensor(g0))
        want = np.zeros(x_shape)
        np.add.at(want, tuple(index if d == dim else np.indices(index_shape)[d]
                              for d in range(2)), g0)
        np.testing.assert_array_equal(x.grad.numpy(), want)
    # (the last dim with the index covering the other dims: one pass; a first dim, or an
    # index with fewer rows than x: the zeroed array)
    assert calls == [(1, True), (0, False), (1, False)]


def test_rows_zeroed_first_only_where_the_row_kernel_runs():
    """The zero-then-add mode exists only in the row kernel: a layout that would take the
    general (outer, dim, inner) kernel raises instead of adding into rows never zeroed."""
    table = np.full((10, 8, 3), np.nan)
    index = np.zeros((10, 4, 3), np.int64)
    with pytest.raises(ValueError, match="C-contiguous, along the last dim"):
        _native_scatter._run(table, index, np.ones((10, 4, 3)), _native_scatter.ZERO_AND_ADD)
    assert _native_scatter.scatter_add_into_zeros((10, 8, 3), index, np.ones((10, 4, 3)),
                                                  1) is None


@pytest.mark.parametrize("bad", [256, -1])
@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_gather_of_an_index_outside_raises_pytorchs_error(bad, numba_on, monkeypatch):
    """gather checks its indices' range once: the kernel counts those outside as it reads
    (no min/max pass before it), and only then are they checked again for PyTorch's
    message; off the kernel the check runs first."""
    from ember.ops import scatter

    checks = []
    real = scatter._check_bounds
    monkeypatch.setattr(scatter, "_check_bounds", lambda *a, **k: checks.append(1) or real(*a, **k))
    x = ember.zeros(4096, 256)
    good = ember.tensor(np.random.default_rng(0).integers(0, 256, (4096, 16)))
    with native.use_numba(numba_on):
        picked = x.gather(1, good)
        assert checks == ([] if numba_on else [1])
        index = good.clone()
        index[7, 3] = bad
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dimension 1 "
                                               "with size 256"):
            x.gather(1, index)
    assert picked.shape == (4096, 16) and (picked.numpy() == 0).all()
