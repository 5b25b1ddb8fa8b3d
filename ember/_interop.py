"""How ember tensors meet NumPy and other array libraries (NumPy protocols, DLPack).

**NumPy ufuncs** (``np.exp(t)``, ``np.add(a, t)``, and so ``ndarray + tensor``) return
tensors.  A ufunc with an ember equivalent (add, exp, maximum, less, matmul...) runs that
ember op, so it records autograd and works on any device; NumPy arrays and scalars among
the inputs become tensors first, and the result follows ember's (PyTorch's) type
promotion, not NumPy's (``np.divide(int_tensor, 2)`` is float32).  Ufuncs without an
equivalent, other ufunc methods (``np.add.reduce``, ``np.add.at``) and calls with
keyword arguments (``out=``, ``where=``, ``dtype=``) run in NumPy on the tensors'
arrays and the result comes back as a tensor, as with PyTorch; there, like
``Tensor.numpy()``, a tensor that requires grad or lives on a GPU raises.

**Other NumPy functions** (``np.concatenate``, ``np.mean``, ``np.percentile``...) behave
as they do for PyTorch tensors: the tensors are turned into NumPy arrays (sharing memory)
and NumPy's function runs, returning NumPy results.  A tensor that requires grad raises
RuntimeError and a GPU tensor TypeError (the ``Tensor.numpy()`` messages), instead of
being silently detached or copied.  We chose this over raising for every function so that
PyTorch code that hands CPU tensors to NumPy keeps working.

**DLPack**: ``Tensor.__dlpack__`` / ``__dlpack_device__`` export without copying (CPU
through NumPy, GPU through CuPy); :func:`from_dlpack` imports any object with
``__dlpack__`` (NumPy, PyTorch, JAX, CuPy arrays) or a legacy DLPack capsule, also
without copying.  bfloat16, which NumPy's DLPack does not know, is exchanged by relabelling
the 16-bit element type in the capsule.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

from ._core import dtype as dtypes
from ._core.backend import cupy_module
from ._core.tensor import Tensor, _make

# ---------------------------------------------------------------------------
# NumPy ufuncs

# ufunc -> name of the ember function computing it (looked up on the ember namespace).
_UFUNC_OPS = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
    np.floor_divide: "floor_divide", np.remainder: "remainder", np.fmod: "fmod",
    np.power: "pow", np.float_power: "float_power", np.negative: "neg",
    np.absolute: "abs", np.exp: "exp", np.exp2: "exp2", np.expm1: "expm1", np.log: "log",
    np.log2: "log2", np.log10: "log10", np.log1p: "log1p", np.sqrt: "sqrt",
    np.square: "square", np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "asin",
    np.arccos: "acos", np.arctan: "atan", np.sinh: "sinh", np.cosh: "cosh",
    np.tanh: "tanh", np.arcsinh: "asinh", np.arccosh: "acosh", np.arctanh: "atanh",
    np.arctan2: "atan2", np.hypot: "hypot", np.maximum: "maximum", np.minimum: "minimum",
    np.fmax: "fmax", np.fmin: "fmin", np.sign: "sign", np.floor: "floor", np.ceil: "ceil",
    np.trunc: "trunc", np.rint: "round", np.equal: "eq", np.not_equal: "ne",
    np.less: "lt", np.less_equal: "le", np.greater: "gt", np.greater_equal: "ge",
    np.logical_and: "logical_and", np.logical_or: "logical_or",
    np.logical_xor: "logical_xor", np.logical_not: "logical_not",
    np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor", np.invert: "bitwise_not",
    np.left_shift: "bitwise_left_shift", np.right_shift: "bitwise_right_shift",
    np.isnan: "isnan", np.isinf: "isinf", np.isfinite: "isfinite", np.signbit: "signbit",
    np.matmul: "matmul",
}


def _ember():
    return sys.modules["ember"]


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's ufunc protocol: ember ops where they exist, else NumPy, giving tensors."""
    for x in inputs + tuple(kwargs.get("out", ())):
        if not isinstance(x, (Tensor, np.ndarray, np.generic, int, float, complex, bool,
                              list, tuple)) and hasattr(type(x), "__array_ufunc__"):
            return NotImplemented  # another array library: let it answer
    name = _UFUNC_OPS.get(ufunc)
    fn = getattr(_ember(), name, None) if name else None
    if fn is not None and method == "__call__" and not kwargs:
        try:
            args = [_as_operand(x, name in _TENSORS_ONLY) for x in inputs]
        except TypeError:
            args = None  # e.g. a uint16 array: NumPy computes it below
        if args is not None:
            return fn(*args)
    return _numpy_ufunc(ufunc, method, inputs, kwargs)


