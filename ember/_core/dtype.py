"""dtype objects, PyTorch's type-promotion rules and the default dtype.

A `dtype` wraps one NumPy dtype.  Promotion follows PyTorch, not NumPy, where the
two differ: Python scalars and zero-dim tensors do not promote a dimensioned tensor
within its category (bool < integer < floating < complex), integer division with
`/` gives the default float dtype, and float16 with bfloat16 gives float32.
"""

from __future__ import annotations

import builtins

import numpy as np


class dtype:  # noqa: N801 - PyTorch's name
    """A tensor element type, e.g. ``ember.float32``."""

    __slots__ = ("name", "np_dtype", "itemsize", "is_floating_point", "is_complex",
                 "is_signed", "_category", "__weakref__")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        np_dtype = np.dtype(np_dtype) if np_dtype is not None else None
        self.np_dtype = np_dtype
        self.itemsize = np_dtype.itemsize if np_dtype is not None else 0
        self._category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = name not in ("bool", "uint8")

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> dtype:
        """The real counterpart of a complex dtype (itself otherwise)."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self) -> dtype:
        """The complex counterpart of a floating dtype (itself otherwise)."""
        return {"float64": complex128}.get(self.name, complex64 if self._category == 2 else self)


class _Bfloat16(dtype):
    """bfloat16, whose NumPy dtype comes from ml_dtypes (NumPy has none), imported the
    first time it is asked for: that import takes ~0.5 s, half of ``import ember``."""

    __slots__ = ()

    @property
    def np_dtype(self):
        known = _NP_DTYPE_SLOT.__get__(self)
        return known if known is not None else load_bfloat16()

    @np_dtype.setter
    def np_dtype(self, value) -> None:
        _NP_DTYPE_SLOT.__set__(self, value)


_NP_DTYPE_SLOT = dtype.__dict__["np_dtype"]   # (the base class's slot, under the property)

bool = dtype("bool", np.bool_, 0)  # noqa: A001 - PyTorch's name
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
bfloat16 = _Bfloat16("bfloat16", None, 2)
bfloat16.itemsize = 2
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)

# PyTorch's aliases
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY = {d.np_dtype: d for d in ALL_DTYPES if d is not bfloat16}
# the NumPy dtypes of tensors that carry gradients (bfloat16's joins in `load_bfloat16`)
DIFFERENTIABLE_NUMPY = {np.dtype(name) for name in
                        ("float16", "float32", "float64", "complex64", "complex128")}


def load_bfloat16() -> np.dtype:
    """NumPy's bfloat16 dtype, from ml_dtypes, which this imports on the first call (the
    dtype tables then learn it).  Whatever makes or meets a bfloat16 array calls it
    first: `bfloat16.np_dtype`, or a lookup of a NumPy dtype named "bfloat16"."""
    known = _NP_DTYPE_SLOT.__get__(bfloat16)
    if known is not None:
        return known
    import ml_dtypes

    np_dtype = np.dtype(ml_dtypes.bfloat16)
    _BY_NUMPY[np_dtype] = bfloat16
    DIFFERENTIABLE_NUMPY.add(np_dtype)
    bfloat16.np_dtype = np_dtype
    return np_dtype


def is_known_numpy(np_dtype: np.dtype) -> bool:
    """Whether ember has a dtype for this NumPy dtype (a bfloat16 array made before ember
    first needed bfloat16 loads it)."""
    if np_dtype in _BY_NUMPY:
        return True
    if getattr(np_dtype, "name", None) == "bfloat16":
        load_bfloat16()
        return np_dtype in _BY_NUMPY
    return False


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype of a NumPy dtype; TypeError for types ember does not have."""
    try:
        return _BY_NUMPY[np_dtype]
    except KeyError:
        pass
    try:
        np_dtype = np.dtype(np_dtype)
        if is_known_numpy(np_dtype):
            return _BY_NUMPY[np_dtype]
    except TypeError:
        pass
    raise TypeError(
        f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
        "are: float64, float32, float16, bfloat16, complex64, complex128, int64, int32, "
        "int16, int8, uint8, and bool.")


