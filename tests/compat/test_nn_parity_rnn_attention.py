"""PyTorch parity for embeddings, recurrent layers (packed sequences too), attention,
transformers and parametrizations: load PyTorch's state dict, run the same inputs in
float32, compare outputs and the gradients of inputs and parameters (rtol 1e-4)."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# Both libraries warn alike when a boolean padding mask meets a float attention mask.
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning")

RTOL, ATOL = 1e-4, 1e-5


def _load(ours, theirs):
    ours.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})


def _close(a, b, what=""):
    if a is None or b is None:
        assert a is None and b is None, what
        return
    a = a.to_dense() if getattr(a, "is_sparse", False) else a
    b = b.to_dense() if b.is_sparse else b
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=RTOL, atol=ATOL,
                               err_msg=what)


def _pair(array, requires_grad=True):
    return (ember.tensor(array, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def _check_params(ours, theirs):
    names = [n for n, _ in ours.named_parameters()]
    assert names == [n for n, _ in theirs.named_parameters()]
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        _close(p.grad, q.grad, name)


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------
# embeddings


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1, "sparse": True},
                                    {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0},
                                    {"scale_grad_by_freq": True}, {"sparse": True}])
def test_embedding(kwargs):
    theirs = torch.nn.Embedding(7, 3, **kwargs)
    ours = ember.nn.Embedding(7, 3, **kwargs)
    _load(ours, theirs)
    idx = np.array([[0, 2, 0, 6], [4, 2, 1, 3]])
    ye, yt = ours(ember.tensor(idx)), theirs(torch.tensor(idx))
    g = _rand(np.random.default_rng(0), *yt.shape)
    (ye * ember.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    _close(ye, yt)
    assert ours.weight.grad.is_sparse == theirs.weight.grad.is_sparse
    _close(ours.weight.grad, theirs.weight.grad)
    _close(ours.weight, theirs.weight)  # max_norm renormalized the same rows


@pytest.mark.parametrize("kwargs", [{"mode": "sum"}, {"mode": "mean"}, {"mode": "max"},
                                    {"mode": "mean", "padding_idx": 0},
                                    {"mode": "max", "padding_idx": 2},
                                    {"mode": "sum", "include_last_offset": True},
                                    {"mode": "sum", "sparse": True},
                                    {"mode": "mean", "max_norm": 1.0},
                                    {"mode": "sum", "per_sample_weights": True}])
def test_embedding_bag(kwargs):
    kwargs = dict(kwargs)
    weighted = kwargs.pop("per_sample_weights", False)
    theirs = torch.nn.EmbeddingBag(7, 3, **kwargs)
    ours = ember.nn.EmbeddingBag(7, 3, **kwargs)
    _load(ours, theirs)
    flat, offsets = np.array([0, 2, 0, 5, 4, 2, 1, 3, 6]), np.array([0, 3, 3, 5])
    if kwargs.get("include_last_offset"):
        # PyTorch documents offsets[-1] == len(input) here (its kernels differ otherwise)
        offsets = np.array([0, 3, 3, 5, 9])
    pe = pt = None
    if weighted:
        pe, pt = _pair(_rand(np.random.default_rng(1), 9))
    ye = ours(ember.tensor(flat), ember.tensor(offsets), per_sample_weights=pe)
    yt = theirs(torch.tensor(flat), torch.tensor(offsets), per_sample_weights=pt)
    g = _rand(np.random.default_rng(0), *yt.shape)
    (ye * ember.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    _close(ye, yt)
    _close(ours.weight.grad, theirs.weight.grad)
    if weighted:
        _close(pe.grad, pt.grad)


# ----------------------------------------------------------------------
# recurrent layers

RNN_CASES = [
    ("LSTM", {}), ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"num_layers": 2, "proj_size": 2, "batch_first": True}),
    ("LSTM", {"bidirectional": True, "proj_size": 2, "bias": False}),
    ("GRU", {}), ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {"bias": False, "num_layers": 2}),
    ("RNN", {"nonlinearity": "tanh", "num_layers": 2, "bidirectional": True}),
    ("RNN", {"nonlinearity": "relu", "batch_first": True}),
    ("RNN", {"nonlinearity": "relu", "bias": False, "bidirectional": True}),
]


def _states(mode, kwargs, batch, rng):
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    hidden = kwargs.get("proj_size") or 3
    h = _pair(_rand(rng, layers, batch, hidden))
    if mode != "LSTM":
        return h
    c = _pair(_rand(rng, layers, batch, 3))
    return (h[0], c[0]), (h[1], c[1])


def _flat_states(states):
    return list(states) if isinstance(states, tuple) else [states]


@pytest.mark.parametrize("mode, kwargs", RNN_CASES)
@pytest.mark.parametrize("batched", [True, False])
def test_recurrent_layer(mode, kwargs, batched):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = getattr(torch.nn, mode)(4, 3, **kwargs)
    ours = getattr(ember.nn, mode)(4, 3, **kwargs)
    _load(ours, theirs)
    rng = np.random.default_rng(0)
    shape = ((2, 5, 4) if kwargs.get("batch_first") else (5, 2, 4)) if batched else (5, 4)
    xe, xt = _pair(_rand(rng, *shape))
    he, ht = _states(mode, kwargs, 2, rng)
    if not batched:
        he = tuple(h[:, 0] for h in he) if mode == "LSTM" else he[:, 0]
        ht = tuple(h[:, 0] for h in ht) if mode == "LSTM" else ht[:, 0]
        he = tuple(h.detach().requires_grad_() for h in he) if mode == "LSTM" else (
            he.detach().requires_grad_())
        ht = tuple(h.detach().requires_grad_() for h in ht) if mode == "LSTM" else (
            ht.detach().requires_grad_())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oe, hne = ours(xe, he)
        ot, hnt = theirs(xt, ht)
    g = _rand(rng, *ot.shape)
    loss_e = (oe * ember.tensor(g)).sum() + sum((h * h).sum() for h in _flat_states(hne))
    loss_t = (ot * torch.tensor(g)).sum() + sum((h * h).sum() for h in _flat_states(hnt))
    loss_e.backward()
    loss_t.backward()
    _close(oe, ot, "output")
    for a, b in zip(_flat_states(hne), _flat_states(hnt)):
        _close(a, b, "final state")
    _close(xe.grad, xt.grad, "input grad")
    for a, b in zip(_flat_states(he), _flat_states(ht)):
        _close(a.grad, b.grad, "initial state grad")
    _check_params(ours, theirs)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_recurrent_layer_packed(mode, bidirectional, enforce_sorted):
    theirs = getattr(torch.nn, mode)(4, 3, 2, bidirectional=bidirectional)
    ours = getattr(ember.nn, mode)(4, 3, 2, bidirectional=bidirectional)
    _load(ours, theirs)
    rng = np.random.default_rng(0)
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    xe, xt = _pair(_rand(rng, 5, 3, 4))
    pe = ember.nn.utils.rnn.pack_padded_sequence(xe, lengths, enforce_sorted=enforce_sorted)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=enforce_sorted)
    he, ht = _states(mode, {"num_layers": 2, "bidirectional": bidirectional}, 3, rng)
    oe, hne = ours(pe, he)
    ot, hnt = theirs(pt, ht)
    assert isinstance(oe, ember.nn.utils.rnn.PackedSequence)
    _close(oe.data, ot.data, "packed output")
    assert oe.batch_sizes.tolist() == ot.batch_sizes.tolist()
    ye, le = ember.nn.utils.rnn.pad_packed_sequence(oe, batch_first=True)
    yt, lt = torch.nn.utils.rnn.pad_packed_sequence(ot, batch_first=True)
    assert le.tolist() == lt.tolist()
    g = _rand(rng, *yt.shape)
    ((ye * ember.tensor(g)).sum() + sum((h * h).sum() for h in _flat_states(hne))).backward()
    ((yt * torch.tensor(g)).sum() + sum((h * h).sum() for h in _flat_states(hnt))).backward()
    _close(ye, yt, "padded output")
    for a, b in zip(_flat_states(hne), _flat_states(hnt)):
        _close(a, b, "final state")
    _close(xe.grad, xt.grad, "input grad")
    for a, b in zip(_flat_states(he), _flat_states(ht)):
        _close(a.grad, b.grad, "initial state grad")
    _check_params(ours, theirs)


@pytest.mark.parametrize("cell, kwargs", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                          ("LSTMCell", {}), ("GRUCell", {}),
                                          ("GRUCell", {"bias": False})])
def test_cells(cell, kwargs):
    theirs = getattr(torch.nn, cell)(4, 3, **kwargs)
    ours = getattr(ember.nn, cell)(4, 3, **kwargs)
    _load(ours, theirs)
    rng = np.random.default_rng(0)
    xe, xt = _pair(_rand(rng, 2, 4))
    he, ht = _pair(_rand(rng, 2, 3))
    if cell == "LSTMCell":
        ce, ct = _pair(_rand(rng, 2, 3))
        (a, b), (c, d) = ours(xe, (he, ce)), theirs(xt, (ht, ct))
        ((a * 2).sum() + (b * b).sum()).backward()
        ((c * 2).sum() + (d * d).sum()).backward()
        _close(a, c)
        _close(b, d)
        _close(ce.grad, ct.grad)
    else:
        a, c = ours(xe, he), theirs(xt, ht)
        (a * a).sum().backward()
        (c * c).sum().backward()
        _close(a, c)
    _close(xe.grad, xt.grad)
    _close(he.grad, ht.grad)
    _check_params(ours, theirs)


# ----------------------------------------------------------------------
# attention


@pytest.mark.parametrize("mask", ["none", "bool", "float", "dead_row", "causal"])
@pytest.mark.parametrize("gqa", [False, True])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_scaled_dot_product_attention(mask, gqa, scale):
    rng = np.random.default_rng(0)
    kv_heads = 2 if gqa else 4
    (qe, qt), (ke, kt), (ve, vt) = (_pair(_rand(rng, 2, 4, 3, 5)),
                                    _pair(_rand(rng, 2, kv_heads, 6, 5)),
                                    _pair(_rand(rng, 2, kv_heads, 6, 7)))
    kwargs_e, kwargs_t = {"scale": scale, "enable_gqa": gqa}, {"scale": scale, "enable_gqa": gqa}
    if mask == "causal":
        kwargs_e["is_causal"] = kwargs_t["is_causal"] = True
    elif mask != "none":
        m = (rng.random((3, 6)) > 0.3) if mask != "float" else _rand(rng, 2, 1, 3, 6)
        if mask == "dead_row":
            m[1] = False
        kwargs_e["attn_mask"], kwargs_t["attn_mask"] = ember.tensor(m), torch.tensor(m)
    oe = ember.nn.functional.scaled_dot_product_attention(qe, ke, ve, **kwargs_e)
    ot = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, **kwargs_t)
    g = _rand(rng, *ot.shape)
    (oe * ember.tensor(g)).sum().backward()
    (ot * torch.tensor(g)).sum().backward()
    for a, b in ((oe, ot), (qe.grad, qt.grad), (ke.grad, kt.grad), (ve.grad, vt.grad)):
        _close(a, b)


MHA_CASES = [
    {}, {"bias": False}, {"add_bias_kv": True}, {"add_zero_attn": True},
    {"kdim": 5, "vdim": 6}, {"batch_first": True}, {"need_weights": False},
    {"average_attn_weights": False}, {"attn_mask": "bool"}, {"attn_mask": "float3d"},
    {"key_padding_mask": "bool"}, {"key_padding_mask": "float"}, {"is_causal": True},
    {"is_causal": True, "need_weights": False}, {"unbatched": True},
    {"add_bias_kv": True, "add_zero_attn": True, "key_padding_mask": "bool",
     "attn_mask": "bool", "batch_first": True, "kdim": 5, "vdim": 6},
]


@pytest.mark.parametrize("case", MHA_CASES, ids=lambda c: "-".join(sorted(c)) or "default")
def test_multihead_attention(case):
    case = dict(case)
    build = {k: case.pop(k) for k in ("bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim",
                                      "batch_first") if k in case}
    theirs = torch.nn.MultiheadAttention(8, 2, **build)
    ours = ember.nn.MultiheadAttention(8, 2, **build)
    _load(ours, theirs)
    rng = np.random.default_rng(0)
    batched = not case.pop("unbatched", False)
    separate = "kdim" in build
    L = S = 4
    if separate:
        S = 5

    def shape(n, e):
        if not batched:
            return (n, e)
        return (2, n, e) if build.get("batch_first") else (n, 2, e)
    qe, qt = _pair(_rand(rng, *shape(L, 8)))
    if separate:
        (ke, kt), (ve, vt) = _pair(_rand(rng, *shape(S, 5))), _pair(_rand(rng, *shape(S, 6)))
    else:
        ke = ve = qe
        kt = vt = qt
    extra_e, extra_t = {}, {}
    mask = case.pop("attn_mask", None)
    if case.get("is_causal"):
        m = torch.nn.Transformer.generate_square_subsequent_mask(L).numpy()
        extra_e["attn_mask"], extra_t["attn_mask"] = ember.tensor(m), torch.tensor(m)
    elif mask == "bool":
        m = rng.random((L, S)) > 0.7
        extra_e["attn_mask"], extra_t["attn_mask"] = ember.tensor(m), torch.tensor(m)
    elif mask == "float3d":
        m = _rand(rng, 4, L, S)
        extra_e["attn_mask"], extra_t["attn_mask"] = ember.tensor(m), torch.tensor(m)
    kpm = case.pop("key_padding_mask", None)
    if kpm is not None:
        m = np.zeros((2, S), dtype=bool)
        m[1, -1] = True
        if kpm == "float":
            m = _rand(rng, 2, S)
        extra_e["key_padding_mask"], extra_t["key_padding_mask"] = ember.tensor(m), torch.tensor(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oe, we = ours(qe, ke, ve, **case, **extra_e)
        ot, wt = theirs(qt, kt, vt, **case, **extra_t)
    g = _rand(rng, *ot.shape)
    (oe * ember.tensor(g)).sum().backward()
    (ot * torch.tensor(g)).sum().backward()
    _close(oe, ot, "output")
    _close(we, wt, "attention weights")
    _close(qe.grad, qt.grad, "query grad")
    if separate:
        _close(ke.grad, kt.grad, "key grad")
        _close(ve.grad, vt.grad, "value grad")
    _check_params(ours, theirs)


# ----------------------------------------------------------------------
# transformers


def _activation(name, lib):
    return {"relu": "relu", "gelu": "gelu", "callable": lib.nn.functional.silu,
            "module": lib.nn.GELU()}[name]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation, bias, masks", [
    ("relu", True, "none"), ("gelu", True, "causal"), ("callable", False, "padding"),
    ("module", True, "both")])
def test_transformer_encoder(norm_first, batch_first, activation, bias, masks):
    options = dict(dim_feedforward=16, dropout=0.0, batch_first=batch_first,
                   norm_first=norm_first, bias=bias, layer_norm_eps=1e-4)
    layer_t = torch.nn.TransformerEncoderLayer(8, 2, activation=_activation(activation, torch),
                                               **options)
    layer_e = ember.nn.TransformerEncoderLayer(8, 2, activation=_activation(activation, ember),
                                               **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.TransformerEncoder(layer_t, 2, norm=torch.nn.LayerNorm(8))
    ours = ember.nn.TransformerEncoder(layer_e, 2, norm=ember.nn.LayerNorm(8))
    _load(ours, theirs)
    rng = np.random.default_rng(0)
    xe, xt = _pair(_rand(rng, *((2, 5, 8) if batch_first else (5, 2, 8))))
    kw_e, kw_t = {}, {}
    if masks in ("causal", "both"):
        kw_e["mask"] = ember.nn.Transformer.generate_square_subsequent_mask(5)
        kw_t["mask"] = torch.nn.Transformer.generate_square_subsequent_mask(5)
    if masks in ("padding", "both"):
        m = np.zeros((2, 5), dtype=bool)
        m[1, 3:] = True
        kw_e["src_key_padding_mask"], kw_t["src_key_padding_mask"] = (ember.tensor(m),
                                                                      torch.tensor(m))
    oe, ot = ours(xe, **kw_e), theirs(xt, **kw_t)
    g = _rand(rng, *ot.shape)
    (oe * ember.tensor(g)).sum().backward()
    (ot * torch.tensor(g)).sum().backward()
    _close(oe, ot, "output")
    _close(xe.grad, xt.grad, "input grad")
    _check_params(ours, theirs)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer(norm_first, batch_first):
    options = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                   dim_feedforward=16, dropout=0.0, batch_first=batch_first,
                   norm_first=norm_first, activation="gelu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.Transformer(**options)
    ours = ember.nn.Transformer(**options)
    _load(ours, theirs)
    rng = np.random.default_rng(0)
    (se, st), (te, tt) = (_pair(_rand(rng, *((2, 5, 8) if batch_first else (5, 2, 8)))),
                          _pair(_rand(rng, *((2, 4, 8) if batch_first else (4, 2, 8)))))
    pad = np.zeros((2, 5), dtype=bool)
    pad[0, 4] = True
    tgt_pad = np.zeros((2, 4), dtype=bool)
    tgt_pad[1, 3] = True
    oe = ours(se, te, tgt_mask=ours.generate_square_subsequent_mask(4),
              src_key_padding_mask=ember.tensor(pad), memory_key_padding_mask=ember.tensor(pad),
              tgt_key_padding_mask=ember.tensor(tgt_pad))
    ot = theirs(st, tt, tgt_mask=theirs.generate_square_subsequent_mask(4),
                src_key_padding_mask=torch.tensor(pad), memory_key_padding_mask=torch.tensor(pad),
                tgt_key_padding_mask=torch.tensor(tgt_pad))
    g = _rand(rng, *ot.shape)
    (oe * ember.tensor(g)).sum().backward()
    (ot * torch.tensor(g)).sum().backward()
    _close(oe, ot, "output")
    _close(se.grad, st.grad, "src grad")
    _close(te.grad, tt.grad, "tgt grad")
    _check_params(ours, theirs)


def test_transformer_decoder_with_memory_mask():
    layer_t = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    layer_e = ember.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)
    theirs = torch.nn.TransformerDecoder(layer_t, 2)
    ours = ember.nn.TransformerDecoder(layer_e, 2)
    _load(ours, theirs)
    rng = np.random.default_rng(0)
    (te, tt), (me, mt) = _pair(_rand(rng, 4, 2, 8)), _pair(_rand(rng, 5, 2, 8))
    memory_mask = rng.random((4, 5)) > 0.7
    oe = ours(te, me, memory_mask=ember.tensor(memory_mask), tgt_is_causal=False)
    ot = theirs(tt, mt, memory_mask=torch.tensor(memory_mask), tgt_is_causal=False)
    (oe * oe).sum().backward()
    (ot * ot).sum().backward()
    _close(oe, ot)
    _close(te.grad, tt.grad)
    _close(me.grad, mt.grad)
    _check_params(ours, theirs)


# ----------------------------------------------------------------------
# parametrizations


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm(dim):
    theirs = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(2, 3, 3), dim=dim)
    ours = ember.nn.utils.parametrizations.weight_norm(ember.nn.Conv1d(2, 3, 3), dim=dim)
    _load(ours, theirs)
    xe, xt = _pair(_rand(np.random.default_rng(0), 2, 2, 5))
    oe, ot = ours(xe), theirs(xt)
    (oe * oe).sum().backward()
    (ot * ot).sum().backward()
    _close(oe, ot)
    _close(xe.grad, xt.grad)
    _check_params(ours, theirs)


@pytest.mark.parametrize("module", ["Linear", "ConvTranspose1d"])
def test_spectral_norm(module):
    make = {"Linear": lambda lib: lib.nn.Linear(4, 3),
            "ConvTranspose1d": lambda lib: lib.nn.ConvTranspose1d(2, 3, 3)}[module]
    theirs = torch.nn.utils.parametrizations.spectral_norm(make(torch), n_power_iterations=2)
    ours = ember.nn.utils.parametrizations.spectral_norm(make(ember), n_power_iterations=2)
    _load(ours, theirs)  # the power-iteration vectors _u, _v too
    x = _rand(np.random.default_rng(0), *((2, 4) if module == "Linear" else (2, 2, 5)))
    for training in (True, False, True):
        ours.train(training)
        theirs.train(training)
        xe, xt = _pair(x)
        oe, ot = ours(xe), theirs(xt)
        (oe * oe).sum().backward()
        (ot * ot).sum().backward()
        _close(oe, ot)
        _close(xe.grad, xt.grad)
        _check_params(ours, theirs)
        _close(ours.parametrizations.weight[0]._u, theirs.parametrizations.weight[0]._u)
