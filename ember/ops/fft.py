"""Discrete Fourier transforms (``torch.fft``), on NumPy's / CuPy's FFT.

Three ops do the transforms: `FFT` (complex to complex over some dims, forward or
inverse), `RFFT` (real to the half spectrum along one dim) and `IRFFT` (half spectrum to a
real signal).  Each is linear, so its backward is its adjoint, which is again a
transform: the adjoint of ``fft(norm=m)`` is ``ifft`` with the *dual* normalization (the
1/n moves to the other side, "ortho" stays), so gradients of any order are FFTs.  Padding
or cutting a signal to the length ``n`` asked for, the 2-D/N-D real transforms and the
Hermitian ones (hfft, ihfft) are compositions of these ops with pad/narrow/conj.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor, _make
from .complex import Conj, Real
from .padding import pad as pad_fn
from ._inplace import named
from ._util import normalize_dims, wrap_dim, xp_of
from .creation import arange

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _complex_dtype(dtype):
    return np.result_type(dtype, np.complex64)


class FFT(Function):
    """fftn (or ifftn with `inverse`) over `dims` with normalization `norm`."""

    _name = "FftC2CBackward0"

    @staticmethod
    def forward(ctx, x, dims, norm, inverse):
        ctx.adjoint = (dims, _DUAL[norm], not inverse)  # the transform backward applies
        xp = xp_of(x)
        transform = xp.fft.ifftn if inverse else xp.fft.fftn
        return transform(x, axes=dims, norm=norm).astype(_complex_dtype(x.dtype), copy=False)

    @staticmethod
    def backward(ctx, grad):
        return FFT.apply(grad, *ctx.adjoint)


class RFFT(Function):
    """The first n//2 + 1 bins of the FFT of a real signal along `dim`."""

    _name = "FftR2CBackward0"

    @staticmethod
    def forward(ctx, x, dim, norm):
        ctx.args = (dim, norm, x.shape[dim])
        xp = xp_of(x)
        return xp.fft.rfft(x, axis=dim, norm=norm).astype(_complex_dtype(x.dtype), copy=False)

    @staticmethod
    def backward(ctx, grad):
        # the adjoint: zero the missing bins, inverse FFT with the dual norm, real part
        dim, norm, n = ctx.args
        full = pad_fn(grad, [0, 0] * (grad.dim() - 1 - dim) + [0, n - grad.shape[dim]])
        return Real.apply(FFT.apply(full, (dim,), _DUAL[norm], True))


class IRFFT(Function):
    """The real signal of length `n` whose half spectrum (n//2 + 1 bins) is the input."""

    _name = "FftC2RBackward0"

    @staticmethod
    def forward(ctx, x, dim, norm, n):
        ctx.args = (dim, norm, n)
        xp = xp_of(x)
        out = xp.fft.irfft(x, n=n, axis=dim, norm=norm)
        return out.astype(np.result_type(x.real.dtype, np.float32), copy=False)

    @staticmethod
    def backward(ctx, grad):
        # Each bin but the first (and the last for even n) stands for two conjugate bins
        # of the full spectrum, hence the weight 2.
        dim, norm, n = ctx.args
        bins = n // 2 + 1
        weights = np.full(bins, 2.0)
        weights[0] = 1.0
        if n % 2 == 0:
            weights[-1] = 1.0
        shape = [1] * grad.dim()
        shape[dim] = bins
        xp = xp_of(grad._data)
        w = _make(xp.asarray(weights.reshape(shape), dtype=grad._data.dtype))
        return RFFT.apply(grad, dim, _DUAL[norm]) * w


# ---------------------------------------------------------------------------
# helpers: argument checks, lengths


def _norm(norm) -> str:
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _as_complex(x: Tensor) -> Tensor:
    if x.is_complex():
        return x
    if not x.is_floating_point():
        x = x.to(dtypes.get_default_dtype())
    return x.to(dtypes.from_numpy_dtype(_complex_dtype(x._data.dtype)))


def _as_real(op: str, x: Tensor) -> Tensor:
    if x.is_complex():
        name = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}[x.dtype.name]
        raise RuntimeError(f"{op} expects a real input tensor, but got {name}")
    return x if x.is_floating_point() else x.to(dtypes.get_default_dtype())


def _resize(x: Tensor, dim: int, n: int) -> Tensor:
    """`x` cut or zero-padded to length `n` along `dim`."""
    size = x.shape[dim]
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    if n == size:
        return x
    if n < size:
        return x.narrow(dim, 0, n)
    return pad_fn(x, [0, 0] * (x.dim() - 1 - dim) + [0, n - size])


def _dims_and_sizes(op: str, x: Tensor, s, dim) -> tuple:
    """The dims of an N-D transform and the signal size along each (PyTorch's rules)."""
    if dim is not None:
        dims = normalize_dims(dim, x.dim(), op)
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op} dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > x.dim():
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{x.dim()} dimensions.")
        dims = tuple(range(x.dim() - len(s), x.dim()))
    else:
        dims = tuple(range(x.dim()))
    sizes = [x.shape[d] if s is None or s[i] == -1 else int(s[i]) for i, d in enumerate(dims)]
    return dims, sizes


