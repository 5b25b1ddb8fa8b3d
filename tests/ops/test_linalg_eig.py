# ruff: noqa: N803, N806 - matrices are capital letters, as in the math
"""linalg.eig / eigvals: the eigen-equation, gradients by finite differences, PyTorch parity."""

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

_rng = np.random.default_rng(0)
_A = _rng.standard_normal((2, 4, 4))
_AC = _A + 1j * _rng.standard_normal((2, 4, 4))


@pytest.mark.parametrize("matrix", [_A, _AC], ids=["real", "complex"])
def test_eigen_equation_and_unit_vectors(matrix):
    L, V = ember.linalg.eig(ember.tensor(matrix))
    assert L.dtype == ember.complex128 and V.dtype == ember.complex128
    np.testing.assert_allclose(matrix @ V.numpy(), V.numpy() * L.numpy()[:, None, :],
                               atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(V.numpy(), axis=-2), 1.0)
    np.testing.assert_allclose(ember.linalg.eigvals(ember.tensor(matrix)).numpy(), L.numpy())
    assert ember.linalg.eig(ember.tensor(matrix, dtype=ember.float32 if matrix is _A else
                                         ember.complex64)).eigenvalues.dtype == ember.complex64


def _invariant_loss(A):
    """Depends on the eigenvalues and on |V| only (not on the eigenvectors' phases)."""
    L, V = ember.linalg.eig(A)
    weights = ember.tensor(np.arange(16.0).reshape(4, 4))
    return (L.abs() + L.real * 0.5 + L.imag ** 2).sum() + (V.abs() ** 2 * weights).sum()


@pytest.mark.parametrize("matrix", [_A[0], _AC[0]], ids=["real", "complex"])
def test_gradient_matches_finite_differences(matrix):
    A = ember.tensor(matrix, requires_grad=True)
    _invariant_loss(A).backward()
    h, expected = 1e-6, np.zeros_like(matrix)
    directions = (1.0, 1j) if np.iscomplexobj(matrix) else (1.0,)
    for index in np.ndindex(matrix.shape):
        for direction in directions:
            step = np.zeros_like(matrix)
            step[index] = h * direction
            up = _invariant_loss(ember.tensor(matrix + step)).item()
            down = _invariant_loss(ember.tensor(matrix - step)).item()
            expected[index] += direction * (up - down) / (2 * h)
    np.testing.assert_allclose(A.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_a_loss_that_depends_on_the_phase_has_no_gradient():
    A = ember.tensor(_A[0], requires_grad=True)
    _, V = ember.linalg.eig(A)
    with pytest.raises(RuntimeError, match="only defined up to a complex phase"):
        V.imag.sum().backward()


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("matrix", [_A, _AC], ids=["real", "complex"])
def test_matches_pytorch(matrix):
    results = []
    for lib in (ember, torch):
        A = lib.tensor(matrix, requires_grad=True)
        L, V = lib.linalg.eig(A)
        weights = lib.tensor(np.arange(16.0).reshape(4, 4))
        ((L.abs() + L.real).sum() + (V.abs() ** 2 * weights).sum()).backward()
        grad = A.grad if lib is ember else A.grad.resolve_conj()
        results.append((L.detach().resolve_conj().numpy(), np.abs(V.detach().numpy()),
                        grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
