"""RNN, LSTM, GRU and their cells; the sequence Functions of ember/ops/rnn.py."""

import gc
import math
import warnings
import weakref

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck, gradgradcheck
from ember.nn.utils.rnn import pack_sequence, pad_packed_sequence
from ember.ops import rnn as rnn_ops
from ember.testing import assert_close

RNG = np.random.default_rng(0)


def _t(*shape, requires_grad=True):
    return ember.tensor(RNG.standard_normal(shape), requires_grad=requires_grad)


# ----------------------------------------------------------------------
# parameters, init, repr, argument checks


def test_parameter_names_shapes_and_order():
    lstm = nn.LSTM(10, 20, 2, bidirectional=True, proj_size=5)
    names = [n for n, _ in lstm.named_parameters()]
    per = ["weight_ih_l{}{}", "weight_hh_l{}{}", "bias_ih_l{}{}", "bias_hh_l{}{}",
           "weight_hr_l{}{}"]
    assert names == [p.format(layer, suffix) for layer in range(2) for suffix in ("", "_reverse")
                     for p in per]
    assert lstm.weight_ih_l0.shape == (80, 10) and lstm.weight_hh_l0.shape == (80, 5)
    assert lstm.weight_ih_l1.shape == (80, 10) and lstm.weight_hr_l1_reverse.shape == (5, 20)
    assert lstm._flat_weights_names == names and len(lstm.all_weights) == 4
    gru = nn.GRU(3, 4, bias=False)
    assert [n for n, _ in gru.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert gru.weight_ih_l0.shape == (12, 3)
    assert nn.RNN(3, 4).weight_hh_l0.shape == (4, 4)


def test_init_bounds():
    lstm = nn.LSTM(8, 16, 2)
    bound = 1 / math.sqrt(16)
    for p in lstm.parameters():
        assert float(p.abs().max()) <= bound


def test_repr():
    assert repr(nn.LSTM(10, 20)) == "LSTM(10, 20)"
    assert repr(nn.LSTM(10, 20, 2, bias=False, batch_first=True, dropout=0.1,
                        bidirectional=True, proj_size=5)) == (
        "LSTM(10, 20, proj_size=5, num_layers=2, bias=False, batch_first=True, dropout=0.1, "
        "bidirectional=True)")
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu", bias=False)) == (
        "RNNCell(3, 4, bias=False, nonlinearity=relu)")
    assert repr(nn.GRUCell(3, 4)) == "GRUCell(3, 4)"


@pytest.mark.parametrize("make, error, message", [
    (lambda: nn.LSTM(10, 20, 2, proj_size=20), ValueError, "smaller than hidden_size"),
    (lambda: nn.GRU(10, 20, proj_size=5), ValueError, "only supported for LSTM"),
    (lambda: nn.LSTM(10, 20, proj_size=-1), ValueError, "positive integer or zero"),
    (lambda: nn.LSTM(10, 20.0), TypeError, "hidden_size should be of type int"),
    (lambda: nn.LSTM(10, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.LSTM(10, 20, 0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.LSTM(10, 20, 2, dropout=1.5), ValueError, "dropout should be a number"),
    (lambda: nn.RNN(10, 20, nonlinearity="gelu"), ValueError, "Unknown nonlinearity 'gelu'"),
])
def test_constructor_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_dropout_warning_with_one_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, 1, dropout=0.5)


def test_rnn_positional_nonlinearity():
    assert nn.RNN(3, 4, 2, "relu").mode == "RNN_RELU"


@pytest.mark.parametrize("call, error, message", [
    (lambda m: m(ember.randn(5, 3, 7)), RuntimeError,
     "input.size\\(-1\\) must be equal to input_size. Expected 10, got 7"),
    (lambda m: m(ember.randn(5, 3, 2, 10)), ValueError,
     "LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda m: m(ember.randn(5, 3, 10), (ember.randn(1, 3, 20), ember.randn(2, 3, 20))),
     RuntimeError, "Expected hidden\\[0\\] size \\(2, 3, 20\\), got \\[1, 3, 20\\]"),
    (lambda m: m(ember.randn(5, 3, 10), (ember.randn(2, 3, 20), ember.randn(2, 3, 21))),
     RuntimeError, "Expected hidden\\[1\\] size \\(2, 3, 20\\), got \\[2, 3, 21\\]"),
    (lambda m: m(ember.randn(5, 3, 10), (ember.randn(2, 20), ember.randn(2, 20))),
     RuntimeError, "For batched 3-D input, hx and cx should also be 3-D"),
    (lambda m: m(ember.randn(5, 10), (ember.randn(2, 3, 20), ember.randn(2, 3, 20))),
     RuntimeError, "For unbatched 2-D input, hx and cx should also be 2-D"),
    (lambda m: m(ember.randn(5, 3, 10, dtype=ember.float64)), ValueError,
     "input dtype \\(ember.float64\\) does not match weight dtype"),
])
def test_lstm_input_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.LSTM(10, 20, 2))


