"""assert_close and make_tensor, with one table of tolerances per dtype."""

from __future__ import annotations

import numpy as np

from .._core import dtype as dtypes
from .._core.tensor import Tensor, _make

# (rtol, atol) per dtype, as PyTorch's testing module uses.
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def default_tolerances(dtype) -> tuple:
    """(rtol, atol) for a dtype; zero for integer and bool dtypes."""
    return TOLERANCES.get(dtypes.to_dtype(dtype).name, (0.0, 0.0))


def _to_numpy(x):
    if isinstance(x, Tensor):
        return np.asarray(x.detach().cpu_array())
    return np.asarray(x)


def assert_close(actual, expected, *, rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False, check_dtype: bool = True, msg: str | None = None):
    """Raise AssertionError unless `actual` and `expected` agree within tolerance.

    Tensors, NumPy arrays, numbers and (nested) sequences of them are accepted.
    """
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(f"length mismatch: {len(actual)} != {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
        return
    a, e = _to_numpy(actual), _to_numpy(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"shape mismatch: {a.shape} != {e.shape}")
    if check_dtype and isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if actual.dtype is not expected.dtype:
            raise AssertionError(msg or f"dtype mismatch: {actual.dtype} != {expected.dtype}")
    if rtol is None or atol is None:
        d = actual.dtype if isinstance(actual, Tensor) else dtypes.from_numpy_dtype(
            a.dtype) if a.dtype.kind != "O" else dtypes.float64
        r, t = TOLERANCES.get(d.name, (0.0, 0.0))
        rtol = r if rtol is None else rtol
        atol = t if atol is None else atol
    if a.dtype.kind == "V" or a.dtype == np.float16:
        a = a.astype(np.float32)
    if e.dtype.kind == "V" or e.dtype == np.float16:
        e = e.astype(np.float32)
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        ok = np.array_equal(a, e)
    else:
        ok = np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not ok:
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64)) if a.size else np.zeros(0)
        worst = float(np.nanmax(diff)) if diff.size else 0.0
        raise AssertionError(
            msg or f"Tensors are not close! greatest absolute difference {worst} "
                   f"(rtol={rtol}, atol={atol})\nactual:\n{a}\nexpected:\n{e}"
        )


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
