"""scaled_dot_product_attention, MultiheadAttention and the Transformer modules."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close

RNG = np.random.default_rng(0)


def _t(*shape, requires_grad=True):
    return ember.tensor(RNG.standard_normal(shape), requires_grad=requires_grad)


def _reference_attention(q, k, v, mask=None, scale=None):
    """softmax(q k^T * scale + mask) v in NumPy; a bool mask marks allowed positions."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(-1, keepdims=True) @ v


# ----------------------------------------------------------------------
# scaled_dot_product_attention


def test_sdpa_values():
    q, k, v = (RNG.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)))
    out = F.scaled_dot_product_attention(ember.tensor(q), ember.tensor(k), ember.tensor(v))
    assert out.shape == (2, 3, 4, 7)
    assert_close(out, _reference_attention(q, k, v))
    mask = RNG.random((4, 6)) > 0.3
    mask[:, 0] = True
    out = F.scaled_dot_product_attention(ember.tensor(q), ember.tensor(k), ember.tensor(v),
                                         attn_mask=ember.tensor(mask), scale=0.3)
    assert_close(out, _reference_attention(q, k, v, mask, 0.3))
    additive = RNG.standard_normal((2, 1, 4, 6))
    out = F.scaled_dot_product_attention(ember.tensor(q), ember.tensor(k), ember.tensor(v),
                                         attn_mask=ember.tensor(additive))
    assert_close(out, _reference_attention(q, k, v, additive))


def test_sdpa_causal_and_fully_masked_rows():
    q, k, v = _t(1, 2, 4, 3), _t(1, 2, 4, 3), _t(1, 2, 4, 3)
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tril = np.tril(np.ones((4, 4), dtype=bool))
    assert_close(causal, _reference_attention(q.detach().numpy(), k.detach().numpy(),
                                              v.detach().numpy(), tril))
    mask = np.ones((4, 4), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing: zeros, and zero gradients
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=ember.tensor(mask))
    assert_close(out[:, :, 1], np.zeros((1, 2, 3)))
    out.sum().backward()
    assert np.isfinite(q.grad.numpy()).all()
    assert_close(q.grad[:, :, 1], np.zeros((1, 2, 3)))


def test_sdpa_grouped_query_attention():
    q, k, v = _t(1, 4, 3, 2), _t(1, 2, 5, 2), _t(1, 2, 5, 2)
    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    expanded = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1),
                                              v.repeat_interleave(2, 1))
    assert_close(out, expanded)
    with pytest.raises(RuntimeError, match="must divide the number of heads"):
        F.scaled_dot_product_attention(_t(1, 3, 3, 2), k, v, enable_gqa=True)


def test_sdpa_errors_and_dropout():
    q = _t(2, 3, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 3, dtype=ember.bool),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.float(), q)
    ember.manual_seed(0)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal"])
def test_sdpa_gradcheck_and_gradgradcheck(mask):
    q, k, v = _t(1, 2, 3, 2), _t(1, 2, 4, 2), _t(1, 2, 4, 3)
    kwargs = {}
    if mask == "bool":
        m = RNG.random((3, 4)) > 0.4
        m[:, 0] = True
        kwargs["attn_mask"] = ember.tensor(m)
    elif mask == "float":
        kwargs["attn_mask"] = _t(3, 4, requires_grad=False)
    elif mask == "causal":
        kwargs["is_causal"] = True
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


# ----------------------------------------------------------------------
# MultiheadAttention


