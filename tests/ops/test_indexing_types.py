"""Every kind of index PyTorch accepts, in ``x[key]`` and ``x[key] = value``, with gradients.

Each case is a key written once for any library (``m`` is ember or torch) and the NumPy key
that means the same (or a function of the array, where NumPy's rule for separated advanced
indices differs: PyTorch applies ints first, as a view), or the exception PyTorch raises.
Without PyTorch the cases are checked against NumPy (values, the scatter-added gradient,
assignment and its gradients); with it, against PyTorch (values, gradients, the value's
gradient in assignment, exception types and warnings).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the NumPy expectations still run
    torch = None

X = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)


def _t(m, data, dtype=None):
    return m.tensor(data, dtype=getattr(m, dtype) if dtype else None)


# name -> (key for library m, NumPy key or exception type)
CASES = {
    "int": (lambda m: 2, 2),
    "negative_int": (lambda m: -1, -1),
    "slice": (lambda m: slice(1, None, 2), slice(1, None, 2)),
    "range": (lambda m: range(1, 3), [1, 2]),
    "range_step": (lambda m: range(0, 4, 2), [0, 2]),
    "range_descending": (lambda m: range(3, 0, -1), [3, 2, 1]),
    "range_empty": (lambda m: range(0), np.array([], dtype=np.int64)),
    "range_in_tuple": (lambda m: (slice(None), range(1, 4)), (slice(None), [1, 2, 3])),
    "two_ranges": (lambda m: (range(2), range(2)), ([0, 1], [0, 1])),
    "list_of_ints": (lambda m: [0, 2, -1], [0, 2, -1]),
    "list_with_repeats": (lambda m: [1, 1, 3], [1, 1, 3]),
    "list_of_bools": (lambda m: [True, False, True, True], np.array([1, 0, 1, 1], bool)),
    "nested_list": (lambda m: [[0, 1], [2, 3]], ([0, 1], [2, 3])),  # a tuple, deprecated
    "nested_array": (lambda m: np.array([[0, 1], [2, 3]]), np.array([[0, 1], [2, 3]])),
    "empty_list": (lambda m: [], np.array([], dtype=np.int64)),
    "list_of_numpy_ints": (lambda m: [np.int64(0), np.int32(3)], [0, 3]),
    "list_of_tensors": (lambda m: [_t(m, [0, 1]), _t(m, [1, 2])], ([0, 1], [1, 2])),
    "numpy_int64": (lambda m: np.int64(2), 2),
    "numpy_int32": (lambda m: np.int32(-1), -1),
    "numpy_uint8_scalar": (lambda m: np.uint8(1), 1),
    "numpy_ints_in_tuple": (lambda m: (np.int64(1), np.int16(2)), (1, 2)),
    "numpy_array": (lambda m: np.array([1, 3]), [1, 3]),
    "numpy_int8_array": (lambda m: np.array([1, 2], dtype=np.int8), [1, 2]),
    "numpy_bool_array": (lambda m: np.array([True, False, True, False]),
                         np.array([1, 0, 1, 0], bool)),
    "numpy_2d_int32": (lambda m: np.array([[0, 1], [1, 2]], dtype=np.int32),
                       np.array([[0, 1], [1, 2]])),
    "numpy_0d_int": (lambda m: np.array(2), 2),
    "numpy_0d_bool": (lambda m: np.array(True), np.array(True)),
    "int32_tensor": (lambda m: _t(m, [3, 0], "int32"), [3, 0]),
    "int64_tensor": (lambda m: _t(m, [2, 2, 0], "int64"), [2, 2, 0]),
    "uint8_mask": (lambda m: _t(m, [1, 0, 1, 0], "uint8"), np.array([1, 0, 1, 0], bool)),
    "bool_mask": (lambda m: _t(m, [True, False, False, True]), np.array([1, 0, 0, 1], bool)),
    "bool_mask_2d": (lambda m: _t(m, (X.sum(2) % 3 == 0)), X.sum(2) % 3 == 0),
    "bool_mask_after_slice": (lambda m: (slice(None), _t(m, [True, False, True, False, True])),
                              (slice(None), np.array([1, 0, 1, 0, 1], bool))),
    "zero_dim_int_tensor": (lambda m: _t(m, 2), 2),
    "zero_dim_int32_tensor": (lambda m: _t(m, 1, "int32"), 1),
    "zero_dim_int8_tensor": (lambda m: _t(m, 1, "int8"), 1),
    "zero_dim_bool_tensor": (lambda m: _t(m, True), np.array(True)),
    "zero_dim_uint8_tensor": (lambda m: _t(m, 1, "uint8"), np.array(True)),
    "python_true": (lambda m: True, np.array(True)),
    "python_false_in_tuple": (lambda m: (0, False), (0, np.array(False))),
    "ellipsis_none_int": (lambda m: (Ellipsis, None, 1), (Ellipsis, None, 1)),
    "none_ellipsis_list": (lambda m: (None, Ellipsis, [0, 2]), (None, Ellipsis, [0, 2])),
    "slice_list_none_int": (lambda m: (slice(None), [0, 2], None, 1),
                            lambda a: a[:, :, 1][:, [0, 2], None]),
    "separated_arrays": (lambda m: ([0, 1], slice(None), [2, 3]), ([0, 1], slice(None), [2, 3])),
    "int_ellipsis_tensor": (lambda m: (1, Ellipsis, _t(m, [0, 1])), lambda a: a[1][..., [0, 1]]),
    "tensor_then_none": (lambda m: (_t(m, [0, 1]), None), ([0, 1], None)),
    "tensor_slice_bounds": (lambda m: slice(_t(m, 1), _t(m, 3)), slice(1, 3)),
    "numpy_slice_bounds": (lambda m: slice(np.int64(1), None, np.int32(2)), slice(1, None, 2)),
    "broadcast_arrays": (lambda m: (_t(m, [[0], [3]]), _t(m, [1, 2, 4])),
                         (np.array([[0], [3]]), np.array([1, 2, 4]))),
    # what PyTorch refuses
    "negative_step": (lambda m: slice(None, None, -1), ValueError),
    "negative_step_later": (lambda m: (0, slice(None, None, -2)), ValueError),
    "zero_step": (lambda m: slice(0, 2, 0), ValueError),
    "numpy_bool_scalar": (lambda m: np.bool_(True), IndexError),
    "int8_tensor": (lambda m: _t(m, [1, 2], "int8"), IndexError),
    "int16_tensor": (lambda m: _t(m, [0, 3], "int16"), IndexError),
    "float_tensor": (lambda m: _t(m, [1.0]), IndexError),
    "float": (lambda m: 1.0, IndexError),
    "set": (lambda m: {1}, IndexError),
    "out_of_range": (lambda m: range(5), IndexError),
    "out_of_range_list": (lambda m: (0, [5]), IndexError),
    "mask_wrong_shape": (lambda m: [True, False], IndexError),
    "too_many": (lambda m: (0, 0, 0, 0), IndexError),
}

GOOD = [name for name, (_, expect) in CASES.items() if not isinstance(expect, type)]
BAD = [name for name, (_, expect) in CASES.items() if isinstance(expect, type)]


def _run_get(m, name):
    """(value, gradient of sum(value * arange)) of X[key] in library m."""
    x = m.tensor(X.copy(), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x[CASES[name][0](m)]
    w = m.arange(y.numel(), dtype=m.float64).reshape(y.shape)
    (y * w).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def _run_set(m, name, value):
    """X with X[key] = value, and the gradients of x and value (value: float or array);
    the exception's type when the library refuses."""
    x = m.tensor(X.copy(), requires_grad=True)
    v = m.tensor(value, requires_grad=True) if isinstance(value, np.ndarray) else value
    z = x * 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z[CASES[name][0](m)] = v
    except (RuntimeError, IndexError) as error:
        return type(error)
    w = m.arange(z.numel(), dtype=m.float64).reshape(z.shape)
    (z * w).sum().backward()
    gv = v.grad.numpy() if isinstance(value, np.ndarray) else None
    return z.detach().numpy(), x.grad.numpy(), gv


