"""The legacy typed-tensor classes (``torch.FloatTensor``, ``torch.cuda.LongTensor``, ...)
and the legacy constructor ``Tensor.new``, which older PyTorch code still uses.

Calling a class builds a tensor of its dtype on its device type: ``FloatTensor(2, 3)``
(uninitialized, of that shape), ``FloatTensor([1, 2])`` (from data), ``FloatTensor(t)``
(`t` itself, which must already have that type) or ``FloatTensor()`` (empty).
``isinstance(t, FloatTensor)`` is true for a float32 CPU tensor, as in PyTorch, which is
why the classes share the small metaclass `TensorType`: checking a dtype and device is the
one thing ``isinstance`` cannot do from a plain class.
"""

from __future__ import annotations

from ._core import dtype as dtypes
from ._core.tensor import _LEGACY_NAMES, Size, Tensor
from .ops.creation import empty, tensor
from ._core.device import device as Device
from ._core.device import set_default_device

_SIZE_TYPES = (int, Size)


def legacy_new(dtype: dtypes.dtype, device, args: tuple, op: str) -> Tensor:
    """A tensor built by the legacy constructor rules from `args` (see the module docstring)."""
    if not args:
        return empty(0, dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        if t.dtype != dtype or t.device.type != device.type:
            raise TypeError(f"{op}: expected a {device.type} tensor of dtype {dtype}, but got "
                            f"a {t.device.type} tensor of dtype {t.dtype}")
        return t
    if len(args) == 1 and isinstance(args[0], Size):
        return empty(*args[0], dtype=dtype, device=device)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return empty(*args, dtype=dtype, device=device)
    if len(args) == 1:
        return tensor(args[0], dtype=dtype, device=device)
    raise TypeError(f"{op}: expected sizes (ints), a sequence of data or a tensor, but got "
                    f"{', '.join(type(a).__name__ for a in args)}")


class TensorType(type):
    """Metaclass of the legacy classes: calling builds a tensor, isinstance checks dtype and
    device type (see the module docstring)."""

    def __call__(cls, *args, device=None):
        if device is not None:
            if Device(device).type != cls.device_type:
                raise RuntimeError(f"legacy constructor expects device type: "
                                   f"{cls.device_type} but device type: "
                                   f"{Device(device).type} was passed")
        return legacy_new(cls.dtype, _device_of(cls), args, cls.__name__)

    def __instancecheck__(cls, obj) -> bool:
        return (isinstance(obj, Tensor) and not obj.is_sparse and obj.dtype == cls.dtype
                and obj.device.type == cls.device_type)

    def __repr__(cls) -> str:
        prefix = "ember.cuda." if cls.device_type == "cuda" else "ember."
        return f"<class '{prefix}{cls.__name__}'>"


def _device_of(cls):
    return Device(cls.device_type)


def _make_types(device_type: str, module: str) -> dict:
    """name -> legacy class for every dtype ember has, on one device type."""
    types = {}
    for dtype_name, class_name in _LEGACY_NAMES.items():
        types[class_name] = TensorType(class_name, (), {
            "dtype": dtypes._BY_NAME[dtype_name], "device_type": device_type,
            "is_cuda": device_type == "cuda", "__module__": module,
            "__doc__": f"The legacy {device_type} tensor type of dtype {dtype_name}."})
    return types


CPU_TYPES = _make_types("cpu", "ember")
CUDA_TYPES = _make_types("cuda", "ember.cuda")

FloatTensor, DoubleTensor = CPU_TYPES["FloatTensor"], CPU_TYPES["DoubleTensor"]
HalfTensor, BFloat16Tensor = CPU_TYPES["HalfTensor"], CPU_TYPES["BFloat16Tensor"]
LongTensor, IntTensor = CPU_TYPES["LongTensor"], CPU_TYPES["IntTensor"]
ShortTensor, CharTensor = CPU_TYPES["ShortTensor"], CPU_TYPES["CharTensor"]
ByteTensor, BoolTensor = CPU_TYPES["ByteTensor"], CPU_TYPES["BoolTensor"]
ComplexFloatTensor = CPU_TYPES["ComplexFloatTensor"]
ComplexDoubleTensor = CPU_TYPES["ComplexDoubleTensor"]


def set_default_tensor_type(t) -> None:
    """Deprecated in PyTorch: set the default floating dtype (and device, for a cuda type)
    from a legacy class or its name (``'torch.cuda.FloatTensor'``)."""
    if isinstance(t, str):
        name = t.rsplit(".", 1)[-1]
        table = CUDA_TYPES if ".cuda." in t else CPU_TYPES
        if name not in table:
            raise TypeError(f"invalid type: '{t}'")
        t = table[name]
    if not isinstance(t, TensorType) or not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.set_default_dtype(t.dtype)
    set_default_device("cuda" if t.device_type == "cuda" else None)
