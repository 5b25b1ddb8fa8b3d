"""dtype objects, promotion rules, default dtype, finfo/iinfo."""

import numpy as np
import pytest

import ember
from ember._core import dtype as dtypes
from tests.processes import run_together

try:
    import torch
except ImportError:
    torch = None

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
         "float32", "float64", "complex64", "complex128"]


def test_dtype_attributes():
    assert ember.float32.itemsize == 4 and ember.float32.is_floating_point
    assert not ember.int64.is_floating_point and ember.int64.itemsize == 8
    assert ember.complex64.is_complex
    assert ember.bfloat16.itemsize == 2
    assert repr(ember.float64) == "ember.float64"
    assert ember.float is ember.float32 and ember.double is ember.float64
    assert ember.long is ember.int64 and ember.half is ember.float16


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_promote_types_matches_pytorch_table(a, b):
    got = ember.promote_types(getattr(ember, a), getattr(ember, b))
    if torch is not None:
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert got.name == str(want).replace("torch.", "")
    # symmetric, and idempotent
    assert got is ember.promote_types(getattr(ember, b), getattr(ember, a))


def test_promote_types_hand_checked():
    p = ember.promote_types
    assert p(ember.uint8, ember.int8) is ember.int16
    assert p(ember.float16, ember.bfloat16) is ember.float32
    assert p(ember.int64, ember.float16) is ember.float16
    assert p(ember.bool, ember.uint8) is ember.uint8
    assert p(ember.complex64, ember.float64) is ember.complex128


def test_scalars_do_not_promote_within_category():
    x = ember.ones(2, dtype=ember.float16)
    assert (x + 2.5).dtype is ember.float16
    assert (ember.ones(2, dtype=ember.int32) + 7).dtype is ember.int32
    assert (ember.ones(2, dtype=ember.int32) + 7.0).dtype is ember.float32
    assert (ember.ones(2, dtype=ember.bool) + 1).dtype is ember.int64


def test_zero_dim_tensors_do_not_promote_within_category():
    x = ember.ones(2, dtype=ember.float32)
    assert (x + ember.tensor(1.0, dtype=ember.float64)).dtype is ember.float32
    i = ember.ones(2, dtype=ember.int32)
    assert (i + ember.tensor(1.0, dtype=ember.float64)).dtype is ember.float64


def test_int_division_gives_default_float():
    assert (ember.tensor([1, 2]) / ember.tensor([2, 2])).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
        assert ember.tensor([1.5]).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


def test_set_default_dtype_rejects_ints():
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int64)


def test_can_cast():
    assert ember.can_cast(ember.float64, ember.float32)
    assert not ember.can_cast(ember.float32, ember.int32)
    assert not ember.can_cast(ember.int64, ember.bool)
    assert not ember.can_cast(ember.complex64, ember.float64)
    assert ember.can_cast(ember.int8, ember.float16)


def test_finfo_iinfo():
    f = ember.finfo(ember.float32)
    assert f.eps == float(np.finfo(np.float32).eps)
    assert f.max == float(np.finfo(np.float32).max)
    assert ember.finfo(ember.bfloat16).bits == 16
    assert ember.finfo().bits == 32
    i = ember.iinfo(ember.int16)
    assert (i.min, i.max, i.bits) == (-32768, 32767, 16)
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)


def test_from_numpy_dtype_rejects_unsupported():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        dtypes.from_numpy_dtype(np.dtype("U3"))


def test_bfloat16_keeps_its_dtype_with_python_numbers():
    x = ember.ones(3, dtype=ember.bfloat16)
    for y in (x * 2, 2 + x, x * 0.5, x - 1.5, x / 3, 3.0 / x):
        assert y.dtype is ember.bfloat16


_FRESH_BFLOAT16 = r"""
import sys, numpy as np
import ember
assert "ml_dtypes" not in sys.modules, "import ember loaded ml_dtypes"
assert ember.bfloat16.itemsize == 2 and ember.bfloat16.is_floating_point
import ml_dtypes   # the user's own bfloat16 array, before ember ever needed one
a = np.array([1.5, -2.0, 3.25], dtype=ml_dtypes.bfloat16)
t = ember.from_numpy(a).requires_grad_()
assert t.dtype is ember.bfloat16
(t * 2).sum().backward()
assert t.grad.dtype is ember.bfloat16 and t.grad.float().tolist() == [2.0, 2.0, 2.0]
"""

_FRESH_LOAD = r"""
import sys
import ember
assert "ml_dtypes" not in sys.modules
state = ember.load({path!r})
assert state["w"].dtype is ember.bfloat16, state["w"].dtype
assert state["w"].float().tolist() == [0.5, 1.0, -4.0]
assert ember.finfo(ember.bfloat16).eps == 2.0 ** -7
"""


def test_bfloat16_is_loaded_when_first_needed(tmp_path):
    # importing ml_dtypes takes ~0.5 s (half of ``import ember``): ember imports it the
    # first time a bfloat16 is made, met in a user's array or read from a file (each
    # checked in a fresh process; the two run at once)
    path = tmp_path / "bf16.pt"
    ember.save({"w": ember.tensor([0.5, 1.0, -4.0], dtype=ember.bfloat16)}, path)
    run_together({"array": (_FRESH_BFLOAT16, None),
                  "file": (_FRESH_LOAD.format(path=str(path)), None)})
