"""numba kernels of relu: the forward ``max(x, 0)`` and the backward ``grad where y > 0``.

NumPy's ``maximum(x, 0)`` runs at ~0.5 ns per float32 element on the machines we measure
on (36,864 elements: 19 us), several times slower than a plain select that LLVM
vectorizes; a CNN step spends ~2 ms in it.  The semantics are NumPy's (ember's NumPy
path): a NaN stays NaN, -0.0 and negatives give +0.0.  The backward passes `grad` where
the output `y` is positive or NaN and gives +0.0 elsewhere, as the NumPy path's bit trick
(`_kernels.relu_backward`) does, at a third of its time.  The ops (elementwise.py) call
`supports` first and keep NumPy as the fallback.
"""

from __future__ import annotations

import numpy as np

from . import _native as native

# Below this many elements NumPy's call is as cheap as a kernel call.
MIN_SIZE = 1 << 12
# float32 zero: keeps float32 arrays in float32 (and promotes harmlessly for float64)
_ZERO = np.float32(0.0)


def supports(x) -> bool:
    """True when the kernel should take `x`: numba on, a C-contiguous NumPy float32 or
    float64 array of at least `MIN_SIZE` elements."""
    return (type(x) is np.ndarray and x.size >= MIN_SIZE and x.dtype.char in "fd"
            and x.flags.c_contiguous and native.enabled())


@native.kernel(parallel=True)
def _relu(x, out):
    for i in native.prange(x.size):
        v = x[i]
        out[i] = v if (v > _ZERO or v != v) else _ZERO


def relu(x: np.ndarray) -> np.ndarray:
    """``max(x, 0)`` of a `supports` array (a new array)."""
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    native.run(_relu, flat.size, flat, out)
    return out.reshape(x.shape)


@native.kernel(parallel=True)
def _relu_backward(grad, y, out):
    for i in native.prange(y.size):
        v = y[i]
        out[i] = grad[i] if (v > _ZERO or v != v) else _ZERO


def relu_backward(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``grad`` where ``y > 0`` (or y is NaN), else 0, for `supports` arrays of one shape
    and dtype (a new array)."""
    out = np.empty_like(y)
    native.run(_relu_backward, y.size, grad.reshape(-1), y.reshape(-1), out.reshape(-1))
    return out
