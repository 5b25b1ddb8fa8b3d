"""Quantization (``torch.ao.quantization``): quantized tensors, observers, fake quantization,
dynamic quantization of Linear layers, and the eager-mode static / quantization-aware
training workflow (``prepare``, ``prepare_qat``, ``convert``).

Quantized computation is forward only (inference): models are trained in float32 (with
fake quantization when training quantization-aware) and then converted.
"""

from ._qtypes import (
    QuantizedDtype, per_channel_affine, per_channel_symmetric, per_tensor_affine,
    per_tensor_symmetric, qint8, qint32, qscheme, quint8,
)
from .fake_quantize import (
    FakeQuantize, default_fake_quant, disable_fake_quant, disable_observer, enable_fake_quant,
    enable_observer,
)
from .fake_quantize_ops import fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine
from .observer import (
    MinMaxObserver, MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
    ObserverBase, PerChannelMinMaxObserver, PlaceholderObserver,
)
from .qconfig import (
    QConfig, default_dynamic_qconfig, default_dynamic_quant_observer, default_observer,
    default_per_channel_weight_observer, default_qat_qconfig, default_qconfig,
    default_weight_fake_quant, default_weight_observer, get_default_qat_qconfig,
    get_default_qconfig,
)
from .quantize import quantize_dynamic
from .quantize_eager import (
    convert, get_default_qat_module_mappings, get_default_static_quant_module_mappings,
    prepare, prepare_qat, propagate_qconfig_, swap_module,
)
from .quantized_tensor import (
    QuantizedTensor, dequantize, quantize_per_channel, quantize_per_tensor,
)
from .stubs import DeQuantStub, QuantStub

__all__ = [
    "DeQuantStub", "FakeQuantize", "MinMaxObserver", "MovingAverageMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver", "ObserverBase", "PerChannelMinMaxObserver",
    "PlaceholderObserver", "QConfig", "QuantStub", "QuantizedDtype", "QuantizedTensor",
    "convert", "default_dynamic_qconfig", "default_dynamic_quant_observer", "default_fake_quant",
    "default_observer", "default_per_channel_weight_observer", "default_qat_qconfig",
    "default_qconfig", "default_weight_fake_quant", "default_weight_observer", "dequantize",
    "disable_fake_quant", "disable_observer", "enable_fake_quant", "enable_observer",
    "fake_quantize_per_channel_affine", "fake_quantize_per_tensor_affine",
    "get_default_qat_module_mappings", "get_default_qat_qconfig", "get_default_qconfig",
    "get_default_static_quant_module_mappings", "per_channel_affine", "per_channel_symmetric",
    "per_tensor_affine", "per_tensor_symmetric", "prepare", "prepare_qat",
    "propagate_qconfig_", "qint8", "qint32", "qscheme", "quantize_dynamic",
    "quantize_per_channel", "quantize_per_tensor", "quint8", "swap_module",
]
