"""Large float fills written by two threads in halves (ops/_native_fill.py): zeros, ones,
full, their *_like forms, fill_ and zero_ give NumPy's values on the threads and off
them, and small, integer or complex fills stay NumPy's."""

import numpy as np
import pytest

import ember
from ember.ops import _native, _native_fill

# the smallest float32 fill that is cut, in a shape whose halves are not whole rows
ROWS, COLS = _native_fill.FILL_MIN_BYTES // (4 * 96) + 1, 96


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_large_fills_hold_the_value_everywhere(on_two_threads, dtype, numba_on,
                                               monkeypatch):
    cut = []
    original = _native_fill._run
    monkeypatch.setattr(_native_fill, "_run", lambda flat, value: cut.append(value)
                        or original(flat, value))
    with _native.use_numba(numba_on):
        cases = [(ember.zeros(ROWS, COLS, dtype=dtype), 0.0),
                 (ember.ones(ROWS, COLS, dtype=dtype), 1.0),
                 (ember.full((ROWS, COLS), -2.5, dtype=dtype), -2.5),
                 (ember.full((ROWS, COLS), float("inf"), dtype=dtype), np.inf)]
        like = ember.empty(ROWS, COLS, dtype=dtype)
        cases += [(ember.ones_like(like), 1.0), (ember.zeros_like(like), 0.0),
                  (ember.full_like(like, 7), 7.0)]
    for tensor, value in cases:
        array = tensor.numpy()
        assert array.dtype == dtype.np_dtype and array.shape == (ROWS, COLS)
        assert array.flags.c_contiguous
        np.testing.assert_array_equal(array, np.full((ROWS, COLS), value, dtype.np_dtype))
    # every fill but empty's went through the threads' halves where numba runs them
    assert cut == ([0, 1, -2.5, float("inf"), 1, 0, 7] if numba_on and _native.available()
                   else [])


def test_the_cut_fill_runs_where_it_should(on_two_threads):
    f32 = np.dtype(np.float32)
    assert (_native_fill.filled((ROWS, COLS), f32, 1.0) is not None) == _native.available()
    assert _native_fill.filled((10, COLS), f32, 1.0) is None                # small
    assert _native_fill.filled((ROWS, COLS), np.dtype(np.int64), 1) is None  # integers
    assert _native_fill.filled((ROWS, COLS), f32, 1 + 2j) is None           # a complex value
    strided = np.zeros((ROWS, 2 * COLS), np.float32)[:, ::2]
    assert not _native_fill.fill_into(strided, 1.0)                          # not contiguous
    ember.set_num_threads(1)
    assert _native_fill.filled((ROWS, COLS), f32, 1.0) is None               # one thread


def test_nan_and_negative_zero_are_kept(on_two_threads):
    # (a zero fill went to NumPy's zeros, which wrote +0.0 for full(..., -0.0))
    for shape in [(3,), (ROWS, COLS)]:
        negative = ember.full(shape, -0.0, dtype=ember.float64).numpy()
        assert np.signbit(negative).all() and (negative == 0).all()
        assert np.isnan(ember.full(shape, float("nan")).numpy()).all()
    assert not np.signbit(ember.full((3,), 0.0).numpy()).any()


@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_fill_and_zero_in_place(on_two_threads, numba_on):
    rng = np.random.default_rng(0)
    with _native.use_numba(numba_on):
        values = rng.standard_normal((ROWS, COLS)).astype(np.float32)
        x = ember.tensor(values)
        view = x[:, ::2]                                        # a strided view: NumPy's
        view.fill_(3.0)
        np.testing.assert_array_equal(x.numpy()[:, ::2], 3.0)
        np.testing.assert_array_equal(x.numpy()[:, 1::2], values[:, 1::2])
        x.fill_(-1.5)
        np.testing.assert_array_equal(x.numpy(), -1.5)
        x.zero_()
        np.testing.assert_array_equal(x.numpy(), 0.0)
        assert x._version.value == 3


def test_gradient_through_a_large_fill_(on_two_threads):
    leaf = ember.ones(ROWS, COLS, requires_grad=True)
    y = leaf * 2
    y.fill_(5.0)                       # the filled values no longer depend on the leaf
    (y * leaf).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), 5.0)


