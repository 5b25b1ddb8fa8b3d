"""Dropout: dropout, the channel-wise forms (dropout1d/2d/3d, feature dropout) and the
alpha dropouts that keep a SELU network's mean and variance.

Masks are drawn from ember's generator of the input's device, so ``ember.manual_seed``
makes them reproducible.  Each form is identity when ``training`` is False.  The result
is ``x * scale + shift`` with constant (mask-derived) scale and shift: one `Function`
whose gradient is ``grad * scale``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.grad_mode import is_grad_enabled
from .._core.tensor import Tensor, _make
from . import _native_dropout
from ..random import _generator_for

# Alpha dropout sets dropped units to the SELU's negative saturation value -scale*alpha.
_ALPHA_PRIME = 1.7580993408473766


class Masked(Function):
    """``x * scale (+ shift)`` for constant arrays `scale` and `shift` (the dropout mask)."""

    _name = "MulBackward0"

    @staticmethod
    def forward(ctx, x, *, scale, shift=None):
        ctx.scale = scale
        out = x * scale
        if shift is not None:
            out += shift
        return out.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return grad * _make(ctx.scale)


class MaskedInplace(Masked):
    _inplace = True


class NativeMasked(Function):
    """Dropout by the numba kernel: ``x / q`` where the mask's word (keyed by `key`) is
    below ``q * 2**32``, else 0 (q = 1 - p); keeps the boolean mask for the gradient."""

    _name = "MulBackward0"
    _reuses_grad = True  # (see Node._reuses_grad)

    @staticmethod
    def forward(ctx, x, *, key, q):
        out, ctx.keep = _native_dropout.dropout(x, key, q)
        ctx.value = x.dtype.type(1.0) / x.dtype.type(q)
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad._data
        if not is_grad_enabled() and type(g) is np.ndarray and g.shape == ctx.keep.shape:
            return _make(_native_dropout.dropout_backward(g, ctx.keep, ctx.value,
                                                          overwrite=ctx._owns_grad))
        scale = np.where(ctx.keep, ctx.value, ctx.value.dtype.type(0))
        return grad * _make(scale)


class NativeMaskedInplace(NativeMasked):
    _inplace = True


def _check_p(p) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, p: float, shape: tuple):
    """A bool array of `shape`: True with probability ``1 - p``."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        names = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                 "uint8": "Byte", "bool": "Bool"}
        raise RuntimeError("result type Float can't be cast to the desired output type "
                           f"{names.get(input.dtype.name, input.dtype.name)}")
    xp, src = _generator_for(input.device, None)._source()
    bit_generator = _raw_bits(xp, src)
    if bit_generator is not None:
        return _keep_bits(bit_generator, shape, 1.0 - p)
    work = np.float64 if input.dtype is dtypes.float64 else np.float32
    u = src.uniform(shape, work)
    return u < 1.0 - p


def _raw_bits(xp, src):
    """The NumPy bit generator behind an ember generator's source, when it gives raw
    words (``random_raw``); else None."""
    if xp is np and hasattr(src, "gen") and hasattr(src.gen.bit_generator, "random_raw"):
        return src.gen.bit_generator
    return None


def _draw_key(bit_generator) -> np.uint64:
    """One raw 64-bit draw of the generator: the key of one mask's words."""
    return np.uint64(bit_generator.random_raw())


def _keep_bits(bit_generator, shape: tuple, q: float):
    """A bool array of `shape`, True with probability `q`, from 32-bit words compared
    with ``q * 2**32``: the words of `_native_dropout.mask_words`, keyed by one draw
    of the generator (the numba kernels compute the same words in place).

    NOTE: about twice as fast as drawing float32 uniforms, which spend a 32-bit word per
    element and then convert it; the probability is exact to 2**-32 (uniform float32s
    have 24 bits).
    """
    n = 1
    for s in shape:
        n *= int(s)
    words = _native_dropout.mask_words(_draw_key(bit_generator), n)
    if q >= 1.0:
        return np.ones(shape, bool)
    return (words < np.uint32(int(q * 2.0 ** 32))).reshape(shape)


