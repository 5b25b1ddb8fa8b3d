"""The complex conjugate, and the rule the backward formulas of complex ops follow.

PyTorch's gradient of a real loss L with respect to a complex z is ``dL/dz*`` (the
conjugate Wirtinger derivative), so for a holomorphic f the backward multiplies the
incoming gradient by ``conj(f'(z))``, not by ``f'(z)`` as for real numbers.  The
elementwise ops and products share `times_conj` for that; on real tensors it is the
plain product.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as dtypes
from .._core.function import Function
from .._core.tensor import Tensor
from ._broadcast import sum_to_shape
from ._util import float_input, xp_of

_PYTHON_COMPLEX = complex  # (this module defines PyTorch's `complex` below)

__all__ = ["conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg",
           "real", "imag", "angle", "isreal", "complex", "polar", "view_as_real", "view_as_complex"]


class Conj(Function):
    """The complex conjugate (a copy); its gradient is the conjugate of the gradient."""

    _name = "ConjPhysicalBackward0"

    @staticmethod
    def forward(ctx, x):
        return xp_of(x).conj(x)

    @staticmethod
    def backward(ctx, grad):
        return Conj.apply(grad)


def conj(input: Tensor) -> Tensor:
    """The complex conjugate; a real tensor is returned as it is."""
    return Conj.apply(input) if input.is_complex() else input


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate (ember has no lazy conjugate bit, so the same as `conj`)."""
    return conj(input)


def resolve_conj(input: Tensor) -> Tensor:
    """`input` itself: ember never defers a conjugation."""
    return input


def resolve_neg(input: Tensor) -> Tensor:
    """`input` itself: ember never defers a negation."""
    return input


def is_conj(input: Tensor) -> bool:
    """False: ember has no lazy conjugate bit."""
    return False


def is_neg(input: Tensor) -> bool:
    """False: ember has no lazy negation bit."""
    return False


class Real(Function):
    """The real part x of z = x + iy (a view); dL/dx + i*0 flows back.  With ``_imag``
    (Imag) the imaginary part y, and 0 + i*dL/dy flows back."""

    _name = "RealBackward0"
    _is_view = True
    _imag = False

    @staticmethod
    def forward(ctx, z):
        xp = xp_of(z)
        return xp.imag(z) if ctx._imag else xp.real(z)

    @staticmethod
    def backward(ctx, grad):
        zero = grad.new_zeros(grad.shape)
        return Complex.apply(zero, grad) if ctx._imag else Complex.apply(grad, zero)


class Imag(Real):
    _name = "ImagBackward0"
    _imag = True


class ViewAsReal(Function):
    """A complex tensor's memory read as (real, imag) pairs in a new last dimension."""

    _name = "ViewAsRealBackward0"
    _is_view = True

    @staticmethod
    def forward(ctx, z):
        return z[..., None].view(z.real.dtype)

    @staticmethod
    def backward(ctx, grad):
        return ViewAsComplex.apply(grad.contiguous())


class ViewAsComplex(Function):
    """A real tensor's (real, imag) pairs in its last dimension read as complex numbers."""

    _name = "ViewAsComplexBackward0"
    _is_view = True

    @staticmethod
    def forward(ctx, x):
        pair = np.result_type(x.dtype, np.complex64)
        return x.view(pair)[..., 0]

    @staticmethod
    def backward(ctx, grad):
        return ViewAsReal.apply(grad)


class Complex(Function):
    """x + iy from two real tensors of one floating dtype (broadcast)."""

    _name = "ComplexBackward0"

    @staticmethod
    def forward(ctx, x, y):
        ctx.shapes = (x.shape, y.shape)
        out = x + 1j * y  # (NumPy keeps complex64 for float32 parts)
        return out.astype(np.result_type(x.dtype, np.complex64), copy=False)

    @staticmethod
    def backward(ctx, grad):
        x_shape, y_shape = ctx.shapes
        return (sum_to_shape(Real.apply(grad), x_shape),
                sum_to_shape(Imag.apply(grad), y_shape))


