"""The state behind ``autocast`` (``ember/amp/autocast_mode.py``) and its two casting rules.

While autocast is active for a device type, ``ACTIVE[device_type]`` is its lower-precision
dtype (bfloat16 or float16).  Ops on that device then follow PyTorch's policies:

* *lower precision*: matrix products, convolutions and recurrent layers cast their
  float32 inputs to the autocast dtype (`to_lower`, applied by the observer in
  ``autocast_mode.py`` to the Function classes listed there);
* *float32*: losses (and, on CUDA, a few numerically touchy ops) cast inputs of a lower
  precision up to float32 (`to_float32`).  Losses written as compositions of other ops
  get the rule from the `float32_inputs` decorator instead.

The op lists live in ``autocast_mode.py``, above the op files, so that the op files can
import the casting rules from here.

float64 tensors are never cast, as in PyTorch.
"""

from __future__ import annotations

import functools

from .._core import dtype as dtypes
from .._core.tensor import Tensor

ACTIVE: dict = {"cpu": None, "cuda": None}

_LOWER = (dtypes.float16, dtypes.bfloat16)


def any_active() -> bool:
    return ACTIVE["cpu"] is not None or ACTIVE["cuda"] is not None


def casts_together(*tensors) -> bool:
    """True when autocast is on for these tensors' device and they are all float16,
    bfloat16 or float32: a listed op casts them to one dtype, so mixing them is fine."""
    first = next((t for t in tensors if t is not None), None)
    if first is None or ACTIVE.get(first.device.type) is None:
        return False
    return all(t is None or t.dtype in _LOWER or t.dtype == dtypes.float32 for t in tensors)


def to_lower(t):
    """`t` in its device's autocast dtype, if it is a float32 tensor on an active device."""
    if isinstance(t, Tensor) and t.dtype == dtypes.float32:
        target = ACTIVE.get(t.device.type)
        if target is not None:
            return t.to(target)
    return t


def to_float32(t):
    """`t` in float32, if it is a float16/bfloat16 tensor on a device where autocast is on."""
    if isinstance(t, Tensor) and t.dtype in _LOWER and ACTIVE.get(t.device.type) is not None:
        return t.float()
    return t


def float32_inputs(fn):
    """Run `fn` (a loss written with other ops) on float32 inputs while autocast is on."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not any_active():
            return fn(*args, **kwargs)
        args = [to_float32(a) for a in args]
        kwargs = {k: to_float32(v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return run

