"""Gradients at special values (0, infinities, NaN, ties) that follow PyTorch 2.13's rules,
each checked against hand-derived numbers: the places where a formula that is right in
general gave inf - inf, 0 / 0 or a mask one condition short."""

import math

import numpy as np
import pytest

import ember

NAN, INF = math.nan, math.inf


def _grads(fn, *columns, dtype=ember.float64):
    """The gradients of ``fn(*tensors).sum()`` in each tensor made from `columns`."""
    tensors = [ember.tensor(c, dtype=dtype, requires_grad=True) for c in columns]
    fn(*tensors).sum().backward()
    return [t.grad.numpy() for t in tensors]


def test_xlogy_gradient_in_x_is_the_log_even_where_x_is_zero():
    x = [0.0, 0.0, 0.0, 0.0, 1.0, 2.0]
    y = [0.5, 0.0, -1.0, NAN, -1.0, 0.5]
    gx, gy = _grads(ember.xlogy, x, y)
    np.testing.assert_array_equal(gx, [math.log(0.5), 0.0, 0.0, NAN, NAN, math.log(0.5)])
    assert gy[5] == 2.0 / 0.5


def test_xlog1py_gradient_in_x_is_log1p_except_at_minus_one_where_x_is_zero():
    gx, _ = _grads(ember.special.xlog1py, [0.0, 0.0, 1.0], [0.5, -1.0, -1.0])
    np.testing.assert_array_equal(gx, [math.log1p(0.5), 0.0, -INF])


def test_xlogy_in_place_with_a_number_has_the_same_gradient():
    x = ember.tensor([0.0, 3.0], dtype=ember.float64, requires_grad=True)
    x.clone().xlogy_(0.5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [math.log(0.5)] * 2)


@pytest.mark.parametrize("base2", [False, True])
def test_logaddexp_gradients_with_an_infinite_operand(base2):
    fn = ember.logaddexp2 if base2 else ember.logaddexp
    gx, gy = _grads(fn, [INF, -INF, 1.0, 0.0], [1.0, 1.0, -INF, 0.0])
    np.testing.assert_array_equal(gx, [1.0, 0.0, 1.0, 0.5])
    np.testing.assert_array_equal(gy, [0.0, 1.0, 0.0, 0.5])


def test_pow_gradient_in_the_exponent_at_a_zero_base():
    # 0 ** y is constant for y >= 0 (gradient 0); a NaN exponent keeps its NaN
    _, gy = _grads(ember.pow, [0.0, 0.0, 2.0], [2.0, NAN, 3.0])
    np.testing.assert_array_equal(gy[:2], [0.0, NAN])
    assert gy[2] == pytest.approx(8 * math.log(2))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_sinc_gradient_near_and_at_zero(dtype):
    (g,) = _grads(ember.sinc, [1e-30, -1e-30, 0.0, 0.5, 1.0], dtype=dtype)
    # sinc'(x) = (cos(pi x) - sinc(x)) / x: ~ -pi^2 x / 3 near 0; -4 / pi at 1/2; -1 at 1
    np.testing.assert_allclose(g, [0.0, 0.0, 0.0, -4 / math.pi, -1.0], atol=1e-6)
    x = ember.tensor([0.3, -1.7, 2.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(ember.sinc, (x,))
    assert ember.autograd.gradgradcheck(ember.sinc, (x,))


def test_angle_of_real_infinities_and_nan():
    got = ember.angle(ember.tensor([INF, -INF, NAN, -2.0, 0.0])).numpy()
    np.testing.assert_array_equal(got, np.array([0.0, math.pi, NAN, math.pi, 0.0], np.float32))


def test_nextafter_passes_x_gradient_except_where_x_equals_y():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = ember.tensor([1.0, 5.0, -1.0], requires_grad=True)
    out = ember.nextafter(x, y)
    assert out.grad_fn.name() == "NextafterBackward0"
    out.backward(ember.tensor([10.0, 20.0, 30.0]))
    assert x.grad.tolist() == [0.0, 20.0, 30.0] and y.grad.tolist() == [0.0, 0.0, 0.0]


def test_prod_gradient_is_the_product_of_the_others_at_infinities_and_nan():
    (g,) = _grads(lambda x: x.prod(1), [[INF, 1.0, 2.0, 3.0], [NAN, 2.0, 2.0, 1.0],
                                        [0.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_array_equal(g, [[6.0, INF, INF, INF], [4.0, NAN, NAN, NAN],
                                      [24.0, 0.0, 0.0, 0.0], [24.0, 12.0, 8.0, 6.0]])


def test_prod_second_order_with_an_infinite_element():
    x = ember.tensor([[INF, 2.0, 3.0]], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(x.prod(1).sum(), [x], create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [[6.0, INF, INF]])


def test_var_mean_output_without_a_gradient_adds_nothing():
    x = ember.tensor([[NAN, 1.0, 2.0, 3.0]], requires_grad=True)
    _, mean = ember.var_mean(x, 1)
    mean.sum().backward()   # the variance got no gradient: its nan term stays out
    assert x.grad.tolist() == [[0.25] * 4]
    y = ember.tensor([[1.0, 2.0, 4.0]], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.var_mean(t, 1), (y,))


def test_one_and_max_norm_gradients_of_a_row_holding_nan():
    row = [[NAN, 1.0, -2.0, 3.0]]
    (g1,) = _grads(lambda x: ember.linalg.vector_norm(x, 1, dim=1), row)
    np.testing.assert_array_equal(g1, [[0.0, 1.0, -1.0, 1.0]])   # sgn(nan) is 0
    (g_inf,) = _grads(lambda x: ember.linalg.vector_norm(x, INF, dim=1), row)
    np.testing.assert_array_equal(g_inf, [[0.0, 0.0, 0.0, 0.0]])  # no element is the nan norm
    (g_tie,) = _grads(lambda x: ember.linalg.vector_norm(x, INF, dim=1), [[3.0, -3.0, 1.0]])
    np.testing.assert_array_equal(g_tie, [[0.5, -0.5, 0.0]])


def test_margin_losses_give_no_gradient_where_a_hinge_is_exactly_zero():
    # target class 2 scores 3: class 1's hinge 1 - 3 + 2 is 0 (on the kink), class 0's -1
    x = ember.tensor([[1.0, 2.0, 3.0], [3.0, 3.0, 3.0]], requires_grad=True)
    ember.nn.functional.multi_margin_loss(x, ember.tensor([2, 0])).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0], [-1 / 3, 1 / 6, 1 / 6]], rtol=1e-6)
    x.grad = None
    ember.nn.functional.multilabel_margin_loss(
        x, ember.tensor([[2, -1, 0], [0, -1, 0]])).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0], [-1 / 3, 1 / 6, 1 / 6]], rtol=1e-6)


def test_renorm_leaves_a_slice_with_a_nan_norm_and_its_gradient_alone():
    x = ember.tensor([[NAN, 1.0], [3.0, 4.0], [0.3, 0.4]], requires_grad=True)
    y = x.renorm(2, 0, 1.0)   # row 0's norm is nan (not > 1): kept; row 1 scaled to 1
    np.testing.assert_allclose(y.detach().numpy()[1:], [[0.6, 0.8], [0.3, 0.4]], rtol=1e-5)
    assert np.isnan(y.detach().numpy()[0, 0]) and y.detach().numpy()[0, 1] == 1.0
    y.backward(ember.ones_like(y))
    np.testing.assert_array_equal(x.grad.numpy()[0], [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy()[2], [1.0, 1.0])