class Polar(Function):
    """r (cos t + i sin t); dL/dr = Re(grad conj(e^it)), dL/dt = r Re(grad conj(i e^it))."""

    _name = "PolarBackward0"

    @staticmethod
    def forward(ctx, r, t):
        ctx.save_for_backward(r, t)
        out = r * (np.cos(t) + 1j * np.sin(t))
        return out.astype(np.result_type(r.dtype, np.complex64), copy=False)

    @staticmethod
    def backward(ctx, grad):
        r, t = ctx.saved_tensors
        unit = Complex.apply(t.cos(), t.sin())
        g_r = Real.apply(grad * Conj.apply(unit))
        g_t = Real.apply(grad * Conj.apply(unit * 1j)) * r
        return sum_to_shape(g_r, r.shape), sum_to_shape(g_t, t.shape)


class AngleComplex(Function):
    """arg(z) = atan2(y, x); dL/dx + i dL/dy = grad * i z / |z|^2 (0 at z = 0)."""

    _name = "AngleBackward0"

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return xp_of(z).angle(z)

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        size2 = Real.apply(z * Conj.apply(z))
        return (grad * (z * 1j) / size2).where(size2 != 0, 0.0)


class AngleReal(Function):
    """pi where x < 0, else 0 (nan stays nan, -inf gives pi); piecewise constant, so the
    gradient is 0."""

    _name = "AngleBackward0"

    @staticmethod
    def forward(ctx, x):
        xp = xp_of(x)
        return xp.where(x != x, x, xp.where(x < 0, np.pi, 0.0)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return grad.new_zeros(grad.shape)


def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor, as a view; a real tensor is returned as it is."""
    return Real.apply(input) if input.is_complex() else input


def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view."""
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


def angle(input: Tensor) -> Tensor:
    """The argument of each element in radians: atan2(imag, real); for real inputs pi
    where negative and 0 elsewhere."""
    if input.is_complex():
        return AngleComplex.apply(input)
    return AngleReal.apply(float_input(input))


def isreal(input: Tensor) -> Tensor:
    """True where an element has no imaginary part (everywhere for real tensors)."""
    if input.is_complex():
        return Imag.apply(input) == 0
    return input.new_ones(input.shape, dtype=dtypes.bool)


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001 - PyTorch's name
    """The complex tensor real + i imag; both parts float32 or float64, of one dtype."""
    _check_parts("complex", real, imag)
    return Complex.apply(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002 - PyTorch's names
    """The complex tensor abs * (cos(angle) + i sin(angle))."""
    _check_parts("polar", abs, angle)
    return Polar.apply(abs, angle)


def _check_parts(op: str, a: Tensor, b: Tensor) -> None:
    floats = (dtypes.float32, dtypes.float64)
    if a.dtype not in floats or b.dtype not in floats:
        raise RuntimeError(f"{op}: expected both inputs to be float32 or float64 tensors, "
                           f"but got {a.dtype} and {b.dtype}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: expected both inputs to have one dtype, but got "
                           f"{a.dtype} and {b.dtype}")


def view_as_real(input: Tensor) -> Tensor:
    """A view of a complex tensor as a real one with a last dimension of size 2
    holding (real, imag)."""
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(input)


def view_as_complex(input: Tensor) -> Tensor:
    """A view of a real tensor whose last dimension holds (real, imag) pairs as a complex
    tensor of one dimension less."""
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("view_as_complex is only supported for float32 and float64 "
                           f"tensors, but got a tensor of dtype {input.dtype}")
    if input.dim() == 0 or input.shape[-1] != 2:
        raise RuntimeError("view_as_complex: Tensor must have a last dimension of size 2, "
                           f"but got shape {list(input.shape)}")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("view_as_complex: Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("view_as_complex: Tensor must have a stride divisible by 2 for "
                           "all but last dimension")
    return ViewAsComplex.apply(input)


def times_conj(grad: Tensor, factor) -> Tensor:
    """``grad * conj(factor)``: the backward of a holomorphic op whose derivative is
    `factor` (a tensor or a number)."""
    if isinstance(factor, Tensor):
        return grad * (Conj.apply(factor) if factor.is_complex() else factor)
    if isinstance(factor, _PYTHON_COMPLEX):
        return grad * factor.conjugate()
    return grad * factor
