"""``ember.nn.functional``: the functional forms of layers and losses (``import ... as F``).

A pure re-export list: every function lives in ``ember/ops``.
"""

from __future__ import annotations

# --- linear maps and the squared error (ops/linear.py, ops/loss_mse.py) ---
from ..ops.linear import bilinear, linear
from ..ops.loss_mse import mse_loss

__all__ = ["bilinear", "linear", "mse_loss"]

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
from ..ops.loss_linear import linear_cross_entropy  # noqa: E402

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
    "triplet_margin_with_distance_loss", "linear_cross_entropy",
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
from ..ops.pooling_fractional import (  # noqa: E402
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
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
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]

# --- embeddings and attention (ops/embedding.py, ops/attention.py) ---
from ..ops.embedding import embedding, embedding_bag  # noqa: E402
from ..ops.attention import (  # noqa: E402
    multi_head_attention_forward, scaled_dot_product_attention,
)

__all__ += ["embedding", "embedding_bag", "multi_head_attention_forward",
            "scaled_dot_product_attention"]
