"""Operands PyTorch refuses or takes in ways a NumPy ufunc does not: order comparisons,
extrema, clamp and the division-like ops of complex tensors; subtraction involving bool;
a real tensor to a complex power."""

import cmath

import numpy as np
import pytest

import ember

C = ember.ones(2, dtype=ember.complex64)
F = ember.ones(2)


@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge"])
def test_order_comparisons_of_complex_raise(op):
    for args in ((C, F), (F, C), (C, 1.0)):
        with pytest.raises(NotImplementedError, match=f'"{op}_cpu" not implemented for '
                                                      "'ComplexFloat'"):
            getattr(ember, op)(*args)
    with pytest.raises(NotImplementedError, match=f'"{op}_cpu" not implemented'):
        getattr(C.clone(), op + "_")(F)   # (the in-place form too)
    assert ember.eq(C, F).tolist() == [True, True]   # (equality is defined)


@pytest.mark.parametrize("op", ["maximum", "minimum", "fmax", "fmin"])
def test_extrema_of_complex_raise(op):
    with pytest.raises(RuntimeError, match=f"{op} not implemented for complex tensors"):
        getattr(ember, op)(C, F)


@pytest.mark.parametrize("op, kernel", [("floor_divide", "div_floor_cpu"),
                                        ("remainder", "remainder_cpu"), ("fmod", "fmod_cpu"),
                                        ("atan2", "atan2_cpu")])
def test_division_like_ops_of_complex_raise(op, kernel):
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented'):
        getattr(ember, op)(C, F)
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented'):
        getattr(C.clone(), op + "_")(F)   # (the in-place form too)


def test_clamp_of_complex_raises():
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        C.clamp(0, 1)


def test_subtraction_with_a_bool_on_either_side_raises():
    flags = ember.tensor([True, False])
    for call in (lambda: F - flags, lambda: flags - 1, lambda: 1.0 - flags,
                 lambda: ember.sub(F, True), lambda: F.clone().sub_(flags),
                 lambda: ember.rsub(flags, 1.0)):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with a bool"):
            call()
    assert (F - 1).tolist() == [0.0, 0.0] and (3 - F).tolist() == [2.0, 2.0]


def test_a_real_tensor_to_a_complex_power():
    got = ember.pow(ember.tensor([1.0, 2.0, 4.0]), 1j)
    assert got.dtype is ember.complex64
    np.testing.assert_allclose(got.numpy(), [1.0, cmath.exp(1j * cmath.log(2)),
                                             cmath.exp(1j * cmath.log(4))], rtol=1e-6)
    ints = ember.pow(ember.tensor([1, 2]), 0.5j)
    assert ints.dtype is ember.complex64
    np.testing.assert_allclose(ints.numpy(), [1.0, cmath.exp(0.5j * cmath.log(2))], rtol=1e-6)
