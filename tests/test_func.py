"""ember.func: functional_call (module with swapped parameters) and grad/grad_and_value."""

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.func import functional_call, grad, grad_and_value

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def test_functional_call_swaps_parameters_and_restores_them():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    original = model[0].weight
    weight = ember.ones(2, 3, requires_grad=True)
    x = ember.randn(4, 3)
    out = functional_call(model, {"0.weight": weight}, (x,))
    expected_linear = x @ ember.ones(3, 2) + model[0].bias
    np.testing.assert_allclose(out.detach().numpy(),
                               model[1](expected_linear).detach().numpy(), rtol=1e-5)
    out.sum().backward()
    assert weight.grad is not None and model[0].weight.grad is None
    assert model[0].weight is original  # restored
    buffers = {"1.running_mean": ember.full((2,), 5.0), "1.running_var": ember.ones(2)}
    model.eval()
    before = model[1].running_mean.tolist()
    shifted = functional_call(model, [buffers], x)
    assert bool((shifted.detach() < model(x).detach()).all())  # a larger mean subtracted
    assert model[1].running_mean.tolist() == before  # the module's own buffers are back


def test_functional_call_strict_tied_and_errors():
    model = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'foo'"):
        functional_call(model, {"weight": ember.ones(2, 2), "foo": ember.ones(1)},
                        (ember.ones(1, 2),), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(model, [{"bias": ember.ones(2)}, {"bias": ember.ones(2)}],
                        (ember.ones(1, 2),))
    tied = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False))
    tied[1].weight = tied[0].weight
    out = functional_call(tied, {"0.weight": ember.eye(2) * 2}, (ember.ones(1, 2),))
    assert out.tolist() == [[4.0, 4.0]]  # both layers took the new tensor
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.utils.stateless.functional_call(model, {"bias": ember.zeros(2)}, ember.ones(1, 2))
    assert any(issubclass(w.category, FutureWarning) for w in caught)


