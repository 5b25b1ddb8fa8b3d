"""Attention: scaled_dot_product_attention and multi_head_attention_forward.

Both are compositions of existing ops (matmul, softmax, masked_fill, dropout, linear),
so their gradients of every order come for free.

Masks follow PyTorch: a boolean ``attn_mask`` marks the positions that MAY be attended
(True = keep), a float one is added to the scores; MultiheadAttention's boolean masks
mark the positions to IGNORE (True = masked), and ``key_padding_mask`` (N, S) hides
padded keys.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.tensor import Tensor, _make
from . import _native_binary
from ._direct import records
from .activation import _softmax_arrays, softmax
from .creation import ones, zeros
from .dropout import dropout
from .joining import cat
from .linalg import _matmul_arrays, baddbmm, bmm, matmul
from .linear import linear
from .masked_softmax import ScaledMaskedSoftmax

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


def _dtype_word(t: Tensor) -> str:
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16"}.get(t.dtype.name, t.dtype.name)


def _softmax_keeping_dead_rows_zero(scores: Tensor) -> Tensor:
    """softmax over the last dim; rows where every score is -inf give zeros (not NaN)."""
    data = scores._data
    dead = (data == _NEG_INF).all(axis=-1, keepdims=True)
    if not bool(dead.any()):
        return softmax(scores, -1)
    dead_mask = _make(dead)
    # NOTE: fill the dead rows with zeros first, so that neither softmax nor its gradient
    # meets a row of -inf (which would make NaNs that leak into the gradients).
    return softmax(scores.masked_fill(dead_mask, 0.0), -1).masked_fill(dead_mask, 0.0)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dimensions.

    Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev).

    Args:
        attn_mask: broadcastable to (..., L, S); boolean (True = may attend) or float
            (added to the scores).
        dropout_p: dropout probability on the attention weights (always applied when > 0;
            pass 0.0 in evaluation).
        is_causal: position i attends to positions j <= i only (cannot be combined with
            `attn_mask`).
        scale: the score scale, 1/sqrt(E) by default.
        enable_gqa: grouped-query attention: key/value may have fewer heads (dim -3) than
            query, each shared by a group of query heads.

    A query row whose keys are all masked gives zeros.
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, "
                            f"not {type(t).__name__}")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {_dtype_word(query)} key.dtype: {_dtype_word(key)} "
                           f"and value.dtype: {_dtype_word(value)} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must be at "
                           "least 2-D")
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if kv_heads == 0 or heads % kv_heads or value.shape[-3] != kv_heads:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               f"heads in query (got {heads} query heads and {kv_heads} key "
                               f"and {value.shape[-3]} value heads)")
        key = key.repeat_interleave(heads // kv_heads, -3)
        value = value.repeat_interleave(heads // kv_heads, -3)
    if is_causal and query.is_floating_point():
        # one node for the scale, the mask and the softmax (ops/masked_softmax.py); no row
        # is all masked (row i keeps key 0).  (Integer inputs take the path below, whose
        # product raises PyTorch's dtype error.)
        masked = ones((length, source), dtype=dtypes.bool, device=query.device).tril()
        weights = ScaledMaskedSoftmax.apply(
            matmul(query, key.transpose(-2, -1)), factor, _NEG_INF,
            mask=masked.logical_not()._data, dim=-1)
    else:
        # As PyTorch's reference path: scale query and key by sqrt(scale) each.
        root = math.sqrt(factor)
        scores = matmul(query * root, (key * root).transpose(-2, -1))
        if attn_mask is None:
            weights = softmax(scores, -1)
        else:
            if attn_mask.dtype is dtypes.bool:
                scores = scores.masked_fill(attn_mask.logical_not(), _NEG_INF)
            else:
                scores = scores + attn_mask
            weights = _softmax_keeping_dead_rows_zero(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return matmul(weights, value)


# ----------------------------------------------------------------------
# multi-head attention


def _canonical_mask(mask, name: str, other, other_name: str, target: dtypes.dtype):
    """A boolean mask (True = ignore) as an additive float mask; float masks pass through."""
    if mask is None:
        return None
    if mask.dtype is not dtypes.bool and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and other.dtype is not mask.dtype:
        warnings.warn(f"Support for mismatched {name} and {other_name} is deprecated. Use same "
                      "type for both instead.", UserWarning, stacklevel=4)
    if mask.dtype is dtypes.bool:
        return zeros(tuple(mask.shape), dtype=target, device=mask.device).masked_fill(
            mask, _NEG_INF)
    return mask


def _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """Whether the call is batched (3-D query); AssertionErrors as PyTorch for bad shapes."""
    nd = query.dim()
    if nd not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{nd}-D query tensor")
    expected = f"For {'batched' if nd == 3 else 'unbatched'} ({nd}-D) `query`, expected"
    if key.dim() != nd or value.dim() != nd:
        raise AssertionError(f"{expected} `key` and `value` to be {nd}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != nd - 1:
        raise AssertionError(f"{expected} `key_padding_mask` to be `None` or {nd - 1}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise AssertionError(f"{expected} `attn_mask` to be `None`, 2-D or 3-D but found "
                             f"{attn_mask.dim()}-D tensor instead")
    if nd == 3:
        if key_padding_mask is not None and key_padding_mask.shape[1] != key.shape[0]:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {key.shape[0]}, but "
                                 f"got {key_padding_mask.shape[1]}")
        return True
    if attn_mask is not None and attn_mask.dim() == 3 and tuple(attn_mask.shape) != (
            num_heads, query.shape[0], key.shape[0]):
        raise AssertionError("Expected `attn_mask` shape to be "
                             f"{(num_heads, query.shape[0], key.shape[0])} but got "
                             f"{attn_mask.shape}")
    return False


def _pad_last(t: Tensor | None) -> Tensor | None:
    """One more zero column at the end of the last dimension (a new always-visible key)."""
    if t is None:
        return None
    return cat([t, zeros(tuple(t.shape[:-1]) + (1,), dtype=t.dtype, device=t.device)], -1)


def _in_projection(query, key, value, embed_dim: int, weight, bias, separate: bool,
                   q_w, k_w, v_w):
    """q, k, v: the three input projections (one matmul when query, key and value coincide)."""
    biases = (None, None, None) if bias is None else bias.chunk(3)
    if separate:
        return (linear(query, q_w, biases[0]), linear(key, k_w, biases[1]),
                linear(value, v_w, biases[2]))
    if query is key and key is value:
        return linear(query, weight, bias).chunk(3, -1)
    w_q, w_k, w_v = weight.chunk(3)
    if key is value:
        w_kv = weight[embed_dim:]
        b_kv = None if bias is None else bias[embed_dim:]
        k, v = linear(key, w_kv, b_kv).chunk(2, -1)
        return linear(query, w_q, biases[0]), k, v
    return (linear(query, w_q, biases[0]), linear(key, w_k, biases[1]),
            linear(value, w_v, biases[2]))


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor,
                                 embed_dim_to_check: int, num_heads: int, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias,
                                 training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None,
                                 use_separate_proj_weight: bool = False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True,
                                 is_causal: bool = False):
    """The computation of ``nn.MultiheadAttention`` with its weights passed in.

    query (L, N, E), key (S, N, kdim), value (S, N, vdim), sequence first (or unbatched
    (L, E) ...).  Returns (output (L, N, E), weights (N, L, S) averaged over heads, or
    (N, heads, L, S), or None without `need_weights`).
    """
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if (batched and query is key and key is value and key_padding_mask is None
            and attn_mask is None and not is_causal and not need_weights
            and bias_k is None and bias_v is None and not add_zero_attn
            and not use_separate_proj_weight and static_k is None and static_v is None
            and (dropout_p == 0.0 or not training) and query.shape[2] == embed_dim_to_check
            and embed_dim_to_check % num_heads == 0
            and not records(query, in_proj_weight, in_proj_bias, out_proj_weight,
                            out_proj_bias)):
        out = _self_attention_arrays(query, num_heads, in_proj_weight, in_proj_bias,
                                     out_proj_weight, out_proj_bias)
        if out is not None:
            return out, None
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", attn_mask,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal flag alone says it (sdpa builds the mask)
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    q, k, v = _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias,
                             use_separate_proj_weight, q_proj_weight, k_proj_weight,
                             v_proj_weight)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key or value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    heads = bsz * num_heads
    q = q.reshape(tgt_len, heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, heads, head_dim, "key")
    v = _heads(v, static_v, heads, head_dim, "value")
    if add_zero_attn:
        k = cat([k, zeros((heads, 1, head_dim), dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros((heads, 1, head_dim), dtype=v.dtype, device=v.device)], 1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
                                 f"got {key_padding_mask.shape}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            -1, num_heads, -1, -1).reshape(heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * math.sqrt(1.0 / head_dim)
        scores = (baddbmm(attn_mask, q_scaled, k.transpose(-2, -1)) if attn_mask is not None
                  else bmm(q_scaled, k.transpose(-2, -1)))
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p, True)
        out = bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        attn_mask = (attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else
                     attn_mask.reshape(bsz, num_heads, -1, src_len))
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
    return out, None


def _self_attention_arrays(x: Tensor, num_heads: int, in_weight, in_bias, out_weight,
                           out_bias) -> Tensor | None:
    """`multi_head_attention_forward`'s self-attention when nothing is recorded and nothing
    masks or drops (a transformer's block at inference), on the arrays: the same array
    operations as the ops of the general path, in the same order, so the same bits,
    without ~20 ops' tensors and nodes (a (64, 1, 128) block of four heads 437 -> 307
    us, PyTorch 190; 2-core Intel Xeon, 2026-12-08).  None where the arrays are not
    NumPy float32/float64 of one dtype (the general path then runs)."""
    dtype = x._data.dtype
    if dtype != np.float32 and dtype != np.float64:
        return None
    for t in (x, in_weight, out_weight, in_bias, out_bias):
        if t is not None and (type(t._data) is not np.ndarray or t._data.dtype != dtype):
            return None
    a = linear(x, in_weight, in_bias)._data    # (L, N, 3E): the ops' own array path
    length, batch, embed = x.shape
    head = embed // num_heads
    q, k, v = (a[..., j * embed:(j + 1) * embed] for j in range(3))   # chunk(3, -1)

    def heads(t):   # (L, N, E) -> (N, heads, L, head_dim), as reshape, transpose, reshape
        t = t.reshape(length, batch * num_heads, head).transpose(1, 0, 2)
        return t.reshape(batch, num_heads, length, head)

    root = math.sqrt(1.0 / math.sqrt(head))   # (sdpa's: both sides scaled by its root)
    scores = _matmul_arrays(_native_binary.multiply(heads(q), root),
                            _native_binary.multiply(heads(k), root).swapaxes(-2, -1))
    probabilities = _softmax_arrays(scores, scores.ndim - 1, False)
    out = _matmul_arrays(probabilities, heads(v))
    out = out.transpose(2, 0, 1, 3).reshape(batch * length, embed)   # (L, N, H, D) rows
    return linear(_make(out), out_weight, out_bias).reshape(length, batch, embed)


def _heads(t: Tensor, static, heads: int, head_dim: int, name: str) -> Tensor:
    """(S, N, E) -> (N * num_heads, S, head_dim), or the given static tensor."""
    if static is None:
        return t.reshape(t.shape[0], heads, head_dim).transpose(0, 1)
    if static.shape[0] != heads or static.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name}.size(0) of {heads} and size(2) of "
                             f"{head_dim}, but got {static.shape[0]} and {static.shape[2]}")
    return static
