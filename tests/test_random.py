"""Tests of ember/random.py and the samplers: reproducibility (the same seed gives the
same numbers, also in a fresh process), generator state, fork_rng, the statistics of
every sampler on large samples, and PyTorch's signatures and errors."""

import ast
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
from tests.processes import run_together

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _draws():
    """One number (or a few) from every sampler, in a fixed order."""
    x = ember.empty(4, dtype=ember.float64)
    return [
        ember.rand(3), ember.randn(3, dtype=ember.float64), ember.randint(0, 100, (3,)),
        ember.randperm(6), ember.normal(0.0, 1.0, (2,)), ember.bernoulli(ember.full((3,), 0.5)),
        ember.multinomial(ember.ones(5), 3), ember.poisson(ember.full((3,), 4.0)),
        x.uniform_().clone(), x.normal_().clone(), x.random_(10).clone(),
        x.bernoulli_(0.3).clone(), x.exponential_().clone(), x.geometric_(0.2).clone(),
        x.cauchy_().clone(), x.log_normal_().clone(),
    ]


def _same(a, b):
    return all(np.array_equal(x.cpu_array(), y.cpu_array()) for x, y in zip(a, b))


def test_same_seed_same_numbers():
    ember.manual_seed(1234)
    first = _draws()
    ember.manual_seed(1234)
    assert _same(first, _draws())
    ember.manual_seed(1235)
    assert not _same(first, _draws())


def _in_two_fresh_processes(code: str) -> list:
    """The output of `code` run in two new Python processes (at once)."""
    root = Path(ember.__file__).resolve().parents[1]
    runs = run_together({0: (code, None), 1: (code, None)}, cwd=root)
    return [runs[0].stdout, runs[1].stdout]


def test_same_seed_same_numbers_in_a_fresh_process():
    code = ("import ember; ember.manual_seed(7); "
            "print([ember.rand(4).tolist(), ember.randint(0, 10**6, (3,)).tolist(), "
            "ember.randperm(5).tolist()])")
    outs = [ast.literal_eval(out) for out in _in_two_fresh_processes(code)]
    ember.manual_seed(7)
    here = [ember.rand(4).tolist(), ember.randint(0, 10 ** 6, (3,)).tolist(),
            ember.randperm(5).tolist()]
    assert outs[0] == outs[1] == here


def test_generator_objects():
    g = ember.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.device == ember.device("cpu")
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    a = ember.rand(4, generator=g)
    g.manual_seed(5)
    assert ember.rand(4, generator=g).tolist() == a.tolist()
    # a separate generator does not disturb the default one
    ember.manual_seed(0)
    ref = ember.rand(3).tolist()
    ember.manual_seed(0)
    ember.rand(5, generator=ember.Generator().manual_seed(9))
    assert ember.rand(3).tolist() == ref
    new = g.seed()
    assert g.initial_seed() == new
    assert ember.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    with pytest.raises(ValueError):
        ember.manual_seed(2 ** 64)
    assert isinstance(ember.manual_seed(3), ember.Generator)
    assert ember.initial_seed() == 3
    assert ember.random.default_generator is ember.default_generator


def test_state_save_and_restore():
    g = ember.Generator().manual_seed(11)
    ember.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is ember.uint8 and state.dim() == 1
    a = [ember.rand(5, generator=g), ember.randn(5, generator=g),
         ember.randint(0, 9, (5,), generator=g)]
    g.set_state(state)
    b = [ember.rand(5, generator=g), ember.randn(5, generator=g),
         ember.randint(0, 9, (5,), generator=g)]
    assert _same(a, b)
    ember.manual_seed(0)
    saved = ember.get_rng_state()
    x = ember.randn(10)
    ember.set_rng_state(saved)
    assert ember.randn(10).tolist() == x.tolist()
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(ember.zeros(45))
    with pytest.raises(RuntimeError, match="state size"):
        g.set_state(ember.zeros(3, dtype=ember.uint8))


def test_fork_rng_restores_the_state():
    ember.manual_seed(21)
    with ember.random.fork_rng():
        inside = ember.rand(4)
    outside = ember.rand(4)
    assert inside.tolist() == outside.tolist()
    with ember.random.fork_rng(enabled=False):
        ember.rand(4)
    assert ember.rand(4).tolist() != outside.tolist()


