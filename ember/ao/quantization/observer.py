"""Observers: modules that watch the values flowing through them (forward returns its input
unchanged) and turn the range they saw into quantization parameters ``(scale,
zero_point)`` with ``calculate_qparams()``.

The arithmetic follows PyTorch's observers step by step in float32, so the parameters are
bit-for-bit the same: affine schemes spread ``[min(min, 0), max(max, 0)]`` over
``[quant_min, quant_max]``; symmetric schemes use ``max(|min|, |max|)`` around a fixed zero
point (0, or 128 for quint8).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..._core.tensor import Tensor, _make
from ...nn.modules.module import Module
from ._qtypes import (
    QuantizedDtype, per_channel_affine, per_channel_symmetric, per_tensor_affine,
    per_tensor_symmetric, qint8, qint32, qscheme, quint8,
)

__all__ = ["ObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver",
           "PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver",
           "PlaceholderObserver"]

_EPS32 = float(np.finfo(np.float32).eps)


def _qmin_qmax(dtype: QuantizedDtype, reduce_range: bool, quant_min, quant_max) -> tuple:
    """The integer range of an observer, as PyTorch derives it."""
    if quant_min is not None and quant_max is not None:
        if not quant_min <= 0 <= quant_max:
            raise ValueError("Used-specified quantization range must include 0.")
        if quant_min >= quant_max:
            raise ValueError("qmin must be strictly less than qmax for user-specified "
                             "quantization range.")
        span = quant_max - quant_min + 1
        limit = 2 ** 32 if dtype is qint32 else 256
        if dtype is not quint8 and not 0 < span <= limit:
            raise ValueError("quantization range should be positive and not exceed the maximum "
                             f"bit range (={limit}).")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype is qint8:
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype is quint8:
        return (0, 127) if reduce_range else (0, 255)
    return -(2 ** 31), 2 ** 31 - 1


class ObserverBase(Module):
    """What every observer shares: its dtype, scheme and integer range, and `with_args`."""

    def __init__(self, dtype: QuantizedDtype = quint8, qscheme: qscheme = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS32,
                 is_dynamic: bool = False) -> None:
        super().__init__()
        if not isinstance(dtype, QuantizedDtype):
            raise NotImplementedError(f"observers support ember.quint8, ember.qint8 and "
                                      f"ember.qint32, not {dtype}")
        if qscheme not in (per_tensor_affine, per_tensor_symmetric, per_channel_affine,
                           per_channel_symmetric):
            raise NotImplementedError(f"observers do not support the scheme {qscheme}")
        if qscheme is per_tensor_symmetric and reduce_range and dtype is quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")
        self.dtype = dtype
        self.qscheme = qscheme
        self.reduce_range = reduce_range
        self.is_dynamic = is_dynamic
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        self.quant_min, self.quant_max = _qmin_qmax(dtype, reduce_range, quant_min, quant_max)
        self.register_buffer("eps", _make(np.array([eps], np.float32)))

    @classmethod
    def with_args(cls, **kwargs) -> functools.partial:
        """A factory that makes this observer with the given arguments (for QConfig)."""
        return functools.partial(cls, **kwargs)

    def _calculate_qparams(self, min_val: np.ndarray, max_val: np.ndarray) -> tuple:
        """(scale float32, zero_point int32/int64) tensors of shape (channels,)."""
        if min_val.size == 0 or (np.isposinf(min_val).all() and np.isneginf(max_val).all()):
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default values.", stacklevel=3)
            return _make(np.array([1.0], np.float32)), _make(np.array([0], np.int64))
        if (min_val > max_val).any():
            raise ValueError(f"min {min_val} should be less than max {max_val}")
        qmin, qmax = self.quant_min, self.quant_max
        f32 = np.float32
        min_neg = np.minimum(min_val, f32(0)).astype(f32)
        max_pos = np.maximum(max_val, f32(0)).astype(f32)
        eps = self.eps._data.astype(f32)
        zero_point = np.zeros(min_neg.shape, np.int64)
        if self.qscheme.symmetric:
            bound = np.maximum(-min_neg, max_pos)
            scale = np.maximum(bound / f32((qmax - qmin) / 2), eps)
            if self.dtype is quint8:
                zero_point[...] = (qmin + qmax) // 2 if self.has_customized_qrange else 128
        else:
            scale = np.maximum((max_pos - min_neg) / f32(qmax - qmin), eps)
            # (int32 here, int64 for the symmetric schemes: PyTorch's dtypes)
            zero_point = qmin - np.rint(min_neg / scale).astype(np.int32)
            zero_point = np.clip(zero_point, qmin, qmax).astype(np.int32)
        return (_make(scale.astype(f32).reshape(-1)),
                _make(np.asarray(zero_point).reshape(-1)))

    @staticmethod
    def _values(x: Tensor) -> np.ndarray:
        return x.detach().cpu()._data.astype(np.float32, copy=False)


class MinMaxObserver(ObserverBase):
    """Records the running minimum and maximum of everything it sees; per tensor.

    >>> obs = MinMaxObserver(); _ = obs(ember.tensor([-1.0, 3.0])); obs.calculate_qparams()
    (tensor([0.0157]), tensor([64], dtype=ember.int32))
    """

    def __init__(self, dtype: QuantizedDtype = quint8, qscheme: qscheme = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, factory_kwargs=None, eps: float = _EPS32,
                 is_dynamic: bool = False, **kwargs) -> None:
        if qscheme.per_channel:
            raise NotImplementedError("MinMaxObserver is per tensor: use "
                                      "PerChannelMinMaxObserver for per-channel schemes")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.register_buffer("min_val", _make(np.array(np.inf, np.float32)))
        self.register_buffer("max_val", _make(np.array(-np.inf, np.float32)))

    def _update(self, lo: np.float32, hi: np.float32) -> None:
        self.min_val._data[...] = np.minimum(lo, self.min_val._data)
        self.max_val._data[...] = np.maximum(hi, self.max_val._data)

    def forward(self, x_orig: Tensor) -> Tensor:
        x = self._values(x_orig)
        if x.size:
            self._update(x.min(), x.max())
        return x_orig

    def calculate_qparams(self) -> tuple:
        """(scale, zero_point): one-element float32 and int64 tensors."""
        return self._calculate_qparams(self.min_val._data, self.max_val._data)

    def reset_min_max_vals(self) -> None:
        """Forget the recorded range."""
        self.min_val._data[...] = np.inf
        self.max_val._data[...] = -np.inf

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Tracks an exponential moving average of each batch's min and max:
    ``m <- m + averaging_constant * (batch_min - m)`` (the first batch sets it)."""

    def __init__(self, averaging_constant: float = 0.01, dtype: QuantizedDtype = quint8,
                 qscheme: qscheme = per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 eps: float = _EPS32, is_dynamic: bool = False, **kwargs) -> None:
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic)
        self.averaging_constant = averaging_constant

    def _update(self, lo: np.float32, hi: np.float32) -> None:
        old_lo, old_hi = self.min_val._data, self.max_val._data
        if np.isposinf(old_lo) and np.isneginf(old_hi):
            old_lo[...], old_hi[...] = lo, hi
            return
        c = np.float32(self.averaging_constant)
        old_lo[...] = old_lo + c * (lo - old_lo)
        old_hi[...] = old_hi + c * (hi - old_hi)


