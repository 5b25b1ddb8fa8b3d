"""Helpers shared by the op files: argument checks and PyTorch's type promotion."""

from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.tensor import Tensor, _make
from .._core.backend import module_of
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import _wrap_dim

SCALAR_TYPES = (bool, int, float, complex, np.number, np.bool_)


def ignore_numpy_fp_warnings() -> None:
    """Silence NumPy's floating point warnings raised by ember's own kernels.

    PyTorch computes 1/0, 0*inf, log(0), ... silently (IEEE inf and nan); NumPy warns.
    Wrapping every op in ``np.errstate`` would cost about a microsecond per op, so instead
    one warnings filter drops those warnings when they come from ember's kernels (a ufunc's
    warning is attributed to the module of the line that called it).  It costs nothing until
    a warning is raised, and users' own NumPy code keeps its warnings.  Installed on import;
    idempotent.  NOTE: a ``warnings.catch_warnings()`` block around the first
    ``import ember`` (pytest's collection is one) drops the filter on exit: call this again.
    """
    warnings.filterwarnings(
        "ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered",
        category=RuntimeWarning, module=r"ember\.(ops|_core)\.")


ignore_numpy_fp_warnings()


def is_scalar(value) -> bool:
    """A Python or NumPy number (not a tensor)."""
    return isinstance(value, SCALAR_TYPES)


def dtype_of(value) -> dtypes.dtype:
    """The dtype of a tensor, or the dtype a Python scalar takes in an op."""
    if isinstance(value, Tensor):
        return dtypes.from_numpy_dtype(value._data.dtype)
    if isinstance(value, np.generic):
        return dtypes.scalar_dtype(value.item())
    return dtypes.scalar_dtype(value)


def result_type(*operands) -> dtypes.dtype:
    """PyTorch's result dtype for an op over tensors and scalars."""
    dims, zero_dims, scalars = [], [], []
    for op in operands:
        if isinstance(op, Tensor):
            (dims if op._data.ndim else zero_dims).append(
                dtypes.from_numpy_dtype(op._data.dtype))
        elif op is not None:
            scalars.append(dtype_of(op))
    return dtypes.result_type_of(dims, zero_dims, scalars)


def check_same_device(op: str, *tensors) -> None:
    """RuntimeError when tensors of one op live on different devices."""
    first = None
    for t in tensors:
        if isinstance(t, Tensor):
            if first is None:
                first = t
            elif t.device != first.device:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two "
                    f"devices, {first.device} and {t.device}! (when checking arguments for {op})"
                )


_NUMBER = (float, int)  # exact types: bool (an int subclass) takes the general path


def promote(op: str, a, b, wrap: bool = True):
    """Cast the operands of a binary op to their common dtype.

    Tensors are cast with the differentiable ``to``; scalars stay Python scalars
    (NumPy keeps the array's dtype for them).  Returns (a, b).  An integer operand out of
    an integer result type's range wraps around (``wrap``, see `cast`), as in PyTorch's
    arithmetic and comparisons.
    """
    # fast paths: two tensors of one dtype and kind of array (`x * y`) need nothing; a float
    # tensor and a Python number keep the tensor's dtype (`x * 0.5`)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        da, db = a._data, b._data
        if da.dtype is db.dtype and type(da) is type(db):
            return a, b
    if type(b) in _NUMBER and isinstance(a, Tensor) and a._data.dtype.kind == "f":
        return a, float(b)
    if type(a) in _NUMBER and isinstance(b, Tensor) and b._data.dtype.kind == "f":
        return float(a), b
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if type(a._data) is not type(b._data):
            check_same_device(op, a, b)
        if a._data.dtype == b._data.dtype:
            return a, b
    elif not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    elif not (is_scalar(a) or isinstance(a, Tensor)) or not (
            is_scalar(b) or isinstance(b, Tensor)):
        bad = b if isinstance(a, Tensor) else a
        raise TypeError(
            f"{op}(): unsupported operand type {type(bad).__name__}; expected a Tensor or a number"
        )
    target = result_type(a, b)
    like = a if isinstance(a, Tensor) else b
    return cast(a, target, wrap, like), cast(b, target, wrap, like)


def cast(value, target: dtypes.dtype, wrap: bool = False, like: Tensor | None = None):
    """A tensor converted to `target` (differentiably); scalars converted to Python types.

    A Python int out of an integer `target`'s range is taken modulo 2**bits with `wrap`
    (PyTorch's binary arithmetic: ``uint8_tensor == -1`` compares with 255); without, only
    negative values wrap into unsigned types and anything else raises RuntimeError
    (PyTorch's checked conversion of scalar arguments, e.g. ``clamp(max=300)`` on uint8).
    """
    if isinstance(value, Tensor):
        if value._data.dtype == target.np_dtype:
            return value
        return value.to(target)
    if isinstance(value, np.generic):
        value = value.item()
    if target is dtypes.bfloat16:
        # NOTE: ml_dtypes does not treat Python numbers as "weak" the way NumPy's own
        # types do (bfloat16 array * 0.5 would give float32): wrap the number instead.
        # (on `like`'s device: CuPy takes no NumPy array as an operand)
        return _make((np if like is None else _xp(like)).asarray(value, dtype=target.np_dtype))
    if target.is_floating_point and isinstance(value, (bool, int)):
        return float(value)
    if target is dtypes.bool and isinstance(value, numbers.Number):
        return bool(value)
    if type(value) is int and target.np_dtype.kind in "iu":
        bounds = _INT_BOUNDS[target.np_dtype]
        if not bounds[0] <= value <= bounds[1]:
            return _wrap_int(value, target.np_dtype, wrap)
    return value


