"""F.gumbel_softmax: soft samples on the simplex, hard one-hot samples with the soft
sample's gradient, and the Gumbel-max law (argmax frequencies follow softmax(logits))."""

import numpy as np

import ember
import ember.nn.functional as F
from ember.testing import assert_close


def test_soft_samples_lie_on_the_simplex_and_sharpen_with_temperature():
    ember.manual_seed(0)
    logits = ember.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    y = F.gumbel_softmax(logits, tau=0.5)
    assert y.shape == (2, 3) and bool((y >= 0).all())
    assert_close(y.sum(-1), [1.0, 1.0])
    cold = F.gumbel_softmax(logits, tau=0.01)
    assert_close(cold.max(-1).values, [1.0, 1.0], atol=1e-3)
    assert F.gumbel_softmax(ember.zeros(4, 2, 5), dim=1).sum(1).shape == (4, 5)


def test_hard_samples_are_one_hot_with_the_soft_gradient():
    logits = ember.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    weights = ember.tensor([[1.0, -2.0, 3.0]])
    ember.manual_seed(5)
    hard = F.gumbel_softmax(logits, tau=0.7, hard=True)
    assert sorted(hard.detach().numpy().ravel().tolist()) == [0.0, 0.0, 1.0]
    (hard * weights).sum().backward()
    hard_grad = logits.grad.numpy().copy()
    logits.grad = None
    ember.manual_seed(5)  # the same noise: the soft sample hard was made from
    (F.gumbel_softmax(logits, tau=0.7) * weights).sum().backward()
    assert_close(hard_grad, logits.grad.numpy())


def test_argmax_frequencies_follow_the_softmax():
    ember.manual_seed(1)
    logits = ember.tensor([1.0, 2.0, 3.0]).expand(4000, 3)
    picks = F.gumbel_softmax(logits, hard=True).argmax(-1).numpy()
    p = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    assert_close(np.bincount(picks, minlength=3) / 4000, p, atol=0.03)