def _numpy_positions(name):
    """For each element of X[key]: its flat position in X (NumPy, PyTorch's semantics)."""
    expect = CASES[name][1]
    flat = np.arange(X.size).reshape(X.shape)
    return expect(flat) if callable(expect) else flat[expect]


@pytest.mark.parametrize("name", GOOD)
def test_getitem_matches_numpy(name):
    value, grad = _run_get(ember, name)
    where = _numpy_positions(name)
    np.testing.assert_array_equal(value, X.ravel()[where])
    assert value.shape == where.shape
    g = np.zeros(X.size)
    np.add.at(g, where.ravel(), np.arange(where.size, dtype=np.float64))
    np.testing.assert_array_equal(grad, g.reshape(X.shape))


@pytest.mark.parametrize("name", GOOD)
def test_setitem_matches_numpy(name):
    where = _numpy_positions(name)
    value = -1.0 - np.arange(where.size, dtype=np.float64).reshape(where.shape)
    if "repeats" in name:  # one value per position, so that the write order cannot matter
        value[...] = -1.0
    z, gx, gv = _run_set(ember, name, value)
    expected = X.ravel().copy()
    expected[where.ravel()] = value.ravel()
    np.testing.assert_array_equal(z, expected.reshape(X.shape))
    # gradient to x: the weights, zeroed where the assignment overwrote x; to the value:
    # the weights at the positions it was written to
    weights = np.arange(X.size, dtype=np.float64)
    kept = np.ones(X.size)
    kept[where.ravel()] = 0.0
    np.testing.assert_array_equal(gx, (weights * kept).reshape(X.shape))
    if "repeats" not in name:
        np.testing.assert_array_equal(gv, weights[where])