def test_grad_and_value_nest_and_take_argnums_and_aux():
    def f(x):
        return (x ** 3).sum()

    x = ember.tensor([1.0, 2.0])
    assert grad(f)(x).tolist() == [3.0, 12.0]
    g, value = grad_and_value(f)(x)
    assert value.item() == 9.0 and not g.requires_grad and not value.requires_grad
    assert grad(grad(lambda t: t ** 3))(ember.tensor(2.0)).item() == 12.0  # 6t
    gx, gy = grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, ember.tensor([3.0, 4.0]))
    assert gx.tolist() == [3.0, 4.0] and gy.tolist() == [1.0, 2.0]
    g, aux = grad(lambda t: ((t ** 2).sum(), t.mean()), has_aux=True)(x)
    assert g.tolist() == [2.0, 4.0] and aux.item() == 1.5 and not aux.requires_grad
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        grad(lambda t: t * 2)(x)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_maml_inner_step_matches_pytorch():
    """One MAML-style adaptation: a functional step on the weights, loss of the adapted
    model, gradient through the adaptation with respect to the original weights."""
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((1, 3)), rng.standard_normal(1)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 1))

    def meta_gradient(lib):
        model = lib.nn.Linear(3, 1).double()
        with lib.no_grad():
            model.weight.copy_(lib.tensor(w0))
            model.bias.copy_(lib.tensor(b0))
        params = dict(model.named_parameters())
        xt, yt = lib.tensor(x), lib.tensor(y)
        inner = ((lib.func.functional_call(model, params, (xt,)) - yt) ** 2).mean()
        grads = lib.autograd.grad(inner, list(params.values()), create_graph=True)
        adapted = {k: v - 0.1 * g for (k, v), g in zip(params.items(), grads)}
        outer = ((lib.func.functional_call(model, adapted, (xt,)) - yt) ** 2).mean()
        outer.backward()
        return [model.weight.grad.numpy(), model.bias.grad.numpy()]

    for ours, theirs in zip(meta_gradient(ember), meta_gradient(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_grad_over_a_parameter_dict_and_nested_structures():
    net = nn.Linear(3, 1)
    params = {k: v.detach() for k, v in net.named_parameters()}
    x, y = ember.randn(4, 3), ember.randn(4, 1)

    def loss(p, x, y):
        return ((functional_call(net, p, (x,)) - y) ** 2).mean()

    grads = grad(loss)(params, x, y)
    assert sorted(grads) == ["bias", "weight"]
    residual = (x @ params["weight"].t() + params["bias"] - y).numpy()
    np.testing.assert_allclose(grads["weight"].numpy(), 2 * (residual * x.numpy()).mean(0,
                               keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(grads["bias"].numpy(), 2 * residual.mean(0), rtol=1e-5)
    pair = grad(lambda ab: (ab[0] * ab[1][0]).sum())((ember.tensor([2.0]), [ember.tensor([3.0])]))
    assert isinstance(pair, tuple) and pair[0].tolist() == [3.0] and pair[1][0].tolist() == [2.0]
    with pytest.raises(RuntimeError, match="Tensor or a structure of Tensors, got int"):
        grad(lambda n: ember.ones(()))(3)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_grad_over_a_parameter_dict_matches_pytorch():
    weight, x = np.random.default_rng(0).standard_normal((2, 3, 3))

    def gradients(lib):
        net = lib.nn.Linear(3, 3)
        params = {"weight": lib.tensor(weight, dtype=lib.float32), "bias": lib.zeros(3)}
        inputs = (lib.tensor(x, dtype=lib.float32),)
        grads = lib.func.grad(
            lambda p: lib.func.functional_call(net, p, inputs).tanh().sum())(params)
        return {k: v.numpy() for k, v in grads.items()}

    results = [gradients(ember), gradients(torch)]
    for key in ("weight", "bias"):
        np.testing.assert_allclose(results[0][key], results[1][key], rtol=1e-5, atol=1e-6)


# --- vmap, jacrev, jacfwd, hessian -----------------------------------------------------------


def _t(lib, *shape, seed=0):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=lib.float64)


TRANSFORMS = {
    "vmap_elementwise": lambda lib: (lib.func.vmap(lambda a: a.sin() * a), (_t(lib, 4, 3),)),
    "vmap_matmul_in_dims": lambda lib: (lib.func.vmap(lambda a, w: w @ a, in_dims=(1, None)),
                                        (_t(lib, 3, 5), _t(lib, 2, 3, seed=1))),
    "vmap_reductions_tuple": lambda lib: (lib.func.vmap(lambda a: (a.sum(), a.amax(0)),
                                                        out_dims=(0, 1)), (_t(lib, 4, 3, 2),)),
    "vmap_out_dims": lambda lib: (lib.func.vmap(lambda a: a.outer(a), out_dims=2),
                                  (_t(lib, 4, 3),)),
    "vmap_nested": lambda lib: (lib.func.vmap(lib.func.vmap(lambda a, b: a * b,
                                                            in_dims=(0, None)),
                                              in_dims=(None, 0)), (_t(lib, 3), _t(lib, 4))),
    "vmap_dict_negative_dim": lambda lib: (
        lib.func.vmap(lambda d: d["x"] + d["y"], in_dims=({"x": 0, "y": -1},)),
        ({"x": _t(lib, 3, 2), "y": _t(lib, 2, 3, seed=3)},)),
    "vmap_of_grad": lambda lib: (lib.func.vmap(lib.func.grad(lambda a: (a ** 3).sum())),
                                 (_t(lib, 4, 3),)),
    "jacrev": lambda lib: (lib.func.jacrev(lambda a: a.sin() * a.sum()), (_t(lib, 3),)),
    "jacrev_argnums_tuple_out": lambda lib: (
        lib.func.jacrev(lambda a, w: (w @ a, a.norm()), argnums=(0, 1)),
        (_t(lib, 3), _t(lib, 2, 3, seed=1))),
    "jacfwd_matrix": lambda lib: (lib.func.jacfwd(lambda a: (a.exp() @ a.t()).tanh()),
                                  (_t(lib, 2, 3),)),
    "jacfwd_argnums_tuple_out": lambda lib: (
        lib.func.jacfwd(lambda a, w: (w @ a, a.norm()), argnums=(0, 1)),
        (_t(lib, 3), _t(lib, 2, 3, seed=1))),
    "jacrev_aux": lambda lib: (lib.func.jacrev(lambda a: (a ** 2, a.sum()), has_aux=True),
                               (_t(lib, 3),)),
    "hessian": lambda lib: (lib.func.hessian(lambda a: (a.sin() * a).sum() ** 2), (_t(lib, 3),)),
    "hessian_argnums": lambda lib: (lib.func.hessian(lambda a, b: (a * b.exp()).sum(),
                                                     argnums=(0, 1)),
                                    (_t(lib, 3), _t(lib, 3, seed=1))),
    "vjp": lambda lib: (lambda a, b: lib.func.vjp(lambda x, y: (x @ y, x.sin()), a, b)[1](
        (lib.ones(2, 2, dtype=lib.float64), lib.ones(2, 3, dtype=lib.float64))),
        (_t(lib, 2, 3), _t(lib, 3, 2, seed=1))),
    "jvp": lambda lib: (lambda a, b: lib.func.jvp(lambda x, y: (x @ y, (x * x).sum()), (a, b),
                                                  (lib.ones_like(a), b)),
                        (_t(lib, 2, 3), _t(lib, 3, 2, seed=1))),
    "vmap_of_jacrev": lambda lib: (lib.func.vmap(lib.func.jacrev(lambda a: a.sin() * a.sum())),
                                   (_t(lib, 4, 3),)),
    "jacfwd_of_jacfwd": lambda lib: (lib.func.jacfwd(lib.func.jacfwd(lambda a: (a ** 3).prod())),
                                     (_t(lib, 3),)),
}


def _assert_same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transforms_match_pytorch(name):
    f_ours, args_ours = TRANSFORMS[name](ember)
    f_theirs, args_theirs = TRANSFORMS[name](torch)
    _assert_same(f_ours(*args_ours), f_theirs(*args_theirs))


def test_vmap_is_the_stacked_per_element_results():
    x = _t(ember, 4, 3)
    w = _t(ember, 2, 3, seed=1)
    out = ember.func.vmap(lambda a: w @ a)(x)
    np.testing.assert_allclose(out.numpy(), x.numpy() @ w.numpy().T, rtol=1e-12)
    total, peak = ember.func.vmap(lambda a: (a.sum(), a.max()))(x)
    np.testing.assert_allclose(total.numpy(), x.numpy().sum(1), rtol=1e-12)
    assert peak.tolist() == x.numpy().max(1).tolist()
    # out_dims=None: an output that is the same for every element is returned once
    assert ember.func.vmap(lambda a: w, out_dims=None)(x) is w
    # gradients flow through vmap
    leaf = x.clone().requires_grad_()
    ember.func.vmap(lambda a: (a ** 2).sum())(leaf).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 2 * x.numpy(), rtol=1e-12)


def test_vmap_errors():
    x = ember.ones(2, 3)
    vmap = ember.func.vmap
    with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes "
                                         r"\[2, 3\]"):
        vmap(lambda a, b: a + b)(x, ember.ones(3, 3))
    with pytest.raises(ValueError, match="at least one Tensor to vmap over"):
        vmap(lambda a: a, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda a: 1.0)(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a, b: a, in_dims=(0, 0))(x, 1.0)
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        vmap(lambda a: a.sum(), out_dims=None)(ember.tensor([[1.0], [2.0]]))
    with pytest.raises(RuntimeError, match="called random operation while in randomness "
                                           "error mode"):
        vmap(lambda a: a + ember.rand(3))(x)
    same = vmap(lambda a: a + ember.rand(3), randomness="same")(x)
    assert same[0].tolist() == same[1].tolist()
    different = vmap(lambda a: a + ember.rand(3), randomness="different")(x)
    assert different[0].tolist() != different[1].tolist()


def test_jacobians_by_hand():
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    w = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=ember.float64)
    for transform in (ember.func.jacrev, ember.func.jacfwd):
        assert transform(lambda a: w @ a)(x).tolist() == w.tolist()
        # d(a * a)/da = diag(2a)
        assert transform(lambda a: a * a)(x).tolist() == np.diag([2.0, 4.0, 6.0]).tolist()
        jw, jx = transform(lambda m, a: m @ a, argnums=(0, 1))(w, x)
        assert jx.tolist() == w.tolist() and tuple(jw.shape) == (2, 2, 3)
        assert jw[1, 1].tolist() == [1.0, 2.0, 3.0] and jw[1, 0].tolist() == [0.0] * 3
        jac, aux = transform(lambda a: (a.exp(), "aux"), has_aux=True)(x)
        assert aux == "aux" and not jac.requires_grad
    # the Hessian of sum(a^3) is diag(6a); of a.b is [[0, I], [I, 0]]
    h = ember.func.hessian(lambda a: (a ** 3).sum())(x)
    assert h.tolist() == np.diag([6.0, 12.0, 18.0]).tolist()
    (haa, hab), (hba, hbb) = ember.func.hessian(lambda a, b: (a * b).sum(),
                                                argnums=(0, 1))(x, x)
    assert haa.tolist() == np.zeros((3, 3)).tolist() and hab.tolist() == np.eye(3).tolist()
    with pytest.raises(RuntimeError, match="Got argnum=1, but only 1 positional inputs"):
        ember.func.jacrev(lambda a: a, argnums=1)(x)
    with pytest.raises(ValueError, match="must be Tensor"):
        ember.func.jacrev(lambda a: a)(1.0)


def test_vjp_and_jvp_by_hand():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64)
    out, vjp_fn = ember.func.vjp(lambda a: (a * a, a.sum()), x)
    assert out[0].tolist() == [1.0, 4.0] and not out[0].requires_grad
    # 2a * [1, 1] + 1 * [1, 1]
    assert vjp_fn((ember.ones(2, dtype=ember.float64), ember.tensor(1.0, dtype=ember.float64))
                  )[0].tolist() == [3.0, 5.0]
    out, vjp_fn, aux = ember.func.vjp(lambda a: (a * a, a.sum()), x, has_aux=True)
    assert vjp_fn(ember.ones(2, dtype=ember.float64))[0].tolist() == [2.0, 4.0]
    assert aux.item() == 3.0
    out, product = ember.func.jvp(lambda a, b: a * b, (x, x),
                                  (ember.ones(2, dtype=ember.float64), ember.zeros(2)))
    assert out.tolist() == [1.0, 4.0] and product.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        ember.func.jvp(lambda a: a, x, x)
    with pytest.raises(RuntimeError, match="independent of the inputs"):
        ember.func.jvp(lambda a: ember.ones(2), (x,), (x,), strict=True)
    assert ember.vmap is ember.func.vmap
