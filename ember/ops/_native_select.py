"""``where(condition, a, b)`` as one vectorized select: a numba kernel for the usual
operands (a bool condition, copied when strided, and C-contiguous float arrays of its
shape, or scalars), and NumPy's ``where`` for everything else.

NOTE: why.  NumPy's ``where`` branches per element; on a condition as unpredictable as
the sign of random data it costs ~4 ns an element (1M float32: 4.3-4.7 ms, against
0.2-0.3 ms for ``x > 0`` or ``x * 0.1``; 2-core Intel Xeon, 2026-12-06), which made
every activation and gradient written with it (elu, softplus, clamp's and hardtanh's
gradients, torch.where itself) several times slower than PyTorch.  The kernel's loop
compiles to a blend, with no branch.
"""

from __future__ import annotations

import numpy as np

from . import _native as native

MIN_SIZE = 1 << 12  # (below it NumPy's call costs less than the kernel's)
_FLOATS = (np.float32, np.float64)
_SCALARS = (float, int, np.floating, np.integer)


# NOTE: each element is read before the select, never inside one branch of it: a load
# only one branch makes is one LLVM may not run speculatively, and on processors without
# AVX-512's masked loads it then leaves the loop scalar, with a branch per element (1M
# float32 on an AMD EPYC: 4.2 ms, 0.24 with the loads first; on the Intel Xeon with
# AVX-512, 0.2-0.3 either way).  Every kernel's selects follow this rule.


@native.kernel(parallel=True)
def _arrays(condition, a, b, out):
    for i in native.prange(out.size):
        x, y = a[i], b[i]
        out[i] = x if condition[i] else y


@native.kernel(parallel=True)
def _array_scalar(condition, a, b, out):
    for i in native.prange(out.size):
        x = a[i]
        out[i] = x if condition[i] else b


@native.kernel(parallel=True)
def _scalar_array(condition, a, b, out):
    for i in native.prange(out.size):
        y = b[i]
        out[i] = a if condition[i] else y


def _operand(value, shape):
    """(kind, dtype) of a select operand: ('array', dtype) for a C-contiguous float NumPy
    array of `shape`, ('scalar', None) for a real number, else (None, None)."""
    if type(value) is np.ndarray:
        if value.shape == shape and value.dtype in _FLOATS and value.flags.c_contiguous:
            return "array", value.dtype
        return None, None
    if isinstance(value, _SCALARS) and not isinstance(value, (bool, np.bool_)):
        return "scalar", None
    return None, None


def where_of(xp):
    """The ``where`` to call for arrays of module `xp`: `where` below for NumPy's (its
    kernels where they apply), the module's own for others (CuPy's)."""
    return where if xp is np else xp.where


def where(condition, a, b):
    """``np.where(condition, a, b)``, by the select kernels when they take the operands
    (the same values: each element is one operand's, as given or cast to the array's
    dtype as NumPy casts it)."""
    if (type(condition) is np.ndarray and condition.dtype == np.bool_
            and condition.size >= MIN_SIZE and native.enabled()):
        kind_a, dtype_a = _operand(a, condition.shape)
        kind_b, dtype_b = _operand(b, condition.shape)
        dtype = dtype_a or dtype_b
        if (kind_a and kind_b and dtype is not None and (dtype_a or dtype) == (dtype_b or dtype)
                and np.result_type(a, b) == dtype):
            # (a broadcast condition, such as a causal mask expanded over the batch, copied:
            # a byte an element, against NumPy's branching where for a float each)
            condition = np.ascontiguousarray(condition)
            out = np.empty(condition.shape, dtype)
            flat = (condition.reshape(-1), out.reshape(-1))
            # (the arrays cut over ember's threads, the output named first: it gives the
            # native part's dtype; a scalar operand passed whole)
            if dtype_a and dtype_b:
                native.run(_arrays, out.size, flat[0], a.reshape(-1), b.reshape(-1), flat[1],
                           cut=(3, 0, 1, 2), part="select")
            elif dtype_a:
                native.run(_array_scalar, out.size, flat[0], a.reshape(-1), dtype.type(b),
                           flat[1], cut=(3, 0, 1), part="select_number_b")
            else:
                native.run(_scalar_array, out.size, flat[0], dtype.type(a), b.reshape(-1),
                           flat[1], cut=(3, 0, 2), part="select_number_a")
            return out
    return np.where(condition, a, b)