# ember ops that, like PyTorch's, take tensors only (NumPy's ufuncs take numbers too)
_TENSORS_ONLY = frozenset({"atan2", "hypot", "maximum", "minimum", "fmax", "fmin"})


def _as_operand(x, tensor_only: bool = False):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, (bool, int, float, complex)):
        return _ember().tensor(x) if tensor_only else x
    return _ember().as_tensor(np.asarray(x))


def _numpy_ufunc(ufunc, method, inputs, kwargs):
    arrays = [_to_numpy(x) for x in inputs]
    outs = kwargs.get("out")
    if outs is not None:
        kwargs = dict(kwargs, out=tuple(_to_numpy(o) for o in outs))
    result = getattr(ufunc, method)(*arrays, **kwargs)
    if outs is not None:
        for o in outs:
            if isinstance(o, Tensor):
                o._version.value += 1
        return outs[0] if len(outs) == 1 else tuple(outs)
    if method == "at":  # in place on the first operand
        if isinstance(inputs[0], Tensor):
            inputs[0]._version.value += 1
        return None
    if isinstance(result, tuple):
        return tuple(_wrap(r) for r in result)
    return _wrap(result)


def _wrap(result):
    array = np.asarray(result)
    if not dtypes.is_known_numpy(array.dtype):
        return result  # a dtype ember lacks (e.g. uint16): leave NumPy's result
    return _make(array)


def _to_numpy(x):
    if isinstance(x, Tensor):
        return x.numpy()  # raises for tensors requiring grad and for GPU tensors
    if isinstance(x, (list, tuple)):
        return type(x)(_to_numpy(v) for v in x)
    if isinstance(x, dict):
        return {k: _to_numpy(v) for k, v in x.items()}
    return x


# ---------------------------------------------------------------------------
# NumPy array functions


def array_function(self, func, types, args, kwargs):
    """NumPy's function protocol: run NumPy's function on the tensors' arrays."""
    if not all(issubclass(t, (Tensor, np.ndarray)) for t in types):
        return NotImplemented
    return func(*_to_numpy(args), **_to_numpy(kwargs))


# ---------------------------------------------------------------------------
# DLPack

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST = 1, 2, 3
_KDL_UINT, _KDL_BFLOAT = 1, 4


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_capsule = ctypes.pythonapi.PyCapsule_IsValid
_is_capsule.restype = ctypes.c_int
_is_capsule.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _capsule_tensor(capsule) -> _DLTensor:
    """The DLTensor inside an unconsumed DLPack capsule (legacy or versioned)."""
    name = _get_name(capsule)
    if name not in (b"dltensor", b"dltensor_versioned"):
        raise BufferError(f"not an unconsumed DLPack capsule (its name is {name!r})")
    ptr = _get_pointer(capsule, name)
    if name == b"dltensor":  # DLManagedTensor starts with its DLTensor
        return _DLTensor.from_address(ptr)
    return _DLManagedTensorVersioned.from_address(ptr).dl_tensor


