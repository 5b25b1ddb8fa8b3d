"""FakeQuantize: an observer followed by fake quantization, the module that quantization-
aware training puts on activations and weights."""

from __future__ import annotations

import functools

import numpy as np

from ..._core.tensor import Tensor, _make
from ...nn.modules.module import Module
from ._qtypes import quint8
from .fake_quantize_ops import fake_quantize_per_channel_affine, fake_quantize_per_tensor_affine
from .observer import MovingAverageMinMaxObserver

__all__ = ["FakeQuantize", "enable_fake_quant", "disable_fake_quant", "enable_observer",
           "disable_observer"]


class FakeQuantize(Module):
    """Observe the input (when the observer is enabled), refresh ``scale``/``zero_point``
    from the observer, and fake-quantize the input with them (when fake quantization is
    enabled).  Gradients pass straight through inside the quantization range.

    ``observer`` is an observer class or factory (``MinMaxObserver.with_args(...)``); the
    other keyword arguments go to it.
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min: int | None = None,
                 quant_max: int | None = None, is_dynamic: bool = False,
                 **observer_kwargs) -> None:
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise ValueError("quant_min must be less than or equal to quant_max")
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = is_dynamic
        self.register_buffer("fake_quant_enabled", _make(np.array([1], np.uint8)))
        self.register_buffer("observer_enabled", _make(np.array([1], np.uint8)))
        self.register_buffer("scale", _make(np.array([1.0], np.float32)))
        self.register_buffer("zero_point", _make(np.array([0], np.int32)))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        self.is_per_channel = self.qscheme.per_channel

    @classmethod
    def with_args(cls, **kwargs) -> functools.partial:
        """A factory that makes this module with the given arguments (for QConfig)."""
        return functools.partial(cls, **kwargs)

    def enable_fake_quant(self, enabled: bool = True) -> FakeQuantize:
        """Switch fake quantization on (or off with ``enabled=False``)."""
        self.fake_quant_enabled._data[0] = 1 if enabled else 0
        return self

    def disable_fake_quant(self) -> FakeQuantize:
        """Pass inputs through unchanged (the observer may still record)."""
        return self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> FakeQuantize:
        """Switch statistics recording on (or off with ``enabled=False``)."""
        self.observer_enabled._data[0] = 1 if enabled else 0
        return self

    def disable_observer(self) -> FakeQuantize:
        """Freeze ``scale`` and ``zero_point`` at their current values."""
        return self.enable_observer(False)

    def calculate_qparams(self) -> tuple:
        """The observer's current (scale, zero_point)."""
        return self.activation_post_process.calculate_qparams()

    def forward(self, x: Tensor) -> Tensor:
        if self.observer_enabled._data[0] == 1:
            self.activation_post_process(x.detach())
            scale, zero_point = self.calculate_qparams()
            self.scale = _make(scale._data.astype(np.float32))
            self.zero_point = _make(zero_point._data.astype(np.int32))
        if self.fake_quant_enabled._data[0] == 1:
            if self.is_per_channel:
                return fake_quantize_per_channel_affine(
                    x, self.scale, self.zero_point, self.ch_axis, self.quant_min,
                    self.quant_max)
            return fake_quantize_per_tensor_affine(x, self.scale, self.zero_point,
                                                   self.quant_min, self.quant_max)
        return x

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, quant_min={self.quant_min}, "
                f"quant_max={self.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")


def _each_fake_quant(mod: Module, method: str) -> None:
    if isinstance(mod, FakeQuantize):
        getattr(mod, method)()


def enable_fake_quant(mod: Module) -> None:
    """For ``model.apply(enable_fake_quant)``: switch fake quantization on."""
    _each_fake_quant(mod, "enable_fake_quant")


def disable_fake_quant(mod: Module) -> None:
    """For ``model.apply(disable_fake_quant)``: switch fake quantization off."""
    _each_fake_quant(mod, "disable_fake_quant")


def enable_observer(mod: Module) -> None:
    """For ``model.apply(enable_observer)``: switch observation on."""
    _each_fake_quant(mod, "enable_observer")


def disable_observer(mod: Module) -> None:
    """For ``model.apply(disable_observer)``: freeze the quantization parameters."""
    _each_fake_quant(mod, "disable_observer")


default_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                            quant_max=255, dtype=quint8)
