"""ember.nn: neural-network building blocks (``import ember.nn.functional as F``)."""

from . import functional

__all__ = ["functional"]

# --- module system (parameter.py, modules/module.py, container.py, linear.py, flatten.py) ---
from . import init, utils
from .modules import (
    Bilinear, Flatten, Identity, Linear, Module, ModuleDict, ModuleList, ParameterDict,
    ParameterList, Sequential, Unflatten,
)
from .parameter import Buffer, Parameter

__all__ += [
    "Bilinear", "Buffer", "Flatten", "Identity", "Linear", "Module", "ModuleDict", "ModuleList",
    "Parameter", "ParameterDict", "ParameterList", "Sequential", "Unflatten", "init", "utils",
]

# --- activations, losses, normalization, dropout (modules/activation.py, loss.py,
# normalization.py, batchnorm.py, instancenorm.py, dropout.py) ---
from .modules import (
    AlphaDropout, BCELoss, BCEWithLogitsLoss, BatchNorm1d, BatchNorm2d, BatchNorm3d, CELU, CTCLoss,
    CosineEmbeddingLoss, CrossEntropyLoss, Dropout, Dropout1d, Dropout2d, Dropout3d, ELU,
    FeatureAlphaDropout, GELU, GLU, GaussianNLLLoss, GroupNorm, Hardshrink, Hardsigmoid, Hardswish,
    Hardtanh, HingeEmbeddingLoss, HuberLoss, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
    KLDivLoss, L1Loss, LayerNorm, LeakyReLU, LocalResponseNorm, LogSigmoid, LogSoftmax, MSELoss,
    MarginRankingLoss, Mish, MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss,
    NLLLoss, PReLU, PoissonNLLLoss, RMSNorm, RReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid, SmoothL1Loss,
    SoftMarginLoss, Softmax, Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink,
    Threshold, TripletMarginLoss, TripletMarginWithDistanceLoss,
)

from .modules import _ACT_LOSS_NORM  # noqa: E402

__all__ += _ACT_LOSS_NORM

# --- convolution, pooling, padding, resampling, distance (modules/conv.py, pooling.py,
# padding.py, upsampling.py, fold.py, pixelshuffle.py, distance.py) ---
from .modules import (  # noqa: E402
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, ChannelShuffle, CircularPad1d,
    CircularPad2d,
    CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d, Conv1d, Conv2d, Conv3d,
    ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, CosineSimilarity, Fold, LPPool1d,
    LPPool2d, LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
    PairwiseDistance, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d,
    ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, Unfold, Upsample,
    UpsamplingBilinear2d, UpsamplingNearest2d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
)
from .modules import _CONV_POOL  # noqa: E402

__all__ += _CONV_POOL

# --- embeddings, recurrent layers, attention, transformers (modules/sparse.py, rnn.py,
# multihead.py, transformer.py) ---
from .modules import (  # noqa: E402
    GRU, Embedding, EmbeddingBag, GRUCell, LSTM, LSTMCell, MultiheadAttention, RNN, RNNBase,
    RNNCell, RNNCellBase, Transformer, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
)

__all__ += [
    "Embedding", "EmbeddingBag", "GRU", "GRUCell", "LSTM", "LSTMCell", "MultiheadAttention",
    "RNN", "RNNBase", "RNNCell", "RNNCellBase", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
]

# --- lazy modules and SyncBatchNorm (modules/lazy.py, sync_batchnorm.py) ---
from .modules import _LAZY  # noqa: E402
from .modules.lazy import (  # noqa: E402
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d,
    LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
    LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear,
)
from .modules.sync_batchnorm import SyncBatchNorm  # noqa: E402
from .modules.adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .parameter import UninitializedBuffer, UninitializedParameter  # noqa: E402

__all__ += _LAZY + ["SyncBatchNorm", "AdaptiveLogSoftmaxWithLoss", "UninitializedBuffer",
                    "UninitializedParameter"]

# --- deprecated and rarely used layers (modules/__init__.py's _RARE) ---
from .modules import (  # noqa: E402
    _RARE, Container, CrossMapLRN2d, FractionalMaxPool2d, FractionalMaxPool3d,
    LinearCrossEntropyLoss, LinearCrossEntropyOptions, NLLLoss2d,
)

__all__ += _RARE

# --- data parallel (parallel/) ---
from . import parallel  # noqa: E402
from .parallel import DataParallel  # noqa: E402

__all__ += ["parallel", "DataParallel"]