def test_contiguous_fills_a_broadcast_value_and_copies_other_layouts(on_two_threads):
    f32 = np.float32
    spread = np.broadcast_to(np.asarray(-1.5, f32), (ROWS, COLS))
    out = _native_fill.contiguous(spread)
    assert out.flags.c_contiguous and out.flags.writeable and not np.shares_memory(out, spread)
    np.testing.assert_array_equal(out, np.full((ROWS, COLS), -1.5, f32))
    strided = np.arange(2 * ROWS * COLS, dtype=f32).reshape(ROWS, 2 * COLS)[:, ::2]
    np.testing.assert_array_equal(_native_fill.contiguous(strided), strided)
    already = np.ones((4, 5), f32)
    assert _native_fill.contiguous(already) is already
    assert _native_fill.contiguous(np.broadcast_to(f32(2), (0, 3))).shape == (0, 3)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("numba_on", [True, False], ids=["numba", "numpy"])
def test_l1_loss_gradient_of_a_large_input(on_two_threads, dtype, numba_on, monkeypatch):
    """A mean's gradient reaches abs's backward as a broadcast single value: it is filled
    by the threads (where numba runs) and abs's sign written over it; the result is
    NumPy's, bit for bit (zeros and NaNs of the difference get 0)."""
    cut = []
    original = _native_fill._run
    monkeypatch.setattr(_native_fill, "_run", lambda flat, value: cut.append(value)
                        or original(flat, value))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, COLS)).astype(dtype.np_dtype)
    target = x * 0.5
    target[0, :3] = x[0, :3]                 # differences of exactly 0
    x[1, 0] = np.nan
    with _native.use_numba(numba_on):
        xt = ember.tensor(x, requires_grad=True)
        loss = ember.nn.functional.l1_loss(xt, ember.tensor(target))
        loss.backward()
    scale = dtype.np_dtype.type(1 / x.size)
    sign = np.nan_to_num(np.sign(x - target))   # (sgn(NaN) is 0, as in PyTorch)
    np.testing.assert_array_equal(xt.grad.numpy(), sign * scale)
    assert np.isnan(loss.item())
    assert cut == ([scale] if numba_on and _native.available() else [])


def test_a_broadcast_gradient_kept_as_grad_is_written_out(on_two_threads, monkeypatch):
    """A leaf's .grad from a mean (one value broadcast) is filled by the threads where
    large; a per-plane broadcast (global average pooling's gradient) is copied by NumPy on
    this thread: the values either way."""
    cut = []
    original = _native_fill._run
    monkeypatch.setattr(_native_fill, "_run", lambda flat, value: cut.append(value)
                        or original(flat, value))
    x = ember.zeros(ROWS, COLS, requires_grad=True)
    cut.clear()   # (the zeros' own fill)
    x.mean().backward()
    scale = np.float32(1 / (ROWS * COLS))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((ROWS, COLS), scale))
    assert x.grad.numpy().flags.c_contiguous and x.grad.numpy().flags.writeable
    assert cut == ([scale] if _native.available() else [])
    images = ember.zeros(8, 64, 32, 32, requires_grad=True)
    g = np.random.default_rng(0).standard_normal((8, 64, 1, 1)).astype(np.float32)
    ember.nn.functional.adaptive_avg_pool2d(images, 1).backward(ember.tensor(g))
    expected = np.broadcast_to(g / np.float32(1024), (8, 64, 32, 32))
    np.testing.assert_allclose(images.grad.numpy(), expected, rtol=1e-6)
    assert images.grad.numpy().flags.c_contiguous and images.grad.numpy().flags.writeable


def test_contiguous_of_a_broadcast_complex_or_integer_value(on_two_threads):
    # (no fill for them, and no warning from turning the value into a float)
    import warnings

    for value in (np.complex64(1 + 2j), np.int64(3)):
        spread = np.broadcast_to(value, (ROWS, COLS))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = _native_fill.contiguous(spread)
        assert out.dtype == spread.dtype and out.flags.c_contiguous
        np.testing.assert_array_equal(out, spread)
