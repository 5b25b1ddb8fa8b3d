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

import operator

import numpy as np

from .._core.grad_mode import PROCESS, STATE
from .._core.tensor import Tensor, _make
from . import _native_binary, _parallel

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
        # (large ones as the general path's forwards run them: on the threads)
        out = _LARGE[op](a, b) if a.size >= _native_binary.NUMBER_MIN else op(a, b)
    except ValueError:  # shapes that do not broadcast: the general path words the error
        return None
    return _make(out if type(out) is _ndarray else np.asarray(out))


_LARGE = {operator.add: _native_binary.add, operator.sub: _native_binary.subtract,
          operator.mul: _native_binary.multiply, operator.truediv: _native_binary.divide}


def records(*tensors) -> bool:
    """Whether an op on `tensors` must go through `Function.apply`: something watches it
    (a profiler, autocast, a tracer: `PROCESS.observer`) or, in grad mode, one of them
    (None is allowed) needs a gradient."""
    if PROCESS.observer is not None:
        return True
    if not STATE.enabled:
        return False
    for t in tensors:  # (a loop, not any() over a generator: this runs on every call)
        if t is not None and t._requires_grad:
            return True
    return False


def linear_of_arrays(input, weight, bias) -> Tensor:
    """``input @ weight.T + bias`` on the arrays, for `plain_linear` operands when nothing
    is recorded (`records`): a linear layer at inference.  The arrays see the same
    operations as on the general path (addmm's product with the bias,
    `_parallel.matmul`'s), so the two give the same bits; a batch-1 layer's ~10 us of op
    and view bookkeeping go."""
    w = weight._data
    return _make(_parallel.matmul(input._data, w.T, bias=None if bias is None else bias._data))


def plain_linear(input, weight, bias) -> bool:
    """Whether ``linear(input, weight, bias)`` is a linear layer's usual call: a 2-D float
    input, a 2-D weight and an optional 1-D bias (tensors or Parameters), all holding
    NumPy arrays of one dtype (not half precision) with matching sizes."""
    if (not isinstance(input, Tensor) or not isinstance(weight, Tensor)  # (Parameters)
            or (bias is not None and not isinstance(bias, Tensor))):
        return False
    x, w = input._data, weight._data
    if (type(x) is not _ndarray or type(w) is not _ndarray or x.dtype is not w.dtype
            or x.dtype.kind != "f" or x.dtype.itemsize == 2
            or x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]):
        return False
    if bias is not None:
        b = bias._data
        return type(b) is _ndarray and b.dtype is x.dtype and b.shape == (w.shape[0],)
    return True


def direct_unary(compute, input) -> Tensor | None:
    """``compute(np, x)`` on a float array when nothing is recorded, else None.

    For one-tensor ops whose forward runs no error-state block around its formula (relu's
    maximum, softmax's rows): the same array work as `Function.apply`'s forward, without
    the node and its bookkeeping (~2-4 us of a batch-1 relu or log_softmax).
    """
    if not isinstance(input, Tensor) or records(input):
        return None
    a = input._data
    if type(a) is not _ndarray or a.dtype.kind != "f":
        return None
    return _make(compute(np, a))
