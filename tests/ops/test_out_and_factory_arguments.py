"""PyTorch's out= argument of the factories and the linalg functions (the result is
written into `out`, which is returned), and the factories' size= and layout= keywords."""

import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close

try:
    import torch
except ImportError:  # parity checks skip without PyTorch
    torch = None


def test_factories_write_into_out_with_its_dtype():
    out = ember.ones(2, 3, dtype=ember.int64)
    view = out[0]
    assert ember.zeros(2, 3, out=out) is out
    assert out.dtype is ember.int64 and out.tolist() == [[0, 0, 0], [0, 0, 0]]
    assert view.tolist() == [0, 0, 0]  # same shape: written in place, views see it
    assert ember.full((2, 3), 7, out=out) is out and out.tolist() == [[7] * 3] * 2
    e = ember.empty(3, 3)
    assert ember.eye(3, out=e) is e
    assert_close(e, np.eye(3))
    a = ember.empty(4, dtype=ember.float64)
    assert ember.arange(4, out=a) is a and a.dtype is ember.float64
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    ember.linspace(0, 1, 4, out=a)
    assert_close(a, np.linspace(0, 1, 4))
    ember.logspace(0, 3, 4, out=a)
    assert_close(a, [1.0, 10.0, 100.0, 1000.0])


def test_out_of_another_shape_is_resized_with_a_warning_when_it_held_elements():
    out = ember.empty(5)
    with pytest.warns(UserWarning, match="was resized since it had shape"):
        ember.arange(3, out=out)
    assert out.shape == (3,) and out.tolist() == [0.0, 1.0, 2.0]
    empty = ember.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.ones(2, 2, out=empty)
    assert empty.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_out_errors():
    with pytest.raises(RuntimeError, match=r"dtype Double does not match dtype of out parameter "
                                           r"\(Float\)"):
        ember.zeros(2, dtype=ember.float64, out=ember.empty(2))
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
        ember.linalg.inv(ember.eye(2), out=[1.0])
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype ember.float32, but "
                                           "got ember.float64 instead"):
        ember.linalg.inv(ember.eye(2), out=ember.empty(2, 2, dtype=ember.float64))
    a = ember.eye(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.linalg.det(a, out=ember.empty(()))
    with ember.no_grad():
        assert ember.linalg.det(a, out=ember.empty(())).item() == 1.0
    with pytest.raises(TypeError, match="a tuple of 2 Tensors"):
        ember.linalg.slogdet(ember.eye(2), out=ember.empty(()))


def test_linalg_functions_write_into_out():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    spd = m @ m.T
    a = ember.tensor(m)
    out = ember.empty(3, 3, dtype=ember.float64)
    assert ember.linalg.inv(a, out=out) is out
    assert_close(out, np.linalg.inv(m))
    assert ember.linalg.solve(a, ember.tensor(np.eye(3)), out=out) is out
    assert_close(out, np.linalg.inv(m))
    assert ember.linalg.cholesky(ember.tensor(spd), out=out) is out
    assert_close(out, np.linalg.cholesky(spd))
    sign, logabs = ember.empty((), dtype=ember.float64), ember.empty((), dtype=ember.float64)
    result = ember.linalg.slogdet(a, out=(sign, logabs))
    assert result.sign is sign and result.logabsdet is logabs
    assert_close(sign * ember.exp(logabs), np.linalg.det(m))
    w, v = ember.empty(3, dtype=ember.float64), ember.empty(3, 3, dtype=ember.float64)
    values, vectors = ember.linalg.eigh(ember.tensor(spd), out=(w, v))
    assert values is w and vectors is v
    assert_close(w, np.linalg.eigvalsh(spd))
    n = ember.empty((), dtype=ember.float64)
    assert ember.linalg.vector_norm(a, out=n) is n
    assert_close(n, np.linalg.norm(m))
    t = ember.empty(3, 3, dtype=ember.float64)
    assert ember.tensordot(a, a, dims=1, out=t) is t
    assert_close(t, m @ m)


def test_size_keyword_of_the_factories():
    for make in (ember.zeros, ember.ones, ember.empty, ember.rand, ember.randn):
        assert make(size=(2, 3)).shape == (2, 3)
        assert make(size=[4]).shape == (4,)
        with pytest.raises(TypeError, match="multiple values for argument 'size'"):
            make(2, size=(2,))
    assert ember.zeros(size=(2, 3), dtype=ember.int64).dtype is ember.int64


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_out_semantics_match_pytorch():
    m = np.array([[2.0, 1.0], [1.0, 3.0]])
    for lib in (ember, torch):
        out = lib.ones(2, 2, dtype=lib.int64)
        assert lib.zeros(2, 2, out=out) is out and out.dtype == lib.int64
        f = lib.empty(2, 2, dtype=lib.float64)
        lib.linalg.inv(lib.tensor(m), out=f)
        np.testing.assert_allclose(f.numpy(), np.linalg.inv(m))
        with pytest.raises(RuntimeError):
            lib.linalg.inv(lib.tensor(m), out=lib.empty(2, 2, dtype=lib.float32))
        with pytest.raises(RuntimeError):
            lib.linalg.inv(lib.tensor(m, requires_grad=True), out=lib.empty(2, 2,
                                                                          dtype=lib.float64))


def test_factories_refuse_a_layout_they_cannot_make():
    assert ember.strided == ember.zeros(1).layout == "strided"
    assert ember.zeros(2, layout=ember.strided).shape == (2,)
    makers = [lambda: ember.zeros(2, layout=ember.sparse_coo),
              lambda: ember.ones_like(ember.ones(2), layout=ember.sparse_coo),
              lambda: ember.ones(2).new_zeros(2, layout=ember.sparse_coo),
              lambda: ember.arange(3, layout=ember.sparse_coo),
              lambda: ember.randn(2, layout=ember.sparse_coo)]
    for make in makers:
        with pytest.raises(NotImplementedError, match=r"layout=sparse_coo\): ember's factories"):
            make()
