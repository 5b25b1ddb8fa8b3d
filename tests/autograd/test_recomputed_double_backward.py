"""Backwards that recompute their forward to be differentiated (``create_graph=True``) give
each input its own gradient when one tensor fills two inputs, or one input is computed
from another (ops/shape.py `stand_ins`): the first derivative equals the one of the
array path, and the second derivative passes gradgradcheck."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import grad, gradgradcheck


def _tensors(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]


def _first_derivatives_agree(fn, inputs):
    out = fn(*inputs)
    seed = ember.tensor(np.random.default_rng(9).standard_normal(tuple(out.shape)))
    plain = grad(fn(*inputs), inputs, seed, allow_unused=True)
    recorded = grad(fn(*inputs), inputs, seed, create_graph=True, allow_unused=True)
    for a, b in zip(plain, recorded):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b.detach().numpy(), a.numpy(), rtol=1e-12, atol=1e-14)


# hx's two tensors made from one leaf h: the same tensor, or c computed from h
_STATES = {"h, h": lambda h: (h, h), "h, 2h": lambda h: (h, h * 2)}


@pytest.mark.parametrize("state", sorted(_STATES))
@pytest.mark.parametrize("output", [0, 1])
def test_lstm_cell_with_a_state_made_from_the_other(state, output):
    inputs = _tensors((2, 3), (2, 2), (8, 3), (8, 2), (8,), (8,))

    def fn(x, h, *weights):
        return ember.lstm_cell(x, _STATES[state](h), *weights)[output]

    _first_derivatives_agree(fn, inputs)
    assert gradgradcheck(fn, tuple(inputs))


def test_lstm_cell_state_gradient_against_the_formula():
    # d c' / d c = f = sigmoid(the forget gate): with hx = (h, h) and c' the output, h's
    # gradient is f plus the path through the gates
    x, h, w_ih, w_hh, b_ih, b_hh = _tensors((2, 3), (2, 2), (8, 3), (8, 2), (8,), (8,))
    (g_plain,) = grad(ember.lstm_cell(x, (h, h), w_ih, w_hh, b_ih, b_hh)[1].sum(), h)
    (g_recorded,) = grad(ember.lstm_cell(x, (h, h), w_ih, w_hh, b_ih, b_hh)[1].sum(), h,
                         create_graph=True)
    xn, hn = x.detach().numpy(), h.detach().numpy()
    gates = (xn @ w_ih.detach().numpy().T + b_ih.detach().numpy()
             + hn @ w_hh.detach().numpy().T + b_hh.detach().numpy())
    i, f = 1 / (1 + np.exp(-gates[:, :2])), 1 / (1 + np.exp(-gates[:, 2:4]))
    g = np.tanh(gates[:, 4:6])
    # through the gates (input, forget, cell, output): dc'/dgates, then the gates'
    # dependence on h through w_hh (c = h in the forget gate's term)
    d_gates = np.concatenate([g * i * (1 - i), hn * f * (1 - f), i * (1 - g * g),
                              np.zeros_like(hn)], axis=1)
    expected = f + d_gates @ w_hh.detach().numpy()
    np.testing.assert_allclose(g_plain.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(g_recorded.detach().numpy(), expected, rtol=1e-12)


def test_gru_cell_with_one_bias_for_both():
    x, h, w_ih, w_hh, b = _tensors((2, 3), (2, 2), (6, 3), (6, 2), (6,))

    def fn(x, h, w_ih, w_hh, b):
        return ember.gru_cell(x, h, w_ih, w_hh, b, b)

    _first_derivatives_agree(fn, [x, h, w_ih, w_hh, b])
    assert gradgradcheck(fn, (x, h, w_ih, w_hh, b))


def test_rnn_cell_with_one_weight_for_input_and_state():
    # the input projection (made from w) and w itself are both inputs of the recurrence
    x, h, w, b_ih, b_hh = _tensors((2, 2), (2, 2), (2, 2), (2,), (2,))

    def fn(x, h, w, b_ih, b_hh):
        return ember.rnn_tanh_cell(x, h, w, w, b_ih, b_hh)

    _first_derivatives_agree(fn, [x, h, w, b_ih, b_hh])
    assert gradgradcheck(fn, (x, h, w, b_ih, b_hh))


def test_group_norm_with_one_tensor_for_weight_and_bias():
    x, w = _tensors((2, 4, 3), (4,))

    def fn(x, w):
        return F.group_norm(x, 2, w, w)

    _first_derivatives_agree(fn, [x, w])
    assert gradgradcheck(fn, (x, w))
