"""Arithmetic straight on the arrays, for the calls that record nothing.

Under ``no_grad`` (inference, optimizer updates, metrics) or on tensors that need no
gradient, ``x * y`` needs none of `Function.apply`'s work: no node, no saved inputs, no
dtype promotion when both operands share one float dtype.  That work is most of an op's
cost on small tensors (benchmarks/op_overhead.py: 2.4 us per op against 1.6 us here).

`direct` takes only the case where the general path would do exactly the same array
operation: a plain `Tensor` (not a subclass) holding a float NumPy array, and a second
tensor of the same dtype and array type or a Python number; no profiler, autocast or
tracer watching (`PROCESS.observer`); nothing to record.  Anything else returns None
and the caller takes the general path, which also raises PyTorch's errors (operands
that do not broadcast, for one).
"""

from __future__ import annotations

import numpy as np

from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Tensor, _make

_ndarray = np.ndarray
_NUMBERS = (float, int)  # exact types: bool (an int subclass) takes the general path


def direct(op, input, other) -> Tensor | None:
    """``op(input, other)`` on the arrays when nothing is recorded, else None.

    `op` is the array operation the general path's forward runs (``operator.mul`` for
    ``Mul``), so both paths give the same result bit for bit.
    """
    # (the recording case, the most common one that steps aside, is ruled out first)
    if type(input) is not Tensor or (input._requires_grad and STATE.enabled):
        return None
    a = input._data
    if type(other) is Tensor:
        if other._requires_grad and STATE.enabled:
            return None
        b = other._data
        if type(b) is not _ndarray or b.dtype is not a.dtype:
            return None
    elif type(other) in _NUMBERS:
        b = float(other)  # as `promote` passes a number to a float tensor's op
    else:
        return None
    if type(a) is not _ndarray or a.dtype.kind != "f" or PROCESS.observer is not None:
        return None
    try:
        out = op(a, b)
    except ValueError:  # shapes that do not broadcast: the general path words the error
        return None
    return _make(out if type(out) is _ndarray else np.asarray(out))
