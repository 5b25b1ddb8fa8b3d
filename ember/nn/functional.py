"""``ember.nn.functional``: the functional forms of layers and losses (``import ... as F``)."""

from __future__ import annotations

import warnings

from .._core.tensor import Tensor
from ..ops._autocast import float32_inputs
from ..ops.reduction import mean as _mean
from ..ops.reduction import sum as _sum
from ..ops.linalg import addmm as _addmm
from ..ops.linalg import matmul as _matmul

__all__ = ["mse_loss"]
__all__ += ["linear", "bilinear"]


def _legacy_reduction(size_average, reduce, emit_warning: bool = True) -> str:
    """Map the deprecated ``size_average``/``reduce`` pair onto a ``reduction`` string."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        reduction = "none"
    elif size_average:
        reduction = "mean"
    else:
        reduction = "sum"
    if emit_warning:
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return _mean(loss)
    if reduction == "sum":
        return _sum(loss)
    raise ValueError(f"{reduction} is not a valid value for reduction")


@float32_inputs  # (autocast: losses run in float32)
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error: ``(input - target) ** 2`` reduced by `reduction`.

    `reduction` is ``'mean'`` (default), ``'sum'`` or ``'none'``; `weight`, when
    given (of the input's shape), scales each squared error, and 'mean' is then the
    weighted mean: it divides by ``weight.sum()``, as PyTorch does.  Shapes that differ
    are broadcast, with a warning, as in PyTorch.

    >>> mse_loss(ember.tensor([1., 2.]), ember.tensor([1., 4.]))
    tensor(2.)
    """
    for name, value in (("input", input), ("target", target)):
        if not isinstance(value, Tensor):
            raise TypeError(f"mse_loss(): argument '{name}' must be Tensor, not "
                            f"{type(value).__name__}")
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({_size(target.shape)}) that is different to the "
                      f"input size ({_size(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=2)
    if not (input.dtype.is_floating_point or target.dtype.is_floating_point):
        raise NotImplementedError(f"\"mse_loss\" not implemented for '{_legacy(input)}'")
    diff = input - target
    loss = diff * diff
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return _sum(loss) / _sum(weight)
    return _reduce(loss, reduction)


def _size(shape) -> str:
    return f"torch.Size([{', '.join(str(d) for d in shape)}])"


def _legacy(t: Tensor) -> str:
    names = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
             "uint8": "Byte", "bool": "Bool"}
    return names.get(t.dtype.name, t.dtype.name)


