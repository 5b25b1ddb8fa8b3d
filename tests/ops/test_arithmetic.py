"""Focused tests for ember/ops/arithmetic.py beyond the op table: pow, abs, reciprocal,
addcmul/addcdiv, lerp, floor_divide, remainder, fmod (dtypes, errors, in-place forms,
gradient conventions and PyTorch parity)."""

import numpy as np
import pytest

import ember
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def t(values, dtype=None, requires_grad=False):
    return ember.tensor(values, dtype=dtype, requires_grad=requires_grad)


def grads_of(fn, *values):
    """The output of fn(*tensors) and the gradients of its sum, in float64."""
    xs = [t(v, ember.float64, requires_grad=True) for v in values]
    out = fn(*xs)
    out.sum().backward()
    return out, [x.grad for x in xs]


def torch_grads_of(fn, *values):
    xs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    out = fn(*xs)
    out.sum().backward()
    return out, [x.grad for x in xs]


def assert_same_grads(ember_fn, torch_fn, *values):
    out, grads = grads_of(ember_fn, *values)
    tout, tgrads = torch_grads_of(torch_fn, *values)
    assert_close(out, tout.detach().numpy(), equal_nan=True)
    for g, tg in zip(grads, tgrads):
        assert_close(g, tg.numpy(), equal_nan=True)


# pow ------------------------------------------------------------------------


@pytest.mark.parametrize("base,exponent,dtype", [
    ([1, 2, 3], 2, "int64"),
    ([1, 2, 3], 2.5, "float32"),
    ([True, False], 2, "int64"),
    ([1.0, 2.0], 2, "float32"),
])
def test_pow_result_dtype(base, exponent, dtype):
    assert ember.pow(t(base), exponent).dtype.name == dtype


def test_pow_reflected_and_operator():
    x = t([1.0, 2.0, 3.0])
    assert_close(x ** 2, [1.0, 4.0, 9.0])
    assert_close(2 ** x, [2.0, 4.0, 8.0])
    assert (2 ** t([1, 2])).dtype is ember.int64
    assert (2.0 ** t([1, 2])).dtype is ember.float32
    assert (2 ** t([True, False])).dtype is ember.int64
    assert_close(x ** t([0.0, 1.0, 2.0]), [1.0, 2.0, 9.0])


def test_pow_integer_negative_exponent():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        ember.pow(t([1, 2]), -1)
    out = t([-1, 1, 2, -2, 0, 3]) ** t([-1, -2, -1, -3, 2, 0])
    assert out.tolist() == [-1, 1, 0, 0, 0, 1]
    assert (2 ** t([-1, 2])).tolist() == [0, 4]


def test_pow_bool_tensors_refused():
    with pytest.raises(NotImplementedError, match="pow.*Bool"):
        t([True]) ** t([True])


def test_pow_gradient_conventions_at_zero():
    # 0 ** 0 is constant; d/dy 0 ** y is 0 for y >= 0
    _, (gx, gy) = grads_of(ember.pow, [0.0, 0.0, 2.0], [0.0, 1.0, 0.0])
    assert gx.tolist() == [0.0, 1.0, 0.0]
    assert gy.tolist()[:2] == [0.0, 0.0]
    assert_close(gy[2], np.log(2.0))
    _, (g,) = grads_of(lambda x: x ** 0, [0.0, 3.0])
    assert g.tolist() == [0.0, 0.0]
    _, (g,) = grads_of(lambda x: 0.0 ** x, [0.0, 2.0])
    assert g.tolist() == [0.0, 0.0]


@needs_torch
def test_pow_gradients_match_torch():
    x, y = [0.0, 0.0, 0.0, 2.0, 1.5, -2.0], [0.0, 1.0, -1.0, 0.0, -0.5, 2.0]
    assert_same_grads(ember.pow, torch.pow, x, y)
    assert_same_grads(lambda a: a ** 0.5, lambda a: a ** 0.5, [0.0, 2.0])
    assert_same_grads(lambda a: 0.0 ** a, lambda a: 0.0 ** a, [0.0, 2.0, -1.0])
    assert_same_grads(lambda a: 2.5 ** a, lambda a: 2.5 ** a, [0.0, 2.0, -1.0])


