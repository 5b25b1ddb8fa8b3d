"""Gradients of complex tensors follow PyTorch's convention: for a real loss L of z = x + iy,
``z.grad = dL/dx + i dL/dy``, so a holomorphic op's backward multiplies by the conjugate of
its derivative.  Checked by finite differences along the real and imaginary directions,
and against PyTorch."""

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

_rng = np.random.default_rng(0)
_Z = _rng.uniform(0.3, 1.2, (2, 3)) + 1j * _rng.uniform(-0.8, 0.8, (2, 3))
_W = _rng.uniform(0.3, 1.2, (2, 3)) + 1j * _rng.uniform(-0.8, 0.8, (2, 3))

UNARY = {
    "exp": lambda z: z.exp(), "log": lambda z: z.log(), "sin": lambda z: z.sin(),
    "cos": lambda z: z.cos(), "tanh": lambda z: z.tanh(), "sigmoid": lambda z: z.sigmoid(),
    "sqrt": lambda z: z.sqrt(), "rsqrt": lambda z: z.rsqrt(),
    "reciprocal": lambda z: z.reciprocal(), "square": lambda z: z.square(),
    "pow3": lambda z: z ** 3, "expm1": lambda z: z.expm1(), "asin": lambda z: z.asin(),
    "prod": lambda z: z.prod(1), "scaled": lambda z: z * (2 - 1j), "conj": lambda z: z.conj(),
    "mul_self": lambda z: z * z, "div": lambda z: z / (z + 2),
    "matmul": lambda z: z @ z.t(), "pow_tensor": lambda z: z ** (z * 0.5),
    "real": lambda z: z.real * 3 + 1, "imag": lambda z: z.imag ** 3 + 2,
    "angle": lambda z: z.angle() + 4, "view_as_real": lambda z: ember_or_torch(z).view_as_real(z),
    "round_trip": lambda z: ember_or_torch(z).view_as_complex(
        ember_or_torch(z).view_as_real(z * z) * 2),
    "complex_parts": lambda z: ember_or_torch(z).complex(z.real ** 2, z.imag * z.real),
    "polar_parts": lambda z: ember_or_torch(z).polar(z.abs(), z.angle() * 2),
    "vector_norm": lambda z: ember_or_torch(z).linalg.vector_norm(z, 3.0, dim=1),
    "frobenius": lambda z: ember_or_torch(z).linalg.matrix_norm(z).reshape(1),
    "norm": lambda z: z.norm(dim=0),
    "det": lambda z: ember_or_torch(z).linalg.det(z[:, :2] + 1).reshape(1),
    "cross": lambda z: ember_or_torch(z).linalg.cross(z, z * (1 - 2j) + 0.5),
    "cholesky": lambda z: ember_or_torch(z).linalg.cholesky(_hermitian(z)),
    "eigvalsh": lambda z: ember_or_torch(z).linalg.eigvalsh(_hermitian(z)) + 0.0,
    "eigh_abs": lambda z: ember_or_torch(z).linalg.eigh(_hermitian(z))[1].abs() ** 2,
}


def _hermitian(z):
    """A Hermitian positive-definite 2x2 matrix made from z's first two columns."""
    square = z[:, :2]
    return square @ square.mH + 3 * ember_or_torch(z).eye(2, dtype=z.dtype)


def ember_or_torch(z):
    return ember if isinstance(z, ember.Tensor) else torch



def _loss(f, z):
    return f(z).abs().sum()


@pytest.mark.parametrize("name", sorted(UNARY))
def test_gradient_is_dL_dx_plus_i_dL_dy(name):
    f = UNARY[name]
    z = ember.tensor(_Z, requires_grad=True)
    _loss(f, z).backward()
    h, expected = 1e-6, np.zeros_like(_Z)
    for index in np.ndindex(_Z.shape):
        for direction in (1.0, 1j):
            step = np.zeros_like(_Z)
            step[index] = h * direction
            up = _loss(f, ember.tensor(_Z + step)).item()
            down = _loss(f, ember.tensor(_Z - step)).item()
            expected[index] += direction * (up - down) / (2 * h)
    np.testing.assert_allclose(z.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_conj_values_and_queries():
    z = ember.tensor([1 + 2j, 3 - 1j])
    assert z.conj().tolist() == [1 - 2j, 3 + 1j]
    r = ember.ones(2)
    assert r.conj() is r and ember.conj_physical(z).tolist() == [1 - 2j, 3 + 1j]
    assert not z.is_conj() and ember.resolve_conj(z) is z and not ember.is_neg(z)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", sorted(UNARY))
def test_matches_pytorch(name):
    f = UNARY[name]
    grads = []
    for lib in (ember, torch):
        z = lib.tensor(_Z, requires_grad=True)
        out = f(z)
        w = lib.tensor(np.resize(_W, tuple(out.shape)))
        (out * w).abs().sum().backward()
        grads.append(z.grad.resolve_conj().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_real_imag_and_view_as_real_are_views():
    z = ember.tensor([1 + 2j, 3 - 1j])
    z.real.mul_(10)
    z.imag.fill_(0.5)
    assert z.tolist() == [10 + 0.5j, 30 + 0.5j]
    pairs = ember.view_as_real(z)
    pairs[1, 1] = -7.0
    assert pairs.shape == (2, 2) and z.tolist() == [10 + 0.5j, 30 - 7j]
    back = ember.view_as_complex(pairs)
    assert back.dtype == ember.complex64 and back.tolist() == z.tolist()
    assert ember.view_as_complex(ember.ones(3, 2)).dtype == ember.complex64


def test_angle_of_real_tensors():
    x = ember.tensor([-2.0, 0.0, 3.0, float("nan")], requires_grad=True)
    a = x.angle()
    np.testing.assert_array_equal(a.detach().numpy(), np.float32([np.pi, 0.0, 0.0, np.nan]))
    a.sum().backward()
    assert x.grad.tolist() == [0.0] * 4
    assert ember.angle(ember.tensor([-1, 2])).dtype == ember.float32


def test_complex_part_errors():
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        ember.ones(2).imag
    with pytest.raises(RuntimeError, match="view_as_real is only supported"):
        ember.view_as_real(ember.ones(2))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        ember.view_as_complex(ember.ones(3))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        ember.view_as_complex(ember.ones(2, 2).t())
    with pytest.raises(RuntimeError, match="divisible by 2"):
        ember.view_as_complex(ember.ones(2, 3)[:, :2])
    with pytest.raises(RuntimeError, match="one dtype"):
        ember.complex(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="float32 or float64"):
        ember.polar(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))


def test_real_input_of_a_complex_product_gets_the_real_part():
    z = ember.tensor([1 + 2j, 0.5 - 1j], requires_grad=True)
    w = ember.tensor([0.3, -2.0], requires_grad=True)
    (z * w).abs().sum().backward()
    expected = np.abs(z.detach().numpy())  # d|z w|/dw = |z| sign(w)
    np.testing.assert_allclose(w.grad.numpy(), expected * np.sign([0.3, -2.0]))
    assert w.grad.dtype == ember.float32


def test_isreal():
    assert ember.isreal(ember.tensor([1 + 0j, 2 + 1j])).tolist() == [True, False]
    assert ember.ones(2).isreal().tolist() == [True, True]
