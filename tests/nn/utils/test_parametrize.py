"""nn.utils.parametrize, nn.utils.parametrizations (weight_norm, spectral_norm) and the
legacy hook-based nn.utils.weight_norm."""

import copy
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.nn.utils.parametrize as P
from ember import nn
from ember.autograd import gradcheck
from ember.nn.utils.parametrizations import spectral_norm, weight_norm
from ember.testing import assert_close


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(-1, -2)

    def right_inverse(self, a):
        return a.triu()


class NoInverse(nn.Module):
    def forward(self, x):
        return x * 2


class Scale(nn.Module):
    def forward(self, x):
        return x * 3


def test_register_parametrization_basics():
    layer = nn.Linear(3, 3)
    weight = layer.weight.detach().numpy().copy()
    P.register_parametrization(layer, "weight", Symmetric())
    assert type(layer).__name__ == "ParametrizedLinear"
    assert isinstance(layer, nn.Linear) and P.type_before_parametrizations(layer) is nn.Linear
    assert P.is_parametrized(layer) and P.is_parametrized(layer, "weight")
    assert not P.is_parametrized(layer, "bias")
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in layer.named_parameters()] == ["bias",
                                                        "parametrizations.weight.original"]
    w = layer.weight.detach().numpy()
    assert_close(w, w.T)
    assert_close(layer.parametrizations.weight.original, np.triu(weight))  # right_inverse
    assert "(0): Symmetric()" in repr(layer)
    other = nn.Linear(3, 3)
    assert type(other) is nn.Linear and not hasattr(type(other), "parametrizations")


def test_gradient_flows_to_the_original():
    layer = nn.Linear(3, 3).double()
    P.register_parametrization(layer, "weight", Symmetric())
    original = layer.parametrizations.weight.original
    layer(ember.ones(1, 3, dtype=ember.float64)).sum().backward()
    assert original.grad is not None
    assert gradcheck(lambda x: Symmetric()(x), (ember.randn(3, 3, dtype=ember.float64,
                                                             requires_grad=True),))


def test_assignment_uses_right_inverse():
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Symmetric())
    target = np.arange(9.0).reshape(3, 3).astype(np.float32)
    target = target + target.T
    layer.weight = ember.tensor(target)
    assert_close(layer.weight, target)
    plain = nn.Linear(3, 3)
    P.register_parametrization(plain, "weight", NoInverse())
    with pytest.raises(RuntimeError, match="NoInverse does not implement right_inverse"):
        plain.weight = ember.ones(3, 3)


def test_chained_parametrizations_and_unsafe_checks():
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Symmetric())
    P.register_parametrization(layer, "weight", Scale())
    assert len(layer.parametrizations.weight) == 2
    w = layer.weight.detach().numpy()
    assert_close(w / 3, (w / 3).T)

    class Row(nn.Module):
        def forward(self, x):
            return x[0]

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(3, 3), "weight", Row())

    class Double(nn.Module):
        def forward(self, x):
            return x.double()

    with pytest.raises(ValueError, match="may not change the dtype"):
        P.register_parametrization(nn.Linear(3, 3), "weight", Double())
    unsafe = nn.Linear(3, 3)
    P.register_parametrization(unsafe, "weight", Row(), unsafe=True)
    assert unsafe.weight.shape == (3,)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'nope'"):
        P.register_parametrization(nn.Linear(3, 3), "nope", Scale())


def test_buffers_can_be_parametrized():
    m = nn.Module()
    m.register_buffer("table", ember.ones(2, 2))
    P.register_parametrization(m, "table", Scale())
    assert_close(m.table, np.full((2, 2), 3.0))
    assert "parametrizations.table.original" in dict(m.named_buffers())


def test_cached():
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Symmetric())
    assert layer.weight is not layer.weight
    with P.cached():
        first = layer.weight
        with P.cached():
            assert layer.weight is first
        assert layer.weight is first
    assert layer.weight is not first


