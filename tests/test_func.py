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
    with pytest.raises(NotImplementedError, match="vmap"):
        ember.func.vmap(f)


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
