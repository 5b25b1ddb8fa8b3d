"""autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp (values, structure, errors)."""

import re

import numpy as np
import pytest

import ember
from ember.autograd import functional as AF

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def t(values, requires_grad=False):
    return ember.tensor(values, dtype=ember.float64, requires_grad=requires_grad)


def diag(values):
    return np.diag(np.asarray(values, dtype=np.float64))


def close(actual, expected):
    np.testing.assert_allclose(actual.detach().numpy(), np.asarray(expected), rtol=1e-12,
                               atol=1e-12)


# --- jacobian -------------------------------------------------------------------------------


def test_jacobian_one_input_one_output():
    x = t([1.0, 2.0, 3.0])
    jac = AF.jacobian(lambda v: v * v, x)
    assert isinstance(jac, ember.Tensor) and jac.shape == (3, 3)
    close(jac, diag([2.0, 4.0, 6.0]))
    assert not jac.requires_grad


def test_jacobian_shape_is_output_shape_then_input_shape():
    x = t([[1.0, 2.0], [3.0, 4.0]])
    jac = AF.jacobian(lambda v: v * 3, x)
    assert jac.shape == (2, 2, 2, 2)
    close(jac, 3 * np.eye(4).reshape(2, 2, 2, 2))
    jac = AF.jacobian(lambda v: (v * v).sum(), x)  # a scalar output: the gradient's shape
    assert jac.shape == (2, 2)
    close(jac, [[2.0, 4.0], [6.0, 8.0]])


def test_jacobian_tuple_structures():
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    ja, jb = AF.jacobian(lambda p, q: p * q, (a, b))
    close(ja, diag([3.0, 4.0]))
    close(jb, diag([1.0, 2.0]))
    j_double, j_sum = AF.jacobian(lambda p: (p * 2, p.sum()), a)
    close(j_double, diag([2.0, 2.0]))
    close(j_sum, [1.0, 1.0])
    (j00, j01), (j10, j11) = AF.jacobian(lambda p, q: (p * q, p + q), (a, b))
    close(j00, diag([3.0, 4.0]))
    close(j01, diag([1.0, 2.0]))
    close(j10, np.eye(2))
    close(j11, np.eye(2))
    single = AF.jacobian(lambda p: p * 2, (a,))  # a 1-tuple of inputs stays a tuple
    assert isinstance(single, tuple) and len(single) == 1


def test_jacobian_of_independent_input_and_strict_mode():
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    ja, jb = AF.jacobian(lambda p, q: p * 2, (a, b))
    close(jb, np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode.$"):
        AF.jacobian(lambda p, q: p * 2, (a, b), strict=True)
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function does not "
                                           "require gradients."):
        AF.jacobian(lambda p: ember.ones(2), a, strict=True)
    close(AF.jacobian(lambda p: ember.ones(2, dtype=ember.float64), a), np.zeros((2, 2)))


def test_jacobian_create_graph():
    x = t([1.0, 2.0], requires_grad=True)
    jac = AF.jacobian(lambda v: v * v * v, x, create_graph=True)
    assert jac.requires_grad
    close(jac, diag([3.0, 12.0]))  # 3x^2
    (g,) = ember.autograd.grad(jac.sum(), x)
    close(g, [6.0, 12.0])  # 6x
    assert not AF.jacobian(lambda v: v * v, x).requires_grad


def test_jacobian_options_and_errors():
    x = t([1.0, 2.0])
    close(AF.jacobian(lambda v: v * v, x, vectorize=True), diag([2.0, 4.0]))
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not "
                                           "supported together"):
        AF.jacobian(lambda v: v * v, x, vectorize=True, strict=True)
    with pytest.raises(NotImplementedError, match="forward-mode"):
        AF.jacobian(lambda v: v * v, x, strategy="forward-mode")
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode" or '
                                             '"reverse-mode"'):
        AF.jacobian(lambda v: v * v, x, strategy="sideways")
    with pytest.raises(TypeError, match=re.escape(
            "The inputs given to jacobian must be either a Tensor or a tuple of Tensors but the "
            "given inputs has type <class 'list'>.")):
        AF.jacobian(lambda v: v, [x])
    with pytest.raises(TypeError, match=re.escape(
            "The outputs of the user-provided function given to jacobian must be either a Tensor "
            "or a tuple of Tensors but the given outputs of the user-provided function has type "
            "<class 'int'>.")):
        AF.jacobian(lambda v: 3, x)
    with pytest.raises(TypeError, match="but the value at index 1 has type"):
        AF.jacobian(lambda v, w: v, (x, 2.0))


