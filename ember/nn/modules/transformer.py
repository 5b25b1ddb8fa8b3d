"""Transformer blocks (Vaswani et al., 2017): TransformerEncoderLayer / TransformerEncoder,
TransformerDecoderLayer / TransformerDecoder, and the full encoder-decoder Transformer.

Submodule names, the order of their parameters and the masks' conventions follow
PyTorch, so state dicts and masks carry over.  PyTorch's inference "fast paths" (nested
tensors, fused kernels) are not reproduced: ember always runs the plain computation,
which gives the same results; ``enable_nested_tensor`` is accepted and ignored.
"""

from __future__ import annotations

import copy

from ..._core import dtype as dtypes
from ...ops.attention import _canonical_mask
from ...ops.creation import full
from .. import functional as F
from .. import init
from .activation import GELU, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .multihead import MultiheadAttention
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _activation(activation):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _activation_kind(activation) -> int:
    """PyTorch's ``activation_relu_or_gelu`` flag: 1 relu, 2 gelu, 0 anything else."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_seq_len(src, batch_first: bool):
    if src.dim() == 2:  # unbatched (S, E)
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above it."""
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    return full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """True when `is_causal` says so, or (when it is None) when `mask` is the causal mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype
                                                  if mask.dtype.is_floating_point else None)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


class _TransformerLayer(Module):
    """What encoder and decoder layers share: the constructor and the self-attention block.

    A decoder layer (`_cross_attention`) also has an attention over the memory and a third
    LayerNorm and Dropout.  Sublayers are registered in PyTorch's order (the order of
    state-dict keys).
    """

    __constants__ = ["norm_first"]
    _cross_attention = False

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        cross = self._cross_attention
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        if cross:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                     batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        if cross:
            self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if cross:
            self.dropout3 = Dropout(dropout)
        activation = _activation(activation)
        if not cross:  # PyTorch's encoder layer (only) records its fast-path activation
            self.activation_relu_or_gelu = _activation_kind(activation)
        self.activation = activation

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention then a feed-forward block, each with dropout, a residual connection
    and LayerNorm (after the residual by default, before the block with `norm_first`).

    Args:
        d_model: model width.
        nhead: attention heads.
        dim_feedforward: hidden width of the feed-forward block.
        dropout: dropout probability (attention weights and the three dropout layers).
        activation: 'relu', 'gelu' or a callable (a function or a module).
        layer_norm_eps: LayerNorm's epsilon.
        batch_first: (N, S, E) inputs instead of (S, N, E).
        norm_first: pre-norm instead of post-norm.
        bias: biases in the linear layers and LayerNorms.

    ``forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)``.
    """

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src_mask, "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention over the encoder's output (memory), then a feed-forward
    block, each with dropout, a residual connection and LayerNorm.  Arguments as
    TransformerEncoderLayer.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)``.
    """

    _cross_attention = True

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` in sequence, then an optional `norm`.

    ``forward(src, mask=None, src_key_padding_mask=None, is_causal=None)``: with
    ``is_causal=None`` a `mask` equal to the causal mask is recognized as such.
    `enable_nested_tensor` and `mask_check` are accepted for compatibility (ember has no
    nested tensors).
    """

    __constants__ = ["norm"]

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               mask, "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype)
        first = self.layers[0] if len(self.layers) else None
        batch_first = first.self_attn.batch_first if first is not None else False
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer` in sequence, then an optional `norm`.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False)``.
    """

    __constants__ = ["norm"]

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm=None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        first = self.layers[0] if len(self.layers) else None
        batch_first = first.self_attn.batch_first if first is not None else False
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                               _get_seq_len(tgt, batch_first))
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer: an encoder over `src`, a decoder over `tgt` that
    also attends to the encoder's output.

    Args:
        d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
            norm_first, bias: as in TransformerEncoderLayer.
        num_encoder_layers, num_decoder_layers: depth of each stack.
        custom_encoder, custom_decoder: modules used instead of the default stacks.

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
    src_is_causal=None, tgt_is_causal=None, memory_is_causal=False)``.  All weight
    matrices start xavier-uniform.
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder=None, custom_decoder=None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        common = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                      layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                      norm_first=norm_first, bias=bias, **kw)

        def stack(custom, layer_cls, stack_cls, num_layers: int):
            """The custom stack when given, else `num_layers` new layers and a final norm."""
            if custom is not None:
                return custom
            layer = layer_cls(d_model, nhead, **common)
            return stack_cls(layer, num_layers,
                             LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))

        self.encoder = stack(custom_encoder, TransformerEncoderLayer, TransformerEncoder,
                             num_encoder_layers)
        self.decoder = stack(custom_decoder, TransformerDecoderLayer, TransformerDecoder,
                             num_decoder_layers)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        batched = src.dim() == 3
        if batched and src.shape[0 if self.batch_first else 1] != tgt.shape[
                0 if self.batch_first else 1]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The causal mask for a sequence of length `sz`: 0 where attending is allowed (on
        and below the diagonal), -inf above it."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
