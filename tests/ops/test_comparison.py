"""Focused tests for ember/ops/comparison.py: result dtypes, promotion, operators (reflected
and in-place), bitwise/shift semantics, errors, equal/allclose/isclose, PyTorch parity."""

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

NAN, INF = float("nan"), float("inf")


def t(values, dtype=None, requires_grad=False):
    return ember.tensor(values, dtype=dtype, requires_grad=requires_grad)


# comparisons ------------------------------------------------------------------------


def test_comparison_operators():
    x = t([1.0, 2.0, 3.0])
    assert (x == 2).tolist() == [False, True, False]
    assert (x != 2).tolist() == [True, False, True]
    assert (x < 2).tolist() == [True, False, False]
    assert (x <= 2).tolist() == [True, True, False]
    assert (x > 2).tolist() == [False, False, True]
    assert (x >= 2).tolist() == [False, True, True]
    assert (2 < x).tolist() == [False, False, True]  # reflected through __gt__
    assert (x == x).dtype is ember.bool
    assert (x == t([1.0])).tolist() == [True, False, False]


def test_comparisons_promote_before_comparing():
    assert (t([1, 2]) == 1.5).tolist() == [False, False]
    assert (t([1, 2]) < 1.5).tolist() == [True, False]
    assert (t([0.1], ember.float32) == t([0.1], ember.float64)).tolist() == [False]
    assert (t([True, False]) < t([True, True])).tolist() == [False, True]
    assert ember.gt(t([1, 2]), t([1.5])).tolist() == [False, True]


def test_aliases():
    x, y = t([1, 2]), t([2, 2])
    assert ember.greater(x, y).tolist() == ember.gt(x, y).tolist()
    assert ember.greater_equal(x, y).tolist() == ember.ge(x, y).tolist()
    assert ember.less(x, y).tolist() == ember.lt(x, y).tolist()
    assert ember.less_equal(x, y).tolist() == ember.le(x, y).tolist()
    assert ember.not_equal(x, y).tolist() == ember.ne(x, y).tolist()


def test_other_operand_types():
    x = t([1.0])
    assert (x == None) is False  # noqa: E711 - the operator is what is tested
    assert (x != None) is True  # noqa: E711
    assert (x == "a") is False
    with pytest.raises(TypeError):
        x < None  # noqa: B015


def test_tensors_stay_hashable():
    a, b = t([1.0]), t([1.0])
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2 and len({a, b}) == 2


def test_broadcast_error():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\)"):
        t([1.0, 2.0]) == ember.ones(3)  # noqa: B015


def test_comparisons_have_no_gradient():
    x = t([1.0, 2.0], requires_grad=True)
    out = x > 1
    assert not out.requires_grad and out.grad_fn is None


def test_inplace_comparisons():
    x = t([1.0, 2.0, 3.0])
    version = x._version.value
    assert x.gt_(1.5) is x
    assert x.tolist() == [0.0, 1.0, 1.0] and x.dtype is ember.float32
    assert x._version.value == version + 1
    i = t([1, 2, 3])
    i.eq_(2)
    assert i.tolist() == [0, 1, 0]
    i = t([1, 2, 3])
    assert i.gt_(1.5).tolist() == [0, 1, 1] and i.dtype is ember.int64  # compared as floats
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        t([1, 2]).lt_(ember.ones(2, 2))
    a = t([1.0, 2.0], requires_grad=True)
    b = a * 1
    b.ge_(1.5)
    assert b.grad_fn.name() == "GeBackward0"
    b.sum().backward()
    assert a.grad.tolist() == [0.0, 0.0]


# logical ---------------------------------------------------------------------------


def test_logical_ops():
    a, b = t([1.5, 0.0, -2.0]), t([1, 1, 0])
    assert ember.logical_and(a, b).tolist() == [True, False, False]
    assert ember.logical_or(a, b).tolist() == [True, True, True]
    assert ember.logical_xor(a, b).tolist() == [False, True, True]
    assert ember.logical_not(a).tolist() == [False, True, False]
    assert ember.logical_not(a).dtype is ember.bool
    x = t([1.5, 0.0])
    x.logical_and_(t([True, True]))
    assert x.tolist() == [1.0, 0.0] and x.dtype is ember.float32
    x.logical_not_()
    assert x.tolist() == [0.0, 1.0]


# bitwise ----------------------------------------------------------------------------


def test_bitwise_ops_and_promotion():
    b, i = t([True, False]), t([3, 2])
    assert (b & i).tolist() == [1, 0] and (b & i).dtype is ember.int64
    assert (b & 1).dtype is ember.int64
    assert (b & True).dtype is ember.bool
    assert (t([1, 2, 3]) & True).tolist() == [1, 0, 1]
    assert (3 & t([1, 2, 3])).tolist() == [1, 2, 3]
    assert (t([5]) | 2).tolist() == [7] and (1 | t([6])).tolist() == [7]
    assert (t([5]) ^ 1).tolist() == [4] and (1 ^ t([5])).tolist() == [4]
    assert (~b).tolist() == [False, True]
    assert (~t([1, 2])).tolist() == [-2, -3]
    assert ember.bitwise_not(t([0], ember.uint8)).tolist() == [255]


