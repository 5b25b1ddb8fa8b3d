"""Activation backwards that write their result over the incoming gradient.

relu, GELU (both forms), SiLU, tanh and dropout compute ``grad * f'(x)`` element by
element.  When the engine owns the incoming gradient (it made it, or a ``_fresh_grads``
node handed it over) and nothing else can see it, the numba kernel writes the result into
that array instead of a new one (``Node._reuses_grad``, engine.py `_may_overwrite`): one
activation-sized array less at the peak of a backward pass.  Anything a user can hold (a
hook's argument, a retained ``.grad``, the caller's gradient, what ``autograd.grad``
returns, a recorded double-backward graph) must never be written over.
"""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_activation as nact
from ember.ops import _native_dropout
from tests.autograd.test_grad_steal import _Doubles  # (a user Function: `grad * 2`)

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")

N = 1 << 13  # past the kernels' size thresholds

# name -> (function, float64 derivative at x)
ACTIVATIONS = {
    "relu": (F.relu, lambda x: (x > 0).astype(np.float64)),
    "tanh": (ember.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "silu": (F.silu, lambda x: (1 / (1 + np.exp(-x))) * (1 + x * (1 - 1 / (1 + np.exp(-x))))),
    "gelu": (F.gelu, None),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), None),
}


@pytest.fixture
def overwrites(monkeypatch):
    """For each kernel backward: whether its result landed in the incoming gradient."""
    seen = []

    def spy(real, grad_at):
        def call(*args, overwrite=False):
            out = real(*args, overwrite=overwrite)
            seen.append(np.shares_memory(out, args[grad_at]))
            return out
        return call

    monkeypatch.setattr(nact, "backward", spy(nact.backward, 1))
    monkeypatch.setattr(_native_dropout, "dropout_backward",
                        spy(_native_dropout.dropout_backward, 0))
    return seen


def _x(dtype=ember.float64, n=N):
    return ember.tensor(np.random.default_rng(0).standard_normal(n) * 3, dtype=dtype,
                        requires_grad=True)


def _derivative(name, x):
    """f'(x) in float64: the formula, or (GELU) the numba-free path's gradient."""
    fn, formula = ACTIVATIONS[name]
    if formula is not None:
        return formula(x)
    t = ember.tensor(x, requires_grad=True)
    with native.use_numba(False):
        fn(t).sum().backward()
    return t.grad.numpy()


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_owned_gradient_is_overwritten_and_the_result_is_right(name, dtype, overwrites):
    fn, _ = ACTIVATIONS[name]
    x = _x(ember.float32 if dtype == np.float32 else ember.float64)
    h = fn(x)
    (h * 2 + h * 3).sum().backward()  # h's gradient: the engine's own sum, 5 everywhere
    assert overwrites == [True]
    expected = 5 * _derivative(name, x.detach().numpy().astype(np.float64))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), expected, **tol)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_a_node_result_is_not_overwritten(name, overwrites):
    # a user Function's result is not the engine's; MulBackward's is (mul declares fresh
    # gradients)
    fn, _ = ACTIVATIONS[name]
    x = _x()
    _Doubles.apply(fn(x)).sum().backward()
    assert overwrites == [False]
    (fn(x) * 2).sum().backward()
    assert overwrites == [False, True]


def test_a_chain_of_fresh_gradients_is_overwritten_all_along(overwrites):
    # linear -> relu -> linear: addmm's input gradient is fresh, relu overwrites it, and
    # the result (still the engine's) reaches the first layer
    x = ember.randn(64, 128, dtype=ember.float64)
    l1, l2 = ember.nn.Linear(128, 256).double(), ember.nn.Linear(256, 8).double()
    l2(F.relu(l1(x))).sum().backward()
    assert overwrites == [True]
    ref = [p.grad.numpy().copy() for p in (*l1.parameters(), *l2.parameters())]
    for p in (*l1.parameters(), *l2.parameters()):
        p.grad = None
    with native.use_numba(False):
        l2(F.relu(l1(x))).sum().backward()
    for r, p in zip(ref, (*l1.parameters(), *l2.parameters())):
        np.testing.assert_allclose(p.grad.numpy(), r, rtol=1e-12, atol=1e-12)


def test_the_callers_gradient_is_never_written(overwrites):
    x = _x()
    g = ember.full((N,), 5.0, dtype=ember.float64)
    F.relu(x).backward(g)
    np.testing.assert_array_equal(g.numpy(), 5.0)
    assert overwrites == [False]


def test_a_hook_keeps_what_it_saw(overwrites):
    x = _x()
    h = F.relu(x)
    kept = []
    h.register_hook(kept.append)
    (h * 2 + h * 3).sum().backward()
    np.testing.assert_array_equal(kept[0].numpy(), 5.0)
    assert overwrites == [False]


def test_a_retained_grad_is_not_written_over(overwrites):
    x = _x()
    h = ember.tanh(x)
    h.retain_grad()
    (h * 2 + h * 3).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), 5.0)
    assert overwrites == [False]


def test_autograd_grad_returns_unwritten_gradients(overwrites):
    x = _x()
    h = F.silu(x)
    gh, gx = ember.autograd.grad((h * 2 + h * 3).sum(), [h, x])
    np.testing.assert_array_equal(gh.numpy(), 5.0)
    expected = 5 * _derivative("silu", x.detach().numpy())
    np.testing.assert_allclose(gx.numpy(), expected, rtol=1e-12, atol=1e-12)
    assert overwrites == [False]


def test_create_graph_keeps_the_gradient_for_the_double_backward():
    x = _x()
    h = F.gelu(x)
    (gx,) = ember.autograd.grad((h * 2 + h * 3).sum(), [x], create_graph=True)
    gx.sum().backward()
    # d/dx 5 gelu'(x) = 5 phi(x) (2 - x^2)
    xn = x.detach().numpy()
    phi = np.exp(-xn * xn / 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(x.grad.numpy(), 5 * phi * (2 - xn * xn), rtol=1e-9, atol=1e-12)


def test_retain_graph_backward_twice_gives_the_same_gradient():
    x = _x()
    h = F.relu(x)
    loss = (h * 2 + h * 3).sum()
    loss.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    x.grad = None
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first)


def test_dropout_overwrites_an_owned_gradient(overwrites):
    ember.manual_seed(3)
    x = _x(n=_native_dropout.MIN_SIZE)
    h = F.dropout(x, 0.25)
    (h * 2 + h * 3).sum().backward()
    assert overwrites == [True]
    kept = h.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 5 / 0.75, 0.0), rtol=1e-12)


def test_a_non_contiguous_owned_gradient_is_not_used_in_place(overwrites):
    # the transpose's node hands on a transposed view of the engine's sum: the kernel
    # computes into a new array, the result is still right
    x = ember.tensor(np.random.default_rng(1).standard_normal((64, 128)), requires_grad=True)
    h = F.relu(x)
    t = h.t()
    (t * 2 + t * 3).sum().backward()
    assert overwrites == [False]
    np.testing.assert_array_equal(x.grad.numpy(), 5.0 * (x.detach().numpy() > 0))


def test_an_overwritten_gradient_stays_owned_for_the_next_activation(overwrites):
    # silu writes over the engine's sum and hands the array on as the engine's own, so
    # tanh below it may write over it in turn
    x = _x()
    h = F.silu(ember.tanh(x))
    (h * 2 + h * 3).sum().backward()
    assert overwrites == [True, True]
    got = x.grad.numpy().copy()
    x.grad = None
    with native.use_numba(False):
        h = F.silu(ember.tanh(x))
        (h * 2 + h * 3).sum().backward()
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-12, atol=1e-12)
