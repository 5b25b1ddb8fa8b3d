"""Large same-shape additions, subtractions and products cut over two threads
(ops/_native_binary.py): the same bits as NumPy's, on the threads and off them, and the
ops that use them."""

import numpy as np
import pytest

import ember
from ember.ops import _native, _native_activation, _native_binary


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
    acc = x.copy()
    _native_binary.multiply_into(acc, y)
    np.testing.assert_array_equal(acc, x * y)


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("value", [0.5, 0.1, 3.0, -0.0, 0.0, 1e300, np.inf, np.nan])
def test_an_array_and_a_number_cut_equal_numpy_bit_for_bit(on_two_threads, dtype, value):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((_native_binary.NUMBER_MIN // 64 + 3, 64)).astype(dtype)
    x[0, :5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
    value = float(value)
    assert _native_binary._takes_number(x, value) == _native.available()
    with np.errstate(all="ignore"):
        expected = [x + value, x - value, x * value, x / value]
        got = [_native_binary.add(x, value), _native_binary.subtract(x, value),
               _native_binary.multiply(x, value), _native_binary.divide(x, value)]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g.view(np.uint8), e.view(np.uint8))


def test_what_the_number_kernels_leave_to_numpy(on_two_threads):
    big = np.ones((_native_binary.NUMBER_MIN,), np.float32)
    assert not _native_binary._takes_number(big[:-1], 0.5)                   # small
    assert not _native_binary._takes_number(big, np.float32(0.5))            # not a float
    assert not _native_binary._takes_number(big, 2)                          # an int
    assert not _native_binary._takes_number(big.astype(np.int64), 0.5)       # integers
    strided = np.ones((2 * _native_binary.NUMBER_MIN,), np.float32)[::2]
    assert not _native_binary._takes_number(strided, 0.5)                    # not contiguous
    np.testing.assert_array_equal(_native_binary.divide(strided, 4.0), strided / 4.0)
    ember.set_num_threads(1)
    assert not _native_binary._takes_number(big, 0.5)                        # one thread


@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_arithmetic_with_numbers_and_arrays_on_large_tensors(on_two_threads, numba_on,
                                                            monkeypatch):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((_native_binary.NUMBER_MIN // 128, 128)).astype(np.float32)
    b = rng.standard_normal(a.shape).astype(np.float32)
    cut, cut_arrays = [], []
    original = _native_binary._cut_number
    monkeypatch.setattr(_native_binary, "_cut_number",
                        lambda *args: cut.append(args[0]) or original(*args))
    original_arrays = _native_binary._cut
    monkeypatch.setattr(_native_binary, "_cut",
                        lambda *args: cut_arrays.append(args[0]) or original_arrays(*args))
    with _native.use_numba(numba_on):
        x, y = ember.tensor(a), ember.tensor(b)
        with ember.no_grad():   # (ops/_direct.py's path)
            plain = [x * 0.5, x + 2, x - 0.25, x / 3.0, 1.5 * x, x * y, x - y, x / y]
        leaf = ember.tensor(a, requires_grad=True)
        recorded = leaf / 4.0 * 2.0
        recorded.backward(ember.ones(a.shape))
    expected = [a * 0.5, a + 2, a - 0.25, a / 3.0, 1.5 * a, a * b, a - b, a / b]
    for got, want in zip(plain, expected):
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(recorded.detach().numpy(), a / 4.0 * 2.0)
    np.testing.assert_array_equal(leaf.grad.numpy(), np.full(a.shape, 0.5, np.float32))
    # the number kernels ran where numba is on: x * 0.5, + 2, - 0.25, / 3.0, 1.5 * x under
    # no_grad, then / 4.0 and * 2.0 recorded, and the backward's products by 2.0 and 0.25
    assert len(cut) >= (7 if numba_on and _native.available() else 0)
    if not (numba_on and _native.available()):
        assert cut == [] and cut_arrays == []
    else:   # (x * y and x - y under no_grad; x / y stays NumPy's)
        assert cut_arrays[:2] == [_native_binary._multiply, _native_binary._subtract]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_large_abs_and_small_powers_equal_numpy_bit_for_bit(on_two_threads, dtype,
                                                            numba_on, monkeypatch):
    from ember.ops import arithmetic

    rng = np.random.default_rng(4)
    a = rng.standard_normal((arithmetic.ABS_CUT_MIN // 64 + 1, 64)).astype(dtype.np_dtype)
    a[0, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan]
    kernels = []
    original = _native_activation.elementwise
    monkeypatch.setattr(_native_activation, "elementwise",
                        lambda kernel, x, *out: kernels.append(kernel) or original(kernel, x, *out))
    with _native.use_numba(numba_on):
        x = ember.tensor(a)
        got = [x.abs(), x ** 2, x ** 3, x ** -2]
        leaf = ember.tensor(a, requires_grad=True)
        leaf.abs().backward(ember.ones(a.shape, dtype=dtype))
    with np.errstate(all="ignore"):
        expected = [np.abs(a), a * a, a * a * a, np.reciprocal(a * a)]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g.numpy().view(np.uint8), e.view(np.uint8))
    np.testing.assert_array_equal(leaf.grad.numpy(), np.sign(np.nan_to_num(a, nan=0.0)))
    on = numba_on and _native.available()
    assert kernels == ([_native_activation._abs] * 2 if on else [])   # (two abs forwards)


@pytest.mark.parametrize("exponent", [2, 3, 2.5])
def test_large_power_gradient_equals_its_formula_bit_for_bit(on_two_threads, exponent):
    # (first order on the arrays: 2x or e * x ** (e - 1), times the gradient, the large
    # products cut over the threads)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((_native.SPLIT_MIN // 64 + 1, 64)).astype(np.float32)
    a[0, :4] = [0.0, -0.0, np.inf, np.nan]
    g = rng.standard_normal(a.shape).astype(np.float32)
    x = ember.tensor(a, requires_grad=True)
    (x ** exponent).backward(ember.tensor(g))
    with np.errstate(all="ignore"):
        slope = a + a if exponent == 2 else np.power(a, exponent - 1) * exponent
        if exponent == 3:
            slope = (a * a) * exponent       # (x ** 2 is x * x in ember, as in PyTorch)
        expected = slope * g
    np.testing.assert_array_equal(x.grad.numpy().view(np.uint8), expected.view(np.uint8))