# ---------------------------------------------------------------------------
# statistics (n = 200k: the tolerances are many standard errors wide)

N = 200_000


@pytest.fixture(autouse=True)
def _seeded():
    ember.manual_seed(2024)


def test_uniform_and_normal_moments():
    u = ember.rand(N, dtype=ember.float64).cpu_array()
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = ember.randn(N).cpu_array()
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1) < 0.02
    n = ember.normal(3.0, 2.0, (N,)).cpu_array()
    assert abs(n.mean() - 3) < 0.02 and abs(n.std() - 2) < 0.02
    t = ember.empty(N).uniform_(-2, 5).cpu_array()
    assert -2 <= t.min() and t.max() < 5 and abs(t.mean() - 1.5) < 0.03
    t = ember.empty(N).normal_(-1, 0.5).cpu_array()
    assert abs(t.mean() + 1) < 0.01 and abs(t.std() - 0.5) < 0.01
    half = ember.rand(N, dtype=ember.float16).cpu_array()
    assert half.max() < 1 and abs(half.astype(np.float64).mean() - 0.5) < 0.01
    c = ember.randn(N, dtype=ember.complex64).cpu_array()
    assert abs((np.abs(c) ** 2).mean() - 1) < 0.02


def test_normal_with_tensor_parameters():
    mean = ember.tensor([0.0, 10.0, -5.0])
    std = ember.tensor([1.0, 0.1, 3.0])
    draws = np.stack([ember.normal(mean, std).cpu_array() for _ in range(4000)])
    assert np.allclose(draws.mean(0), [0, 10, -5], atol=0.2)
    assert np.allclose(draws.std(0), [1, 0.1, 3], rtol=0.1)
    assert ember.normal(ember.zeros(2, 3), ember.ones(3)).shape == (2, 3)
    assert ember.normal(ember.zeros(3), 2.0).shape == (3,)
    assert ember.normal(0.0, ember.ones(3)).shape == (3,)
    m = ember.zeros(3, requires_grad=True)
    s = ember.ones(3, requires_grad=True)
    out = ember.normal(m, s)
    assert out.grad_fn.name() == "NormalBackward3"
    out.sum().backward()
    assert m.grad.tolist() == [0.0] * 3 and s.grad.tolist() == [0.0] * 3  # as in PyTorch


def test_integers_and_permutations():
    r = ember.randint(3, 10, (N,))
    assert r.dtype is ember.int64
    values = r.cpu_array()
    assert values.min() == 3 and values.max() == 9
    counts = np.bincount(values - 3, minlength=7) / N
    assert np.allclose(counts, 1 / 7, atol=0.005)
    assert ember.randint(5, (3,), dtype=ember.float32).dtype is ember.float32
    for n in (1, 7, 100):
        p = ember.randperm(n).cpu_array()
        assert sorted(p.tolist()) == list(range(n))
    first = np.array([ember.randperm(4).cpu_array()[0] for _ in range(4000)])
    assert np.allclose(np.bincount(first, minlength=4) / 4000, 0.25, atol=0.03)
    x = ember.empty(N).random_(2, 6).cpu_array()
    assert set(np.unique(x).tolist()) == {2.0, 3.0, 4.0, 5.0}
    b = ember.empty(1000, dtype=ember.uint8).random_().cpu_array()
    assert b.max() > 200
    f = ember.empty(1000).random_().cpu_array()
    assert f.max() <= 2 ** 24 and np.all(f == np.round(f))
    big = ember.empty(1000, dtype=ember.int64).random_().cpu_array()
    assert big.min() >= 0 and big.max() > 2 ** 60