class PerChannelMinMaxObserver(ObserverBase):
    """Records the running min and max of each slice along `ch_axis` (per-channel schemes;
    the usual weight observer)."""

    def __init__(self, ch_axis: int = 0, dtype: QuantizedDtype = quint8,
                 qscheme: qscheme = per_channel_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs=None, eps: float = _EPS32, is_dynamic: bool = False,
                 **kwargs) -> None:
        if not qscheme.per_channel:
            raise NotImplementedError(f"{type(self).__name__} needs a per-channel scheme, "
                                      f"got {qscheme}")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", _make(np.zeros(0, np.float32)))
        self.register_buffer("max_val", _make(np.zeros(0, np.float32)))

    def _channel_range(self, x: np.ndarray) -> tuple:
        y = np.moveaxis(x, self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        return y.min(axis=1), y.max(axis=1)

    def _combine(self, lo, hi, old_lo, old_hi) -> tuple:
        return np.minimum(lo, old_lo), np.maximum(hi, old_hi)

    def forward(self, x_orig: Tensor) -> Tensor:
        x = self._values(x_orig)
        if x.size == 0:
            return x_orig
        lo, hi = self._channel_range(x)
        if self.min_val._data.size and self.max_val._data.size:
            lo, hi = self._combine(lo, hi, self.min_val._data, self.max_val._data)
        self.min_val = _make(np.ascontiguousarray(lo, np.float32))
        self.max_val = _make(np.ascontiguousarray(hi, np.float32))
        return x_orig

    def calculate_qparams(self) -> tuple:
        """(scales, zero_points): float32 and int64 tensors with one entry per channel."""
        return self._calculate_qparams(self.min_val._data, self.max_val._data)

    def reset_min_max_vals(self) -> None:
        """Forget the recorded ranges."""
        self.min_val = _make(np.zeros(0, np.float32))
        self.max_val = _make(np.zeros(0, np.float32))

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel moving averages of each batch's min and max (see
    `MovingAverageMinMaxObserver`)."""

    def __init__(self, averaging_constant: float = 0.01, ch_axis: int = 0,
                 dtype: QuantizedDtype = quint8, qscheme: qscheme = per_channel_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS32, is_dynamic: bool = False,
                 **kwargs) -> None:
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min, quant_max=quant_max,
                         eps=eps, is_dynamic=is_dynamic)
        self.averaging_constant = averaging_constant

    def _combine(self, lo, hi, old_lo, old_hi) -> tuple:
        c = np.float32(self.averaging_constant)
        return old_lo + c * (lo - old_lo), old_hi + c * (hi - old_hi)


class PlaceholderObserver(ObserverBase):
    """Records nothing: it only carries the dtype (and whether quantization is dynamic) for
    the conversion step, as the activation entry of `default_dynamic_qconfig`."""

    def __init__(self, dtype: QuantizedDtype = quint8, custom_op_name: str = "",
                 compute_dtype=None, quant_min: int | None = None,
                 quant_max: int | None = None, qscheme: qscheme = per_tensor_affine,
                 eps: float = _EPS32, is_dynamic: bool = False) -> None:
        super().__init__(dtype, qscheme, False, quant_min, quant_max, eps, is_dynamic)

    def forward(self, x: Tensor) -> Tensor:
        return x

    def calculate_qparams(self):
        raise RuntimeError("calculate_qparams should not be called for PlaceholderObserver")
