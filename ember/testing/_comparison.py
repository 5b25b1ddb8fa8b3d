"""assert_close and make_tensor, with one table of tolerances per dtype.

``assert_close`` follows ``torch.testing.assert_close``: tensors are compared attribute by
attribute (shape, device, dtype, layout, stride) and then value by value with
``|actual - expected| <= atol + rtol * |expected|``; Python numbers compare as scalars;
sequences and mappings compare item by item.  The failure message has PyTorch's form
(mismatched elements, greatest absolute and relative difference and where).

Two ember extensions, both accepting calls PyTorch refuses: a tensor may be compared with a
NumPy array, a number or a (nested) list, and NumPy arrays with each other, by value only
(the dtype is not checked) with the tolerances of the tensor's dtype (PyTorch raises
``TypeError``); and `rtol` or `atol` may be given alone, the other keeping the dtype's
default (PyTorch raises ``ValueError``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .._core import dtype as dtypes
from .._core.tensor import Tensor, _make
from ..ops.creation import tensor

# (rtol, atol) per dtype, as PyTorch's testing module uses.
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def default_tolerances(*dtype_list) -> tuple:
    """(rtol, atol) for a dtype (the largest of each over several); zero for integer and bool
    dtypes."""
    pairs = [TOLERANCES.get(dtypes.to_dtype(d).name, (0.0, 0.0)) for d in dtype_list]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg=None) -> None:
    """Raise AssertionError unless `actual` and `expected` are close.

    Tensors must agree in shape (and device, dtype and layout unless the matching
    ``check_*`` is False; strides with `check_stride`) and in value within
    ``atol + rtol * |expected|``.  Without `rtol`/`atol` the tolerances are the dtype's:
    float32 (1.3e-6, 1e-5), float64 (1e-7, 1e-7), float16 (1e-3, 1e-5), bfloat16
    (1.6e-2, 1e-5), exact for integers and bools (one given alone keeps the other's default:
    an ember extension).  NaNs are equal only with `equal_nan`.  `msg` (a string, or a
    function of the default message) replaces the message.  Sequences and mappings are
    compared item by item.

    >>> assert_close(ember.tensor([1., 2.]), ember.tensor([1., 2.0000001]))
    """
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    failure = _compare(actual, expected, options, path="")
    if failure is not None:
        text, path = failure
        if path:
            text += f"\n\nThe failure occurred for item {path}"
        if callable(msg):
            text = msg(text)
        elif msg is not None:
            text = msg
        raise AssertionError(text)


# the tolerances of the deprecated assert_allclose
_LEGACY_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """Deprecated in PyTorch (a FutureWarning says so): ``assert_close`` without the dtype
    check, NaNs equal by default, non-tensors made tensors, and the older tolerances
    (float32: rtol 1e-4, atol 1e-5; float64: 1e-5, 1e-8; float16: 1e-3, 1e-3)."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_LEGACY_TOLERANCES.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, msg=msg or None)


def _compare(actual, expected, options: dict, path: str):
    """None when the pair agrees, else (message, path of the failing item)."""
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        return _tagged(_compare_tensors(actual, expected, options), path)
    if actual is None or expected is None:
        if actual is None and expected is None:
            return None
        return f"None mismatch: {actual} is not {expected}", path
    if isinstance(actual, (Tensor, np.ndarray)) or isinstance(expected, (Tensor, np.ndarray)):
        return _tagged(_compare_by_value(actual, expected, options), path)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return _compare_mappings(actual, expected, options, path)
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            return (f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                    path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            failure = _compare(a, e, options, f"{path}[{i}]")
            if failure is not None:
                return failure
        return None
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        if bool(actual) == bool(expected):
            return None
        return f"Booleans mismatch: {actual} is not {expected}", path
    if _is_number(actual) and _is_number(expected):
        return _tagged(_compare_numbers(actual, expected, options), path)
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} "
                    f"and {type(expected)}.")


def _tagged(message, path):
    return None if message is None else (message, path)


def _is_sequence(x) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, (str, bytes))


def _is_number(x) -> bool:
    return isinstance(x, (int, float, complex, np.number)) and not isinstance(x, bool)


def _compare_mappings(actual, expected, options: dict, path: str):
    if set(actual) != set(expected):
        missing = sorted(set(expected) - set(actual), key=repr)
        extra = sorted(set(actual) - set(expected), key=repr)
        return ("The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {missing}\n"
                f"Additional keys in the actual mapping: {extra}", path)
    for key in expected:
        failure = _compare(actual[key], expected[key], options, f"{path}[{key!r}]")
        if failure is not None:
            return failure
    return None


def _number_kind(x) -> type:
    for kind, types in ((int, (int, np.integer)), (float, (float, np.floating)),
                        (complex, (complex, np.complexfloating))):
        if isinstance(x, types):
            return kind
    return type(x)


def _compare_numbers(actual, expected, options: dict):
    """Python numbers compare as 0-dim float64/int64/complex128 values."""
    if options["check_dtype"] and _number_kind(actual) is not _number_kind(expected):
        return f"The (d)types do not match: {type(actual)} != {type(expected)}."
    a, e = np.asarray(actual), np.asarray(expected)
    common = np.result_type(a, e)
    rtol, atol = _tolerances(options, dtypes.from_numpy_dtype(common))
    return _compare_values(a.astype(common), e.astype(common), rtol, atol, options["equal_nan"])