# --- linear layers (used by nn.Linear / nn.Bilinear) ---


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` over the last dimension of `input`.

    `weight` is (out_features, in_features) (or 1-D, giving one output); `input` is
    (*, in_features).  A 2-D input with a bias is one fused ``addmm``.
    """
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{input.dim()}D and {weight.dim()}D")
    if weight.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{weight.dim()}D")
    if weight.dim() == 2 and input.shape[-1] != weight.shape[1]:
        rows = _prod(input.shape[:-1])
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                           f"{input.shape[-1]} and {weight.shape[1]}x{weight.shape[0]})")
    if bias is not None and weight.dim() == 2:
        if input.dim() == 2:
            return _addmm(bias, input, weight.t())
        if input.dim() > 2 and input.is_contiguous():
            # as PyTorch: the leading dims folded into one addmm (the bias is added into
            # the fresh product, and the backward is two plain matrix products)
            rows = input.view(-1, input.shape[-1])
            return _addmm(bias, rows, weight.t()).view(tuple(input.shape[:-1]) + (weight.shape[0],))
    out = _matmul(input, weight.t())
    return out if bias is None else out + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``out[..., k] = input1 @ weight[k] @ input2 + bias[k]``.

    `input1` is (*, in1), `input2` (*, in2) with the same leading shape, `weight`
    (out, in1, in2), `bias` (out,).
    """
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} "
                           f"and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be a 3-D tensor, got {weight.dim()}-D")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    if bias is not None and bias.shape[-1] != out_f:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1]} but expected {out_f}")
    # (*, in1) @ (in1, out * in2) -> (*, out, in2), then contract in2 with input2.
    mixed = _matmul(input1, weight.permute(1, 0, 2).reshape(in1, out_f * in2))
    mixed = mixed.reshape(tuple(input1.shape[:-1]) + (out_f, in2))
    out = (mixed * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# --- activations, losses, normalization, dropout (ops/activation.py, loss.py, loss_margin.py,
# normalization.py, dropout.py) ---
from ..ops.activation import (  # noqa: E402
    celu, celu_, elu, elu_, gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_,
    gumbel_softmax, leaky_relu, leaky_relu_, log_softmax, logsigmoid, mish, prelu, relu, relu6,
    rrelu, rrelu_, selu, selu_, silu, softmax, softmin, softplus, softshrink, softsign,
    tanhshrink, threshold, threshold_,
)
from ..ops.elementwise import relu_, tanh  # noqa: E402
from ..ops.elementwise_special import sigmoid  # noqa: E402
from ..ops.dropout import (  # noqa: E402
    alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,
)
from ..ops.normalization import (  # noqa: E402
    batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize, rms_norm,
)
from ..ops.loss import (  # noqa: E402
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, gaussian_nll_loss,
    huber_loss, kl_div, l1_loss, nll_loss, poisson_nll_loss, smooth_l1_loss,
)
from ..ops.loss_margin import (  # noqa: E402
    cosine_embedding_loss, ctc_loss, hinge_embedding_loss, margin_ranking_loss,
    multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, pairwise_distance,
    soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)

__all__ += [
    "celu", "celu_", "elu", "elu_", "gelu", "glu", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax", "logsigmoid", "mish",
    "prelu", "relu", "relu6", "relu_", "rrelu", "rrelu_", "selu", "selu_", "sigmoid", "silu",
    "gumbel_softmax", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
    "tanhshrink", "threshold", "threshold_",
    "alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
    "batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm",
    "normalize", "rms_norm",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "cross_entropy", "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss",
    "kl_div", "l1_loss", "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "nll_loss", "pairwise_distance", "poisson_nll_loss",
    "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]

# --- convolution, pooling, padding, resampling (ops/conv.py, pooling.py, pooling_adaptive.py,
# padding.py, resample.py, grid_sample.py, distance.py) ---
from ..ops.conv import (  # noqa: E402
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
)
from ..ops.pooling import (  # noqa: E402
    avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d,
    max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices, max_pool3d,
    max_pool3d_with_indices,
)
from ..ops.pooling_adaptive import (  # noqa: E402
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d, adaptive_max_pool3d_with_indices, max_unpool1d, max_unpool2d,
    max_unpool3d,
)
from ..ops.padding import pad  # noqa: E402
from ..ops.resample import (  # noqa: E402
    channel_shuffle, fold, interpolate, native_channel_shuffle, pixel_shuffle, pixel_unshuffle,
    unfold, upsample, upsample_bilinear, upsample_nearest,
)
from ..ops.grid_sample import affine_grid, grid_sample  # noqa: E402
from ..ops.distance import cosine_similarity, one_hot, pdist  # noqa: E402

__all__ += [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "pad", "fold", "interpolate", "pixel_shuffle",
    "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "unfold", "upsample",
    "upsample_bilinear", "upsample_nearest",
    "affine_grid", "grid_sample", "cosine_similarity", "one_hot", "pdist",
]

# --- embeddings and attention (ops/embedding.py, ops/attention.py) ---
from ..ops.embedding import embedding, embedding_bag  # noqa: E402
from ..ops.attention import (  # noqa: E402
    multi_head_attention_forward, scaled_dot_product_attention,
)

__all__ += ["embedding", "embedding_bag", "multi_head_attention_forward",
            "scaled_dot_product_attention"]