@needs_torch
@pytest.mark.parametrize("fn", [lambda a, b: a ** b, lambda a, b: a ** 2, lambda a, b: 2 ** b])
def test_pow_grad_fn_names(fn):
    a = t([1.0, 2.0], requires_grad=True)
    b = t([1.0, 2.0], requires_grad=True)
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    tb = torch.tensor([1.0, 2.0], requires_grad=True)
    assert fn(a, b).grad_fn.name() == fn(ta, tb).grad_fn.name()


def test_pow_inplace():
    x = t([1.0, 2.0, 3.0])
    version = x._version.value
    x **= 2
    assert x.tolist() == [1.0, 4.0, 9.0]
    assert x._version.value == version + 1
    x.pow_(t([0.5, 0.5, 0.5]))
    assert_close(x, [1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="can't be cast"):
        t([1, 2]).pow_(0.5)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        t([1.0], requires_grad=True).pow_(2)


def test_pow_inplace_gradient():
    a = t([1.0, 2.0, 3.0], ember.float64, requires_grad=True)
    x = a * 1
    x.pow_(3)
    assert x.grad_fn.name() == "PowBackward0"
    x.sum().backward()
    assert_close(a.grad, 3 * a.detach() ** 2)


def test_pow_broadcast_error():
    with pytest.raises(RuntimeError, match="must match the size"):
        ember.pow(ember.ones(2), ember.ones(3))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.ones(3).pow_(ember.ones(2, 3))


def test_square_and_float_power():
    assert ember.square(t([True, False])).dtype is ember.int64
    assert ember.square(t([2, 3])).tolist() == [4, 9]
    assert ember.square(t([1.5], requires_grad=True)).grad_fn.name() == "PowBackward0"
    out = ember.float_power(t([1, 2]), 2)
    assert out.dtype is ember.float64 and out.tolist() == [1.0, 4.0]
    with pytest.raises(RuntimeError, match="float_power_"):
        t([1.0]).float_power_(2)


# abs, reciprocal ----------------------------------------------------------------


def test_abs():
    assert abs(t([-1, 2])).tolist() == [1, 2]
    assert ember.absolute(t([-1.5])).tolist() == [1.5]
    with pytest.raises(NotImplementedError, match="abs_cpu.*Bool"):
        ember.abs(t([True]))
    _, (g,) = grads_of(ember.abs, [0.0, -1.0, 2.0])
    assert g.tolist() == [0.0, -1.0, 1.0]  # abs'(0) == 0
    x = t([-1.0, 2.0])
    x.abs_()
    assert x.tolist() == [1.0, 2.0]


def test_reciprocal():
    out = ember.reciprocal(t([1, 2]))
    assert out.dtype is ember.float32 and out.tolist() == [1.0, 0.5]
    with pytest.raises(RuntimeError, match="can't be cast"):
        t([1, 2]).reciprocal_()
    x = t([2.0, 4.0])
    x.reciprocal_()
    assert x.tolist() == [0.5, 0.25]


# addcmul, addcdiv, lerp -----------------------------------------------------------


def test_addcmul_integer_value_is_truncated():
    i = t([1, 2, 3])
    assert ember.addcmul(i, i, i, value=2.5).tolist() == [3, 10, 21]


def test_addcdiv_refuses_integers():
    i = t([1, 2, 3])
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        ember.addcdiv(i, i, i)


def test_addc_inplace_like_an_optimizer():
    p = t([1.0, 2.0])
    with ember.no_grad():
        p.addcmul_(t([1.0, 1.0]), t([2.0, 3.0]), value=-0.5)
        p.addcdiv_(t([1.0, 1.0]), t([2.0, 4.0]), value=2)
    assert p.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        t([1, 2]).addcmul_(t([1.0, 1.0]), t([1.0, 1.0]))


@needs_torch
def test_addc_gradients_match_torch():
    a, b, c = [1.0, -1.0], [3.0, 3.0], [0.2, 0.7]
    assert_same_grads(lambda x, y, z: ember.addcdiv(x, y, z, value=2),
                      lambda x, y, z: torch.addcdiv(x, y, z, value=2), a, b, c)
    assert_same_grads(lambda x, y, z: ember.addcmul(x, y, z, value=-3),
                      lambda x, y, z: torch.addcmul(x, y, z, value=-3), a, b, c)


def test_lerp():
    x, y = t([1.0, 2.0]), t([3.0, 6.0])
    assert ember.lerp(x, y, 0.5).tolist() == [2.0, 4.0]
    assert ember.lerp(x, y, 1.0).tolist() == [3.0, 6.0]  # exactly `end` at weight 1
    assert_close(ember.lerp(x, y, t([0.25, 0.75])), [1.5, 5.0])
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        ember.lerp(x, y.double(), 0.5)
    with pytest.raises(RuntimeError, match="`weight`"):
        ember.lerp(x, y, t([0.5, 0.5], ember.float64))
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar.*Long"):
        ember.lerp(t([1]), t([2]), 0.5)
    x.lerp_(y, 0.5)
    assert x.tolist() == [2.0, 4.0]


@needs_torch
def test_lerp_gradients_match_torch():
    a, b, w = [1.0, -1.0], [3.0, 3.0], [0.2, 0.7]
    assert_same_grads(ember.lerp, torch.lerp, a, b, w)
    assert_same_grads(lambda x, y: ember.lerp(x, y, 0.7), lambda x, y: torch.lerp(x, y, 0.7),
                      a, b)
    x = t([1.0], requires_grad=True)
    assert ember.lerp(x, x, 0.5).grad_fn.name() == "LerpBackward0"
    assert ember.lerp(x, x, x).grad_fn.name() == "LerpBackward1"


# floor_divide, remainder, fmod ------------------------------------------------------------


def test_floor_divide_follows_python():
    assert (t([-7, 7]) // 2).tolist() == [-4, 3]
    assert (t([-7.0, 7.0]) // t([2.0, -2.0])).tolist() == [-4.0, -4.0]
    assert (5 // t([2.0, 3.0])).tolist() == [2.0, 1.0]
    out = t([-7.0, 7.0, 0.0]) // 0
    assert out.tolist()[:2] == [-np.inf, np.inf] and np.isnan(out.tolist()[2])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        t([1, 2]) // 0
    with pytest.raises(NotImplementedError, match="div_floor_cpu.*Bool"):
        t([True]) // t([True])


def test_floor_divide_has_no_derivative():
    x = t([3.0, 5.0], requires_grad=True)
    y = x // 2
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="derivative for 'floor_divide' is not implemented"):
        y.sum().backward()


def test_div_rounding_modes():
    assert ember.div(t([-7, 7]), 2, rounding_mode="floor").tolist() == [-4, 3]
    assert ember.div(t([-7, 7]), 2, rounding_mode="trunc").tolist() == [-3, 3]


def test_remainder_and_fmod_sign_conventions():
    a, b = t([-7.0, 7.0, -7.0, 7.0]), t([2.0, -2.0, -2.0, 2.0])
    assert (a % b).tolist() == [1.0, -1.0, -1.0, 1.0]
    assert ember.fmod(a, b).tolist() == [-1.0, 1.0, -1.0, 1.0]
    assert (t([-7, 7]) % t([2, -2])).tolist() == [1, -1]
    assert (5 % t([2.0, 3.0])).tolist() == [1.0, 2.0]
    assert ember.fmod(t([True, False]), 2).dtype is ember.int64
    assert ember.fmod(t([1, 2, 3]), 1.5).dtype is ember.float32
    for op in (ember.remainder, ember.fmod):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            op(t([1, 2]), 0)
    with pytest.raises(NotImplementedError, match="remainder_cpu.*Bool"):
        t([True]) % t([True])
    with pytest.raises(NotImplementedError, match="fmod_cpu.*Bool"):
        ember.fmod(t([True]), t([True]))


def test_remainder_inplace_operators():
    x = t([5.0, -5.0])
    version = x._version.value
    x %= 3
    assert x.tolist() == [2.0, 1.0] and x._version.value == version + 1
    x //= 2
    assert x.tolist() == [1.0, 0.0]
    y = t([5.0, -5.0])
    y.fmod_(3)
    assert y.tolist() == [2.0, -2.0]


@needs_torch
def test_remainder_fmod_gradients_match_torch():
    a, b = [5.0, -5.0, 7.5], [3.0, 3.0, -2.0]
    assert_same_grads(ember.remainder, torch.remainder, a, b)
    assert_same_grads(ember.fmod, torch.fmod, a, b)
    x = t([1.0], requires_grad=True)
    assert (x % 2).grad_fn.name() == "RemainderBackward0"
    assert (x % x).grad_fn.name() == "RemainderBackward1"
    assert ember.fmod(x, 2).grad_fn.name() == "FmodBackward0"


@needs_torch
@pytest.mark.parametrize("name", ["pow", "remainder", "fmod", "floor_divide"])
@pytest.mark.parametrize("lhs,rhs", [("int64", "float32"), ("int32", "int64"),
                                     ("uint8", "int8"), ("float16", "bfloat16"),
                                     ("float32", "float64"), ("int32", 2.5)])
def test_promotion_matches_torch(name, lhs, rhs):
    def operands(mod):
        b = rhs if not isinstance(rhs, str) else mod.full((3,), 2, dtype=getattr(mod, rhs))
        return mod.full((3,), 3, dtype=getattr(mod, lhs)), b
    out = getattr(ember, name)(*operands(ember))
    ref = getattr(torch, name)(*operands(torch))
    assert out.dtype.name == str(ref.dtype).replace("torch.", "")
    assert_close(out.double(), ref.double().numpy())


def test_empty_and_zero_dim():
    e = ember.ones(0, 3)
    assert (e ** 2).shape == (0, 3)
    assert (e % 2).shape == (0, 3)
    z = t(3.0)
    assert (z ** 2).item() == 9.0 and (z % 2).item() == 1.0 and abs(-z).item() == 3.0


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1.5, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_scalar_first_order_gradient_equals_the_recorded_one(exponent, dtype):
    # the first-order backward runs on the arrays unrecorded: the same bits as the
    # recorded (create_graph) backward, and e x ** (e - 1) grad against float64
    x0 = np.random.default_rng(3).uniform(-2, 2, (40, 30)).astype(dtype)
    g0 = np.random.default_rng(4).standard_normal((40, 30)).astype(dtype)
    grads = []
    for create_graph in (False, True):
        x = ember.tensor(x0, requires_grad=True)
        (gx,) = ember.autograd.grad(x ** exponent, x, ember.tensor(g0),
                                    create_graph=create_graph)
        grads.append(gx.detach().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    x64 = x0.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = exponent * x64 ** (exponent - 1) * g0
    np.testing.assert_allclose(grads[0], want, rtol=1e-6 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -0.5, -1, -2, 2.0, 3.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_by_common_numbers_against_float64(exponent, dtype):
    # squares, cubes, square roots and reciprocals by their own arithmetic (x * x * x,
    # sqrt, ...), not NumPy's power: within 2 roundings of float64's
    x0 = np.random.default_rng(5).uniform(0.1, 4, 5000).astype(dtype)
    x0[:3] = [np.inf, 0.0, np.nan]
    got = (ember.tensor(x0) ** exponent).numpy()
    with np.errstate(divide="ignore"):
        want = np.power(x0.astype(np.float64), exponent)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=3 * np.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("exponent", [2, 3, -0.5, -1, -2])
def test_pow_by_common_numbers_gives_pytorchs_bits(exponent):
    torch = pytest.importorskip("torch")
    x0 = np.random.default_rng(6).uniform(0.1, 4, 5000).astype(np.float32)
    np.testing.assert_array_equal((ember.tensor(x0) ** exponent).numpy(),
                                  (torch.from_numpy(x0) ** exponent).numpy())
