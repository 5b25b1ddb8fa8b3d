"""clamp / clamp_min / clamp_max / hardtanh / relu6 gradients at the bounds and at NaN.

PyTorch's rules: clamp passes the gradient where ``min <= x <= max`` (bounds included, NaN
excluded); with tensor bounds a bound gets the gradient where it is the result (strictly
past it); hardtanh passes it strictly inside its bounds (NaN gets 0).

NOTE: PyTorch's hardtanh answers a NaN differently in its vectorized loop (0) and in its
scalar loop for a tensor's last few elements (the gradient passes); ember follows the
vectorized loop, what nearly every element of a real tensor sees, so the comparisons with
PyTorch use 16 copies of the values (96 elements: no scalar tail)."""

import math

import pytest

import ember
import ember.nn.functional as F

NAN = math.nan
X = [-1.0, 0.0, 0.5, 1.0, 2.0, NAN]


def _grads(lib, f, n_bounds=0, copies=1):
    x = lib.tensor(X * copies, dtype=lib.float64, requires_grad=True)
    bounds = [lib.tensor([0.0] * 6 * copies, dtype=lib.float64, requires_grad=True),
              lib.tensor([1.0] * 6 * copies, dtype=lib.float64, requires_grad=True)][:n_bounds]
    f(lib, x, *bounds).sum().backward()
    return [None if t.grad is None else t.grad.tolist() for t in (x, *bounds)]


