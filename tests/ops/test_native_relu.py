"""relu's kernels (ops/_native_activation.py) against ember's NumPy path, bit for bit."""

import numpy as np
import pytest

import ember
from ember.ops import _kernels
from ember.ops import _native as native
from ember.ops import _native_activation as nact

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")

# a size that runs on all threads once the fixture below has lowered the threshold (to
# keep the arrays small: with two threads it is 2M elements)
THREADED_SIZE = (1 << 16) + 5


@pytest.fixture(autouse=True)
def _small_parallel_threshold(monkeypatch):
    monkeypatch.setattr(native, "PARALLEL_MIN", THREADED_SIZE - 5)


SPECIAL = [np.nan, -0.0, 0.0, -np.inf, np.inf, -1e-45, 1e-45, -3.5, 2.25]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [nact.RELU_MIN_SIZE + 3, THREADED_SIZE])
def test_kernel_matches_numpy_bit_for_bit(dtype, size):
    x = np.random.default_rng(0).standard_normal(size).astype(dtype)
    x[:len(SPECIAL)] = SPECIAL
    assert nact.supports(x, min_size=nact.RELU_MIN_SIZE)
    got = nact.forward("relu", x)
    ref = np.maximum(x, 0)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))  # -0.0 gives +0.0
    with native.use_numba(False):
        numpy_path = ember.relu(ember.tensor(x)).numpy()
    np.testing.assert_array_equal(ember.relu(ember.tensor(x)).numpy(), numpy_path)


def test_relu_op_runs_the_kernel_and_keeps_its_gradient():
    x = ember.randn(64, 80, requires_grad=True)
    y = ember.relu(x)
    assert nact._relu.has_run()
    y.backward(ember.ones_like(y))
    np.testing.assert_array_equal(x.grad.numpy(), (x.detach().numpy() > 0).astype(np.float32))
    np.testing.assert_array_equal(y.detach().numpy(), np.maximum(x.detach().numpy(), 0))


def test_other_inputs_take_numpy():
    big = np.zeros((nact.RELU_MIN_SIZE, 2), np.float32)
    relu_min = {"min_size": nact.RELU_MIN_SIZE}
    assert nact.supports(big, **relu_min)
    assert not nact.supports(big[:100], **relu_min)  # 200 elements: small for relu only
    assert nact.supports(big[:100])
    assert not nact.supports(big.astype(np.float16), **relu_min)
    assert not nact.supports(big.astype(np.int32), **relu_min)
    with native.use_numba(False):
        assert not nact.supports(big, **relu_min)
    t = ember.tensor(np.arange(-5, 5, dtype=np.int64))
    np.testing.assert_array_equal(ember.relu(t).numpy(), np.maximum(np.arange(-5, 5), 0))


def test_strided_input_gives_the_numpy_result():
    x = np.random.default_rng(2).standard_normal((nact.RELU_MIN_SIZE, 4)).astype(np.float32)
    view = ember.tensor(x)[:, ::2]  # not contiguous: copied for the kernel
    np.testing.assert_array_equal(ember.relu(view).numpy(), np.maximum(x[:, ::2], 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [nact.RELU_MIN_SIZE + 3, THREADED_SIZE])
def test_backward_kernel_matches_the_numpy_path_bit_for_bit(dtype, size):
    rng = np.random.default_rng(1)
    y = np.maximum(rng.standard_normal(size), 0).astype(dtype)
    y[:4] = [np.nan, 0.0, np.inf, 1.0]
    g = rng.standard_normal(size).astype(dtype)
    g[:4] = [1.0, np.nan, -2.0, np.inf]
    got = nact.backward("relu", g, y)
    ref = _kernels.relu_backward(g, y)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), ref.view(f"u{ref.itemsize}"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_and_column_sums_in_one_pass(dtype):
    # relu's gradient as its backward kernel gives it, written over the gradient, and the
    # column sums NumPy gives (rows added in order, in the dtype)
    rng = np.random.default_rng(3)
    y = np.maximum(rng.standard_normal((37, 29)), 0).astype(dtype)
    y.reshape(-1)[:len(SPECIAL)] = SPECIAL     # NaN outputs pass the gradient
    g = rng.standard_normal((37, 29)).astype(dtype)
    expected = nact.backward("relu", g, y)
    sums = np.full(29, 7.0, dtype)             # (overwritten, not added to)
    nact.relu_grad_and_sums(g, y, sums)
    np.testing.assert_array_equal(g, expected)
    np.testing.assert_array_equal(sums, expected.sum(axis=0))
    np.testing.assert_allclose(sums, expected.astype(np.float64).sum(axis=0),
                               rtol=1e-5 if dtype == np.float32 else 1e-13, atol=1e-5)