def test_mha_parameters_and_init():
    mha = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "in_proj_bias",
                                                      "out_proj.weight", "out_proj.bias"]
    assert mha.in_proj_weight.shape == (24, 8) and mha.head_dim == 4
    assert float(mha.in_proj_bias.abs().max()) == 0 and float(mha.out_proj.bias.abs().max()) == 0
    bound = math.sqrt(6 / (8 + 24))  # xavier_uniform_ on the (24, 8) matrix
    assert float(mha.in_proj_weight.abs().max()) <= bound
    assert "NonDynamicallyQuantizableLinear(in_features=8, out_features=8" in repr(mha)
    kv = nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=4, vdim=6, bias=False)
    assert [(n, tuple(p.shape)) for n, p in kv.named_parameters()] == [
        ("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 4)), ("v_proj_weight", (8, 6)),
        ("bias_k", (1, 1, 8)), ("bias_v", (1, 1, 8)), ("out_proj.weight", (8, 8))]
    assert kv.in_proj_weight is None and kv.in_proj_bias is None
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 3)


def _mha_reference(mha, q, k, v, attn_mask=None):
    """Multi-head attention in NumPy from the module's weights (sequence first)."""
    e, h = mha.embed_dim, mha.num_heads
    w = mha.in_proj_weight.detach().numpy()
    b = mha.in_proj_bias.detach().numpy()
    qp, kp, vp = q @ w[:e].T + b[:e], k @ w[e:2 * e].T + b[e:2 * e], v @ w[2 * e:].T + b[2 * e:]
    L, N, _ = q.shape
    S = k.shape[0]
    split = lambda x, n: x.reshape(n, N, h, e // h).transpose(1, 2, 0, 3)  # noqa: E731
    mask = None if attn_mask is None else ~attn_mask  # PyTorch's MHA: True = masked
    out = _reference_attention(split(qp, L), split(kp, S), split(vp, S), mask)
    out = out.transpose(2, 0, 1, 3).reshape(L, N, e)
    return out @ mha.out_proj.weight.detach().numpy().T + mha.out_proj.bias.detach().numpy()


def test_mha_values_against_numpy():
    mha = nn.MultiheadAttention(8, 2).double()
    q, k, v = (RNG.standard_normal(s) for s in ((3, 2, 8), (5, 2, 8), (5, 2, 8)))
    out, weights = mha(ember.tensor(q), ember.tensor(k), ember.tensor(v))
    assert_close(out, _mha_reference(mha, q, k, v))
    assert weights.shape == (2, 3, 5)
    assert_close(weights.sum(-1), np.ones((2, 3)))
    mask = RNG.random((3, 5)) > 0.6
    mask[:, 0] = False
    out, _ = mha(ember.tensor(q), ember.tensor(k), ember.tensor(v), attn_mask=ember.tensor(mask),
                 need_weights=False)
    assert_close(out, _mha_reference(mha, q, k, v, mask))


def test_mha_batch_first_unbatched_and_weights():
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = ember.randn(2, 3, 8)
    out, w = mha(x, x, x, average_attn_weights=False)
    assert out.shape == (2, 3, 8) and w.shape == (2, 2, 3, 3)
    seq_first = nn.MultiheadAttention(8, 2)
    seq_first.load_state_dict(mha.state_dict())
    out2, _ = seq_first(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1))
    assert_close(out, out2.transpose(0, 1), rtol=1e-5, atol=1e-6)
    single, w1 = seq_first(x[0], x[0], x[0])
    assert single.shape == (3, 8) and w1.shape == (3, 3)
    assert_close(single, out[0], rtol=1e-5, atol=1e-6)
    _, none = mha(x, x, x, need_weights=False)
    assert none is None


def test_mha_key_padding_mask_and_options():
    mha = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True, kdim=4, vdim=6)
    q, k, v = ember.randn(3, 2, 8), ember.randn(5, 2, 4), ember.randn(5, 2, 6)
    kpm = ember.tensor([[False] * 5, [False, False, False, True, True]])
    out, w = mha(q, k, v, key_padding_mask=kpm)
    assert out.shape == (3, 2, 8) and w.shape == (2, 3, 7)  # + bias_kv + zero_attn
    assert_close(w[1, :, 3:5], np.zeros((3, 2)))


