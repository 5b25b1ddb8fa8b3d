"""The quantized element types (``ember.quint8``, ``ember.qint8``, ``ember.qint32``) and the
quantization schemes (``ember.per_tensor_affine``...).

NOTE: these are deliberately NOT ``ember.dtype`` objects: no ordinary tensor holds them and
they take no part in type promotion, so they live in this small class of their own and
``_core/dtype.py`` never sees them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["QuantizedDtype", "qscheme", "quint8", "qint8", "qint32", "per_tensor_affine",
           "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric"]


class QuantizedDtype:
    """The element type of a quantized tensor: an integer storage type and its range."""

    __slots__ = ("name", "np_dtype", "itemsize", "quant_min", "quant_max", "is_signed")
    is_floating_point = False
    is_complex = False

    def __init__(self, name: str, np_dtype) -> None:
        self.name = name
        self.np_dtype = np.dtype(np_dtype)
        self.itemsize = self.np_dtype.itemsize
        info = np.iinfo(self.np_dtype)
        self.quant_min, self.quant_max = int(info.min), int(info.max)
        self.is_signed = self.quant_min < 0

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_qdtype_by_name, (self.name,))


class qscheme:  # noqa: N801 - PyTorch's name
    """How a quantized tensor maps integers to reals (one scale, or one per channel)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_qscheme_by_name, (self.name,))

    @property
    def per_channel(self) -> bool:
        return self.name.startswith("per_channel")

    @property
    def symmetric(self) -> bool:
        return self.name.endswith("symmetric")


quint8 = QuantizedDtype("quint8", np.uint8)
qint8 = QuantizedDtype("qint8", np.int8)
qint32 = QuantizedDtype("qint32", np.int32)
_QDTYPES = {d.name: d for d in (quint8, qint8, qint32)}

per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
_QSCHEMES = {s.name: s for s in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                                 per_channel_symmetric)}


def _qdtype_by_name(name: str) -> QuantizedDtype:
    return _QDTYPES[name]


def _qscheme_by_name(name: str) -> qscheme:
    return _QSCHEMES[name]