# ---------------------------------------------------------------------------
# one-dimensional transforms


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The discrete Fourier transform along `dim` (zero-padded or cut to `n` points)."""
    return fftn(input, None if n is None else (n,), (dim,), norm)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse discrete Fourier transform along `dim`."""
    return ifftn(input, None if n is None else (n,), (dim,), norm)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The Fourier transform of a real signal: its n//2 + 1 non-negative frequencies."""
    x = _as_real("rfft", input)
    dim = wrap_dim(dim, x.dim(), "rfft")
    x = _resize(x, dim, x.shape[dim] if n is None else n)
    return RFFT.apply(x, dim, _norm(norm))


def irfft(input: Tensor, n: int | None = None, dim: int = -1,
          norm: str | None = None) -> Tensor:
    """The real signal of length `n` (default 2 (m - 1)) with the half spectrum `input`."""
    x = _as_complex(input)
    dim = wrap_dim(dim, x.dim(), "irfft")
    n = 2 * (x.shape[dim] - 1) if n is None else n
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return IRFFT.apply(_resize(x, dim, n // 2 + 1), dim, _norm(norm), n)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The (real) Fourier transform of a signal with Hermitian symmetry, given by its first
    half (the inverse of `ihfft`)."""
    return irfft(_conj(_as_complex(input)), n, dim, _DUAL[_norm(norm)])


def ihfft(input: Tensor, n: int | None = None, dim: int = -1,
          norm: str | None = None) -> Tensor:
    """The inverse of `hfft`: the first half of the inverse transform of a real signal."""
    return _conj(rfft(_as_real("ihfft", input), n, dim, _DUAL[_norm(norm)]))


def _conj(x: Tensor) -> Tensor:
    return Conj.apply(x)


# ---------------------------------------------------------------------------
# N-dimensional transforms


def _complex_n(op: str, input: Tensor, s, dim, norm, inverse: bool) -> Tensor:
    """fftn (or ifftn with `inverse`): each dim padded or cut to its size, then one FFT."""
    x = _as_complex(input)
    dims, sizes = _dims_and_sizes(op, x, s, dim)
    for d, size in zip(dims, sizes):
        x = _resize(x, d, size)
    return FFT.apply(x, dims, _norm(norm), inverse)


def fftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional discrete Fourier transform over `dim` (default: all dims, or the
    last len(s)), each padded or cut to the size in `s`."""
    return _complex_n("fftn", input, s, dim, norm, False)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional inverse discrete Fourier transform."""
    return _complex_n("ifftn", input, s, dim, norm, True)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional transform of a real signal: the last dim halved."""
    x = _as_real("rfftn", input)
    dims, sizes = _dims_and_sizes("rfftn", x, s, dim)
    out = rfft(x, sizes[-1], dims[-1], norm)
    if len(dims) > 1:
        out = fftn(out, sizes[:-1], dims[:-1], norm)
    return out


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The inverse of `rfftn`: a real signal (its last dim 2 (m - 1) unless `s` says)."""
    x = _as_complex(input)
    dims, sizes = _dims_and_sizes("irfftn", x, s, dim)
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else int(s[-1])
    if len(dims) > 1:
        x = ifftn(x, sizes[:-1], dims[:-1], norm)
    return irfft(x, last, dims[-1], norm)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional `hfft`."""
    return irfftn(_conj(_as_complex(input)), s, dim, _DUAL[_norm(norm)])


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:
    """The N-dimensional `ihfft`."""
    return _conj(rfftn(_as_real("ihfftn", input), s, dim, _DUAL[_norm(norm)]))


def _two_dim(transform_n):
    """The 2-D form of an N-dimensional transform: the same, over ``dim=(-2, -1)`` by
    default (``fft2`` from ``fftn``)."""
    def transform_2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:
        return transform_n(input, s, dim, norm)

    name = transform_n.__name__
    return named(transform_2, name[:-1] + "2", f"`{name}` over the last two dims.", transform_n)


fft2, ifft2, rfft2, irfft2, hfft2, ihfft2 = (
    _two_dim(transform) for transform in (fftn, ifftn, rfftn, irfftn, hfftn, ihfftn))


# ---------------------------------------------------------------------------
# frequencies and shifts


def fftfreq(n: int, d: float = 1.0, *, dtype=None, device=None, layout=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an `n`-point FFT with sample spacing `d`."""
    k = arange(n, dtype=dtype, device=device)
    k = k - n * (k >= (n + 1) // 2).to(k.dtype)
    return (k / (d * n)).requires_grad_(requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, device=None, layout=None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an `n`-point `rfft` (the non-negative ones)."""
    return (arange(n // 2 + 1, dtype=dtype, device=device) / (d * n)).requires_grad_(
        requires_grad)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Rolls the zero frequency to the middle of each dim in `dim` (default: all)."""
    dims = normalize_dims(dim, input.dim(), "fftshift")
    return input.roll([input.shape[d] // 2 for d in dims], dims)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of `fftshift`."""
    dims = normalize_dims(dim, input.dim(), "ifftshift")
    return input.roll([-(input.shape[d] // 2) for d in dims], dims)


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
           "hfftn", "ihfftn", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
