"""linalg.householder_product (orgqr): reflectors by hand, orthonormal columns from a QR's
raw storage, gradients by finite differences, errors, and PyTorch where installed."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def test_one_reflector_by_hand():
    # v = (1, 2, 3) (the 1 implied on the diagonal), tau 0.5: H = I - 0.5 v v^T, first column
    a = ember.tensor([[9.0], [2.0], [3.0]], dtype=ember.float64)
    q = ember.linalg.householder_product(a, ember.tensor([0.5], dtype=ember.float64))
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(q.numpy(), (np.eye(3) - 0.5 * np.outer(v, v))[:, :1])


def test_rebuilds_the_orthonormal_q_of_lapacks_raw_qr():
    a = np.random.default_rng(0).standard_normal((5, 3))
    h, tau = np.linalg.qr(a, mode="raw")   # (LAPACK's geqrf storage, transposed)
    q = ember.linalg.householder_product(ember.tensor(h.T.copy()), ember.tensor(tau))
    np.testing.assert_allclose(q.numpy().T @ q.numpy(), np.eye(3), atol=1e-12)
    np.testing.assert_allclose(np.abs(q.numpy()), np.abs(np.linalg.qr(a)[0]), atol=1e-12)
    assert ember.orgqr(ember.tensor(h.T.copy()), ember.tensor(tau)).shape == (5, 3)


def test_gradients_by_finite_differences():
    rng = np.random.default_rng(1)
    a = ember.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    tau = ember.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    assert gradcheck(ember.linalg.householder_product, (a, tau))
    assert gradgradcheck(ember.linalg.householder_product, (a, tau))


def test_errors():
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] must be greater than or equal"):
        ember.linalg.householder_product(ember.randn(3, 4), ember.randn(2))
    with pytest.raises(RuntimeError, match=r"input.shape\[-1\] must be greater than or equal "
                                           r"to tau.shape\[-1\]"):
        ember.linalg.householder_product(ember.randn(4, 3), ember.randn(4))
    with pytest.raises(RuntimeError, match="Expected batch dimensions of tau"):
        ember.linalg.householder_product(ember.randn(2, 4, 3), ember.randn(3, 2))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.linalg.householder_product(ember.randn(4), ember.randn(1))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    for shape, k in [((4, 3), 2), ((2, 5, 5), 5)]:
        a, t = rng.standard_normal(shape), rng.standard_normal(shape[:-2] + (k,))
        w = rng.standard_normal(shape)
        ta, tt = torch.tensor(a, requires_grad=True), torch.tensor(t, requires_grad=True)
        ea, et = ember.tensor(a, requires_grad=True), ember.tensor(t, requires_grad=True)
        tq, eq = torch.linalg.householder_product(ta, tt), ember.linalg.householder_product(ea, et)
        np.testing.assert_allclose(eq.detach().numpy(), tq.detach().numpy(), atol=1e-12)
        (tq * torch.tensor(w)).sum().backward()
        (eq * ember.tensor(w)).sum().backward()
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), atol=1e-10)
        np.testing.assert_allclose(et.grad.numpy(), tt.grad.numpy(), atol=1e-10)


def test_complex_values_and_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    t = rng.standard_normal(2) + 1j * rng.standard_normal(2)
    w = rng.standard_normal((4, 3))
    ta, tt = torch.tensor(a, requires_grad=True), torch.tensor(t, requires_grad=True)
    ea, et = ember.tensor(a, requires_grad=True), ember.tensor(t, requires_grad=True)
    tq, eq = torch.linalg.householder_product(ta, tt), ember.linalg.householder_product(ea, et)
    np.testing.assert_allclose(eq.detach().numpy(), tq.detach().numpy(), atol=1e-12)
    (tq * torch.tensor(w)).abs().sum().backward()
    (eq * ember.tensor(w)).abs().sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(et.grad.numpy(), tt.grad.numpy(), atol=1e-10)