def dlpack(self, stream=None, *, max_version=None, dl_device=None, copy=None):
    """Export this tensor as a DLPack capsule, sharing its memory (PyTorch's signature)."""
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
    data = self._data
    if self.device.type == "cpu":
        if stream is not None:
            raise BufferError("stream must be None for a CPU tensor")
        if self.dtype is dtypes.bfloat16:
            capsule = data.view(np.uint16).__dlpack__(**kwargs)
            _capsule_tensor(capsule).dtype.code = _KDL_BFLOAT
            return capsule
        return data.__dlpack__(**kwargs)
    return data.__dlpack__(stream=stream, **kwargs)


def dlpack_device(self) -> tuple:
    """``(device type, index)`` in DLPack's numbering: (1, 0) for the CPU, (2, i) for cuda:i."""
    dev = self.device
    return (_KDL_CPU, 0) if dev.type == "cpu" else (_KDL_CUDA, dev.index or 0)


class _Capsule:
    """Hands an already made capsule to a consumer expecting the ``__dlpack__`` protocol."""

    def __init__(self, capsule, device: tuple):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, *args, **kwargs):
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise BufferError("the DLPack capsule was already consumed")
        return capsule

    def __dlpack_device__(self):
        return self._device


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing memory with `ext_tensor`, an object supporting DLPack.

    Accepts NumPy arrays, PyTorch, JAX and CuPy arrays (anything with ``__dlpack__`` and
    ``__dlpack_device__``) and legacy DLPack capsules (``torch.utils.dlpack.to_dlpack``).
    CPU memory gives a CPU tensor, CUDA memory a CUDA tensor (needs CuPy).

    >>> t = ember.from_dlpack(np.arange(3.0))   # no copy
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()
    if type(ext_tensor).__name__ == "PyCapsule":
        capsule = ext_tensor
        dl = _capsule_tensor(capsule)
        device = (dl.device.device_type, dl.device.device_id)
    else:
        if not hasattr(ext_tensor, "__dlpack__"):
            raise TypeError(f"from_dlpack: expected an object supporting DLPack (with "
                            f"__dlpack__) or a DLPack capsule, got {type(ext_tensor).__name__}")
        device = tuple(ext_tensor.__dlpack_device__())
        if device[0] in (_KDL_CPU, _KDL_CUDA_HOST):
            try:
                capsule = ext_tensor.__dlpack__(max_version=(1, 0))
            except TypeError:  # a producer that predates versioned DLPack
                capsule = ext_tensor.__dlpack__()
        else:
            capsule = ext_tensor.__dlpack__(stream=None)
        dl = _capsule_tensor(capsule)
    bf16 = dl.dtype.code == _KDL_BFLOAT and dl.dtype.bits == 16 and dl.dtype.lanes == 1
    if bf16:
        dl.dtype.code = _KDL_UINT  # NumPy/CuPy know uint16; we view it back as bfloat16
    if device[0] in (_KDL_CPU, _KDL_CUDA_HOST):
        array = np.from_dlpack(_Capsule(capsule, (_KDL_CPU, 0)))
    elif device[0] == _KDL_CUDA:
        array = cupy_module().from_dlpack(_Capsule(capsule, device))
    else:
        raise RuntimeError(f"from_dlpack: unsupported DLPack device type {device[0]}")
    if bf16:
        array = array.view(dtypes.bfloat16.np_dtype)
    dtypes.from_numpy_dtype(array.dtype)  # TypeError for dtypes ember does not have
    return _make(array)


def to_dlpack(tensor: Tensor):
    """A legacy DLPack capsule sharing the tensor's memory (prefer ``from_dlpack(tensor)``)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack: expected a Tensor, got {type(tensor).__name__}")
    return tensor.__dlpack__()


TENSOR_METHODS = {
    "__array_ufunc__": array_ufunc,
    "__array_function__": array_function,
    "__dlpack__": dlpack,
    "__dlpack_device__": dlpack_device,
}