@pytest.mark.parametrize("call, error, message", [
    (lambda m, x: m(x, x, x, is_causal=True), RuntimeError, "Need attn_mask"),
    (lambda m, x: m(x, x, x, attn_mask=ember.zeros(4, 5)), RuntimeError,
     "The shape of the 2D attn_mask is ember.Size\\(\\[4, 5\\]\\), but should be \\(5, 5\\)"),
    (lambda m, x: m(x, x, x, attn_mask=ember.zeros(2, 5, 5)), RuntimeError,
     "The shape of the 3D attn_mask"),
    (lambda m, x: m(x, x, x, key_padding_mask=ember.zeros(3, 4, dtype=ember.bool)),
     AssertionError, "Expected key_padded_mask.shape\\[1\\] to be 5, but got 4"),
    (lambda m, x: m(x, x, x, attn_mask=ember.zeros(5, 5, dtype=ember.int64)), AssertionError,
     "only bool and floating types of attn_mask are supported"),
    (lambda m, x: m(x[..., :7], x, x), AssertionError,
     "was expecting embedding dimension of 8, but got 7"),
    (lambda m, x: m(x, x[:4], x), AssertionError, "key shape .* does not match value shape"),
    (lambda m, x: m(x, x[0], x[0]), AssertionError,
     "For batched \\(3-D\\) `query`, expected `key` and `value` to be 3-D"),
])
def test_mha_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.MultiheadAttention(8, 2), ember.randn(5, 3, 8))


def test_mha_gradcheck_and_gradgradcheck():
    mha = nn.MultiheadAttention(4, 2, add_bias_kv=True).double()
    q, k = _t(2, 1, 4), _t(3, 1, 4)
    mask = ember.tensor([[False, True, False], [False, False, True]])
    fn = lambda q, k, *ps: mha(q, k, k, attn_mask=mask)[0]  # noqa: E731
    params = (mha.in_proj_weight, mha.bias_k)
    assert gradcheck(fn, (q, k, *params))
    assert gradgradcheck(lambda q, k: mha(q, k, k, attn_mask=mask)[0], (q, k))


# ----------------------------------------------------------------------
# Transformer layers


def test_encoder_layer_structure_and_activation():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    names = [n for n, _ in layer.named_parameters()]
    assert names == ["self_attn.in_proj_weight", "self_attn.in_proj_bias",
                     "self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear1.weight",
                     "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
                     "norm1.bias", "norm2.weight", "norm2.bias"]
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation="gelu").activation is F.gelu
    module_act = nn.TransformerEncoderLayer(8, 2, activation=nn.GELU())
    assert "activation" in dict(module_act.named_children())
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    no_bias = nn.TransformerEncoderLayer(8, 2, bias=False)
    assert all("bias" not in n for n, _ in no_bias.named_parameters())


def _encoder_reference(layer, x, norm_first):
    """The encoder layer from its submodules (dropout off)."""
    sa = lambda y: layer.self_attn(y, y, y, need_weights=False)[0]  # noqa: E731
    ff = lambda y: layer.linear2(layer.activation(layer.linear1(y)))  # noqa: E731
    if norm_first:
        x = x + sa(layer.norm1(x))
        return x + ff(layer.norm2(x))
    x = layer.norm1(x + sa(x))
    return layer.norm2(x + ff(x))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_its_definition(norm_first):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first)
    x = ember.randn(5, 2, 8)
    assert_close(layer(x), _encoder_reference(layer, x, norm_first))