def _dropout_impl(input: Tensor, p: float, training: bool, inplace: bool, shape: tuple,
                  alpha: bool) -> Tensor:
    _check_p(p)
    if not training:
        return input
    dtype = input._data.dtype
    if p == 1.0 and not alpha:
        scale = dtype.type(0) * _keep_mask(input, 1.0, shape).astype(dtype)
        shift = None
    elif not alpha:
        out = _native_dropout_or_none(input, p, shape, inplace)
        if out is not None:
            return out
        keep = _keep_mask(input, p, shape)
        if type(keep) is np.ndarray and dtype in (np.float32, np.float64):
            # from the bool mask straight to the scale, in one pass
            scale = np.divide(keep, dtype.type(1.0 - p), dtype=dtype)
        else:
            scale = keep.astype(dtype) / dtype.type(1.0 - p)
        shift = None
    else:
        keep = _keep_mask(input, p, shape).astype(dtype)
        if p == 1.0:  # everything dropped: the output is the constant the formula tends to
            a = 0.0
        else:
            a = 1.0 / np.sqrt((_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
        scale = (keep * a).astype(keep.dtype)
        shift = ((keep - 1) * (_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p).astype(keep.dtype)
    cls = MaskedInplace if inplace else Masked
    return cls.apply(input, scale=scale, shift=shift)


def _native_dropout_or_none(input: Tensor, p: float, shape: tuple, inplace: bool):
    """Elementwise dropout by the numba kernel, from the same words as the NumPy path
    (same seed, same mask); None where the kernel does not apply."""

    data = input._data
    if shape != data.shape or not _native_dropout.supports(data):
        return None
    xp, src = _generator_for(input.device, None)._source()
    bit_generator = _raw_bits(xp, src)
    if bit_generator is None:
        return None
    cls = NativeMaskedInplace if inplace else NativeMasked
    return cls.apply(input, key=_draw_key(bit_generator), q=1.0 - p)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the others by ``1 / (1 - p)``.

    Identity when `training` is False.  Masks come from ember's generator.
    """
    _check_p(p)
    if not isinstance(input, Tensor):
        raise TypeError(f"dropout(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return _dropout_impl(input, p, training, inplace, tuple(input.shape), False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped units take SELU's negative saturation value and an
    affine correction keeps the mean and variance of the input."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, tuple(input.shape), True)


def _feature_shape(input: Tensor, batched: bool) -> tuple:
    """The mask shape of channel-wise dropout: (N, C, 1, ...) or, unbatched, (C, 1, ...)."""
    lead = 2 if batched else 1
    return tuple(input.shape[:lead]) + (1,) * (input.dim() - lead)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (dim 1 of an (N, C, ...) input)."""
    _check_p(p)
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _dropout_impl(input, p, training, inplace, _feature_shape(input, True), True)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool) -> Tensor:
    return _dropout_impl(input, p, training, inplace, _feature_shape(input, batched), False)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability `p`."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    return _feature_dropout(input, p, training, inplace, input.dim() == 3)


def _warn_other_rank(spatial: int, ndim: int) -> None:
    """PyTorch's deprecation warning when ``dropout{spatial}d`` gets an input that is neither
    (C, *spatial) nor (N, C, *spatial); it points at the caller of that function."""
    if ndim in (spatial + 1, spatial + 2):
        return
    name = f"dropout{spatial}d"
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in "
        "an error in a future release. To retain the behavior and silence this warning, "
        f"please use dropout instead. Note that {name} exists to provide channel-wise "
        f"dropout on inputs with {spatial} spatial dimensions, a channel dimension, and an "
        f"optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
        UserWarning, stacklevel=3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, H, W) or (C, H, W) input with probability `p`."""
    _check_p(p)
    ndim = input.dim()
    _warn_other_rank(2, ndim)
    if ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain the "
            "1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning, stacklevel=2)
        return _feature_dropout(input, p, training, inplace, True)
    return _feature_dropout(input, p, training, inplace, ndim == 4)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability `p`."""
    _check_p(p)
    ndim = input.dim()
    _warn_other_rank(3, ndim)
    return _feature_dropout(input, p, training, inplace, ndim == 5)


# --- the torch.* forms (positional ``train``) ---


def dropout_fn(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout(input, p, train)``."""
    return dropout(input, p, train)


def dropout_fn_(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout_(input, p, train)``: in place."""
    return dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_dropout``: channel-wise dropout over dim 1 of an (N, C, ...) input."""
    _check_p(p)
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _feature_dropout(input, p, train, False, True)


def alpha_dropout_fn(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout(input, p, train)``."""
    return alpha_dropout(input, p, train)


def feature_alpha_dropout_fn(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_alpha_dropout(input, p, train)``."""
    return feature_alpha_dropout(input, p, train)
