"""forward_ad: dual tensors, tangents through ordinary ops (checked against hand-derived
values, autograd.functional.jvp and PyTorch's forward AD), levels and errors."""

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
from ember.autograd.functional import jvp


def _rng_tensor(lib, *shape, seed=0):
    values = np.random.default_rng(seed + len(shape)).standard_normal(shape)
    return lib.tensor(values, dtype=lib.float64)


# functions of one tensor of shape (3, 4), each written for ember and torch alike
FUNCTIONS = {
    "elementwise": lambda lib, x: (x.sin() * x.exp() + x.tanh() ** 2) / (1 + x * x),
    "matmul": lambda lib, x: x @ x.t() @ lib.ones(3, 2, dtype=lib.float64),
    "sum_mean": lambda lib, x: x.sum(0) + x.mean(1).sum(),
    "max_norm": lambda lib, x: x.amax(dim=1) + x.norm(),
    "softmax": lambda lib, x: lib.softmax(x, dim=-1),
    "views": lambda lib, x: x.reshape(2, 6).t()[1:4].unsqueeze(0).expand(2, 3, 2)
    .permute(2, 0, 1).flatten(),
    "slicing": lambda lib, x: x[:, 1] * x[0, :3] + x[1:, ::2].sum(),
    "cat_stack": lambda lib, x: lib.cat([x, 2 * x], 0).sum(1) + lib.stack([x, x]).mean(),
    "nn": lambda lib, x: lib.nn.functional.linear(lib.relu(x), x[:2], x[0, :2]).log_softmax(1),
    "in_place_on_result": lambda lib, x: (x * 1).mul_(x).add_(1).sqrt_(),
}


def _forward(lib, fn, x, v):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        out = fn(lib, fw.make_dual(x, v))
        primal, tangent = fw.unpack_dual(out)
    return primal, tangent


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_tangent_equals_functional_jvp(name):
    fn = FUNCTIONS[name]
    x, v = _rng_tensor(ember, 3, 4), _rng_tensor(ember, 3, 4, seed=1)
    primal, tangent = _forward(ember, fn, x, v)
    value, expected = jvp(lambda t: fn(ember, t), x, v)
    np.testing.assert_allclose(primal.numpy(), value.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)
    assert not primal.requires_grad and not tangent.requires_grad


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_tangent_equals_pytorch_forward_ad(name):
    torch = pytest.importorskip("torch")
    fn = FUNCTIONS[name]
    ours = _forward(ember, fn, _rng_tensor(ember, 3, 4), _rng_tensor(ember, 3, 4, seed=1))
    theirs = _forward(torch, fn, _rng_tensor(torch, 3, 4), _rng_tensor(torch, 3, 4, seed=1))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_hand_derived_tangents():
    w = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=ember.float64)
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    v = ember.tensor([1.0, 0.0, -1.0], dtype=ember.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        assert fwAD.unpack_dual(w @ d).tangent.tolist() == [-2.0, -2.0]  # W v
        assert fwAD.unpack_dual((d * d).sum()).tangent.item() == -4.0  # 2 x . v
        # two duals: d(x * y) = v * y + x * s
        e = fwAD.make_dual(ember.tensor([2.0, 2.0, 2.0], dtype=ember.float64),
                           ember.tensor([1.0, 1.0, 1.0], dtype=ember.float64))
        assert fwAD.unpack_dual(d * e).tangent.tolist() == [3.0, 2.0, 1.0]
        # no dependence on a dual: no tangent; constant result of a dual: zero tangent
        assert fwAD.unpack_dual(w).tangent is None
        assert fwAD.unpack_dual(d * 0).tangent.tolist() == [0.0, 0.0, 0.0]
        # argmax is not differentiable: its integer result has no tangent
        assert fwAD.unpack_dual(d.argmax()).tangent is None


def test_unpack_dual_of_the_dual_and_after_the_level():
    x, v = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, v)
        unpacked = fwAD.unpack_dual(d)
        assert isinstance(unpacked, fwAD.UnpackedDualTensor)
        assert unpacked._fields == ("primal", "tangent")
        assert unpacked.primal is x and unpacked.tangent.tolist() == [3.0, 4.0]
        y = d * 2
    assert fwAD.unpack_dual(y).tangent is None  # the level is gone
    assert fwAD.unpack_dual(y).primal is y


def test_a_primal_that_requires_grad_keeps_both_derivatives():
    x = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.tensor(1.0, dtype=ember.float64))
        primal, tangent = fwAD.unpack_dual(d * d * d)
        assert tangent.item() == 12.0  # 3 x^2
        # (the primal and the tangent share one graph: keep it for the second pass)
        (g,) = ember.autograd.grad(primal, x, retain_graph=True)
        assert g.item() == 12.0
        (g,) = ember.autograd.grad(tangent, x)  # d/dx (3 x^2) = 6 x
        assert g.item() == 12.0


def test_levels_and_argument_errors():
    x = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, ember.ones(3))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[3\] while the given "
                                               r"forward gradient is of size \[2\]"):
            fwAD.make_dual(x, ember.ones(2))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(ember.tensor([1, 2]), ember.ones(2))
        with pytest.raises(NotImplementedError, match="complex"):
            fwAD.make_dual(ember.tensor([1j]), ember.tensor([1j]))
        d = fwAD.make_dual(x, ember.ones(3))
        with pytest.raises(RuntimeError, match="already has a forward gradient"):
            fwAD.make_dual(d, ember.ones(3))
    with pytest.raises(RuntimeError, match="not the last one"):
        fwAD.exit_dual_level()
    assert fwAD.enter_dual_level() == 0
    fwAD.exit_dual_level(level=0)


class _Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @ember.autograd.function.once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


def test_an_op_without_forward_derivative_raises_naming_it():
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.ones(2))
        y = _Cube.apply(d).sum()
        with pytest.raises(NotImplementedError, match="_CubeBackward"):
            fwAD.unpack_dual(y)


def test_reachable_as_pytorch_spells_it():
    import ember.autograd as autograd

    assert autograd.forward_ad is fwAD
    assert set(fwAD.__all__) >= {"dual_level", "make_dual", "unpack_dual", "enter_dual_level",
                                 "exit_dual_level", "UnpackedDualTensor"}


def test_ops_under_no_grad_carry_no_tangent():
    # documented difference: ember derives tangents from the recorded graph
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor([1.0]), ember.tensor([1.0]))
        with ember.no_grad():
            y = d * 3
        assert fwAD.unpack_dual(y).tangent is None
        assert fwAD.unpack_dual(d * 3).tangent.tolist() == [3.0]