def to_dtype(value) -> dtype:
    """Accept an ember dtype, a NumPy dtype or a Python type (float, int, bool)."""
    if isinstance(value, dtype):
        return value
    if value is builtins.float:
        return get_default_dtype()
    if value is builtins.int:
        return int64
    if value is builtins.bool:
        return bool
    if value is builtins.complex:
        return get_default_dtype().to_complex()
    return from_numpy_dtype(value)


# ---------------------------------------------------------------------------
# default dtype

_default_float = float32


def set_default_dtype(d: dtype) -> None:
    """Set the dtype that Python floats and float factories (``zeros``...) produce."""
    global _default_float
    d = to_dtype(d)
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def get_default_dtype() -> dtype:
    """The current default floating-point dtype (float32 unless changed)."""
    return _default_float


# ---------------------------------------------------------------------------
# promotion


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both arguments can be cast to, by PyTorch's lattice."""
    if type1 is type2:
        return type1
    c1, c2 = type1._category, type2._category
    if c1 != c2:
        high, low = (type1, type2) if c1 > c2 else (type2, type1)
        if high._category == 3 and low._category == 2:
            return complex128 if low is float64 or high is complex128 else high
        return high
    if bfloat16 in (type1, type2):
        other = type2 if type1 is bfloat16 else type1
        return float32 if other is float16 else other
    return _BY_NUMPY[np.promote_types(type1.np_dtype, type2.np_dtype)]


def _combine_categories(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # Keep `higher` unless `lower` belongs to a strictly higher category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._category == 3:
        return higher
    if lower._category == 3:
        return higher.to_complex() if higher._category == 2 else lower
    if higher._category == 2:
        return higher
    if higher is bool or lower._category == 2:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it is 'wrapped' into an op."""
    if isinstance(value, builtins.bool):
        return bool
    if isinstance(value, builtins.int):
        return int64
    if isinstance(value, builtins.complex):
        return get_default_dtype().to_complex()
    return get_default_dtype()


def result_type_of(dims: list, zero_dims: list, scalars: list) -> dtype:
    """Combine three priority tiers (dimensioned tensors, 0-dim tensors, Python scalars)."""
    def fold(dtypes):
        out = None
        for d in dtypes:
            out = d if out is None else promote_types(out, d)
        return out

    return _combine_categories(fold(dims), _combine_categories(fold(zero_dims), fold(scalars)))


def is_floating(d: dtype) -> builtins.bool:
    return d._category == 2


class finfo:  # noqa: N801 - PyTorch's name
    """Machine limits of a floating dtype: eps, max, min, tiny, resolution, bits."""

    def __init__(self, type: dtype | None = None):  # noqa: A002
        d = get_default_dtype() if type is None else to_dtype(type)
        if d._category < 2:
            raise TypeError(f"finfo: {d} is not a floating point dtype")
        if d is bfloat16:
            import ml_dtypes   # (loaded already: `d.np_dtype` did)

            info = ml_dtypes.finfo(d.np_dtype)
        else:
            info = np.finfo(d.np_dtype)
        self.dtype = d.name
        self.bits = info.bits
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = builtins.float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = builtins.float(info.resolution)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.tiny}, tiny={self.tiny}, "
                f"dtype={self.dtype})")


class iinfo:  # noqa: N801 - PyTorch's name
    """Machine limits of an integer dtype: min, max, bits."""

    def __init__(self, type: dtype):  # noqa: A002
        d = to_dtype(type)
        if d._category != 1 and d is not bool:
            raise TypeError(f"iinfo: {d} is not an integer dtype")
        info = np.iinfo(d.np_dtype) if d is not bool else None
        self.dtype = d.name
        self.bits = info.bits if info else 8
        self.min = builtins.int(info.min) if info else 0
        self.max = builtins.int(info.max) if info else 1

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def can_cast(from_: dtype, to: dtype) -> builtins.bool:
    """PyTorch's casting rule for in-place ops: no float->int, complex->real, or ->bool."""
    if from_._category > to._category:
        return False
    if to is bool and from_ is not bool:
        return False
    return True