def test_jacobian_inside_no_grad():
    with ember.no_grad():
        close(AF.jacobian(lambda v: v * v, t([2.0])), [[4.0]])


# --- hessian --------------------------------------------------------------------------------


def test_hessian_one_input():
    x = t([1.0, 2.0, 3.0])
    hes = AF.hessian(lambda v: (v * v * v).sum(), x)
    assert hes.shape == (3, 3)
    close(hes, diag([6.0, 12.0, 18.0]))  # diag(6x)


def test_hessian_tuple_inputs():
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    (haa, hab), (hba, hbb) = AF.hessian(lambda p, q: (p * p * q).sum(), (a, b))
    close(haa, diag([6.0, 8.0]))  # 2b
    close(hab, diag([2.0, 4.0]))  # 2a
    close(hba, diag([2.0, 4.0]))
    close(hbb, np.zeros((2, 2)))


def test_hessian_errors_and_create_graph():
    x = t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^The Tensor returned by the function given to "
                                           "hessian should contain a single element$"):
        AF.hessian(lambda v: v * v, x)
    with pytest.raises(RuntimeError, match="^The function given to hessian should return a "
                                           "single Tensor$"):
        AF.hessian(lambda v: (v.sum(), v.sum()), x)
    hes = AF.hessian(lambda v: (v * v * v).sum(), x, create_graph=True)
    assert hes.requires_grad
    (g,) = ember.autograd.grad(hes.sum(), x)
    close(g, [6.0, 6.0])


# --- vector products ------------------------------------------------------------------------


def test_vjp():
    x = t([1.0, 2.0, 3.0])
    out, vjp = AF.vjp(lambda v: v * v, x, t([1.0, 0.5, 2.0]))
    close(out, [1.0, 4.0, 9.0])
    close(vjp, [2.0, 2.0, 12.0])
    out, vjp = AF.vjp(lambda v: (v * v).sum(), x)  # one-element output: v may be omitted
    assert out.item() == 14.0
    close(vjp, [2.0, 4.0, 6.0])
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    out, (ga, gb) = AF.vjp(lambda p, q: p * q, (a, b), t([1.0, 1.0]))
    close(ga, [3.0, 4.0])
    close(gb, [1.0, 2.0])
    outs, (ga, gb) = AF.vjp(lambda p, q: (p * q, p + q), (a, b), (t([1.0, 1.0]), t([1.0, 0.0])))
    assert isinstance(outs, tuple) and len(outs) == 2
    close(ga, [4.0, 4.0])
    close(gb, [2.0, 2.0])


