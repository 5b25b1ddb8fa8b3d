"""Large same-shape additions, subtractions and products cut over two threads
(ops/_native_binary.py): the same bits as NumPy's, on the threads and off them, and the
ops that use them."""

import numpy as np
import pytest

import ember
from ember.ops import _native, _native_binary


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cut_additions_equal_numpy_bit_for_bit(on_two_threads, dtype):
    rng = np.random.default_rng(0)
    shape = (_native.SPLIT_MIN // 64 + 3, 64)      # above the cut size, an odd row count
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(shape).astype(dtype)
    assert _native_binary._takes(x, y) == _native.available()
    np.testing.assert_array_equal(_native_binary.add(x, y), x + y)
    np.testing.assert_array_equal(_native_binary.subtract(x, y), x - y)
    np.testing.assert_array_equal(_native_binary.multiply(x, y), x * y)
    acc = x.copy()
    _native_binary.add_into(acc, y)
    np.testing.assert_array_equal(acc, x + y)


def test_what_the_cut_additions_leave_to_numpy(on_two_threads):
    big = np.ones((_native.SPLIT_MIN,), np.float32)
    assert not _native_binary._takes(big[:10], big[:10])                 # small
    assert not _native_binary._takes(big, big.astype(np.float64))        # dtypes differ
    assert not _native_binary._takes(big, big.reshape(1, -1))            # shapes differ
    assert not _native_binary._takes(big, big.astype(np.int64))          # integers
    strided = np.ones((2 * _native.SPLIT_MIN,), np.float32)[::2]
    assert not _native_binary._takes(strided, big)                      # not contiguous
    np.testing.assert_array_equal(_native_binary.add(strided, big), strided + big)
    ember.set_num_threads(1)
    assert not _native_binary._takes(big, big)                          # one thread


@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_residual_add_forward_and_backward(on_two_threads, numba_on):
    rng = np.random.default_rng(1)
    shape = (4, _native.SPLIT_MIN // 256, 64)
    a = ember.tensor(rng.standard_normal(shape), dtype=ember.float32, requires_grad=True)
    b = ember.tensor(rng.standard_normal(shape), dtype=ember.float32, requires_grad=True)
    with _native.use_numba(numba_on):
        out = a + b
        out.backward(ember.ones(shape))
    np.testing.assert_array_equal(out.detach().numpy(), a.detach().numpy() + b.detach().numpy())
    np.testing.assert_array_equal(a.grad.numpy(), np.ones(shape, np.float32))
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(shape, np.float32))


def test_the_engine_sums_a_tensors_gradients_with_the_cut_kernels(on_two_threads, monkeypatch):
    from ember._core import engine

    # the ops layer installed its additions as the engine's (engine.set_gradient_sum)
    assert engine._add_arrays is _native_binary.add
    assert engine._add_arrays_into is _native_binary.add_into
    calls = []
    monkeypatch.setattr(engine, "_add_arrays_into",
                        lambda a, b: calls.append("into") or _native_binary.add_into(a, b))
    monkeypatch.setattr(engine, "_add_arrays",
                        lambda a, b: calls.append("new") or _native_binary.add(a, b))
    rng = np.random.default_rng(2)
    shape = (_native.SPLIT_MIN // 64, 64)
    x = ember.tensor(rng.standard_normal(shape), dtype=ember.float32, requires_grad=True)
    w1, w2 = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    ((x * ember.tensor(w1)).sum() + (x * ember.tensor(w2)).sum()).backward()
    assert calls                                   # two gradients reached x's one slot
    np.testing.assert_array_equal(x.grad.numpy(), w1 + w2)


def test_a_leafs_grad_is_accumulated_with_the_cut_kernel(on_two_threads, monkeypatch):
    from ember._core import accumulate

    assert accumulate.add_into is _native_binary.add_into   # (engine.set_gradient_sum)
    calls = []
    monkeypatch.setattr(accumulate, "add_into",
                        lambda a, b: calls.append(1) or _native_binary.add_into(a, b))
    rng = np.random.default_rng(3)
    shape = (_native.SPLIT_MIN // 64 + 1, 64)
    x = ember.tensor(rng.standard_normal(shape), dtype=ember.float32, requires_grad=True)
    w1, w2 = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    (x * ember.tensor(w1)).sum().backward()
    first = x.grad
    (x * ember.tensor(w2)).sum().backward()      # into the .grad the first one left
    assert calls == [1] and x.grad is first
    np.testing.assert_array_equal(x.grad.numpy(), w1 + w2)


@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_large_sub_and_mul_forward_and_backward(on_two_threads, numba_on):
    rng = np.random.default_rng(2)
    shape = (4, _native.SPLIT_MIN // 256, 64)
    a0, b0, g0 = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    with _native.use_numba(numba_on):
        a = ember.tensor(a0, requires_grad=True)
        b = ember.tensor(b0, requires_grad=True)
        out = (a - b) * b
        out.backward(ember.tensor(g0))
    np.testing.assert_array_equal(out.detach().numpy(), (a0 - b0) * b0)
    np.testing.assert_array_equal(a.grad.numpy(), g0 * b0)
    np.testing.assert_array_equal(b.grad.numpy(), g0 * (a0 - b0) - g0 * b0)