_INT_BOUNDS = {np.dtype(n): (int(np.iinfo(n).min), int(np.iinfo(n).max))
               for n in ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")}


def _wrap_int(value: int, np_dtype, wrap: bool) -> int:
    """An out-of-range integer operand taken modulo 2**bits into an integer type (see
    `cast`)."""
    if not -(2 ** 63) <= value < 2 ** 64:
        raise OverflowError(f"Python int {value} too large to convert to an integer type")
    if not wrap and not (np_dtype.kind == "u" and -_INT_BOUNDS[np_dtype][1] <= value < 0):
        raise RuntimeError(f"value cannot be converted to type {np_dtype.name}_t without "
                           "overflow")
    bits = np_dtype.itemsize * 8
    value %= 2 ** bits
    if np_dtype.kind == "i" and value >= 2 ** (bits - 1):
        value -= 2 ** bits
    return value


def to_tensor(value, like: Tensor | None = None) -> Tensor:
    """Wrap a scalar as a 0-dim tensor (on `like`'s device and with PyTorch's dtype)."""
    if isinstance(value, Tensor):
        return value
    d = dtype_of(value)
    xp = np if like is None else _xp(like)
    return _make(xp.asarray(value, dtype=d.np_dtype))


def _xp(t: Tensor):
    return module_of(t._data)


def xp_of(array):
    """numpy, or cupy for a GPU array."""
    if type(array) is np.ndarray:
        return np

    return module_of(array)


def normalize_dims(dim, ndim: int, op: str) -> tuple:
    """A dim argument (None, int, or a sequence) as a sorted tuple of non-negative ints."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        return (_wrap_dim(int(dim), ndim, op),)
    dims = tuple(sorted(_wrap_dim(int(d), ndim, op) for d in dim))
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}(): dim {dims} appears multiple times in the list of dims")
    return dims


def wrap_dim(dim: int, ndim: int, op: str = "") -> int:
    """A possibly negative dim as an index (IndexError when out of range)."""
    return _wrap_dim(dim, ndim, op)


def require_float(op: str, t: Tensor) -> None:
    """RuntimeError naming the op when an integer tensor reaches a float-only op."""
    if t._data.dtype.kind not in "fc" and t._data.dtype.name != "bfloat16":
        raise RuntimeError(f"{op}(): expected a floating point tensor, got {t.dtype}")


def float_input(t: Tensor) -> Tensor:
    """Integer/bool tensors promoted to the default float dtype (for exp, sin, ...)."""
    if t._data.dtype.kind in "fc" or t._data.dtype.name == "bfloat16":
        return t
    return t.to(dtypes.get_default_dtype())


# ---------------------------------------------------------------------------
# factory arguments: size= and out=


def size_args(op: str, args: tuple, size) -> tuple:
    """A factory's shape arguments: the positional sizes, or the `size` keyword."""
    if size is None:
        return args
    if args:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    return (size,)


def write_out(op: str, result, out):
    """`result` written into the `out=` tensor (or tuple of tensors) and `out` returned:
    PyTorch's out= argument.  Without `out`, `result` itself.

    `out` must have the result's dtype and device; one of another shape is resized (with
    PyTorch's warning when it held elements; existing views of it keep the old memory).
    Like PyTorch, out= refuses inputs that require grad: the write is not recorded.
    """
    if out is None:
        return result
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{op}(): argument 'out' must be a tuple of {len(result)} Tensors")
        written = [write_out(op, r, o) for r, o in zip(result, out)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")

    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got "
                           f"{out.dtype} instead")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to be on device {result.device}, but got "
                           f"{out.device} instead")
    data = result._data
    if out._data.shape == data.shape:
        out._data[...] = data
    else:
        if out._data.size:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out.shape)}, which does not match the required output shape "
                          f"{list(data.shape)}.", UserWarning, stacklevel=3)
        out._data = data.copy()
    out._version.value += 1
    return out


def out_dtype(op: str, dtype, out):
    """The dtype a factory makes with `out=`: `out`'s, which an explicit `dtype` must match."""
    if out is None or not isinstance(out, Tensor):
        return dtype
    if dtype is not None and dtypes.to_dtype(dtype) != out.dtype:
        raise RuntimeError(f"dtype {cpp_name(dtypes.to_dtype(dtype))} does not match dtype of "
                           f"out parameter ({cpp_name(out.dtype)})")
    return out.dtype


def cpp_name(d: dtypes.dtype) -> str:
    """A dtype as PyTorch's error messages name it: "Float", "Long", "ComplexDouble"."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}.get(d.name, d.name)


def with_out(op: str):
    """Decorator for a function with PyTorch's `out=` keyword: the function computes its
    result as usual and the wrapper writes it into `out` (see `write_out`)."""
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, out=None, **kwargs):
            return write_out(op, fn(*args, **kwargs), out)
        return call
    return wrap


def check_layout(op: str, layout) -> None:
    """Factories make strided (dense) tensors: another `layout` is refused, not ignored."""
    if layout is not None and layout != "strided":
        raise NotImplementedError(
            f"{op}(layout={layout}): ember's factories make strided (dense) tensors only; "
            "build a sparse tensor with sparse_coo_tensor() or to_sparse()")