CASES = {
    "number bounds": (lambda lib, x: lib.clamp(x, 0.0, 1.0), 0),
    "min only": (lambda lib, x: lib.clamp(x, min=0.0), 0),
    "max only": (lambda lib, x: lib.clamp(x, max=1.0), 0),
    "clamp_min": (lambda lib, x: lib.clamp_min(x, 0.0), 0),
    "clamp_max": (lambda lib, x: lib.clamp_max(x, 1.0), 0),
    "clip": (lambda lib, x: lib.clip(x, 0.0, 1.0), 0),
    "equal bounds": (lambda lib, x: lib.clamp(x, 1.0, 1.0), 0),
    "in place": (lambda lib, x: (x * 1).clamp_(0.0, 1.0), 0),
    "tensor bounds": (lambda lib, x, lo, hi: lib.clamp(x, lo, hi), 2),
    "tensor min": (lambda lib, x, lo: lib.clamp(x, min=lo), 1),
    "tensor clamp_min": (lambda lib, x, lo: lib.clamp_min(x, lo), 1),
    "tensor bounds swapped": (lambda lib, x, lo, hi: lib.clamp(x, hi, lo), 2),
    "hardtanh": (lambda lib, x: lib.nn.functional.hardtanh(x, 0.0, 1.0), 0),
    "hardtanh default": (lambda lib, x: lib.nn.functional.hardtanh(x), 0),
    "relu6": (lambda lib, x: lib.nn.functional.relu6(x * 6), 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bound_gradients_match_pytorch(name):
    torch = pytest.importorskip("torch")
    f, n = CASES[name]
    assert _grads(ember, f, n, copies=16) == _grads(torch, f, n, copies=16)


def test_clamp_passes_the_gradient_at_the_bounds_not_at_nan():
    assert _grads(ember, CASES["number bounds"][0]) == [[0, 1, 1, 1, 0, 0]]
    assert _grads(ember, CASES["min only"][0]) == [[0, 1, 1, 1, 1, 0]]
    assert _grads(ember, CASES["max only"][0]) == [[1, 1, 1, 1, 0, 0]]
    # x == lo == hi: the result is the bound's value and x's gradient passes
    assert _grads(ember, CASES["equal bounds"][0]) == [[0, 0, 0, 1, 0, 0]]


def test_clamp_tensor_bounds_take_the_gradient_strictly_past_them():
    gx, glo, ghi = _grads(ember, CASES["tensor bounds"][0], 2)
    assert gx == [0, 1, 1, 1, 0, 0]
    assert glo == [1, 0, 0, 0, 0, 0]
    assert ghi == [0, 0, 0, 0, 1, 0]


def test_hardtanh_gradient_is_zero_at_the_bounds_and_at_nan():
    assert _grads(ember, CASES["hardtanh"][0]) == [[0, 0, 1, 0, 0, 0]]
    x = ember.tensor([0.0, 3.0, 6.0, NAN], dtype=ember.float64, requires_grad=True)
    F.relu6(x).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_clamp_gradcheck_away_from_the_bounds():
    x = ember.tensor([-1.0, 0.25, 0.5, 2.0], dtype=ember.float64, requires_grad=True)
    lo = ember.tensor([0.0, 0.0, 0.7, 0.0], dtype=ember.float64, requires_grad=True)
    hi = ember.tensor([1.0, 1.0, 1.0, 1.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(ember.clamp, (x, lo, hi))
    assert ember.autograd.gradcheck(lambda t: F.hardtanh(t, 0.0, 1.0), (x,))


# values at and around the bounds, zeros of both signs, NaN and infinities, repeated to a
# size the kernels take
SPECIAL = [-0.0, 0.0, NAN, -1.0, 2.0, math.inf, -math.inf, 0.5, 1.0, -0.5]
NUMBER_BOUNDS = [(0.0, 1.0), (-0.0, 1.0), (-1.0, -0.0), (-1.0, 0.0), (None, 0.0), (0.0, None),
                 (2.0, 1.0), (-1.0, 0.5), (None, -0.0), (-0.0, None), (NAN, 1.0), (None, NAN)]


def _clamp_by_hand(x, lo, hi):
    """PyTorch's clamp with number bounds, element by element: strict tests, so an element
    equal to a bound keeps its sign of zero; a NaN bound gives NaN."""
    out = []
    for v in x:
        if (lo is not None and math.isnan(lo)) or (hi is not None and math.isnan(hi)):
            out.append(NAN)
            continue
        r = lo if lo is not None and v < lo else v
        out.append(hi if hi is not None and r > hi else r)
    return out


@pytest.mark.parametrize("size", [len(SPECIAL), 1 << 18])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_clamp_with_number_bounds_values_and_gradients(on_two_threads, size, dtype, numba_on,
                                                       monkeypatch):
    """Large float arrays take one kernel pass each way (cut over the threads); small ones,
    or numba off, NumPy's maximum and minimum: the same values bit for bit (signs of zero
    included) and the same gradients."""
    import numpy as np

    from ember.ops import _native, _native_activation

    kernels = []
    for name in ("clamp", "clamp_backward"):
        real = getattr(_native_activation, name)
        monkeypatch.setattr(_native_activation, name,
                            lambda *a, real=real, name=name: kernels.append(name) or real(*a))
    x0 = np.resize(np.array(SPECIAL), size)
    g0 = np.arange(1, size + 1) % 7 + 1.0
    for lo, hi in NUMBER_BOUNDS:
        kernels.clear()
        with _native.use_numba(numba_on):
            x = ember.tensor(x0.astype(dtype.np_dtype), requires_grad=True)
            y = ember.clamp(x, lo, hi)
            y.backward(ember.tensor(g0, dtype=dtype))
        # (elementwise: the hand-computed values of SPECIAL, repeated like x0)
        want = np.resize(np.array(_clamp_by_hand(SPECIAL, lo, hi), dtype.np_dtype), size)
        got = y.detach().numpy()
        np.testing.assert_array_equal(got, want)
        assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), (lo, hi)
        xs = x0
        inside = (xs >= (-math.inf if lo is None else lo)) & (xs <= (math.inf if hi is None
                                                                     else hi))
        np.testing.assert_array_equal(x.grad.numpy(), np.where(inside, g0, 0.0))
        nan_bound = any(b is not None and math.isnan(b) for b in (lo, hi))
        big = size > 1000 and numba_on and _native.available() and not nan_bound
        assert kernels == (["clamp", "clamp_backward"] if big else
                           ["clamp_backward"] if size > 1000 and numba_on
                           and _native.available() else [])


COMPLEX_BOUNDS = {
    "clamp, float, number": (lambda lib: lib.clamp(lib.randn(3), min=1j), RuntimeError,
                             "value cannot be converted to type double without overflow"),
    "clip_, float, number": (lambda lib: lib.randn(3).clip_(max=1j), RuntimeError,
                             "value cannot be converted to type double without overflow"),
    "clamp, integer, number": (lambda lib: lib.clamp(lib.arange(3), min=1j),
                               NotImplementedError, "clamp is not supported for complex types"),
    "clamp_min, float, number": (lambda lib: lib.clamp_min(lib.randn(3), 1j),
                                 NotImplementedError, "clamp is not supported for complex types"),
    "clamp_max_, float, number": (lambda lib: lib.randn(3).clamp_max_(1j),
                                  NotImplementedError, "clamp is not supported for complex types"),
    "clamp, complex tensor": (lambda lib: lib.clamp(lib.randn(3), lib.tensor([1j, 0j, 2j])),
                              NotImplementedError, "\"maximum_cpu\" not implemented for "
                                                   "'ComplexFloat'"),
}


@pytest.mark.parametrize("name", list(COMPLEX_BOUNDS))
def test_a_complex_bound_of_a_real_tensor_raises_pytorchs_error(name):
    call, error, message = COMPLEX_BOUNDS[name]
    with pytest.raises(error) as ours:
        call(ember)
    assert str(ours.value) == message


@pytest.mark.parametrize("name", list(COMPLEX_BOUNDS))
def test_complex_bound_errors_match_pytorch(name):
    torch = pytest.importorskip("torch")
    call, error, message = COMPLEX_BOUNDS[name]
    with pytest.raises(error) as theirs:
        call(torch)
    assert str(theirs.value) == message


def test_a_tensor_bound_equal_to_an_element_gives_the_bounds_zero():
    # (PyTorch's vectorized loop does so; number bounds keep the element's zero, above)
    import numpy as np

    x = ember.tensor([-0.0, 0.0, 0.5])
    low = ember.clamp(x, ember.tensor([0.0, -0.0, 0.0]), None).numpy()
    high = ember.clamp(x, None, ember.tensor([0.0, -0.0, 1.0])).numpy()
    assert list(np.signbit(low)) == [False, True, False]
    assert list(np.signbit(high)) == [False, True, False]
    assert list(np.signbit(ember.clamp(x, 0.0, None).numpy())) == [True, False, False]
