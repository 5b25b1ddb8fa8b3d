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

__all__ += [
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
