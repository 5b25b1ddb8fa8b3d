"""nn.AdaptiveLogSoftmaxWithLoss against its own definition, finite differences and PyTorch."""

import numpy as np
import pytest

import ember
from ember import nn

try:
    import torch
except ImportError:  # the parity test skips without PyTorch
    torch = None

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((9, 16))
_TARGET = np.array([0, 3, 5, 7, 12, 19, 2, 10, 15])


def _model(dtype=ember.float32):
    ember.manual_seed(0)
    return nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=True,
                                         dtype=dtype)


def test_output_is_the_log_probability_of_each_target():
    m = _model()
    x = ember.tensor(_X, dtype=ember.float32)
    out, loss = m(x, ember.tensor(_TARGET))
    full = m.log_prob(x)
    assert full.shape == (9, 20)
    np.testing.assert_allclose(np.exp(full.detach().numpy()).sum(1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(out.detach().numpy(), full.detach().numpy()[np.arange(9), _TARGET],
                               rtol=1e-5, atol=1e-6)
    assert loss.item() == pytest.approx(-out.detach().numpy().mean(), rel=1e-6)
    assert ember.equal(m.predict(x), full.argmax(1))
    one, _ = m(x[0], ember.tensor(_TARGET[0]))
    assert one.shape == () and one.item() == pytest.approx(out[0].item(), rel=1e-5)


def test_gradients_match_finite_differences():
    m = _model(ember.float64)
    target = ember.tensor(_TARGET)
    x = ember.tensor(_X, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x: m(x, target).loss, (x,))


def test_bad_targets_and_cutoffs():
    m = _model()
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        m(ember.zeros(1, 16), ember.tensor([20]))
    with pytest.raises(RuntimeError, match="same size in the batch"):
        m(ember.zeros(2, 16), ember.tensor([1]))
    for cutoffs in ([10, 4], [0, 5], [5, 20], [5, 5], []):
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_pytorch():
    m = _model()
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=True)
    t.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in m.state_dict().items()})
    assert repr(m) == repr(t)
    x, tx = ember.tensor(_X, dtype=ember.float32, requires_grad=True), \
        torch.tensor(_X, dtype=torch.float32, requires_grad=True)
    out, tout = m(x, ember.tensor(_TARGET)), t(tx, torch.tensor(_TARGET))
    out.loss.backward()
    tout.loss.backward()
    np.testing.assert_allclose(out.output.detach().numpy(), tout.output.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
    for (name, p), tp in zip(m.named_parameters(), t.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-7,
                                   err_msg=name)
    np.testing.assert_allclose(m.log_prob(x).detach().numpy(), t.log_prob(tx).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
