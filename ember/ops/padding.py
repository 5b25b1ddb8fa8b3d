"""Padding: ``F.pad`` in constant, reflect, replicate and circular modes.

`pad` lists (before, after) amounts from the last dim backwards, as in PyTorch;
negative amounts crop.  Constant padding is its own op, whose adjoint is constant
padding by the negated amounts (crop what was added, add zeros where it cropped).
The other modes read every output element from one input position along each padded
dim: an index map applied with resample.py's `AxisMap`, whose gradient adds the
copies back into their source.
"""

from __future__ import annotations

import numpy as np

from .._core.function import Function
from .._core.tensor import Tensor
from ._util import xp_of
from . import _native_axis_map
from .resample import PlaneMap, axis_map

_INTS = (int, np.integer)
_MODES = ("constant", "reflect", "replicate", "circular")


def _constant_pad_array(x, pairs, value):
    """`x` with (lo, hi) added along its last len(pairs) dims (negative: cropped)."""
    xp = xp_of(x)
    nd = len(pairs)
    lead = x.shape[:x.ndim - nd]
    sizes = x.shape[x.ndim - nd:]
    src, dst = [], []
    for n, (lo, hi) in zip(sizes, pairs):
        keep = n - max(-lo, 0) - max(-hi, 0)
        src.append(slice(max(-lo, 0), max(-lo, 0) + max(keep, 0)))
        dst.append(slice(max(lo, 0), max(lo, 0) + max(keep, 0)))
    shape = lead + tuple(n + lo + hi for n, (lo, hi) in zip(sizes, pairs))
    out = xp.full(shape, value, dtype=x.dtype)
    out[(Ellipsis,) + tuple(dst)] = x[(Ellipsis,) + tuple(src)]
    return out


class ConstantPad(Function):
    """Pad (or crop) the last dims with a constant; `pairs` = ((lo, hi), ...) in dim order."""

    _name = "ConstantPadNdBackward0"

    @staticmethod
    def forward(ctx, x, pairs, value):
        ctx.pairs = pairs
        return _constant_pad_array(x, pairs, value)

    @staticmethod
    def backward(ctx, grad):
        return ConstantPad.apply(grad, tuple((-lo, -hi) for lo, hi in ctx.pairs), 0)


def _source_index(mode: str, n: int, lo: int, hi: int) -> np.ndarray:
    """For each output position along a dim, the input position it copies."""
    src = np.arange(n + lo + hi) - lo
    if mode == "reflect":
        src = np.abs(src)
        return np.where(src >= n, 2 * (n - 1) - src, src)
    if mode == "replicate":
        return np.clip(src, 0, n - 1)
    # circular: PyTorch crops first, then wraps around what is left
    start, end = max(-lo, 0), n - max(-hi, 0)
    return start + np.mod(np.arange(n + lo + hi) - max(lo, 0), end - start)


def _pairs(pad, op: str = "pad") -> list:
    """(lo, hi) pairs from PyTorch's flat list, last dim first."""
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"{op}(): argument 'pad' must be tuple of ints, not "
                        f"{type(pad).__name__}")
    for i, p in enumerate(pad):
        if not isinstance(p, _INTS) or isinstance(p, bool):
            raise TypeError(f"{op}(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(p).__name__} at pos {i}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    return [(int(pad[i]), int(pad[i + 1])) for i in range(0, len(pad), 2)]


def _unsupported(k: int, ndim: int) -> NotImplementedError:
    return NotImplementedError(
        f"Padding size {2 * k} is not supported for {ndim}D input tensor.\n"
        "Supported combinations for non-constant padding:\n"
        "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
        "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
        "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _mode_pad(input: Tensor, pairs: list, mode: str) -> Tensor:
    k, ndim = len(pairs), input.dim()
    if k > ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {2 * k} and input of dimension {ndim}")
    if k > 3 or ndim not in (k + 1, k + 2):
        raise _unsupported(k, ndim)
    padded = list(range(ndim - k, ndim))
    if mode != "circular" and any(input.shape[d] == 0  # all dims but the batch dim
                                  for d in range(ndim - k - 1, ndim)):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with "
                           "possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {list(input.shape)}")
    kind = {"reflect": "Reflection", "replicate": "Replication", "circular": "Circular"}[mode]
    name = f"{kind}Pad{k}DBackward0"
    maps = []  # (dim, lo, hi, source index of each output position), checked first
    # pairs run from the last dim backwards
    for i, (d, (lo, hi)) in enumerate(zip(reversed(padded), pairs)):
        n = input.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding "
                f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                f"{list(input.shape)}")
        kept = n - max(-lo, 0) - max(-hi, 0)  # what is left after cropping
        if mode == "circular":
            if kept < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
            if max(lo, hi, 0) > kept:
                raise RuntimeError("Padding value causes wrapping around more than once.")
        elif n + lo + hi < 0:
            axis = "DHW"[3 - 1 - i] if i < 3 else str(d)
            raise RuntimeError(f"input ({axis}: {n}) is too small. Calculated output {axis}: "
                               f"{n + lo + hi}")
        maps.append((d, lo, hi, _source_index(mode, n, lo, hi)))
    if k == 2 and _native_axis_map.plane_supports(input._data):
        # both dims in one pass, forward and backward (as PyTorch's one node)
        cols, rows = maps[0][3], maps[1][3]
        return PlaneMap.apply(input, rows=rows, cols=cols, size=tuple(input.shape[-2:]),
                              name=name)
    out = input
    for d, lo, hi, idx in maps:
        if lo or hi:
            out = axis_map(out, d, idx.reshape(1, -1), None, name)
    return out if out is not input else input * 1


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad (or, with negative amounts, crop) the last dims of `input`.

    `pad` is ``(left, right)`` for the last dim, then ``(top, bottom)`` for the one
    before, and so on.  `mode` is 'constant' (filled with `value`, default 0),
    'reflect' (mirror without repeating the edge), 'replicate' (repeat the edge) or
    'circular' (wrap around); the last three pad up to 3 dims of a batched or
    unbatched input.

    >>> pad(ember.tensor([[1., 2.]]), (1, 2), value=9.)
    tensor([[9., 1., 2., 9., 9.]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    pairs = _pairs(pad)
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
        return _mode_pad(input, pairs, mode)
    if len(pairs) > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {2 * len(pairs)} and input of dimension {input.dim()}")
    for i, (lo, hi) in enumerate(pairs):
        if input.shape[input.dim() - 1 - i] + min(lo, 0) + min(hi, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
    in_order = tuple(reversed(pairs))
    return ConstantPad.apply(input, in_order, 0 if value is None else value)
