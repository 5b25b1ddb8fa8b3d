"""ember.distributions: Normal, Uniform, Bernoulli, Categorical and their KL divergences,
checked against closed forms, sample statistics and PyTorch."""

import math

import numpy as np
import pytest

import ember
from ember.distributions import Bernoulli, Categorical, Normal, Uniform, kl_divergence
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def test_normal_density_moments_and_reparameterized_samples():
    loc = ember.tensor([0.0, 1.0], requires_grad=True)
    scale = ember.tensor([1.0, 2.0], requires_grad=True)
    n = Normal(loc, scale)
    assert n.batch_shape == (2,) and n.event_shape == () and n.has_rsample
    x = ember.tensor([0.5, -1.0])
    expected = -((x.numpy() - [0, 1]) ** 2) / (2 * np.array([1, 4])) - np.log([1, 2]) \
        - 0.5 * math.log(2 * math.pi)
    assert_close(n.log_prob(x), expected)
    assert_close(n.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log([1, 2]))
    assert_close(n.variance, [1.0, 4.0])
    assert_close(n.cdf(ember.tensor([0.0, 1.0])), [0.5, 0.5])
    assert_close(n.icdf(n.cdf(x)), x, atol=1e-5)
    ember.manual_seed(0)
    draws = n.rsample((20000,))
    assert draws.shape == (20000, 2)
    assert_close(draws.mean(0), [0.0, 1.0], atol=0.05)
    assert_close(draws.std(0), [1.0, 2.0], atol=0.05)
    draws.mean().backward()  # d mean / d loc = 1/2 each
    assert_close(loc.grad, [0.5, 0.5], atol=1e-4)  # (a float32 sum of 20000 terms)
    assert not n.sample((3,)).requires_grad


def test_categorical_probs_logits_log_prob_entropy_and_sampling():
    c = Categorical(logits=ember.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
    p = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    assert c.batch_shape == (2,) and c.param_shape == (2, 3)
    assert_close(c.probs[0], p)
    assert_close(c.log_prob(ember.tensor([2, 0])), [math.log(p[2]), math.log(1 / 3)])
    assert_close(c.entropy(), [-(p * np.log(p)).sum(), math.log(3)])
    assert c.mode.tolist() == [2, 0]
    ember.manual_seed(0)
    draws = c.sample((6000,))
    assert draws.shape == (6000, 2) and draws.dtype is ember.int64
    freq = np.bincount(draws[:, 0].numpy(), minlength=3) / 6000
    assert_close(freq, p, atol=0.03)
    normalized = Categorical(probs=ember.tensor([2.0, 6.0]))
    assert_close(normalized.probs, [0.25, 0.75])
    assert normalized.enumerate_support().tolist() == [0, 1]


def test_bernoulli_and_uniform():
    b = Bernoulli(probs=ember.tensor([0.3, 0.9]))
    assert_close(b.log_prob(ember.tensor([1.0, 0.0])), np.log([0.3, 0.1]))
    assert_close(b.entropy(), [-(0.3 * np.log(0.3) + 0.7 * np.log(0.7)),
                               -(0.9 * np.log(0.9) + 0.1 * np.log(0.1))])
    assert_close(Bernoulli(logits=ember.tensor([0.0])).probs, [0.5])
    u = Uniform(ember.tensor([0.0, -1.0]), ember.tensor([2.0, 1.0]))
    assert_close(u.log_prob(ember.tensor([1.0, 0.5])), [-math.log(2)] * 2)
    assert_close(u.entropy(), [math.log(2)] * 2)
    assert_close(u.variance, [4 / 12] * 2)
    ember.manual_seed(1)
    draws = u.sample((1000,))
    assert bool((draws >= u.low).all()) and bool((draws < u.high).all())


def test_kl_divergences():
    p, q = Normal(0.0, 1.0), Normal(1.0, 2.0)
    assert_close(kl_divergence(p, q), math.log(2) + (1 + 1) / (2 * 4) - 0.5)
    cp = Categorical(probs=ember.tensor([0.5, 0.5]))
    cq = Categorical(probs=ember.tensor([0.9, 0.1]))
    assert_close(kl_divergence(cp, cq), 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1))
    assert kl_divergence(Uniform(0.0, 2.0), Uniform(0.5, 3.0)).item() == math.inf
    with pytest.raises(NotImplementedError, match="No KL"):
        kl_divergence(p, cp)


def test_argument_and_value_validation():
    with pytest.raises(ValueError, match="parameter scale .* GreaterThan"):
        Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        Categorical()
    with pytest.raises(ValueError, match="within the support"):
        Categorical(logits=ember.zeros(3)).log_prob(ember.tensor(3))
    with pytest.raises(ValueError, match="within the support"):
        Bernoulli(probs=ember.tensor(0.5)).log_prob(ember.tensor(0.5))
    assert Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0


def test_reinforce_learns_a_bandit():
    # REINFORCE with a Categorical policy over 3 arms whose reward is 1 for arm 2 only
    ember.manual_seed(0)
    logits = ember.zeros(3, requires_grad=True)
    opt = ember.optim.Adam([logits], lr=0.1)
    for _ in range(100):
        policy = Categorical(logits=logits)
        actions = policy.sample((16,))
        rewards = (actions == 2).float()
        loss = -(policy.log_prob(actions) * (rewards - rewards.mean())).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert Categorical(logits=logits).probs[2].item() > 0.9


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_match_pytorch():
    rng = np.random.default_rng(0)
    loc, scale = rng.standard_normal(4), rng.uniform(0.5, 2, 4)
    logits, value = rng.standard_normal((4, 5)), np.array([0, 4, 2, 1])
    x = rng.standard_normal(4)

    def quantities(lib):
        d = lib.distributions
        lt = lib.tensor(loc, requires_grad=True)
        st = lib.tensor(scale, requires_grad=True)
        gt = lib.tensor(logits, requires_grad=True)
        n, m = d.Normal(lt, st), d.Normal(lt * 0.5, st + 1)
        c = d.Categorical(logits=gt)
        c2 = d.Categorical(probs=gt.softmax(-1).flip(-1))
        b = d.Bernoulli(logits=lt)
        outs = [n.log_prob(lib.tensor(x)), n.entropy(), n.cdf(lib.tensor(x)),
                d.kl.kl_divergence(n, m), c.log_prob(lib.tensor(value)), c.entropy(),
                d.kl.kl_divergence(c, c2), b.log_prob(lib.tensor((x > 0) * 1.0)), b.entropy(),
                d.kl.kl_divergence(b, d.Bernoulli(probs=st / 3))]
        total = sum(o.sum() for o in outs)
        grads = [g.numpy() for g in lib.autograd.grad(total, [lt, st, gt])]
        return [o.detach().numpy() for o in outs] + grads

    for ours, theirs in zip(quantities(ember), quantities(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)