@pytest.mark.parametrize("name", BAD)
def test_rejected_like_pytorch(name):
    key_fn, exc = CASES[name]
    x = ember.tensor(X.copy())
    with pytest.raises(exc):
        x[key_fn(ember)]
    with pytest.raises(exc):
        x[key_fn(ember)] = 0.0


def test_two_ellipses_are_refused():
    # NOTE: PyTorch lets a second `...` stand for no dims; ember raises, as NumPy does
    # (docs/differences.md)
    with pytest.raises(IndexError, match="single ellipsis"):
        ember.zeros(2, 3)[..., 0, ...]


def test_messages():
    x = ember.zeros(3)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match=r"valid indices \(got numpy.bool"):
        x[np.bool_(True)]
    with pytest.raises(IndexError, match=r"valid indices \(got set\)"):
        x[{1}]
    with pytest.raises(IndexError, match="must be long, int, byte or bool tensors"):
        x[ember.tensor([1], dtype=ember.int8)]


def test_uint8_masks_warn_and_refuse_a_scalar_fill():
    x = ember.arange(6.0)
    mask = ember.tensor([1, 0, 1, 0, 0, 1], dtype=ember.uint8)
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        np.testing.assert_array_equal(x[mask].numpy(), [0.0, 2.0, 5.0])
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        x[mask] = 1.0
    with pytest.warns(UserWarning):
        x[mask] = ember.tensor([7.0, 8.0, 9.0])  # a tensor of values is accepted
    np.testing.assert_array_equal(x.numpy(), [7.0, 1.0, 8.0, 3.0, 4.0, 9.0])


def test_range_from_the_forward_forward_example():
    # mnist_forward_forward builds one-hot labels with x_[range(n), y] = x.max()
    x = ember.zeros(3, 10)
    y = ember.tensor([4, 0, 9])
    x[range(x.shape[0]), y] = 1.0
    np.testing.assert_array_equal(x.numpy().argmax(1), [4, 0, 9])
    assert x.sum().item() == 3.0


def test_setitem_value_gradient_with_a_range():
    x = ember.zeros(4, 3)
    v = ember.ones(2, 3, requires_grad=True)
    x[range(1, 3)] = v * 2
    x.sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), np.full((2, 3), 2.0))


# ----------------------------------------------------------------------
# PyTorch parity (skipped without it)

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
pytestmark = pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8")


@needs_torch
@pytest.mark.parametrize("name", GOOD)
def test_getitem_and_gradient_match_pytorch(name):
    ours, theirs = _run_get(ember, name), _run_get(torch, name)
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@needs_torch
@pytest.mark.parametrize("name", GOOD)
def test_setitem_and_gradients_match_pytorch(name):
    shape = _run_get(torch, name)[0].shape
    value = np.random.default_rng(len(name)).standard_normal(shape)
    for v in (-1.0, value):
        ours, theirs = _run_set(ember, name, v), _run_set(torch, name, v)
        if isinstance(theirs, type):  # PyTorch refuses (a uint8 mask with a scalar)
            assert ours is theirs
            continue
        np.testing.assert_array_equal(ours[0], theirs[0])
        np.testing.assert_array_equal(ours[1], theirs[1])
        if "repeats" not in name:  # which duplicate write wins is unspecified in PyTorch
            np.testing.assert_array_equal(ours[2], theirs[2])


@needs_torch
@pytest.mark.parametrize("name", BAD)
def test_same_exception_as_pytorch(name):
    key_fn, exc = CASES[name]
    for m in (ember, torch):
        with pytest.raises(exc):
            m.tensor(X.copy())[key_fn(m)]


@needs_torch
@pytest.mark.parametrize("name", ["uint8_mask", "list_range", "nested_in_list"])
def test_same_warnings_as_pytorch(name):
    keys = {"uint8_mask": CASES["uint8_mask"][0],
            "list_range": lambda m: [range(2)],
            "nested_in_list": lambda m: [[0, 1], [1, 2]]}

    def caught(m):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            y = m.tensor(X.copy())[keys[name](m)]
        return y.shape, [w.category for w in seen]

    (ours_shape, ours), (theirs_shape, theirs) = caught(ember), caught(torch)
    assert tuple(ours_shape) == tuple(theirs_shape)
    assert ours == theirs
