# ruff: noqa: N803 - matrices are capital letters, as in the math
"""Focused tests of the linear-algebra ops beyond the op table: error messages, options,
dtypes, in-place forms, node names, and parity with PyTorch (skipped without it)."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
rng = np.random.default_rng(1234)


def rand(*shape, dtype=ember.float64, requires_grad=False):
    return ember.tensor(rng.standard_normal(shape), dtype=dtype, requires_grad=requires_grad)


def spd(n, batch=()):
    m = rng.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


# ---------------------------------------------------------------------------
# matmul family


@pytest.mark.parametrize("sa,sb,message", [
    ((2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ((3,), (4,), "inconsistent tensor size, expected tensor [3] and src [4]"),
    ((2, 3), (4,), "size mismatch, got input (2), mat (2x3), vec (4)"),
    ((3,), (4, 5), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)"),
    ((5, 2, 3), (5, 4, 5), "Expected size for first two dimensions of batch2 tensor to be: "
                           "[5, 3] but got: [5, 4]."),
    ((5, 2, 3), (4, 3, 5), "The size of tensor a (5) must match the size of tensor b (4)"),
    ((), (3,), "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
])
def test_matmul_shape_errors(sa, sb, message):
    with pytest.raises(RuntimeError) as info:
        ember.matmul(ember.ones(*sa), ember.ones(*sb))
    assert message in str(info.value)


def test_matrix_product_errors():
    f32, f64 = ember.ones(2, 3), ember.ones(3, 4, dtype=ember.float64)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float != double"):
        ember.matmul(f32, f64)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float != long int"):
        ember.mm(f32, ember.ones(3, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        ember.bmm(ember.ones(2, 3), ember.ones(3, 4))
    with pytest.raises(RuntimeError, match="batch2 must be a 3D tensor"):
        ember.bmm(ember.ones(2, 2, 3), ember.ones(3, 4))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 3\] but got: \[3, 3\]"):
        ember.bmm(ember.ones(2, 2, 3), ember.ones(3, 3, 4))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.bmm(ember.ones(2, 2, 3), ember.ones(2, 3, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        ember.mm(ember.ones(2, 3, 3), ember.ones(3, 4))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        ember.dot(ember.ones(3, 1), ember.ones(3))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, "
                                           "but found Float and Double"):
        ember.dot(ember.ones(3), ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 2, 2"):
        ember.mv(ember.ones(2, 3), ember.ones(3, 1))
    with pytest.raises(NotImplementedError):
        ember.matmul(ember.ones(2, 2, dtype=ember.bool), ember.ones(2, 2, dtype=ember.bool))
    with pytest.raises(TypeError):
        ember.matmul(ember.ones(2, 2), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("sa,sb,name", [
    ((3,), (3,), "DotBackward0"), ((2, 3), (3,), "MvBackward0"), ((2, 3), (3, 4), "MmBackward0"),
    ((2, 2, 3), (2, 3, 4), "UnsafeViewBackward0"), ((2, 2, 3), (3, 4), "UnsafeViewBackward0"),
])
def test_matmul_node_names(sa, sb, name):
    out = ember.matmul(rand(*sa, requires_grad=True), rand(*sb))
    assert out.grad_fn.name() == name
    assert ember.bmm(rand(2, 2, 3, requires_grad=True), rand(2, 3, 4)).grad_fn.name() == \
        "BmmBackward0"


def test_matmul_keeps_dtype_and_operators():
    a = ember.ones(4, 2, 3)
    b = ember.ones(3, 5)
    assert (a @ b).dtype is ember.float32
    assert (a @ b).shape == (4, 2, 5)
    ints = ember.ones(2, 3, dtype=ember.int64) @ ember.ones(3, 2, dtype=ember.int64)
    assert ints.dtype is ember.int64 and ints.tolist() == [[3, 3], [3, 3]]
    x = rand(3, 3)
    assert_close(x.__rmatmul__(ember.eye(3, dtype=ember.float64)), x)
    assert_close(x.matmul(x), x.cpu_array() @ x.cpu_array())
    assert ember.Tensor.__matmul__(x, "a") is NotImplemented


def test_matmul_batched_gradient_with_broadcast_batch():
    a = rand(3, 1, 2, 4, requires_grad=True)
    b = rand(5, 4, 2, requires_grad=True)
    assert gradcheck(ember.matmul, (a, b))
    out = ember.matmul(a, b)
    assert out.shape == (3, 5, 2, 2)


def test_addmm_family_options_and_inplace():
    i, a, b = rand(2, 4), rand(2, 3), rand(3, 4)
    assert_close(ember.addmm(i, a, b, beta=0.5, alpha=2),
                 0.5 * i.cpu_array() + 2 * a.cpu_array() @ b.cpu_array())
    nan = ember.full((2, 4), float("nan"), dtype=ember.float64)
    out = ember.addmm(nan, a, b, beta=0)  # beta=0 ignores the input, even nan
    assert not bool(np.isnan(out.cpu_array()).any())
    target = i.clone()
    version = target._version.value
    result = target.addmm_(a, b, alpha=3)
    assert result is target and target._version.value == version + 1
    assert_close(target, i.cpu_array() + 3 * a.cpu_array() @ b.cpu_array())
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        ember.addmm(i, a, rand(4, 4))
    with pytest.raises(RuntimeError, match="must match the existing size"):
        ember.addmm(rand(3, 4), a, b)
    # gradient through an in-place addmm_ on a non-leaf
    w = rand(2, 4, requires_grad=True)
    h = w * 1.0
    h.addmm_(a, b)
    h.sum().backward()
    assert_close(w.grad, np.ones((2, 4)))
    assert ember.addmv(rand(2), a, rand(3)).shape == (2,)
    assert ember.addr(rand(2, 3), rand(2), rand(3)).shape == (2, 3)
    assert ember.baddbmm(rand(2, 4), rand(3, 2, 5), rand(3, 5, 4)).shape == (3, 2, 4)
    assert ember.addbmm(rand(2, 4), rand(3, 2, 5), rand(3, 5, 4)).shape == (2, 4)
    assert ember.addmm(i, a, b).grad_fn is None
    assert ember.addmm(i, a.requires_grad_(), b).grad_fn.name() == "AddmmBackward0"


def test_small_products():
    v, w = rand(3), rand(4)
    assert ember.outer(v, w).shape == (3, 4) and ember.ger(v, w).shape == (3, 4)
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument vec2, but got 2-D"):
        ember.outer(v, rand(3, 1))
    with pytest.raises(RuntimeError, match="inner\\(\\) the last dimension must match"):
        ember.inner(rand(2, 3), rand(2, 4))
    assert ember.inner(ember.tensor(2.0), ember.ones(2, 3)).shape == (2, 3)
    assert ember.kron(rand(2, 3), rand(3)).shape == (2, 9)
    assert ember.tensordot(rand(2, 3), rand(3, 4), dims=1).shape == (2, 4)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        ember.tensordot(rand(2, 3), rand(4, 4), dims=([1], [0]))
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ember.tensordot(rand(2, 3), ember.ones(3, 4), dims=1)
    m = rand(3, 4, requires_grad=True)
    t = ember.trace(m)
    assert t.grad_fn.name() == "TraceBackward0"
    t.backward()
    assert_close(m.grad, np.eye(3, 4))
    assert ember.trace(ember.ones(3, 3, dtype=ember.int32)).dtype is ember.int64
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3"):
        ember.linalg.cross(rand(2, 4), rand(2, 4))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        c = ember.cross(rand(3, 2), rand(3, 2))
    assert c.shape == (3, 2)
    assert ember.linalg.cross(rand(2, 3), rand(1, 3)).shape == (2, 3)


# ---------------------------------------------------------------------------
# einsum


def test_einsum_forms():
    a, b = rand(2, 3), rand(3, 4)
    ref = a.cpu_array() @ b.cpu_array()
    assert_close(ember.einsum("ij,jk->ik", a, b), ref)
    assert_close(ember.einsum("ij,jk", a, b), ref)                  # implicit output
    assert_close(ember.einsum("ij,jk->ik", [a, b]), ref)            # operands as a list
    assert_close(ember.einsum(a, [0, 1], b, [1, 2], [0, 2]), ref)   # sublist form
    assert_close(ember.einsum(" i j , j k -> i k ", a, b), ref)     # spaces
    assert ember.einsum("ba", rand(2, 3)).shape == (3, 2)           # alphabetical output
    assert ember.einsum("Ab", rand(2, 3)).shape == (2, 3)           # upper case first
    assert ember.einsum("...ij,...jk", rand(1, 2, 3), rand(5, 3, 4)).shape == (5, 2, 4)
    assert ember.einsum("i,i->i", rand(1), rand(3)).shape == (3,)    # size-1 broadcasts
    assert ember.einsum("ij->", ember.ones(2, 3, dtype=ember.int64)).dtype is ember.int64


def test_einsum_result_does_not_alias_its_input():
    a = rand(2, 3)
    t = ember.einsum("ij->ji", a)
    t.add_(1.0)
    assert_close(a, a.cpu_array())  # a unchanged
    assert not np.shares_memory(t.cpu_array(), a.cpu_array())


@pytest.mark.parametrize("args,message", [
    (("ij,jk", (2, 3)), "fewer operands were provided than specified in the equation"),
    (("ij", (2, 3), (3,)), "more operands were provided than specified in the equation"),
    (("ij,jk", (2, 3), (4, 4)), "subscript j has size 4 for operand 1 which does not broadcast "
                                "with previously seen size 3"),
    (("ij,jk->ik", (2, 3, 3), (3, 4)), "the number of subscripts in the equation (2) does not "
                                        "match the number of dimensions (3) for operand 0"),
    (("ij,jk->ikk", (2, 3), (3, 4)), "output subscript k appears more than once in the output"),
    (("ij,jk->iz", (2, 3), (3, 4)), "output subscript z does not appear in the equation"),
    (("i1", (2, 3)), "invalid subscript given at index 1"),
])
def test_einsum_errors(args, message):
    eq, *shapes = args
    with pytest.raises(RuntimeError) as info:
        ember.einsum(eq, *[ember.ones(*s) for s in shapes])
    assert message in str(info.value)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        ember.einsum("ij,jk", ember.ones(2, 3), ember.ones(3, 4, dtype=ember.float64))


def test_einsum_gradients_with_repeats_and_broadcasting():
    assert gradcheck(lambda a, b: ember.einsum("ii,ij->j", a, b), (rand(3, 3, requires_grad=True),
                                                                  rand(3, 2, requires_grad=True)))
    assert gradcheck(lambda a, b: ember.einsum("...ij,...jk", a, b),
                     (rand(2, 1, 2, 3, requires_grad=True), rand(3, 3, 2, requires_grad=True)))
    assert gradcheck(lambda a: ember.einsum("ij->", a), (rand(2, 3, requires_grad=True),))


# ---------------------------------------------------------------------------
# norms


def test_vector_norm_errors_and_edges():
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        ember.linalg.vector_norm(ember.ones(3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ember.linalg.vector_norm(ember.ones(0, 3), math.inf)
    assert ember.linalg.vector_norm(ember.ones(0, 3)).item() == 0.0
    assert ember.linalg.vector_norm(ember.ones(0, 3), math.inf, dim=1).shape == (0,)
    z = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    ember.linalg.vector_norm(z).backward()  # zero gradient at a zero vector, not nan
    assert z.grad.tolist() == [0.0, 0.0, 0.0]
    assert ember.linalg.vector_norm(ember.ones(3), dtype=ember.float64).dtype is ember.float64
    assert ember.linalg.vector_norm(ember.ones(3, 3), dim=(0, 1), keepdim=True).shape == (1, 1)
    x = rand(3, requires_grad=True)
    assert ember.linalg.vector_norm(x, 0).grad_fn.name() == "LinalgVectorNormBackward0"


def test_matrix_norm_errors_and_dispatch():
    with pytest.raises(RuntimeError, match="The input tensor A must have at least 2 dimensions"):
        ember.linalg.matrix_norm(ember.ones(3))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        ember.linalg.matrix_norm(ember.ones(3, 3), 3)
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must "
                                           "be 1D or 2D. Got 3D."):
        ember.linalg.norm(ember.ones(3, 3, 3), 2)
    assert ember.linalg.norm(ember.ones(3, 3), 2).item() == pytest.approx(3.0)
    assert ember.linalg.norm(ember.ones(3, 3, 3)).item() == pytest.approx(math.sqrt(27))
    assert ember.linalg.norm(ember.ones(3, 3), 2, dim=1).shape == (3,)
    a = rand(2, 3, 4)
    out = ember.linalg.matrix_norm(a, "fro", dim=(0, 2), keepdim=True)
    assert out.shape == (1, 3, 1)
    assert_close(out.reshape(3), np.linalg.norm(np.moveaxis(a.cpu_array(), 1, 0), axis=(1, 2)))


@needs_torch
@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 3, 0.5, -1])
def test_vector_norm_gradients_match_torch_at_ties(ord):
    data = np.array([[1.0, -3.0, 3.0], [2.0, 0.5, 1.0]])
    x = ember.tensor(data, requires_grad=True)
    ember.linalg.vector_norm(x, ord).backward()
    xt = torch.tensor(data, requires_grad=True)
    torch.linalg.vector_norm(xt, ord).backward()
    assert_close(x.grad, xt.grad.numpy(), atol=1e-10, rtol=1e-7)


@needs_torch
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm_values_and_gradients_match_torch(ord):
    data = rng.standard_normal((2, 3, 3))
    a = ember.tensor(data, requires_grad=True)
    out = ember.linalg.matrix_norm(a, ord)
    out.sum().backward()
    at = torch.tensor(data, requires_grad=True)
    ref = torch.linalg.matrix_norm(at, ord)
    ref.sum().backward()
    assert_close(out, ref.detach().numpy(), atol=1e-10, rtol=1e-7)
    assert_close(a.grad, at.grad.numpy(), atol=1e-8, rtol=1e-6)


# ---------------------------------------------------------------------------
# inverses, determinants, solvers


def test_singular_and_not_positive_definite_errors():
    singular = ember.tensor([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(ember.linalg.LinAlgError, match="linalg.inv"):
        ember.linalg.inv(singular)
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="input matrix is singular"):
        ember.linalg.solve(singular, ember.ones(2))
    with pytest.raises(ember.linalg.LinAlgError, match="not positive-definite"):
        ember.linalg.cholesky(-ember.eye(3))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are "
                                           "2 by 3 matrices"):
        ember.linalg.inv(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        ember.linalg.det(ember.ones(3, 3, dtype=ember.int64))
    inverse, info = ember.linalg.inv_ex(singular)
    # (LAPACK's getrf, as PyTorch: the 1-based index of the first zero pivot)
    assert info.item() == 2 and info.dtype is ember.int32
    L, info = ember.linalg.cholesky_ex(-ember.eye(3))
    assert info.item() == 1
    L, info = ember.linalg.cholesky_ex(ember.tensor(spd(3)))
    assert info.item() == 0
    assert_close(L @ L.transpose(-2, -1), spd_like(L))



def test_failures_name_the_batch_element_and_position_as_lapack_reports_them():
    singular = [[1.0, 2.0], [2.0, 4.0]]
    batch = ember.tensor([[[1.0, 0.0], [0.0, 1.0]], singular, [[0.0, 1.0], [1.0, 0.0]]])
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.inv: \(Batch element 1\): "
                       "The diagonal element 2 is zero, the inversion could not be completed "
                       "because the input matrix is singular."):
        ember.linalg.inv(batch)
    with pytest.raises(ember.linalg.LinAlgError, match=r"linalg.cholesky: \(Batch element 1\): "
                       r"The factorization could not be completed because the input is not "
                       r"positive-definite \(the leading minor of order 2 is not "
                       r"positive-definite\)."):
        ember.linalg.cholesky(batch)
    inverse, info = ember.linalg.inv_ex(batch)
    assert info.tolist() == [0, 2, 0]
    assert inverse[0].tolist() == [[1, 0], [0, 1]] and inverse[2].tolist() == [[0, 1], [1, 0]]
    assert np.isnan(inverse[1].numpy()).all()
    assert ember.linalg.cholesky_ex(batch).info.tolist() == [0, 2, 1]
    with pytest.raises(ember.linalg.LinAlgError, match=r"torch.linalg.solve: \(Batch element "
                       r"1\): The solver failed because the input matrix is singular."):
        ember.linalg.solve(batch, ember.ones(3, 2))
    solved, info = ember.linalg.solve_ex(batch, ember.ones(3, 2))   # (no exception)
    assert info.tolist() == [0, 2, 0] and solved[0].tolist() == [1, 1]
    assert solved[2].tolist() == [1, 1] and np.isnan(solved[1].numpy()).all()
    assert ember.linalg.solve_ex(batch, ember.ones(3, 2, 1)).result.shape == (3, 2, 1)
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.solve_ex(batch, ember.ones(3, 2), check_errors=True)
    assert ember.linalg.inv_ex(ember.zeros(3, 3)).info.item() == 1
    minor_2 = ember.tensor([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert ember.linalg.cholesky_ex(minor_2).info.item() == 2
    # the matrices that succeeded keep their gradients
    a = ember.tensor([[[2.0, 1.0], [1.0, 3.0]], singular], dtype=ember.float64,
                     requires_grad=True)
    ember.linalg.inv_ex(a).inverse[0].sum().backward()
    want = -np.linalg.inv([[2.0, 1.0], [1.0, 3.0]]).T @ np.ones((2, 2)) @ np.linalg.inv(
        [[2.0, 1.0], [1.0, 3.0]]).T
    np.testing.assert_allclose(a.grad.numpy()[0], want)
    assert a.grad.numpy()[1].tolist() == [[0, 0], [0, 0]]


def spd_like(L):
    a = L.cpu_array()
    return a @ a.T


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix():
    # rank 2: det is 0 but its gradient (the cofactor matrix) is not
    a = ember.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], dtype=ember.float64,
                     requires_grad=True)
    ember.linalg.det(a).backward()
    assert_close(a.grad, [[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]], atol=1e-10)
    assert gradcheck(ember.linalg.det, (a,))
    with pytest.raises(NotImplementedError, match="double backward at a singular matrix"):
        g, = ember.autograd.grad(ember.linalg.det(a), a, create_graph=True)


def test_solve_shapes():
    A = ember.tensor(spd(3, (2,)))
    assert ember.linalg.solve(A, ember.ones(3, dtype=ember.float64)).shape == (2, 3)
    assert ember.linalg.solve(A, ember.ones(2, 3, dtype=ember.float64)).shape == (2, 3)
    assert ember.linalg.solve(A, ember.ones(3, 3, dtype=ember.float64)).shape == (2, 3, 3)
    X = ember.linalg.solve(A, ember.ones(2, 4, 3, dtype=ember.float64), left=False)
    assert_close(X @ A, np.ones((2, 4, 3)), atol=1e-10)
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B for the equation "
                                           "AX = B \\(3x3 and 4x1\\)"):
        ember.linalg.solve(ember.eye(3), ember.ones(4))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        ember.linalg.solve(ember.eye(3), ember.ones(3, dtype=ember.float64))


def test_slogdet_logdet_and_legacy_names():
    a = ember.tensor(-np.eye(3))
    sign, logabs = ember.linalg.slogdet(a)
    assert sign.item() == -1.0 and logabs.item() == 0.0
    assert math.isnan(ember.logdet(a).item())
    r = ember.slogdet(a)
    assert type(r).__name__ == "slogdet" and r.sign.item() == -1.0
    x = rand(3, 3, requires_grad=True)
    assert ember.linalg.slogdet(x).logabsdet.grad_fn.name() == "LinalgSlogdetBackward0"
    assert not ember.linalg.slogdet(x).sign.requires_grad
    assert x.det().grad_fn.name() == "LinalgDetBackward0"
    assert x.inverse().grad_fn.name() == "LinalgInvExBackward0"
    assert_close(ember.inverse(x) @ x, np.eye(3), atol=1e-10)


def test_matrix_power_and_multi_dot():
    a = ember.tensor([[1, 1], [0, 1]])
    assert ember.linalg.matrix_power(a, 3).tolist() == [[1, 3], [0, 1]]
    assert a.matrix_power(0).tolist() == [[1, 0], [0, 1]]
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        ember.linalg.matrix_power(a, -1)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        ember.linalg.matrix_power(ember.ones(2, 3), 2)
    assert ember.linalg.multi_dot([rand(3), rand(3, 4), rand(4)]).shape == ()
    assert ember.linalg.multi_dot([rand(2, 3), rand(3, 4)]).shape == (2, 4)


# ---------------------------------------------------------------------------
# decompositions


def test_qr_modes_and_gradient_errors():
    a = rand(4, 3, requires_grad=True)
    Q, R = ember.linalg.qr(a)
    assert (Q.shape, R.shape) == ((4, 3), (3, 3))
    assert type(ember.linalg.qr(a)).__name__ == "linalg_qr"
    Q, R = ember.linalg.qr(a, mode="complete")
    assert (Q.shape, R.shape) == ((4, 4), (4, 3))
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        Q.sum().backward()
    Q, R = ember.linalg.qr(a, mode="r")
    assert Q.shape == (0,) and R.shape == (3, 3)
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        R.sum().backward()
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'x'"):
        ember.linalg.qr(a, mode="x")
    with pytest.warns(UserWarning, match="torch.qr is deprecated"):
        q, r = ember.qr(rand(2, 3, 3))
    assert_close(q @ r, np.asarray(q.cpu_array() @ r.cpu_array()))


def test_svd_shapes_and_legacy_svd():
    a = rand(4, 3)
    U, S, Vh = ember.linalg.svd(a)
    assert (U.shape, S.shape, Vh.shape) == ((4, 4), (3,), (3, 3))
    U, S, Vh = ember.linalg.svd(a, full_matrices=False)
    assert_close((U * S.reshape(1, 3)) @ Vh, a, atol=1e-10)
    U2, S2, V2 = ember.svd(a)                      # old convention: V, reduced
    assert V2.shape == (3, 3) and U2.shape == (4, 3)
    assert_close(V2, Vh.transpose(-2, -1))
    r = ember.svd(a, compute_uv=False)
    assert r.U.shape == (4, 4) and not r.U.cpu_array().any()
    assert_close(r.S, S)
    assert_close(ember.linalg.svdvals(a), S)
    assert ember.linalg.svd(rand(3, 3, requires_grad=True)).U.grad_fn.name() == \
        "LinalgSvdBackward0"


def test_svd_full_matrices_gradient_uses_the_determined_vectors():
    def fn(a):
        U, S, Vh = ember.linalg.svd(a, full_matrices=True)
        k = S.shape[-1]
        return (U[:, :k] @ Vh[:k]) * 1.0, S
    assert gradcheck(fn, (rand(4, 3, requires_grad=True),))


def test_eigh_and_pinv_rank_options():
    a = ember.tensor(spd(3))
    L, V = ember.linalg.eigh(a)
    assert type(ember.linalg.eigh(a)).__name__ == "linalg_eigh"
    assert_close((V * L.reshape(1, 3)) @ V.transpose(-2, -1), a, atol=1e-10)
    assert_close(ember.linalg.eigvalsh(a), L)
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        ember.linalg.eigh(a, UPLO="X")
    ones = ember.ones(3, 3)
    assert ember.linalg.matrix_rank(ones).item() == 1
    assert ember.linalg.matrix_rank(ones).dtype is ember.int64
    assert ember.linalg.matrix_rank(ember.eye(3), tol=2.0).item() == 0
    assert ember.linalg.matrix_rank(ember.eye(3), hermitian=True).item() == 3
    assert_close(ember.linalg.pinv(ember.ones(2, 3)), np.full((3, 2), 1 / 6), atol=1e-6)
    assert_close(ember.pinverse(ember.ones(2, 3)), np.full((3, 2), 1 / 6), atol=1e-6)
    rank_one = ember.tensor([[1.0, 0.0], [0.0, 1e-9]], dtype=ember.float64)
    assert_close(ember.linalg.pinv(rank_one, rtol=1e-6), [[1.0, 0.0], [0.0, 0.0]])


def test_lstsq_outputs():
    a, b = rand(5, 3), rand(5, 2)
    sol, res, rank, sv = ember.linalg.lstsq(a, b)
    assert_close(sol, np.linalg.lstsq(a.cpu_array(), b.cpu_array(), rcond=None)[0], atol=1e-10)
    assert res.shape == (0,) and rank.item() == 3 and sv.shape == (0,)
    sol, res, rank, sv = ember.linalg.lstsq(a, b, driver="gelsd")
    assert_close(res, np.linalg.lstsq(a.cpu_array(), b.cpu_array(), rcond=None)[1], atol=1e-10)
    assert sv.shape == (3,)
    assert ember.linalg.lstsq(a, rand(5)).solution.shape == (3,)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_decompositions_keep_the_dtype(dtype):
    a = ember.tensor(spd(3), dtype=dtype)
    outs = [ember.linalg.inv(a), ember.linalg.det(a), ember.linalg.cholesky(a),
            *ember.linalg.qr(a), *ember.linalg.svd(a), *ember.linalg.eigh(a),
            ember.linalg.pinv(a), *ember.linalg.slogdet(a), ember.linalg.solve(a, a),
            ember.linalg.matrix_norm(a, "nuc"), ember.linalg.cond(a)]
    assert all(o.dtype is dtype for o in outs)


@needs_torch
@pytest.mark.parametrize("name", ["cholesky", "cholesky_upper", "eigh", "eigh_U", "qr_tall",
                                  "qr_wide", "svd_tall", "svd_wide", "pinv", "det", "solve",
                                  "inv", "slogdet"])
def test_gradients_match_torch(name):
    sym = spd(3) + np.triu(rng.standard_normal((3, 3)), 1)  # only one triangle is read
    fns = {
        "cholesky": (lambda m, a: m.linalg.cholesky(a), sym),
        "cholesky_upper": (lambda m, a: m.linalg.cholesky(a.transpose(-2, -1), upper=True),
                           sym),
        "eigh": (lambda m, a: (lambda L, V: (L, V * V))(*m.linalg.eigh(a)), sym),
        "eigh_U": (lambda m, a: (lambda L, V: (L, V * V))(*m.linalg.eigh(a, UPLO="U")),
                   sym.T),
        "qr_tall": (lambda m, a: tuple(m.linalg.qr(a)), rng.standard_normal((4, 3))),
        "qr_wide": (lambda m, a: tuple(m.linalg.qr(a)), rng.standard_normal((3, 4))),
        "svd_tall": (lambda m, a: (lambda U, S, Vh: (S, U @ Vh, U * U))(
            *m.linalg.svd(a, full_matrices=False)), rng.standard_normal((4, 3))),
        "svd_wide": (lambda m, a: (lambda U, S, Vh: (S, U @ Vh, Vh * Vh))(
            *m.linalg.svd(a, full_matrices=False)), rng.standard_normal((3, 4))),
        "pinv": (lambda m, a: m.linalg.pinv(a), rng.standard_normal((4, 3))),
        "det": (lambda m, a: m.linalg.det(a), rng.standard_normal((2, 3, 3))),
        "solve": (lambda m, a: m.linalg.solve(a, a * a), spd(3)),
        "inv": (lambda m, a: m.linalg.inv(a), spd(3)),
        "slogdet": (lambda m, a: m.linalg.slogdet(a)[1], rng.standard_normal((3, 3))),
    }
    fn, data = fns[name]
    outs_e = fn(ember, ember.tensor(data, requires_grad=True))
    a_e = ember.tensor(data, requires_grad=True)
    a_t = torch.tensor(data, requires_grad=True)
    outs_e = fn(ember, a_e)
    outs_t = fn(torch, a_t)
    outs_e = outs_e if isinstance(outs_e, tuple) else (outs_e,)
    outs_t = outs_t if isinstance(outs_t, tuple) else (outs_t,)
    weights = [rng.standard_normal(tuple(o.shape)) for o in outs_t]
    loss_e = sum((o * ember.tensor(w)).sum() for o, w in zip(outs_e, weights))
    loss_t = sum((o * torch.tensor(w)).sum() for o, w in zip(outs_t, weights))
    g_e, = ember.autograd.grad(loss_e, a_e)
    g_t, = torch.autograd.grad(loss_t, a_t)
    for oe, ot in zip(outs_e, outs_t):
        assert_close(oe, ot.detach().numpy(), atol=1e-8, rtol=1e-6)
    assert_close(g_e, g_t.numpy(), atol=1e-8, rtol=1e-6)


@needs_torch
def test_einsum_and_products_match_torch():
    a, b = rng.standard_normal((2, 1, 2, 3)), rng.standard_normal((3, 3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eq in ["...ij,...jk", "...ij,...jk->...", "abij,bjk->ik"]:
            ref = torch.einsum(eq, torch.tensor(a), torch.tensor(b)).numpy()
            assert_close(ember.einsum(eq, ember.tensor(a), ember.tensor(b)), ref)
    m, n = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    assert_close(ember.kron(ember.tensor(m), ember.tensor(n)),
                 torch.kron(torch.tensor(m), torch.tensor(n)).numpy())


# ---------------------------------------------------------------------------
# complex inputs


def test_complex_forward_and_gradients():
    a = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    b = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b)
    assert_close(ea @ eb, a @ b)
    assert_close(ember.einsum("ij,jk", ea, eb), a @ b)
    assert_close(ember.vdot(ember.tensor(a[0]), ember.tensor(a[1])), np.vdot(a[0], a[1]))
    assert_close(ember.linalg.svdvals(ember.tensor(a)), np.linalg.svd(a, compute_uv=False))
    # d(sum(w * (a @ b)))/da for complex a is w @ b^H (PyTorch's convention)
    w = rng.standard_normal((2, 4)) + 1j * rng.standard_normal((2, 4))
    g, = ember.autograd.grad(ea @ eb, ea, ember.tensor(w))
    assert_close(g, w @ b.conj().T)
    g, = ember.autograd.grad(ember.einsum("ij,jk->ik", ea, eb), ea, ember.tensor(w))
    assert_close(g, w @ b.conj().T)
    square = ember.tensor(a[:, :2], requires_grad=True)
    # (det's complex gradient: tests/autograd/test_complex_gradients.py)
    with pytest.raises(NotImplementedError, match="slogdet: gradients of complex tensors"):
        ember.linalg.slogdet(square)[1].backward()


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_low_precision_products_keep_their_dtype(dtype):
    a, b = ember.ones(2, 3, dtype=dtype), ember.ones(3, 4, dtype=dtype)
    outs = [a @ b, ember.einsum("ij,jk", a, b), ember.addmm(ember.ones(4, dtype=dtype), a, b),
            ember.bmm(a.reshape(1, 2, 3), b.reshape(1, 3, 4)), ember.linalg.vector_norm(a)]
    assert all(o.dtype is dtype for o in outs)
    assert (a @ b).tolist() == [[3.0] * 4] * 2
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
        ember.linalg.inv(ember.eye(2, dtype=dtype))


@pytest.mark.parametrize("rows", [3, 1000])  # below and above sum_leading's size
@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_a_linear_bias_gradient_is_the_column_sum(rows, beta):
    # addmm's first-order backward sums the bias gradient on the array itself
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal((rows, 70)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((70, 90)), requires_grad=True)
    b = ember.tensor(rng.standard_normal(90), requires_grad=True)
    g = rng.standard_normal((rows, 90))
    ember.addmm(b, x, w, beta=beta).backward(ember.tensor(g))
    np.testing.assert_allclose(b.grad.numpy(), beta * g.sum(axis=0), rtol=1e-12)
    assert b.grad.shape == (90,) and b.grad.dtype == ember.float64
    exact = x.detach().numpy().T @ g   # (another BLAS may round its entries near zero
    # differently: the error is measured against the matrix's scale)
    np.testing.assert_allclose(w.grad.numpy(), exact, rtol=1e-12,
                               atol=1e-13 * np.abs(exact).max())