def test_vjp_errors():
    x = t([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="^The vector v can only be None if the user-provided "
                                           "function returns a single Tensor with a single "
                                           "element.$"):
        AF.vjp(lambda v: v * v, x)
    with pytest.raises(RuntimeError, match=re.escape(
            "v has invalid size: should be torch.Size([3]) but got torch.Size([2]).")):
        AF.vjp(lambda v: v * v, x, t([1.0, 1.0]))
    with pytest.raises(RuntimeError, match="^v is a tuple of invalid length: should be 2 but "
                                           "got 1.$"):
        AF.vjp(lambda v: (v, v * 2), x, (t([1.0, 1.0, 1.0]),))
    with pytest.raises(RuntimeError, match="^The output of the user-provided function is "
                                           "independent of input 1."):
        AF.vjp(lambda p, q: (p * 2).sum(), (x, t([1.0])), strict=True)


def test_jvp():
    x = t([1.0, 2.0, 3.0])
    out, jvp = AF.jvp(lambda v: v * v, x, t([1.0, 0.5, 2.0]))
    close(out, [1.0, 4.0, 9.0])
    close(jvp, [2.0, 2.0, 12.0])  # 2x * v
    out, jvp = AF.jvp(lambda v: v * v * v, t([2.0]))  # a one-element input: v may be omitted
    close(jvp, [12.0])
    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    out, jvp = AF.jvp(lambda p, q: p * q, (a, b), (t([1.0, 1.0]), t([0.5, 0.0])))
    assert isinstance(jvp, ember.Tensor)  # structure of the output
    close(jvp, [3.0 + 0.5, 4.0])  # b * va + a * vb
    outs, (j1, j2) = AF.jvp(lambda p: (p * 2, p.sum()), a, t([1.0, 3.0]))
    close(j1, [2.0, 6.0])
    close(j2, 4.0)
    with pytest.raises(RuntimeError, match="^The vector v can only be None if the input to the "
                                           "user-provided function is a single Tensor with a "
                                           "single element.$"):
        AF.jvp(lambda v: v * v, x)


def test_jvp_of_constant_output_is_zero():
    x = t([1.0, 2.0])
    _, jvp = AF.jvp(lambda v: ember.ones(2, dtype=ember.float64), x, t([1.0, 1.0]))
    close(jvp, [0.0, 0.0])


def test_hvp_and_vhp():
    def f(v):
        return (v * v * v).sum()

    x = t([1.0, 2.0, 3.0])
    v = t([1.0, 0.5, -1.0])
    for fn in (AF.hvp, AF.vhp):
        out, prod = fn(f, x, v)
        assert out.item() == 36.0
        close(prod, [6.0, 6.0, -18.0])  # diag(6x) v

    def g(p, q):
        return (p * p * q).sum()

    a, b = t([1.0, 2.0]), t([3.0, 4.0])
    va, vb = t([1.0, 1.0]), t([0.5, 2.0])
    for fn in (AF.hvp, AF.vhp):
        out, (pa, pb) = fn(g, (a, b), (va, vb))
        close(pa, [2 * 3.0 * 1.0 + 2 * 1.0 * 0.5, 2 * 4.0 * 1.0 + 2 * 2.0 * 2.0])
        close(pb, [2 * 1.0 * 1.0, 2 * 2.0 * 1.0])


def test_hvp_errors_and_create_graph():
    x = t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="^The Tensor returned by the function given to hvp "
                                           "should contain a single element$"):
        AF.hvp(lambda v: v * v, x, t([1.0, 1.0]))
    with pytest.raises(RuntimeError, match="^The function given to vhp should return a single "
                                           "Tensor$"):
        AF.vhp(lambda v: (v.sum(), v.sum()), x, t([1.0, 1.0]))
    out, prod = AF.hvp(lambda v: (v * v * v).sum(), x, t([1.0, 1.0]), create_graph=True)
    assert prod.requires_grad and out.requires_grad
    (g,) = ember.autograd.grad(prod.sum(), x)
    close(g, [6.0, 6.0])
    _, prod = AF.hvp(lambda v: (v * v * v).sum(), x, t([1.0, 1.0]))
    assert not prod.requires_grad


# --- PyTorch parity -------------------------------------------------------------------------


def _f(a, b):
    return (a * a * b + a / (b + 3)).sum() * (a - b).sum()


def _g(a, b):
    return a * b * b, (a + 1) / (b + 3)


@needs_torch
def test_functional_matches_torch():
    rng = np.random.default_rng(2)
    a_np, b_np = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    va, vb = rng.normal(size=3), rng.normal(size=3)

    def run(lib):
        A = lib.autograd.functional
        a, b = lib.tensor(a_np), lib.tensor(b_np)
        v = (lib.tensor(va), lib.tensor(vb))
        results = [A.jacobian(_g, (a, b)), A.hessian(_f, (a, b)), A.vjp(_g, (a, b), v)[1],
                   A.jvp(_g, (a, b), v)[1], A.hvp(_f, (a, b), v)[1], A.vhp(_f, (a, b), v)[1],
                   A.jacobian(lambda x: x * x * x, a), A.hessian(lambda x: (x * x * x).sum(), a)]
        flat = []

        def visit(item):
            if isinstance(item, (tuple, list)):
                for i in item:
                    visit(i)
            else:
                flat.append(item.detach().numpy().copy())

        visit(results)
        return flat

    mine, theirs = run(ember), run(torch)
    assert len(mine) == len(theirs)
    for m, th in zip(mine, theirs):
        assert m.shape == th.shape
        np.testing.assert_allclose(m, th, rtol=1e-10, atol=1e-12)
