"""LU factorization with partial pivoting (ops/linalg_lu.py): LAPACK's packing and pivots
by hand, reconstruction, solves against NumPy, gradients by finite differences, errors,
and PyTorch's results where it is installed."""

import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck


def test_packing_and_pivots_of_a_small_matrix_by_hand():
    a = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]], dtype=ember.float64)
    lu, pivots = ember.linalg.lu_factor(a)
    # step 1 swaps in row 3 (7 is the largest), step 2 row 3 again (6/7 > 3/7), step 3 keeps
    assert pivots.tolist() == [3, 3, 3] and pivots.dtype is ember.int32
    np.testing.assert_allclose(lu.numpy(), [[7, 8, 10], [1 / 7, 6 / 7, 11 / 7],
                                            [4 / 7, 1 / 2, -1 / 2]], rtol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (5, 3), (3, 6), (2, 4, 2)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_p_l_u_and_the_unpacked_factors_rebuild_a(shape, dtype):
    a = ember.tensor(np.random.default_rng(1).standard_normal(shape), dtype=dtype)
    P, L, U = ember.linalg.lu(a)
    k = min(shape[-2:])
    assert tuple(L.shape[-2:]) == (shape[-2], k) and tuple(U.shape[-2:]) == (k, shape[-1])
    tol = dict(rtol=1e-5, atol=1e-5) if dtype is ember.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose((P @ L @ U).numpy(), a.numpy(), **tol)
    assert np.allclose(np.triu(L.numpy(), 1), 0) and np.allclose(np.tril(U.numpy(), -1), 0)
    assert (np.abs(L.numpy()) <= 1 + 1e-6).all()   # (partial pivoting)
    unpacked = ember.lu_unpack(*ember.linalg.lu_factor_ex(a)[:2])
    for x, y in zip(unpacked, (P, L, U)):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize("left, adjoint", [(True, False), (True, True), (False, False),
                                           (False, True)])
def test_lu_solve_against_numpy(left, adjoint):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 4, 4))
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    x = ember.linalg.lu_solve(*ember.linalg.lu_factor(ember.tensor(a)), ember.tensor(b),
                              left=left, adjoint=adjoint)
    m = np.swapaxes(a, -1, -2) if adjoint else a
    want = np.linalg.solve(m, b) if left else np.swapaxes(
        np.linalg.solve(np.swapaxes(m, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-10, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lu, pivots = ember.lu(ember.tensor(a))
        legacy = ember.lu_solve(ember.tensor(rng.standard_normal((2, 4, 1))), lu, pivots)
    assert tuple(legacy.shape) == (2, 4, 1)


def test_gradients_by_finite_differences():
    a = ember.tensor(np.random.default_rng(3).standard_normal((2, 3, 3)), dtype=ember.float64,
                     requires_grad=True)
    b = ember.tensor(np.random.default_rng(4).standard_normal((2, 3, 2)), dtype=ember.float64,
                     requires_grad=True)
    assert gradcheck(lambda t: ember.linalg.lu_factor(t).LU, (a,))
    assert gradcheck(lambda t: ember.linalg.lu(t)[1:], (a,))
    assert gradgradcheck(lambda t: ember.linalg.lu(t).U, (a,))
    assert gradcheck(lambda t, r: ember.linalg.lu_solve(*ember.linalg.lu_factor(t), r), (a, b))
    for shape in [(4, 3), (2, 5)]:   # tall and wide: a square part and a solved block
        rect = ember.tensor(np.random.default_rng(5).standard_normal(shape),
                            dtype=ember.float64, requires_grad=True)
        assert gradcheck(lambda t: ember.linalg.lu(t)[1:], (rect,))
        assert gradgradcheck(lambda t: ember.linalg.lu_factor_ex(t).LU, (rect,))


def test_singular_matrices_and_errors():
    batch = ember.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])
    lu, pivots, info = ember.linalg.lu_factor_ex(batch)
    assert info.tolist() == [0, 2] and lu[1].tolist() == [[2.0, 4.0], [0.5, 0.0]]
    with pytest.raises(RuntimeError, match=r"torch.linalg.lu_factor: \(Batch element 1\): "
                                           r"U\[2,2\] is zero"):
        ember.linalg.lu_factor(batch)
    with pytest.raises(RuntimeError, match=r"lu_factor_ex: \(Batch element 1\)"):
        ember.linalg.lu_factor_ex(batch, check_errors=True)
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        assert ember.lu(batch, get_infos=True)[2].tolist() == [0, 2]
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        ember.linalg.lu(batch, pivot=False)
    with pytest.raises(RuntimeError, match="Expected LU to be square"):
        ember.linalg.lu_solve(ember.ones(2, 3), ember.ones(2, dtype=ember.int32), ember.ones(2, 1))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for shape in [(5, 5), (2, 4, 4), (6, 3), (3, 7)]:
        a = rng.standard_normal(shape)
        theirs = torch.linalg.lu_factor_ex(torch.tensor(a))
        ours = ember.linalg.lu_factor_ex(ember.tensor(a))
        np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
        np.testing.assert_allclose(ours.LU.numpy(), theirs.LU.numpy(), rtol=1e-10, atol=1e-12)
        for x, y in zip(ember.linalg.lu(ember.tensor(a)), torch.linalg.lu(torch.tensor(a))):
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)
    for shape in [(3, 3), (5, 3), (2, 4)]:
        a = rng.standard_normal(shape)
        w = rng.standard_normal(shape)
        ta = torch.tensor(a, requires_grad=True)
        ea = ember.tensor(a, requires_grad=True)
        (torch.linalg.lu_factor_ex(ta).LU * torch.tensor(w)).sum().backward()
        (ember.linalg.lu_factor_ex(ea).LU * ember.tensor(w)).sum().backward()
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_complex_matrices_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    b = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    w = rng.standard_normal((3, 3))
    ours, theirs = ember.linalg.lu_factor(ember.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
    np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
    np.testing.assert_allclose(ours.LU.numpy(), theirs.LU.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        ember.linalg.lu_solve(*ours, ember.tensor(b), adjoint=True).numpy(),
        torch.linalg.lu_solve(*theirs, torch.tensor(b), adjoint=True).numpy(), rtol=1e-10)
    ta, ea = torch.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
    (torch.linalg.lu_factor(ta).LU * torch.tensor(w)).abs().sum().backward()
    (ember.linalg.lu_factor(ea).LU * ember.tensor(w)).abs().sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)
