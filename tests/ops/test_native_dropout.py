"""Dropout by the numba kernel (ops/_native_dropout.py): the same seed gives the same mask
and numbers with numba on and off, the random stream advances alike, gradients agree,
gradcheck and double backward with numba on."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_dropout as ndrop

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")

N = ndrop.MIN_SIZE + 101  # odd: the last 64-bit draw gives one word too many


def _run(flag, x, p, inplace=False, seed=5):
    with native.use_numba(flag):
        ember.manual_seed(seed)
        t = ember.tensor(x, requires_grad=True)
        src = t * 1 if inplace else t
        y = F.dropout(src, p, training=True, inplace=inplace)
        y.backward(ember.ones(x.shape, dtype=t.dtype))
        after = ember.rand(3)  # the generator must have advanced alike
    return y.detach().numpy(), t.grad.numpy(), after.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.999])
def test_same_seed_same_numbers_with_numba_on_and_off(dtype, p):
    x = np.random.default_rng(0).standard_normal((N // 7, 7)).astype(dtype)
    on, off = _run(True, x, p), _run(False, x, p)
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)
    y, gx, _ = on
    kept = y != 0
    q = dtype(1) / dtype(1 - p)
    np.testing.assert_array_equal(y[kept], x[kept] * q)
    np.testing.assert_array_equal(gx, np.where(kept, q, 0).astype(dtype))
    assert abs(kept.mean() - (1 - p)) < 0.03


def test_inplace_form_matches_numpy_path():
    x = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    on, off = _run(True, x, 0.3, inplace=True), _run(False, x, 0.3, inplace=True)
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the NumPy path's inf * 0)
def test_infinite_inputs_dropped_give_nan_as_on_the_numpy_path():
    x = np.full(N, np.inf, np.float32)
    on, off = _run(True, x, 0.5)[0], _run(False, x, 0.5)[0]
    np.testing.assert_array_equal(on, off)
    assert np.isnan(on).any() and np.isinf(on).any()


def test_kernel_runs_and_other_cases_fall_back():
    ember.manual_seed(0)
    F.dropout(ember.randn(N), 0.5)
    assert ndrop._dropout_kernel.has_run()
    assert not ndrop.supports(np.zeros(ndrop.MIN_SIZE - 1, np.float32))
    assert not ndrop.supports(np.zeros((N, 2), np.float32)[:, 0])
    # channel-wise dropout draws one word per channel: NumPy path, still reproducible
    x = ember.randn(4, N // 64, 8, 8)
    ember.manual_seed(2)
    a = F.dropout2d(x, 0.5)
    ember.manual_seed(2)
    with native.use_numba(False):
        b = F.dropout2d(x, 0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_gradcheck_and_double_backward_with_numba_on(monkeypatch):
    monkeypatch.setattr(ndrop, "MIN_SIZE", 1)
    x = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)

    def fn(t):
        ember.manual_seed(3)  # the same mask on every call
        return F.dropout(t, 0.4) * t

    with native.use_numba(True):
        assert ember.autograd.gradcheck(fn, (x,))
        assert ember.autograd.gradgradcheck(fn, (x,))
        (g1,) = ember.autograd.grad(fn(x).sum(), x, create_graph=True)
        (g0,) = ember.autograd.grad(fn(x).sum(), x)
    np.testing.assert_allclose(g1.detach().numpy(), g0.numpy(), rtol=1e-12, atol=0)


def test_mask_words_are_splitmix64_outputs():
    # SplitMix64 from state 0 gives 0xe220a8397b1dcdaf, then 0x6e789e6aa1b965f4 (the
    # generator's published first outputs); each is read as two 32-bit words
    expected = np.array([0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4], np.uint64).view(np.uint32)
    np.testing.assert_array_equal(ndrop.mask_words(np.uint64(0), 4), expected)
    assert ndrop.mask_words(np.uint64(0), 3).tolist() == expected[:3].tolist()


def test_words_kernel_matches_numpy_words():
    key = np.uint64(0xDEADBEEF12345678)
    draws = np.empty(1001, np.uint64)
    ndrop._words_kernel.serial(key, draws)
    np.testing.assert_array_equal(draws.view(np.uint32)[:2001], ndrop.mask_words(key, 2001))
    ndrop._words_kernel(key, draws)      # the threaded build
    np.testing.assert_array_equal(draws.view(np.uint32)[:2001], ndrop.mask_words(key, 2001))


def test_generator_moves_on_by_one_draw_per_mask():
    x = ember.randn(N)
    for flag in (True, False):
        with native.use_numba(flag):
            ember.manual_seed(11)
            F.dropout(x, 0.5)
            after = ember.rand(4).numpy()
            ember.manual_seed(11)
            ember.default_generator._source()[1].gen.bit_generator.random_raw()
            np.testing.assert_array_equal(ember.rand(4).numpy(), after)
