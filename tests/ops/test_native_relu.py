"""ops/_native_relu.py: relu's forward kernel against NumPy's maximum (ember's NumPy path)."""

import numpy as np
import pytest

import ember
from ember.ops import _kernels
from ember.ops import _native as native
from ember.ops import _native_relu as nrelu

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")

SPECIAL = [np.nan, -0.0, 0.0, -np.inf, np.inf, -1e-45, 1e-45, -3.5, 2.25]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [nrelu.MIN_SIZE + 3, native.PARALLEL_MIN + 5])
def test_kernel_matches_numpy_bit_for_bit(dtype, size):
    x = np.random.default_rng(0).standard_normal(size).astype(dtype)
    x[:len(SPECIAL)] = SPECIAL
    assert nrelu.supports(x)
    got = nrelu.relu(x)
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
    assert nrelu._relu.has_run()
    y.backward(ember.ones_like(y))
    np.testing.assert_array_equal(x.grad.numpy(), (x.detach().numpy() > 0).astype(np.float32))
    np.testing.assert_array_equal(y.detach().numpy(), np.maximum(x.detach().numpy(), 0))


def test_other_inputs_take_numpy():
    big = np.zeros((nrelu.MIN_SIZE, 2), np.float32)
    assert nrelu.supports(big)
    assert not nrelu.supports(big[:, :1])  # not contiguous
    assert not nrelu.supports(big[:10])  # small
    assert not nrelu.supports(big.astype(np.float16))
    assert not nrelu.supports(big.astype(np.int32))
    with native.use_numba(False):
        assert not nrelu.supports(big)
    t = ember.tensor(np.arange(-5, 5, dtype=np.int64))
    np.testing.assert_array_equal(ember.relu(t).numpy(), np.maximum(np.arange(-5, 5), 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [nrelu.MIN_SIZE + 3, native.PARALLEL_MIN + 5])
def test_backward_kernel_matches_the_numpy_path_bit_for_bit(dtype, size):
    rng = np.random.default_rng(1)
    y = np.maximum(rng.standard_normal(size), 0).astype(dtype)
    y[:4] = [np.nan, 0.0, np.inf, 1.0]
    g = rng.standard_normal(size).astype(dtype)
    g[:4] = [1.0, np.nan, -2.0, np.inf]
    got = nrelu.relu_backward(g, y)
    ref = _kernels.relu_backward(g, y)
    np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), ref.view(f"u{ref.itemsize}"))
