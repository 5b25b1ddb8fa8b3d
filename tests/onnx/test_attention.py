"""Converters behind attention: scaled_dot_product_attention, MultiheadAttention and the
Transformer encoder (all decomposed into MatMul/Softmax/...)."""

from __future__ import annotations

import pytest

import ember
from ember import nn
from ember.nn import functional as F
from tests.onnx._check import check, check_fn


def _qkv(batch=2, heads=3, length=5, dim=4):
    return tuple(ember.randn(batch, heads, length, dim) for _ in range(3))


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3}])
def test_sdpa(kwargs):
    check_fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs), *_qkv())


def test_sdpa_with_masks():
    bool_mask = ember.rand(5, 5) > 0.3
    bool_mask[:, 0] = True
    float_mask = ember.randn(5, 5)
    check_fn(lambda q, k, v: (F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask),
                              F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask)),
             *_qkv())


def test_sdpa_dynamic_length():
    q, k, v = _qkv()
    others = [tuple(ember.randn(3, 3, 7, 4) for _ in range(3))]
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v),
          others=others, input_names=list("qkv"),
          dynamic_axes={n: {0: "batch", 2: "length"} for n in "qkv"})


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention(need_weights):
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    x = ember.randn(2, 5, 8)
    check(lambda x: mha(x, x, x, need_weights=need_weights)[0], x,
          others=[ember.randn(3, 4, 8)], input_names=["x"],
          dynamic_axes={"x": {0: "batch", 1: "length"}})


def test_multihead_attention_with_masks():
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=3)
    q, k, v = ember.randn(4, 2, 8), ember.randn(5, 2, 6), ember.randn(5, 2, 3)
    padding = ember.tensor([[False] * 4 + [True], [False] * 5])
    causal = ember.ones(4, 5).triu(1).bool()
    check(lambda q, k, v, p: mha(q, k, v, key_padding_mask=p, attn_mask=causal), (q, k, v,
                                                                                  padding))


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "activation": "gelu"}])
def test_transformer_encoder_layer(kwargs):
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True, **kwargs)
    check_fn(layer, ember.randn(2, 5, 8))


def test_transformer_encoder_with_causal_mask():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8)).eval()
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    check(lambda x: encoder(x, mask=mask), ember.randn(5, 2, 8),
          others=[ember.randn(5, 3, 8)], input_names=["x"], dynamic_axes={"x": {1: "batch"}})