def test_bernoulli_rates():
    p = ember.tensor([0.0, 0.1, 0.5, 0.9, 1.0]).reshape(5, 1).expand(5, N // 5)
    draws = ember.bernoulli(p).cpu_array()
    assert np.allclose(draws.mean(1), [0.0, 0.1, 0.5, 0.9, 1.0], atol=0.01)
    assert draws[0].max() == 0 and draws[4].min() == 1
    assert abs(ember.bernoulli(ember.ones(N), 0.3).cpu_array().mean() - 0.3) < 0.01
    t = ember.empty(N, dtype=ember.int64).bernoulli_(0.25).cpu_array()
    assert set(np.unique(t).tolist()) == {0, 1} and abs(t.mean() - 0.25) < 0.01
    t = ember.empty(4, N // 4).bernoulli_(ember.tensor([[0.2], [0.4], [0.6], [0.8]]))
    assert np.allclose(t.cpu_array().mean(1), [0.2, 0.4, 0.6, 0.8], atol=0.015)


def test_multinomial_frequencies_and_no_repeats():
    w = ember.tensor([1.0, 2.0, 3.0, 4.0])
    draws = ember.multinomial(w, N, replacement=True).cpu_array()
    assert np.allclose(np.bincount(draws, minlength=4) / N, [0.1, 0.2, 0.3, 0.4], atol=0.005)
    rows = ember.multinomial(ember.tensor([[0.0, 1.0, 1.0], [5.0, 0.0, 1.0]]), 1000,
                             replacement=True).cpu_array()
    assert 0 not in rows[0] and 1 not in rows[1]
    for _ in range(200):
        sample = ember.multinomial(ember.rand(10) + 0.01, 10).cpu_array()
        assert sorted(sample.tolist()) == list(range(10))
    # without replacement, first picks follow the weights
    first = np.array([ember.multinomial(w, 2)[0].item() for _ in range(4000)])
    assert np.allclose(np.bincount(first, minlength=4) / 4000, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    # zero-weight categories are never drawn while positive ones remain
    for _ in range(50):
        pick = ember.multinomial(ember.tensor([0.0, 3.0, 0.0, 1.0]), 2).cpu_array()
        assert sorted(pick.tolist()) == [1, 3]
    batch = ember.multinomial(ember.ones(3, 5), 4)
    assert batch.shape == (3, 4) and batch.dtype is ember.int64


def test_other_distributions():
    lam = ember.full((N,), 4.0)
    k = ember.poisson(lam).cpu_array()
    assert abs(k.mean() - 4) < 0.05 and abs(k.var() - 4) < 0.1
    e = ember.empty(N, dtype=ember.float64).exponential_(2.0).cpu_array()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    g = ember.empty(N).geometric_(0.25).cpu_array()
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.1
    c = ember.empty(N).cauchy_(1.0, 2.0).cpu_array()
    assert abs(np.median(c) - 1) < 0.05
    ln = ember.empty(N, dtype=ember.float64).log_normal_(0.5, 0.25).cpu_array()
    assert abs(np.log(ln).mean() - 0.5) < 0.01 and abs(np.log(ln).std() - 0.25) < 0.01


def test_like_functions_and_options():
    x = ember.ones(2, 3, dtype=ember.float64)
    assert ember.rand_like(x).dtype is ember.float64 and ember.rand_like(x).shape == (2, 3)
    assert ember.randn_like(x, dtype=ember.float32).dtype is ember.float32
    r = ember.randint_like(x, 5)
    assert r.dtype is ember.float64 and r.cpu_array().max() < 5
    r = ember.randint_like(x, 2, 5)
    assert r.cpu_array().min() >= 2
    assert ember.rand(2, 3, requires_grad=True).requires_grad
    assert ember.randn((2, 3)).shape == (2, 3)
    assert ember.randint(low=2, high=5, size=(3,)).shape == (3,)
    assert ember.randperm(4, dtype=ember.float32).dtype is ember.float32


def test_errors():
    with pytest.raises(NotImplementedError):
        ember.rand(2, dtype=ember.int64)
    with pytest.raises(NotImplementedError):
        ember.ones(3, dtype=ember.int64).normal_()
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        ember.randint(5, 2, (3,))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        ember.randint(5, 3)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(ember.zeros(3), -1.0)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ember.normal(ember.zeros(3), -ember.ones(3))
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        ember.bernoulli(ember.full((3,), 1.5))
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size\\(-1\\)"):
        ember.multinomial(ember.ones(3), 4)
    with pytest.raises(RuntimeError, match="probability tensor contains either"):
        ember.multinomial(ember.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        ember.multinomial(ember.zeros(3), 1)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        ember.multinomial(ember.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        ember.poisson(-ember.ones(2))
    with pytest.raises(RuntimeError, match="uniform_ expects to return a \\[from, to\\) range"):
        ember.empty(2).uniform_(3, 2)
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0"):
        ember.empty(2).exponential_(-1)
    with pytest.raises(RuntimeError, match="geometric_ expects p to be in \\(0, 1\\)"):
        ember.empty(2).geometric_(0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        ember.ones(3, requires_grad=True).uniform_()


def test_in_place_samplers_and_autograd():
    x = ember.ones(3)
    version = x._version.value
    assert x.uniform_() is x and x._version.value == version + 1
    with ember.no_grad():
        leaf = ember.ones(3, requires_grad=True)
        leaf.normal_()  # nn.init style
    w = ember.ones(3, requires_grad=True)
    y = w * 2
    y.uniform_()
    assert y.grad_fn.name() == "UniformBackward0"
    (y * w).sum().backward()
    assert np.allclose(w.grad.cpu_array(), y.detach().cpu_array())  # only the direct path
    names = {"normal_": "NormalBackward0", "random_": "RandomBackward2",
             "bernoulli_": "BernoulliBackward2", "exponential_": "ExponentialBackward0",
             "cauchy_": "CauchyBackward0", "log_normal_": "LogNormalBackward0"}
    for method, name in names.items():
        z = ember.ones(3, requires_grad=True) * 1
        assert getattr(z, method)().grad_fn.name() == name
    p = ember.full((3,), 0.5, requires_grad=True)
    b = ember.bernoulli(p)
    assert b.grad_fn.name() == "BernoulliBackward0"
    b.sum().backward()
    assert p.grad.tolist() == [0.0] * 3


@needs_torch
def test_signatures_match_torch():
    cases = {
        "rand": lambda m: m.rand((2, 3), dtype=m.float64, requires_grad=True),
        "randn": lambda m: m.randn(2, 3),
        "randint": lambda m: m.randint(2, 5, (3,)),
        "randint float": lambda m: m.randint(5, (3,), dtype=m.float32),
        "randperm": lambda m: m.randperm(5, dtype=m.float32, requires_grad=True),
        "normal tensors": lambda m: m.normal(m.zeros(3, dtype=m.float64), m.ones(3)),
        "normal floats": lambda m: m.normal(0.0, 1.0, size=(2, 3), dtype=m.float64),
        "bernoulli p": lambda m: m.bernoulli(m.full((3,), 0.5), 0.2),
        "multinomial": lambda m: m.multinomial(m.tensor([[1.0, 2.0, 3.0]]), 4,
                                               replacement=True),
        "poisson": lambda m: m.poisson(m.ones(3, requires_grad=True)),
        "rand_like": lambda m: m.rand_like(m.ones(2, dtype=m.float64)),
        "random_ uint8": lambda m: m.ones(3, dtype=m.uint8).random_(),
    }
    for name, fn in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours, theirs = fn(ember), fn(torch)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
        assert tuple(ours.shape) == tuple(theirs.shape), name
        assert ours.requires_grad == theirs.requires_grad, name


def test_default_generator_is_seeded_per_process():
    # like PyTorch, an unseeded process starts from a fresh random seed
    code = "import ember; print(ember.initial_seed())"
    seeds = set(_in_two_fresh_processes(code))
    assert len(seeds) == 2
    assert math.isfinite(float(next(iter(seeds))))


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device and CuPy")
def test_cuda_generators():
    ember.manual_seed(5)
    a = ember.rand(1000, device="cuda")
    assert a.device.type == "cuda" and 0 <= float(a.min()) and float(a.max()) < 1
    ember.manual_seed(5)
    assert ember.rand(1000, device="cuda").tolist() == a.tolist()
    g = ember.random.default_cuda_generator(0)
    state = g.get_state()
    x = ember.randn(100, device="cuda")
    g.set_state(state)
    assert ember.randn(100, device="cuda").tolist() == x.tolist()
    with ember.random.fork_rng():
        inside = ember.randint(0, 10, (50,), device="cuda")
    assert ember.randint(0, 10, (50,), device="cuda").tolist() == inside.tolist()
    assert sorted(ember.randperm(20, device="cuda").tolist()) == list(range(20))
    t = ember.empty(10_000, device="cuda").bernoulli_(0.25)
    assert abs(float(t.mean()) - 0.25) < 0.03
    m = ember.multinomial(ember.ones(10, device="cuda"), 10)
    assert sorted(m.tolist()) == list(range(10))
    with pytest.raises(RuntimeError, match="device type for generator"):
        ember.rand(3, device="cuda", generator=ember.Generator())