def _compare_tensors(actual: Tensor, expected: Tensor, options: dict):
    """PyTorch's checks for a pair of tensors: attributes first, then values."""
    checks = [("shape", True, lambda t: t.shape),
              ("device", options["check_device"], lambda t: t.device),
              ("dtype", options["check_dtype"], lambda t: t.dtype),
              ("layout", options["check_layout"], lambda t: t.layout),
              ("stride()", options["check_stride"], lambda t: t.stride())]
    for name, enabled, get in checks:
        if enabled and get(actual) != get(expected):
            return (f"The values for attribute '{name}' do not match: "
                    f"{get(actual)} != {get(expected)}.")
    common = dtypes.promote_types(actual.dtype, expected.dtype)
    rtol, atol = _tolerances(options, actual.dtype, expected.dtype)
    a = _array(actual).astype(common.np_dtype)
    e = _array(expected).astype(common.np_dtype)
    return _compare_values(a, e, rtol, atol, options["equal_nan"])


def _compare_by_value(actual, expected, options: dict):
    """ember's extension: a tensor against an array, number or list, by value only."""
    a, e = _array(actual), _array(expected)
    if a.shape != e.shape:
        return (f"The values for attribute 'shape' do not match: "
                f"{_shape(actual, a)} != {_shape(expected, e)}.")
    tensors = [t.dtype for t in (actual, expected) if isinstance(t, Tensor)]
    if not tensors:
        tensors = [dtypes.from_numpy_dtype(x.dtype) for x in (a, e) if x.dtype.kind in "biufc"]
    rtol, atol = _tolerances(options, *(tensors or [dtypes.float64]))
    a, e = _widened(a), _widened(e)
    common = np.result_type(a, e)
    return _compare_values(a.astype(common), e.astype(common), rtol, atol, options["equal_nan"])


def _tolerances(options: dict, *dtype_list) -> tuple:
    rtol, atol = default_tolerances(*dtype_list)
    if options["rtol"] is not None:
        rtol = options["rtol"]
    if options["atol"] is not None:
        atol = options["atol"]
    return rtol, atol


def _array(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return np.asarray(x.detach().cpu_array())
    return np.asarray(x)


def _shape(x, array: np.ndarray):
    return x.shape if isinstance(x, Tensor) else array.shape


def _widened(a: np.ndarray) -> np.ndarray:
    """float16/bfloat16 (and object arrays of numbers) as float64, for NumPy's promotion."""
    return a if a.dtype.kind in "biuc" or a.dtype in (np.float32, np.float64) else \
        a.astype(np.float64)


def _compare_values(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool):
    """The mismatch message for two arrays of one dtype and shape, or None."""
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    if a.dtype.kind in "biu":
        a, e = a.astype(np.int64), e.astype(np.int64)
        close = a == e if rtol == 0 and atol == 0 else \
            np.abs((a - e).astype(wide)) <= atol + rtol * np.abs(e.astype(wide))
    else:
        aw, ew = a.astype(wide), e.astype(wide)
        with np.errstate(invalid="ignore", over="ignore"):
            within = np.abs(aw - ew) <= atol + rtol * np.abs(ew)
            close = (aw == ew) | (within & np.isfinite(aw) & np.isfinite(ew))
        if equal_nan:
            close |= np.isnan(aw) & np.isnan(ew)
    if bool(np.all(close)):
        return None
    # the differences are computed in the compared dtype, as PyTorch reports them
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_diff = np.abs(a - e)
        denominator = np.abs(e)
        if a.dtype.kind in "biu":
            abs_diff, denominator = abs_diff.astype(np.float32), denominator.astype(np.float32)
        rel_diff = abs_diff / denominator
    abs_diff = np.where(close, 0, np.abs(a - e) if a.dtype.kind in "biu" else abs_diff)
    rel_diff = np.where(close, 0, rel_diff)
    adjective = "equal" if rtol == 0 and atol == 0 else "close"
    if a.ndim == 0:
        return (f"Scalars are not {adjective}!\n\n"
                f"Expected {e.item()} but got {a.item()}.\n"
                f"Absolute difference: {abs_diff.item()}{_allowed(atol)}\n"
                f"Relative difference: {rel_diff.item()}{_allowed(rtol)}")
    mismatched = int(close.size - np.count_nonzero(close))
    lines = [f"Tensor-likes are not {adjective}!", "",
             f"Mismatched elements: {mismatched} / {close.size} "
             f"({100 * mismatched / close.size:.1f}%)"]
    for kind, diff, tol in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        flat = diff.ravel()
        where = int(np.argmax(flat))
        index = tuple(int(i) for i in np.unravel_index(where, diff.shape))
        lines.append(f"Greatest {kind} difference: {flat[where].item()} at index {index}"
                     f"{_allowed(tol)}")
    return "\n".join(lines)


def _allowed(tol: float) -> str:
    return f" (up to {tol} allowed)" if tol > 0 else ""


def make_tensor(*shape, dtype=None, device=None, low=None, high=None,
                requires_grad: bool = False, seed: int | None = None) -> Tensor:
    """A tensor of random values in [low, high) for tests (integers for integer dtypes)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    rng = np.random.default_rng(seed)
    lo = -9 if low is None else low
    hi = 9 if high is None else high
    if d is dtypes.bool:
        data = rng.integers(0, 2, size=shape).astype(bool)
    elif d.np_dtype.kind in "iu":
        data = rng.integers(int(lo), int(hi), size=shape).astype(d.np_dtype)
    else:
        data = rng.uniform(lo, hi, size=shape).astype(d.np_dtype)
    out = _make(np.ascontiguousarray(data))
    if device is not None:
        out = out.to(device)
    if requires_grad:
        out.requires_grad_(True)
    return out