def test_gru_hidden_errors():
    gru = nn.GRU(10, 20, 2)
    expected = "Expected hidden size \\(2, 3, 20\\), got \\[2, 4, 20\\]"
    with pytest.raises(RuntimeError, match=expected):
        gru(ember.randn(5, 3, 10), ember.randn(2, 4, 20))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx should also be 3-D"):
        gru(ember.randn(5, 3, 10), ember.randn(2, 20))


# ----------------------------------------------------------------------
# shapes and options


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_output_shapes(mode, bidirectional):
    m = getattr(nn, mode)(4, 5, 2, batch_first=True, bidirectional=bidirectional)
    d = 2 if bidirectional else 1
    out, h = m(ember.randn(3, 7, 4))
    assert out.shape == (3, 7, 5 * d)
    hn = h[0] if mode == "LSTM" else h
    assert hn.shape == (2 * d, 3, 5)
    out, h = m(ember.randn(7, 4))  # unbatched
    assert out.shape == (7, 5 * d) and (h[0] if mode == "LSTM" else h).shape == (2 * d, 5)


def test_lstm_projection_shapes():
    out, (h, c) = nn.LSTM(4, 6, 2, proj_size=3, bidirectional=True)(ember.randn(5, 2, 4))
    assert out.shape == (5, 2, 6) and h.shape == (4, 2, 3) and c.shape == (4, 2, 6)


def test_initial_state_is_used_and_default_is_zero():
    m = nn.GRU(3, 4)
    x = ember.randn(5, 2, 3)
    out_default, _ = m(x)
    out_zero, _ = m(x, ember.zeros(1, 2, 4))
    assert_close(out_default, out_zero)
    out_other, _ = m(x, ember.ones(1, 2, 4))
    assert not np.allclose(out_default.detach().numpy(), out_other.detach().numpy())


def test_last_output_equals_final_hidden_state():
    m = nn.LSTM(3, 4, 2, bidirectional=True)
    out, (h, _) = m(ember.randn(6, 2, 3))
    assert_close(out[-1, :, :4], h[2])  # forward direction of the last layer
    assert_close(out[0, :, 4:], h[3])  # its reverse direction ends at step 0


def test_dropout_between_layers_only_in_training():
    ember.manual_seed(0)
    m = nn.LSTM(3, 8, 2, dropout=0.5)
    x = ember.randn(4, 2, 3)
    m.eval()
    assert_close(m(x)[0], m(x)[0])
    m.train()
    a, b = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    assert not np.allclose(a, b)


def test_flatten_parameters_is_a_noop():
    m = nn.LSTM(3, 4)
    before = [p.detach().numpy().copy() for p in m.parameters()]
    assert m.flatten_parameters() is None
    for p, b in zip(m.parameters(), before):
        assert_close(p, b)


def test_packed_input_matches_each_sequence_alone():
    m = nn.LSTM(3, 4, 2, bidirectional=True).double()
    seqs = [_t(n, 3, requires_grad=False) for n in (2, 5, 3)]
    packed = pack_sequence(seqs, enforce_sorted=False)
    out, (h, c) = m(packed)
    assert isinstance(out, type(packed))
    padded, lengths = pad_packed_sequence(out, batch_first=True)
    assert lengths.tolist() == [2, 5, 3]
    for i, s in enumerate(seqs):
        alone, (h1, c1) = m(s.unsqueeze(1))
        assert_close(padded[i, :s.shape[0]], alone[:, 0])
        assert_close(padded[i, s.shape[0]:], np.zeros((5 - s.shape[0], 8)))
        assert_close(h[:, i], h1[:, 0])
        assert_close(c[:, i], c1[:, 0])


# ----------------------------------------------------------------------
# the sequence Functions: the array loops agree with the ember-op composites


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch_sizes", [(3, 3, 3), (3, 2, 2, 1)])
def test_sequence_functions_match_composites(reverse, batch_sizes):
    n, kw = sum(batch_sizes), {"batch_sizes": batch_sizes, "reverse": reverse}
    cases = [
        (rnn_ops.LSTMSequence, rnn_ops.lstm_composite, (_t(n, 12), _t(3, 2), _t(3, 3),
                                                        _t(12, 2), _t(2, 3)), {}),
        (rnn_ops.GRUSequence, rnn_ops.gru_composite, (_t(n, 9), _t(3, 3), _t(9, 3), _t(9)), {}),
        (rnn_ops.RNNSequence, rnn_ops.rnn_composite, (_t(n, 3), _t(3, 3), _t(3, 3)),
         {"nonlinearity": "tanh"}),
        (rnn_ops.RNNSequence, rnn_ops.rnn_composite, (_t(n, 3), _t(3, 3), _t(3, 3)),
         {"nonlinearity": "relu"}),
    ]
    for fn, composite, inputs, extra in cases:
        fast = fn.apply(*inputs, **kw, **extra)
        slow = composite(*inputs, **kw, **extra)
        grads = [ember.tensor(RNG.standard_normal(o.shape)) for o in fast]
        g_fast = ember.autograd.grad(fast, inputs, grads)
        g_slow = ember.autograd.grad(slow, inputs, grads)
        for a, b in zip(fast + g_fast, slow + g_slow):
            assert_close(a, b, rtol=1e-10, atol=1e-12)
        assert gradcheck(lambda *xs, fn=fn, extra=extra: fn.apply(*xs, **kw, **extra), inputs)