def test_encoder_stack_masks_and_causal_detection():
    from ember.nn.modules.transformer import _detect_is_causal_mask

    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=True)
    assert len(encoder.layers) == 2 and encoder.layers[0] is not layer
    x = ember.randn(2, 5, 8)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    out = encoder(x, mask=causal)
    assert out.shape == (2, 5, 8)
    # position 0 cannot see the others: changing them leaves its output alone
    y = x.clone()
    y[:, 1:] = ember.randn(2, 4, 8)
    assert_close(encoder(y, mask=causal)[:, 0], out[:, 0], rtol=1e-5, atol=1e-5)
    kpm = ember.tensor([[False] * 5, [False, False, False, True, True]])
    padded = encoder(x, src_key_padding_mask=kpm)
    z = x.clone()
    z[1, 3:] = 0.0
    assert_close(encoder(z, src_key_padding_mask=kpm)[1, :3], padded[1, :3], rtol=1e-5,
                 atol=1e-5)
    assert _detect_is_causal_mask(causal) is True
    assert _detect_is_causal_mask(ember.zeros(5, 5)) is False
    assert _detect_is_causal_mask(None, True) is True


def test_generate_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.dtype is ember.float32
    expected = np.array([[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]])
    assert_close(mask, expected)
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=ember.float64).dtype is (
        ember.float64)


def test_transformer_shapes_names_and_errors():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                           dim_feedforward=16, dropout=0.0)
    names = [n for n, _ in model.named_parameters()]
    assert names[0] == "encoder.layers.0.self_attn.in_proj_weight"
    assert "decoder.layers.0.multihead_attn.in_proj_weight" in names
    assert names[-2:] == ["decoder.norm.weight", "decoder.norm.bias"]
    src, tgt = ember.randn(5, 2, 8), ember.randn(4, 2, 8)
    out = model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(4))
    assert out.shape == (4, 2, 8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(src, ember.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal"):
        model(src, ember.randn(4, 2, 6))


def test_decoder_layer_gradcheck():
    layer = nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=True).double()
    tgt, memory = _t(2, 1, 4), _t(3, 1, 4)
    mask = nn.Transformer.generate_square_subsequent_mask(2, dtype=ember.float64)
    assert gradcheck(lambda t, m: layer(t, m, tgt_mask=mask), (tgt, memory))


def test_encoder_layer_gradcheck():
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu").double()
    assert gradcheck(lambda x: layer(x), (_t(3, 1, 4),))


def test_transformer_encoder_classifier_trains():
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    # class 1 iff the first token is even
    tokens = rng.integers(0, 10, (16, 6))
    labels = ember.tensor((tokens[:, 0] % 2 == 0).astype(np.int64))
    tokens = ember.tensor(tokens)

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10, 16)
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(16, 2)

        def forward(self, x):
            return self.head(self.encoder(self.embed(x)).mean(1))

    model = Classifier()
    opt = ember.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(12):
            opt.zero_grad()
            loss = F.cross_entropy(model(tokens), labels)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("bias", [True, False])
def test_self_attention_at_inference_gives_the_recorded_bits(batch_first, batch, bias,
                                                              monkeypatch):
    # self-attention with nothing recorded, masked or dropped runs on the arrays
    # (attention._self_attention_arrays): the same array operations as the ops, the
    # same bits; a mask, the weights asked for or a recorded call take the ops
    from ember.ops import attention

    ember.manual_seed(0)
    m = nn.MultiheadAttention(32, 4, bias=bias, batch_first=batch_first, dropout=0.1).eval()
    shape = (batch, 7, 32) if batch_first else (7, batch, 32)
    x = ember.tensor(np.random.default_rng(batch).standard_normal(shape).astype(np.float32))
    calls = []
    real = attention._self_attention_arrays
    monkeypatch.setattr(attention, "_self_attention_arrays",
                        lambda *a: calls.append(1) or real(*a))
    with ember.no_grad():
        fast = m(x, x, x, need_weights=False)[0]
        assert calls == [1]
        m(x, x, x, need_weights=True)
        m(x, x, x, need_weights=False, key_padding_mask=ember.zeros(batch, 7).bool())
        m(x, x * 2, x * 2, need_weights=False)   # (not self-attention)
        assert calls == [1]
    xr = x.clone().requires_grad_()
    recorded = m(xr, xr, xr, need_weights=False)[0]
    assert calls == [1] and recorded.grad_fn is not None
    assert fast.grad_fn is None and fast.shape == recorded.shape
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())
