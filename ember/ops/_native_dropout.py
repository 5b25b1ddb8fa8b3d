"""numba kernels of dropout: the keep mask and the scaling fused in one pass, forward and
backward, and the mask's random words.

A mask's words are SplitMix64's outputs from a 64-bit key (one raw draw of ember's
generator), each 64-bit output read as two 32-bit words: words ``2i`` and ``2i + 1``
come from ``mix(key + (i + 1) * GAMMA)``.  An element is kept where its word is below
``(1 - p) * 2**32``.  Because output i depends on i alone, `_words_kernel` computes the
outputs on every thread, and `mask_words` computes the same ones with NumPy for the
other path: the same seed gives the same mask, bit for bit, with numba
on or off, and the generator moves on by one draw either way.

NOTE: the words used to be the generator's own raw draws (``random_raw``), one 64-bit
draw per two elements: 3 ns a draw on one thread, 2.4 ms of a GPT training step here.
SplitMix64 (Steele, Lea and Flood, 2014) passes BigCrush, which is more than a dropout
mask asks.

The forward keeps the mask as one byte per element (the NumPy path keeps a scale array
of the input's dtype) for the backward.
"""

from __future__ import annotations

import numpy as np

from . import _native as native
from ._native_activation import run

# Below this many elements the NumPy path is as fast.  (F.dropout of 1024 float32
# elements here: 10.0 us by the kernels, 15.3 by NumPy, whose hash is seven passes.)
MIN_SIZE = 1 << 8


def supports(x) -> bool:
    """True when the kernels should take `x` now: numba on, a C-contiguous NumPy float32
    or float64 array of at least `MIN_SIZE` elements."""
    return (type(x) is np.ndarray and x.size >= MIN_SIZE and x.dtype.char in "fd"
            and x.flags.c_contiguous and native.enabled())


# SplitMix64's constants, as unsigned 64-bit numbers (numba mixes an unsigned and a
# signed integer into a float: every operand of the hash must be unsigned)
GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31 = np.uint64(27), np.uint64(30), np.uint64(31)


def mask_words(key: np.uint64, n: int) -> np.ndarray:
    """The `n` uint32 words of the mask keyed by `key`, with NumPy (see the module's
    docstring; `_words_kernel` computes the same)."""
    z = key + np.arange(1, (n + 1) // 2 + 1, dtype=np.uint64) * GAMMA   # wraps mod 2**64
    z ^= z >> _S30
    z *= _MUL1
    z ^= z >> _S27
    z *= _MUL2
    z ^= z >> _S31
    return z.view(np.uint32)[:n]


@native.kernel(parallel=True)
def _words_kernel(key, out):
    """out[i] = SplitMix64's output i + 1 from state `key`: `mask_words`' 64-bit draws.
    (Its own pass: with the mask's compare and scaling in the same loop, LLVM did not
    vectorize the hash, 4x slower.)"""
    for i in native.prange(out.size):
        z = key + (np.uint64(i) + np.uint64(1)) * GAMMA
        z = (z ^ (z >> _S30)) * _MUL1
        z = (z ^ (z >> _S27)) * _MUL2
        out[i] = z ^ (z >> _S31)


@native.kernel(parallel=True)
def _dropout_kernel(x, words, threshold, scale, out, keep):
    zero = scale - scale
    for i in native.prange(x.size):
        kept = words[i] < threshold
        keep[i] = kept
        # x * 0 where dropped (nan for an infinite x, as in the NumPy path)
        out[i] = x[i] * (scale if kept else zero)


@native.kernel(parallel=True)
def _dropout_backward_kernel(grad, keep, scale, out):
    zero = scale - scale
    for i in native.prange(grad.size):
        out[i] = grad[i] * (scale if keep[i] else zero)


@native.kernel(parallel=True)
def _dropout_backward_into(grad, keep, scale):
    # (its own kernel, not out=grad: see _native_activation's backward kernels)
    zero = scale - scale
    for i in native.prange(grad.size):
        grad[i] *= scale if keep[i] else zero


def dropout(x: np.ndarray, key: np.uint64, keep_probability: float) -> tuple:
    """``(out, keep)``: `x` (a `supports` array) with each element kept where its word of
    the mask keyed by `key` is below ``keep_probability * 2**32`` and scaled by
    ``1 / keep_probability``, else zeroed; `keep` is the boolean mask."""
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    keep = np.empty(flat.size, np.bool_)
    scale = x.dtype.type(1.0) / x.dtype.type(keep_probability)
    draws = np.empty((flat.size + 1) // 2, np.uint64)
    run(_words_kernel, flat.size, np.uint64(key), draws)
    run(_dropout_kernel, flat.size, flat, draws.view(np.uint32),
        np.int64(keep_probability * 2.0 ** 32), scale, out, keep, cut=(0, 1, 4, 5),
        part="dropout")
    return out.reshape(x.shape), keep.reshape(x.shape)


def dropout_backward(grad: np.ndarray, keep: np.ndarray, scale,
                     overwrite: bool = False) -> np.ndarray:
    """``grad * scale`` where `keep`, else 0 (C-contiguous arrays of one shape); with
    `overwrite`, written into `grad` itself when it is C-contiguous (the caller's own)."""
    if overwrite and grad.flags.c_contiguous:
        run(_dropout_backward_into, grad.size, grad.reshape(-1), keep.reshape(-1),
            grad.dtype.type(scale), cut=(0, 1), part="dropout_grad_into")
        return grad
    flat = np.ascontiguousarray(grad).reshape(-1)
    out = np.empty_like(flat)
    run(_dropout_backward_kernel, flat.size, flat, keep.reshape(-1), flat.dtype.type(scale), out,
        cut=(0, 1, 3), part="dropout_grad")
    return out.reshape(grad.shape)
