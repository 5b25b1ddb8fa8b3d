"""The fused LSTM step kernels (ember/ops/_native_rnn.py) inside `LSTMSequence`, against
the NumPy path (``use_numba(False)``), the step-by-step composite of ember ops in float64,
and gradcheck on both paths; padded and packed (shrinking batch) sequences, both
directions."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.ops import _native as native
from ember.ops import rnn

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")

# (batch sizes per step, reverse)
LAYOUTS = [((5, 5, 5, 5), False), ((5, 4, 4, 2, 1), False), ((5, 3, 3, 1), True)]


def _inputs(batch_sizes, dtype, hidden=6, seed=0):
    rng = np.random.default_rng(seed)
    n, b = sum(batch_sizes), batch_sizes[0]
    return [rng.standard_normal(shape).astype(dtype) * scale for shape, scale in (
        ((n, 4 * hidden), 1.0), ((b, hidden), 0.5), ((b, hidden), 0.5),
        ((4 * hidden, hidden), 0.4))]


def _sequence(arrays, batch_sizes, reverse, flag, composite=False):
    """(out, h_n, c_n) and the gradients of all four inputs for a fixed output gradient."""
    with native.use_numba(flag):
        xw, h0, c0, w_hh = (ember.tensor(a, requires_grad=True) for a in arrays)
        fn = rnn.lstm_composite if composite else rnn.LSTMSequence.apply
        out, hn, cn = fn(xw, h0, c0, w_hh, None, batch_sizes=batch_sizes, reverse=reverse)
        rng = np.random.default_rng(9)
        loss = sum((t * ember.tensor(rng.standard_normal(t.shape).astype(arrays[0].dtype)))
                   .sum() for t in (out, hn, cn))
        loss.backward()
    return ([t.detach().numpy() for t in (out, hn, cn)]
            + [t.grad.numpy() for t in (xw, h0, c0, w_hh)])


# float64 against the composite of ember ops; float32 against the NumPy step
REFERENCES = [(np.float64, True, 1e-12, 1e-12), (np.float32, False, 2e-5, 2e-6)]


@needs_numba
@pytest.mark.parametrize("dtype,composite,rtol,atol", REFERENCES, ids=["float64", "float32"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_fused_matches_reference(layout, dtype, composite, rtol, atol):
    batch_sizes, reverse = layout
    arrays = _inputs(batch_sizes, dtype)
    fused = _sequence(arrays, batch_sizes, reverse, True)
    reference = _sequence(arrays, batch_sizes, reverse, False, composite=composite)
    for a, b in zip(fused, reference):
        assert a.dtype == dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("flag", [True, False], ids=["numba", "numpy"])
def test_gradcheck_both_paths(flag):
    batch_sizes = (3, 3, 2)
    arrays = _inputs(batch_sizes, np.float64, hidden=3)
    inputs = tuple(ember.tensor(a, requires_grad=True) for a in arrays)

    def fn(xw, h0, c0, w_hh):
        return rnn.LSTMSequence.apply(xw, h0, c0, w_hh, None, batch_sizes=batch_sizes)

    with native.use_numba(flag):
        assert gradcheck(fn, inputs)


def test_lstm_layer_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 4, 10)).astype(np.float32)
    ours = ember.nn.LSTM(10, 16, num_layers=2)
    theirs = torch.nn.LSTM(10, 16, num_layers=2)
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy())
                            for k, v in ours.state_dict().items()})
    out, (h, c) = ours(ember.tensor(x, requires_grad=True))
    t_out, (t_h, t_c) = theirs(torch.tensor(x))
    (out.sum() + h.sum() * 2 + c.sum()).backward()
    (t_out.sum() + t_h.sum() * 2 + t_c.sum()).backward()
    for a, b in ((out, t_out), (h, t_h), (c, t_c)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)
