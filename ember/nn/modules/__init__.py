"""The layers of ``ember.nn``, one concern per file (re-exported by ``ember.nn``)."""

from .module import Module
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Bilinear, Identity, Linear
from .flatten import Flatten, Unflatten

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Bilinear", "Flatten", "Unflatten",
]

# --- activations, losses, normalization, dropout (activation.py, loss.py, normalization.py,
# batchnorm.py, instancenorm.py, dropout.py) ---
from .activation import (
    CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
    LogSoftmax, Mish, PReLU, RReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softmax2d, Softmin,
    Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold,
)
from .loss import (
    BCELoss, BCEWithLogitsLoss, CTCLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss,
    HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, MarginRankingLoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, PoissonNLLLoss,
    SmoothL1Loss, SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss,
)
from .normalization import (
    GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm,
)
from .batchnorm import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d,
)
from .instancenorm import (
    InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
)
from .dropout import (
    AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout,
)

_ACT_LOSS_NORM = [
    "AlphaDropout", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "CELU", "CTCLoss", "CosineEmbeddingLoss", "CrossEntropyLoss", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "ELU", "FeatureAlphaDropout", "GELU", "GLU", "GaussianNLLLoss",
    "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "HingeEmbeddingLoss",
    "HuberLoss", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "KLDivLoss", "L1Loss",
    "LayerNorm", "LeakyReLU", "LocalResponseNorm", "LogSigmoid", "LogSoftmax", "MSELoss",
    "MarginRankingLoss", "Mish", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "NLLLoss", "PReLU", "PoissonNLLLoss", "RMSNorm", "RReLU", "ReLU", "ReLU6",
    "SELU", "SiLU", "Sigmoid", "SmoothL1Loss", "SoftMarginLoss", "Softmax", "Softmax2d", "Softmin",
    "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss"
]
__all__ += _ACT_LOSS_NORM

# --- convolution, pooling, padding, resampling, distance (conv.py, pooling.py, padding.py,
# upsampling.py, fold.py, pixelshuffle.py, distance.py) ---
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d,
    MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
)
from .padding import (
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
    ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
    ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .fold import Fold, Unfold
from .pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle
from .distance import CosineSimilarity, PairwiseDistance

_CONV_POOL = [
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "LPPool1d",
    "LPPool2d", "LPPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
    "MaxUnpool3d", "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
    "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
    "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
    "ZeroPad3d", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "Fold", "Unfold",
    "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance",
]
__all__ += _CONV_POOL

# --- embeddings, recurrent layers, attention, transformers (sparse.py, rnn.py, multihead.py,
# transformer.py) ---
from .sparse import Embedding, EmbeddingBag
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase
from .multihead import MultiheadAttention, NonDynamicallyQuantizableLinear
from .transformer import (
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ += [
    "Embedding", "EmbeddingBag", "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase",
    "RNNCell", "RNNCellBase", "MultiheadAttention", "NonDynamicallyQuantizableLinear",
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
    "TransformerEncoderLayer",
]

# --- lazy modules (lazy.py) ---
from .lazy import (  # noqa: E402
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d,
    LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
    LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, LazyModuleMixin,
)

from .sync_batchnorm import SyncBatchNorm  # noqa: E402
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402

__all__ += ["SyncBatchNorm", "AdaptiveLogSoftmaxWithLoss"]

_LAZY = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
         "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
         "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear"]
__all__ += _LAZY

# --- PyTorch's deprecated and rarely used layers (container.py, loss.py, normalization.py,
# pooling.py, linear_cross_entropy_options.py) ---
from .container import Container  # noqa: E402
from .loss import LinearCrossEntropyLoss, NLLLoss2d  # noqa: E402
from .normalization import CrossMapLRN2d  # noqa: E402
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402
from .linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: E402

_RARE = ["Container", "CrossMapLRN2d", "FractionalMaxPool2d", "FractionalMaxPool3d",
         "LinearCrossEntropyLoss", "LinearCrossEntropyOptions", "NLLLoss2d"]
__all__ += _RARE
