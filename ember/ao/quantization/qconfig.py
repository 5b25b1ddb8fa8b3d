"""QConfig: which observer (or fake-quantize) factories to use for a layer's activations and
weights, and the default configurations."""

from __future__ import annotations

from collections import namedtuple

from ._qtypes import per_channel_symmetric, per_tensor_symmetric, qint8, quint8
from .fake_quantize import FakeQuantize, default_fake_quant
from .observer import (
    MinMaxObserver, MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver, PlaceholderObserver,
)
from ...nn.modules.module import Module

__all__ = ["QConfig", "get_default_qconfig", "get_default_qat_qconfig", "default_qconfig",
           "default_dynamic_qconfig", "default_observer", "default_weight_observer",
           "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_weight_fake_quant", "default_qat_qconfig"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """(activation, weight): factories (classes or ``.with_args(...)`` results), not
    instances, so that every layer gets observers of its own."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric, reduce_range=False)

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)

_BACKENDS = ("x86", "fbgemm")


def _check_backend(backend: str, api: str) -> None:
    if backend not in _BACKENDS:
        raise NotImplementedError(f"{api}: ember supports the 'x86' and 'fbgemm' backends, "
                                  f"not {backend!r}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """The post-training (static) configuration for `backend` ('x86' or 'fbgemm'):
    activations observed with reduce_range=True (0..127), weights per-channel symmetric
    qint8.

    NOTE: PyTorch observes activations with a HistogramObserver, which ember does not have;
    this configuration uses MinMaxObserver in its place (the same range for data without
    outliers, a wider one otherwise)."""
    _check_backend(backend, "get_default_qconfig")
    return QConfig(activation=MinMaxObserver.with_args(reduce_range=True),
                   weight=default_per_channel_weight_observer)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """The quantization-aware-training configuration for `backend` ('x86' or 'fbgemm'):
    FakeQuantize on activations (moving-average min/max, quint8 with reduce_range) and on
    weights (moving-average per-channel symmetric qint8).

    NOTE: PyTorch's default here is its fused observer + fake-quantize module, whose
    quantization parameters differ slightly from the unfused FakeQuantize that ember uses
    (the symmetric weight scale is max|w| / 127 there, max|w| / 127.5 here; affine scales
    can differ in the last bit).  Both are valid; conversion uses whichever was trained."""
    _check_backend(backend, "get_default_qat_qconfig")
    activation = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                        quant_max=255, reduce_range=True)
    weight = FakeQuantize.with_args(observer=MovingAveragePerChannelMinMaxObserver,
                                    quant_min=-128, quant_max=127, dtype=qint8,
                                    qscheme=per_channel_symmetric)
    return QConfig(activation=activation, weight=weight)