@pytest.mark.parametrize("expr,kernel", [
    (lambda: t([1.0]) & t([1.0]), "bitwise_and_cpu"),
    (lambda: t([1]) | 1.5, "bitwise_or_cpu"),
    (lambda: ember.bitwise_xor(t([1]), t([1.0])), "bitwise_xor_cpu"),
    (lambda: ember.bitwise_not(t([1.0])), "bitwise_not_cpu"),
    (lambda: t([1.0]) << 1, "lshift_cpu"),
    (lambda: t([1.0]) >> 1, "rshift_cpu"),
    (lambda: t([True]) << t([True]), "lshift_cpu"),
])
def test_bitwise_refuses_floats(expr, kernel):
    with pytest.raises(RuntimeError, match=f'"{kernel}" not implemented for'):
        expr()


def test_invert_float_is_type_error():
    with pytest.raises(TypeError, match="only implemented on integer and Boolean-type tensors"):
        ~t([1.0])


def test_shifts():
    i = t([1, 2, 3])
    assert (i << 1).tolist() == [2, 4, 6]
    assert (1 << i).tolist() == [2, 4, 8]
    assert (i << 64).tolist() == [0, 0, 0]
    assert (t([-8, -1]) >> 1).tolist() == [-4, -1]
    assert (t([-8, 8]) >> 70).tolist() == [-1, 0]
    assert (t([200], ember.uint8) << 1).tolist() == [144]
    assert (t([1], ember.int32) << 40).dtype is ember.int32
    assert (t([True, False]) << 1).tolist() == [2, 0]
    assert ember.bitwise_right_shift(16, i).tolist() == [8, 4, 2]


def test_inplace_bitwise_operators():
    i = t([1, 2, 3])
    version = i._version.value
    i &= 1
    assert i.tolist() == [1, 0, 1] and i._version.value == version + 1
    i |= t([2, 2, 2])
    assert i.tolist() == [3, 2, 3]
    i ^= 1
    assert i.tolist() == [2, 3, 2]
    i <<= 1
    assert i.tolist() == [4, 6, 4]
    i >>= 2
    assert i.tolist() == [1, 1, 1]
    b = t([True, False])
    b |= t([False, True])
    assert b.tolist() == [True, True] and b.dtype is ember.bool
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
        b &= t([1, 2])


# equal, isclose, allclose --------------------------------------------------------------


def test_equal():
    assert ember.equal(t([1.0, 2.0]), t([1.0, 2.0]))
    assert not ember.equal(t([1.0, 2.0]), t([1.0, 2.0, 3.0]))
    assert ember.equal(t([1.0, 2.0]), t([1, 2]))
    assert not ember.equal(t([NAN]), t([NAN]))
    assert isinstance(ember.equal(t([1]), t([1])), bool)


def test_isclose_and_allclose():
    x = t([1.0, INF, NAN, -INF])
    y = t([1.0 + 1e-7, INF, NAN, INF])
    assert ember.isclose(x, y).tolist() == [True, True, False, False]
    assert ember.isclose(x, y, equal_nan=True).tolist() == [True, True, True, False]
    assert ember.isclose(t([1.0, 2.5]), t([1.5]), atol=0.5).tolist() == [True, False]
    assert ember.isclose(t([1, 2]), t([1, 3])).tolist() == [True, False]
    assert ember.isclose(t([True]), t([True])).tolist() == [True]
    assert ember.allclose(t([1.0, 2.0]), t([1.0, 2.0 + 1e-9]))
    assert not ember.allclose(t([1.0]), t([1.1]))
    assert isinstance(ember.allclose(t([1.0]), t([1.0])), bool)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        ember.isclose(t([1.0]), t([1.0], ember.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        ember.isclose(t([1.0]), t([1.0]), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        ember.allclose(t([1.0]), t([1.0]), atol=-1)


# PyTorch parity ----------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                  "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
                                  "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"])
@pytest.mark.parametrize("dtypes", [("int64", "int32"), ("uint8", "int8"), ("bool", "int64"),
                                    ("bool", "bool"), ("float32", "float64"),
                                    ("int64", "float32")])
def test_matches_torch(name, dtypes):
    if name.startswith("bitwise") and any(d.startswith("float") for d in dtypes):
        pytest.skip("bitwise ops refuse floats (tested above)")
    if "shift" in name and "bool" in dtypes:
        pytest.skip("shifts refuse bool")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, size=(3, 4))
    b = rng.integers(0, 4, size=(4,))
    out = getattr(ember, name)(t(a, getattr(ember, dtypes[0])), t(b, getattr(ember, dtypes[1])))
    ref = getattr(torch, name)(torch.tensor(a, dtype=getattr(torch, dtypes[0])),
                               torch.tensor(b, dtype=getattr(torch, dtypes[1])))
    assert out.dtype.name == str(ref.dtype).replace("torch.", "")
    assert out.tolist() == ref.tolist()


@needs_torch
def test_empty_and_zero_dim():
    assert (ember.ones(0, 3) == 1).shape == (0, 3)
    assert (t(1.0) < 2).shape == ()
    assert ember.logical_not(ember.ones(0)).shape == (0,)
    assert ember.equal(ember.ones(0), ember.ones(0))
    assert ember.allclose(ember.ones(0), ember.ones(0))
