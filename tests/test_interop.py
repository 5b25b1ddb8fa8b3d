"""NumPy protocols (__array_ufunc__, __array_function__) and DLPack exchange."""

import numpy as np
import pytest

import ember
import ember.utils.dlpack


def _ptr(array) -> int:
    return array.__array_interface__["data"][0]


# -- ufuncs ---------------------------------------------------------------------


def test_ndarray_and_tensor_operators_give_tensors():
    t = ember.arange(3.0)
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    for out in (t + a, a + t, a * t, t - a, a - t, a / t, a ** t, a == t, a < t):
        assert isinstance(out, ember.Tensor)
    assert ember.equal(a - t, ember.tensor([1.0, 1.0, 1.0]))
    assert (a < t).dtype is ember.bool


def test_ufuncs_with_an_ember_op_record_autograd():
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    y = np.exp(x)
    assert isinstance(y, ember.Tensor) and y.grad_fn is not None
    (np.multiply(y, 2.0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5, 1.0]), rtol=1e-6)


def test_ufunc_results_follow_ember_promotion():
    ints = ember.tensor([1, 2, 3])
    assert np.divide(ints, 2).dtype is ember.float32  # NumPy alone would give float64
    assert np.add(ints, np.float32(1.5)).dtype is ember.float32
    assert np.add(ember.ones(2), np.ones(2)).dtype is ember.float64  # float64 array operand
    assert np.maximum(ember.tensor([1.0, 5.0]), 3.0).tolist() == [3.0, 5.0]
    assert np.matmul(np.eye(2, dtype=np.float32), ember.ones(2, 2)).shape == (2, 2)


def test_ufuncs_without_an_ember_op_run_in_numpy():
    out = np.gcd(ember.tensor([4, 6, 9]), 6)
    assert isinstance(out, ember.Tensor) and out.tolist() == [2, 6, 3]
    assert isinstance(np.deg2rad(ember.tensor([180.0])), ember.Tensor)
    total = np.add.reduce(ember.tensor([1, 2, 3]))
    assert isinstance(total, ember.Tensor) and total.item() == 6
    with pytest.raises(RuntimeError, match="requires grad"):
        np.deg2rad(ember.ones(2, requires_grad=True))


def test_ufunc_out_and_at_write_into_tensors():
    t = ember.zeros(3)
    version = t._version.value
    result = np.add(ember.ones(3), 2.0, out=t)
    assert result is t and t.tolist() == [3.0, 3.0, 3.0]
    assert t._version.value > version
    np.add.at(t, [0, 0], 1.0)
    assert t.tolist() == [5.0, 3.0, 3.0]


def test_other_array_libraries_get_their_turn():
    class Other:
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "other"

    assert np.add(ember.ones(1), Other()) == "other"


# -- array functions -------------------------------------------------------------


def test_array_functions_run_numpy_on_the_arrays():
    t = ember.arange(6.0).reshape(2, 3)
    cat = np.concatenate([t, t])
    assert type(cat) is np.ndarray and cat.shape == (4, 3)
    assert type(np.mean(t)) is np.float32 and np.mean(t) == 2.5
    assert np.percentile(t, 50) == 2.5
    assert np.stack([t[0], np.ones(3)]).shape == (2, 3)
    assert np.shape(t) == (2, 3)
    np.testing.assert_array_equal(np.asarray(t), t.numpy())
    assert _ptr(np.asarray(t)) == t.data_ptr()


def test_array_functions_refuse_tensors_that_require_grad():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.concatenate([x, x])
    with pytest.raises(RuntimeError, match="detach"):
        np.mean(x)
    assert np.mean(x.detach()) == 1.0


# -- DLPack ----------------------------------------------------------------------


def test_dlpack_with_numpy_is_zero_copy():
    t = ember.arange(6.0).reshape(2, 3)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert _ptr(a) == t.data_ptr()
    a[0, 0] = 42
    assert t[0, 0] == 42
    src = np.arange(5, dtype=np.int32)
    e = ember.from_dlpack(src)
    assert e.dtype is ember.int32 and e.data_ptr() == _ptr(src)
    src[1] = -1
    assert e[1] == -1


def test_dlpack_keeps_strides_and_odd_shapes():
    t = ember.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(np.from_dlpack(t.t()), t.numpy().T)
    assert np.from_dlpack(ember.tensor(3.0)).shape == ()
    assert np.from_dlpack(ember.zeros(0, 2)).shape == (0, 2)
    assert ember.from_dlpack(np.arange(6.0)[::2]).tolist() == [0.0, 2.0, 4.0]


def test_dlpack_errors():
    with pytest.raises(RuntimeError, match="require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError, match="DLPack"):
        ember.from_dlpack([1, 2, 3])


def test_utils_dlpack_capsules_roundtrip():
    t = ember.arange(4.0)
    capsule = ember.utils.dlpack.to_dlpack(t)
    back = ember.utils.dlpack.from_dlpack(capsule)
    assert back.data_ptr() == t.data_ptr()
    assert ember.from_dlpack(t).data_ptr() == t.data_ptr()


def test_dlpack_with_torch_both_ways_and_bfloat16():
    torch = pytest.importorskip("torch")
    t = ember.arange(6.0).reshape(2, 3)
    theirs = torch.from_dlpack(t)
    assert theirs.data_ptr() == t.data_ptr()
    theirs[1, 2] = -5.0
    assert t[1, 2] == -5
    src = torch.arange(4, dtype=torch.int64)
    ours = ember.from_dlpack(src)
    assert ours.data_ptr() == src.data_ptr() and ours.dtype is ember.int64
    src[0] = 9
    assert ours[0] == 9
    legacy = ember.from_dlpack(torch.utils.dlpack.to_dlpack(src))
    assert legacy.data_ptr() == src.data_ptr()
    bf = ember.tensor([1.5, -2.0]).bfloat16()
    their_bf = torch.from_dlpack(bf)
    assert their_bf.dtype == torch.bfloat16 and their_bf.tolist() == [1.5, -2.0]
    back = ember.from_dlpack(torch.tensor([0.5, 3.0], dtype=torch.bfloat16))
    assert back.dtype is ember.bfloat16 and back.tolist() == [0.5, 3.0]
    assert torch.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(t)).shape == (2, 3)


def test_dlpack_with_jax():
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(4.0)
    assert ember.from_dlpack(x).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert jnp.from_dlpack(ember.arange(3.0)).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.cuda
def test_dlpack_with_cupy():
    cupy = pytest.importorskip("cupy")
    t = ember.arange(4.0, device="cuda")
    c = cupy.from_dlpack(t)
    assert c.data.ptr == t.data_ptr()
    back = ember.from_dlpack(cupy.arange(3.0))
    assert back.device.type == "cuda" and back.tolist() == [0.0, 1.0, 2.0]
