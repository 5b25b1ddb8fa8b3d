"""nn.init: gains, fans, and the distributions each initializer draws from."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.nn import init


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)


def values(t):
    return t.detach().numpy().astype(np.float64)


@pytest.mark.parametrize("name, param, expected", [
    ("linear", None, 1.0), ("conv2d", None, 1.0), ("conv_transpose3d", None, 1.0),
    ("sigmoid", None, 1.0), ("tanh", None, 5.0 / 3), ("relu", None, math.sqrt(2.0)),
    ("leaky_relu", None, math.sqrt(2.0 / (1 + 0.01**2))),
    ("leaky_relu", 0.2, math.sqrt(2.0 / 1.04)), ("leaky_relu", 1, 1.0), ("selu", None, 0.75),
])
def test_calculate_gain(name, param, expected):
    assert init.calculate_gain(name, param) == pytest.approx(expected)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_calculate_gain_matches_torch():
    torch = pytest.importorskip("torch")
    for name in ["linear", "conv1d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]:
        assert init.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    assert init.calculate_gain("leaky_relu", 0.3) == torch.nn.init.calculate_gain(
        "leaky_relu", 0.3)


def test_fans():
    assert init._calculate_fan_in_and_fan_out(ember.empty(3, 4)) == (4, 3)
    assert init._calculate_fan_in_and_fan_out(ember.empty(3, 4, 5, 6)) == (120, 90)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(ember.empty(3))
    with pytest.raises(ValueError, match=r"Mode fan_x not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(ember.empty(3, 4), mode="fan_x")


def test_uniform_normal_constant_in_place():
    t = ember.empty(200, 200, requires_grad=True)
    assert init.uniform_(t, -2.0, 3.0) is t
    v = values(t)
    assert v.min() >= -2.0 and v.max() <= 3.0
    assert abs(v.mean() - 0.5) < 0.05 and abs(v.var() - 25 / 12) < 0.05
    assert t.requires_grad and t.grad_fn is None  # done without recording
    init.normal_(t, 1.0, 0.5)
    v = values(t)
    assert abs(v.mean() - 1.0) < 0.01 and abs(v.std() - 0.5) < 0.01
    init.constant_(t, 3.5)
    assert (values(t) == 3.5).all()
    init.ones_(t)
    assert (values(t) == 1).all()
    init.zeros_(t)
    assert (values(t) == 0).all()


def test_generator_keyword_is_reproducible():
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    a, b = ember.empty(10), ember.empty(10)
    init.normal_(a, generator=g1)
    init.normal_(b, generator=g2)
    assert a.tolist() == b.tolist()
    ember.manual_seed(3)
    c = init.kaiming_uniform_(ember.empty(4, 4))
    ember.manual_seed(3)
    d = init.kaiming_uniform_(ember.empty(4, 4))
    assert c.tolist() == d.tolist()


def test_xavier():
    t = ember.empty(300, 200)
    init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 500)
    v = values(t)
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    assert abs(v.std() - bound / math.sqrt(3)) < 0.01 * bound
    init.xavier_normal_(t)
    assert abs(values(t).std() - math.sqrt(2.0 / 500)) < 0.01 * math.sqrt(2.0 / 500)


@pytest.mark.parametrize("mode, nonlinearity, a", [
    ("fan_in", "leaky_relu", 0), ("fan_out", "relu", 0), ("fan_in", "leaky_relu", math.sqrt(5)),
])
def test_kaiming(mode, nonlinearity, a):
    t = ember.empty(64, 16, 3, 3)  # fan_in 144, fan_out 576
    fan = 144 if mode == "fan_in" else 576
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    init.kaiming_uniform_(t, a=a, mode=mode, nonlinearity=nonlinearity)
    v = values(t)
    bound = math.sqrt(3.0) * std
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    assert abs(v.std() - std) < 0.02 * std
    init.kaiming_normal_(t, a=a, mode=mode, nonlinearity=nonlinearity)
    v = values(t)
    assert abs(v.std() - std) < 0.04 * std and abs(v.mean()) < 0.05 * std


def test_zero_element_warns():
    t = ember.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(t) is t
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(ember.empty(3, 0))


def test_trunc_normal():
    t = ember.empty(100_000)
    init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=1.5)
    v = values(t)
    assert v.min() >= -1.0 and v.max() <= 1.5
    # Moments of the truncated normal, computed from the standard formulas.
    alpha, beta = -1.5, 1.0
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    mean = 0.5 + (pdf(alpha) - pdf(beta)) / z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2
    assert abs(v.mean() - mean) < 0.01 and abs(v.var() - var) < 0.01
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(ember.empty(3), mean=5.0, std=1.0)


def test_eye_and_dirac():
    assert init.eye_(ember.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(3))
    w = init.dirac_(ember.empty(2, 3, 3))
    expected = np.zeros((2, 3, 3))
    expected[0, 0, 1] = expected[1, 1, 1] = 1
    assert (values(w) == expected).all()
    w = init.dirac_(ember.empty(4, 2, 3), groups=2)
    expected = np.zeros((4, 2, 3))
    for g in range(2):
        for d in range(2):
            expected[g * 2 + d, d, 1] = 1
    assert (values(w) == expected).all()
    w = init.dirac_(ember.empty(2, 2, 3, 3))
    assert values(w)[1, 1, 1, 1] == 1 and values(w).sum() == 2
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(ember.empty(3, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(ember.empty(3, 4, 3), groups=2)


@pytest.mark.parametrize("shape", [(4, 4), (3, 6), (6, 3), (4, 2, 3)])
def test_orthogonal(shape):
    t = init.orthogonal_(ember.empty(*shape), gain=2.0)
    m = values(t).reshape(shape[0], -1)
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    assert np.allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-4)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(ember.empty(3))


def test_sparse():
    t = init.sparse_(ember.empty(10, 300), sparsity=0.3, std=0.5)
    v = values(t)
    assert ((v == 0).sum(axis=0) == 3).all()  # ceil(0.3 * 10) zeros in each column
    nonzero = v[v != 0]
    assert abs(nonzero.std() - 0.5) < 0.05
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(ember.empty(3, 4, 5), 0.1)


def test_deprecated_aliases_warn():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        init.uniform(ember.empty(2))
    assert "`nn.init.uniform` is now deprecated in favor of `nn.init.uniform_`" in str(
        caught[0].message)
