"""ember.testing.assert_close: PyTorch's checks, tolerances and failure messages."""

import math

import numpy as np
import pytest

import ember
from ember.testing import assert_close


def _message(fn) -> str:
    with pytest.raises(AssertionError) as info:
        fn()
    return str(info.value)


def test_reachable_from_top_level():
    assert ember.testing.assert_close is assert_close


def test_default_tolerances_per_dtype():
    # within float32's (1.3e-6, 1e-5) but outside float64's (1e-7, 1e-7)
    assert_close(ember.tensor([1.0]), ember.tensor([1.000005]))
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([1.0], dtype=ember.float64),
                     ember.tensor([1.000005], dtype=ember.float64))
    assert_close(ember.tensor([1.0], dtype=ember.float16),
                 ember.tensor([1.0005], dtype=ember.float16))
    assert_close(ember.tensor([1.0], dtype=ember.bfloat16),
                 ember.tensor([1.01], dtype=ember.bfloat16))
    with pytest.raises(AssertionError):  # integers compare exactly
        assert_close(ember.tensor([10]), ember.tensor([11]))


def test_message_for_close_float_tensors():
    text = _message(lambda: assert_close(ember.tensor([1., 2., 3.]), ember.tensor([1., 2.5, 3.])))
    assert text == ("Tensor-likes are not close!\n\n"
                    "Mismatched elements: 1 / 3 (33.3%)\n"
                    "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                    # 0.5 / 2.5 computed in float32
                    "Greatest relative difference: 0.20000000298023224 at index (1,) "
                    "(up to 1.3e-06 allowed)")


def test_message_for_integers_and_matched_infinities():
    text = _message(lambda: assert_close(ember.tensor([1, 2, 3]), ember.tensor([1, 4, 3])))
    assert text.splitlines() == ["Tensor-likes are not equal!", "",
                                 "Mismatched elements: 1 / 3 (33.3%)",
                                 "Greatest absolute difference: 2 at index (1,)",
                                 "Greatest relative difference: 0.5 at index (1,)"]
    inf = math.inf
    text = _message(lambda: assert_close(ember.tensor([inf, 1.]), ember.tensor([inf, 2.])))
    assert "Greatest absolute difference: 1.0 at index (1,)" in text


def test_nan_needs_equal_nan():
    nan = ember.tensor([float("nan"), 1.0])
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        assert_close(nan, nan.clone())
    assert_close(nan, nan.clone(), equal_nan=True)


def test_attribute_checks():
    a = ember.tensor([1., 2.])
    assert _message(lambda: assert_close(a, a.double())) == (
        "The values for attribute 'dtype' do not match: ember.float32 != ember.float64.")
    assert "attribute 'shape'" in _message(lambda: assert_close(a, ember.tensor([1., 2., 3.])))
    assert_close(a, a.double(), check_dtype=False)
    # with check_dtype=False the tolerances are the looser dtype's (float16's rtol 1e-3)
    assert_close(ember.tensor([1.0], dtype=ember.float16), ember.tensor([1.0005]).double(),
                 check_dtype=False)
    t = ember.zeros(2, 3).t()
    assert_close(t, ember.zeros(3, 2))
    assert "stride()" in _message(lambda: assert_close(t, ember.zeros(3, 2), check_stride=True))


def test_scalars_and_python_numbers():
    assert_close(1.0, 1.0 + 1e-9)
    text = _message(lambda: assert_close(ember.tensor(1.), ember.tensor(2.)))
    assert text == ("Scalars are not close!\n\nExpected 2.0 but got 1.0.\n"
                    "Absolute difference: 1.0 (up to 1e-05 allowed)\n"
                    "Relative difference: 0.5 (up to 1.3e-06 allowed)")
    assert _message(lambda: assert_close(1, 1.0)) == (
        "The (d)types do not match: <class 'int'> != <class 'float'>.")
    assert _message(lambda: assert_close(True, False)) == "Booleans mismatch: True is not False"
    assert "Expected 1.1 but got 1.0." in _message(lambda: assert_close(1.0, 1.1))


def test_sequences_and_mappings():
    assert_close([1.0, ember.tensor(2.)], (1.0, ember.tensor(2.)))
    assert _message(lambda: assert_close([1.0, 2.0], [1.0])) == (
        "The length of the sequences mismatch: 2 != 1")
    text = _message(lambda: assert_close({"a": [ember.tensor(1.)]}, {"a": [ember.tensor(3.)]}))
    assert text.endswith("The failure occurred for item ['a'][0]")
    text = _message(lambda: assert_close({"a": 1.0}, {"b": 1.0}))
    assert "Missing keys in the actual mapping: ['b']" in text


def test_tolerances_and_msg():
    # ember extension: a lone rtol keeps the dtype's atol (PyTorch raises ValueError)
    assert_close(ember.tensor([1.]), ember.tensor([1.1]), rtol=0.2)
    with pytest.raises(AssertionError, match=r"up to 1e-05 allowed"):
        assert_close(ember.tensor([1.]), ember.tensor([1.1]), rtol=0.01)
    assert_close(ember.tensor([1.]), ember.tensor([1.1]), rtol=0.2, atol=0.0)
    assert _message(lambda: assert_close(ember.tensor([1.]), ember.tensor([2.]),
                                         msg="custom")) == "custom"
    text = _message(lambda: assert_close(ember.tensor([1.]), ember.tensor([2.]),
                                         msg=lambda m: "X" + m))
    assert text.startswith("XTensor-likes are not close!")


def test_unsupported_pairs_raise_type_error():
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close("a", "a")


def test_ember_extension_compares_tensors_with_arrays_by_value():
    assert_close(ember.tensor([1., 2.]), np.array([1., 2.]))
    assert_close(ember.tensor([1., 2.]), [1., 2.])
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        assert_close(ember.tensor([1., 2.]), np.array([1., 3.]))


CASES = [
    ([1., 2., 3.], [1., 2.5, 3.], {}),
    ([[1., 2.], [3., 4.]], [[1., 2.], [3., 5.]], {}),
    ([0., 1.], [1., 0.], {}),
    ([1, 2], [2, 1], {"dtype": "uint8"}),
    ([True, False], [False, False], {}),
    ([1.0], [1.1], {"dtype": "float16"}),
    ([1 + 1j], [1 + 2j], {}),
    ([1.0, float("inf")], [1.0, -float("inf")], {}),
    ([float("nan"), 1.0], [float("nan"), 2.0], {}),
    (3.0, 2.0, {"dtype": "float64"}),
]


@pytest.mark.parametrize("actual, expected, kwargs", CASES)
def test_messages_match_pytorch(actual, expected, kwargs):
    torch = pytest.importorskip("torch")

    def run(lib):
        dtype = getattr(lib, kwargs["dtype"]) if "dtype" in kwargs else None
        a, e = lib.tensor(actual, dtype=dtype), lib.tensor(expected, dtype=dtype)
        with pytest.raises(AssertionError) as info:
            lib.testing.assert_close(a, e)
        return str(info.value)

    assert run(ember) == run(torch)


def test_deprecated_assert_allclose():
    with pytest.warns(FutureWarning, match="assert_allclose"):
        ember.testing.assert_allclose(ember.tensor([1.0, float("nan")]), [1.00005, float("nan")])
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match=r"up to 0.0001 allowed"):
        ember.testing.assert_allclose(ember.tensor([1.0, 2.0]), [1.0, 2.5])