def test_remove_parametrizations():
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Symmetric())
    original = layer.parametrizations.weight.original
    value = layer.weight.detach().numpy().copy()
    P.remove_parametrizations(layer, "weight")
    assert type(layer) is nn.Linear and not hasattr(layer, "parametrizations")
    assert layer.weight is original  # the same Parameter object, now holding the value
    assert_close(layer.weight, value)
    assert list(layer.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(layer, "weight")
    other = nn.Linear(3, 3)
    P.register_parametrization(other, "weight", Scale())
    raw = other.parametrizations.weight.original.detach().numpy().copy()
    P.remove_parametrizations(other, "weight", leave_parametrized=False)
    assert_close(other.weight, raw)


def test_parametrized_modules_copy_but_do_not_pickle():
    layer = nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", Symmetric())
    clone = copy.deepcopy(layer)
    assert_close(clone.weight, layer.weight)
    assert clone.parametrizations.weight.original is not layer.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(layer)


def test_transfer_parametrizations_and_params():
    source = nn.Linear(3, 3)
    P.register_parametrization(source, "weight", Symmetric())
    target = nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(source, target)
    assert P.is_parametrized(target, "weight")
    assert_close(target.weight, source.weight)


# ----------------------------------------------------------------------
# weight_norm and spectral_norm


def test_weight_norm():
    layer = weight_norm(nn.Linear(4, 3))
    chain = layer.parametrizations.weight
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original0",
                                        "parametrizations.weight.original1"]
    g, v = chain.original0, chain.original1
    assert g.shape == (3, 1) and v.shape == (3, 4)
    w = layer.weight.detach().numpy()
    assert_close(np.linalg.norm(w, axis=1, keepdims=True), g.detach().numpy(), rtol=1e-5)
    conv = weight_norm(nn.Conv1d(2, 3, 3), dim=None)
    assert conv.parametrizations.weight.original0.shape == ()
    assert weight_norm(nn.Conv1d(2, 3, 3), dim=1).parametrizations.weight.original0.shape == (
        1, 2, 1)
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    P.remove_parametrizations(layer, "weight")
    assert_close(layer.weight, w)


def test_weight_norm_gradcheck():
    from ember.nn.utils.parametrizations import _WeightNorm

    g = ember.rand(3, 1, dtype=ember.float64, requires_grad=True)
    v = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda g, v: _WeightNorm(0)(g, v), (g, v))


def test_spectral_norm_power_iteration():
    ember.manual_seed(0)
    layer = spectral_norm(nn.Linear(6, 4, bias=False))
    sn = layer.parametrizations.weight[0]
    assert sorted(n for n, _ in layer.named_buffers()) == ["parametrizations.weight.0._u",
                                                           "parametrizations.weight.0._v"]
    for _ in range(30):
        layer(ember.randn(2, 6))
    sigma = np.linalg.svd(layer.weight.detach().numpy(), compute_uv=False)[0]
    assert abs(sigma - 1.0) < 1e-3
    layer.eval()
    u = sn._u.detach().numpy().copy()
    layer(ember.randn(2, 6))
    assert_close(sn._u, u)  # eval: no power iteration
    layer.train()
    layer(ember.randn(2, 6))
    assert sn._u._version.value > 0
    with pytest.raises(ValueError, match="n_power_iterations=0"):
        spectral_norm(nn.Linear(3, 3), n_power_iterations=0)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        spectral_norm(nn.Linear(3, 3), "nope")


def test_spectral_norm_gradient_flows():
    layer = spectral_norm(nn.Linear(4, 3).double())
    layer(ember.randn(2, 4, dtype=ember.float64)).sum().backward()
    assert layer.parametrizations.weight.original.grad is not None


def test_legacy_weight_norm():
    from ember.nn.utils import remove_weight_norm
    from ember.nn.utils import weight_norm as legacy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        layer = legacy(nn.Linear(4, 3))
    assert [n for n, _ in layer.named_parameters()] == ["bias", "weight_g", "weight_v"]
    x = ember.randn(2, 4)
    before = layer(x).detach().numpy()
    layer(x).sum().backward()
    assert layer.weight_g.grad is not None and layer.weight_v.grad is not None
    with pytest.warns(FutureWarning, match="deprecated"), pytest.raises(RuntimeError,
                                                                        match="two weight_norm"):
        legacy(layer)
    remove_weight_norm(layer)
    assert [n for n, _ in layer.named_parameters()] == ["bias", "weight"]
    assert_close(layer(x), before, rtol=1e-5)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        remove_weight_norm(layer)