def test_sequence_function_double_backward():
    kw = {"batch_sizes": (2, 2, 1), "reverse": False}
    inputs = (_t(5, 8), _t(2, 2), _t(2, 2), _t(8, 2))
    assert gradgradcheck(lambda *xs: rnn_ops.LSTMSequence.apply(*xs, None, **kw), inputs)
    inputs = (_t(5, 6), _t(2, 2), _t(6, 2), _t(6))
    assert gradgradcheck(lambda *xs: rnn_ops.GRUSequence.apply(*xs, **kw), inputs)


# ----------------------------------------------------------------------
# gradchecks of the layers and cells (float64)


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_gradcheck_and_gradgradcheck(cell):
    m = getattr(nn, cell)(2, 3).double()
    x = _t(2, 2)
    h = _t(2, 3)
    params = list(m.parameters())
    if cell == "LSTMCell":
        c = _t(2, 3)

        def fn(x, h, c, *ps):
            return ember.lstm_cell(x, (h, c), *ps)
        inputs = (x, h, c, *params)
    else:
        op = {"RNNCell": ember.rnn_tanh_cell, "GRUCell": ember.gru_cell}[cell]

        def fn(x, h, *ps):
            return op(x, h, *ps)
        inputs = (x, h, *params)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_modules(cell):
    m = getattr(nn, cell)(3, 4)
    out = m(ember.randn(2, 3))
    h = out[0] if cell == "LSTMCell" else out
    assert h.shape == (2, 4)
    single = m(ember.randn(3))
    assert (single[0] if cell == "LSTMCell" else single).shape == (4,)
    with pytest.raises(ValueError, match=f"{cell}: Expected input to be 1D or 2D, got 3D"):
        m(ember.randn(1, 2, 3))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5"):
        m(ember.randn(2, 5))


def test_lstm_cell_hidden_errors():
    c = nn.LSTMCell(10, 20)
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 21"):
        c(ember.randn(3, 10), (ember.randn(3, 21), ember.randn(3, 20)))
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch"):
        c(ember.randn(3, 10), (ember.randn(4, 20), ember.randn(4, 20)))


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_two_layer_bidirectional_gradcheck(mode):
    m = getattr(nn, mode)(2, 2, 2, bidirectional=True).double()
    x = _t(3, 2, 2)
    # gradcheck perturbs the parameters in place, and the module reads those same tensors.
    assert gradcheck(lambda x, *ps: m(x)[0], (x, *m.parameters()))


def test_rnn_relu_and_tanh_gradcheck_with_hidden_state():
    for nonlinearity in ("tanh", "relu"):
        m = nn.RNN(2, 3, nonlinearity=nonlinearity).double()
        x, h0 = _t(4, 2, 2), _t(1, 2, 3)
        assert gradcheck(lambda x, h0, *ps, m=m: m(x, h0)[0], (x, h0, *m.parameters()))


def test_lstm_module_gradgradcheck():
    m = nn.LSTM(2, 2, bidirectional=True).double()
    x = _t(2, 1, 2)
    assert gradgradcheck(lambda x: m(x)[0], (x,))


# ----------------------------------------------------------------------
# memory and a complete model


def test_graph_is_freed_without_garbage_collection():
    m = nn.LSTM(3, 4, 2)
    gc.collect()
    gc.disable()
    try:
        out, (h, c) = m(ember.randn(5, 2, 3))
        refs = [weakref.ref(out), weakref.ref(out.grad_fn)]
        (out.sum() + h.sum()).backward()
        del out, h, c
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def test_lstm_language_model_trains():
    ember.manual_seed(0)
    vocab, steps, batch = 20, 6, 4

    class LanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, 8)
            self.rnn = nn.LSTM(8, 16, 2, dropout=0.1)
            self.decoder = nn.Linear(16, vocab)

        def forward(self, tokens):
            out, _ = self.rnn(self.encoder(tokens))
            return self.decoder(out)

    model = LanguageModel()
    opt = ember.optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    data = ember.tensor(rng.integers(0, vocab, (steps + 1, batch)))
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(15):
            opt.zero_grad()
            logits = model(data[:-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), data[1:].reshape(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8
