"""Focused tests of ember/ops/activation.py beyond the op table: stability for extreme
inputs, in-place forms, options, errors, and the torch.* / Tensor forms."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.testing import assert_close

BIG = [[1e4, -1e4, 0.0, 5.0], [-1e4, -1e4, 1e4, 1e4]]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_extreme_inputs_are_finite(fn, dtype):
    x = ember.tensor(BIG, dtype=dtype, requires_grad=True)
    y = getattr(F, fn)(x, dim=1)
    assert np.isfinite(y.detach().numpy()).all()
    w = ember.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 2.0, 1.0]], dtype=dtype)
    (y * w).sum().backward()
    g = x.grad.numpy()
    assert np.isfinite(g).all()
    if fn == "softmax":
        assert_close(y, np.array([[1, 0, 0, 0], [0, 0, 0.5, 0.5]]), check_dtype=False)
        # ties at the max share the mass; the gradient is y * (w - sum(w * y))
        assert_close(x.grad, np.array([[0, 0, 0, 0], [0, 0, 0.25, -0.25]]), check_dtype=False)
    else:
        assert_close(y[0, 0], np.array(0.0), check_dtype=False)
        assert y[0, 1].item() == pytest.approx(-2e4)
        assert_close(x.grad.sum(1), np.array([0.0, 0.0]), atol=1e-4, check_dtype=False)


@pytest.mark.parametrize("fn", ["logsigmoid", "softplus"])
def test_logsigmoid_softplus_extreme_inputs(fn):
    x = ember.tensor([1e4, -1e4, 0.0, 30.0, -30.0], requires_grad=True)
    y = getattr(F, fn)(x)
    assert np.isfinite(y.detach().numpy()).all()
    y.sum().backward()
    g = x.grad.numpy()
    assert np.isfinite(g).all()
    if fn == "logsigmoid":
        assert y[0].item() == 0.0 and y[1].item() == -1e4
        assert_close(x.grad, np.array([0.0, 1.0, 0.5, 0.0, 1.0]), atol=1e-6)
    else:
        assert y[0].item() == 1e4 and y[1].item() == 0.0
        assert_close(x.grad, np.array([1.0, 0.0, 0.5, 1.0, 0.0]), atol=1e-6)


def test_softmax_implicit_dim_warns_and_picks_pytorchs_dim():
    x = ember.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(x)
    assert_close(y.sum(1), np.ones(2))
    with pytest.warns(UserWarning, match="log_softmax"):
        F.log_softmax(ember.randn(3))
    with pytest.warns(UserWarning):
        z = F.softmin(ember.randn(2, 3, 4))  # 3-D: dim 0
    assert_close(z.sum(0), np.ones((3, 4)))


def test_softmax_dtype_methods_and_top_level():
    x = ember.randn(2, 3)
    y = F.softmax(x, 1, dtype=ember.float64)
    assert y.dtype is ember.float64
    assert_close(x.softmax(1), y.float())
    assert_close(x.log_softmax(-1), ember.log_softmax(x, 1))
    assert_close(ember.softmax(x, 0), F.softmax(x, dim=0))
    assert x.softmax(1, ember.float64).dtype is ember.float64
    assert ember.softmax(x, 1).grad_fn is None
    assert F.softmax(x.requires_grad_(), 1).grad_fn.name() == "SoftmaxBackward0"
    assert F.log_softmax(x, 1).grad_fn.name() == "LogSoftmaxBackward0"


def test_softmax_edge_shapes():
    assert F.softmax(ember.zeros(0, 3), 1).shape == (0, 3)
    assert F.softmax(ember.zeros(3, 0), 1).shape == (3, 0)
    assert F.softmax(ember.tensor(3.0), 0).item() == 1.0
    assert F.log_softmax(ember.tensor(3.0), 0).item() == 0.0
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(ember.randn(3, 4), 2)


def test_integer_inputs_are_refused_like_pytorch():
    t = ember.tensor([1, 2])
    with pytest.raises(NotImplementedError, match='"softmax_lastdim_kernel_impl" not '
                       "implemented for 'Long'"):
        F.softmax(t, 0)
    assert F.softmax(t, 0, dtype=ember.float64).dtype is ember.float64
    for fn in (F.gelu, F.elu, F.silu, F.logsigmoid, F.softplus, F.leaky_relu, F.hardswish):
        with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
            fn(t)
    assert F.relu(ember.tensor([1, -2])).tolist() == [1, 0]
    assert F.hardtanh(ember.tensor([1, -2])).tolist() == [1, -1]
    assert F.relu6(ember.tensor([1, -2, 7])).tolist() == [1, 0, 6]
    assert F.threshold(ember.tensor([1, -2, 7]), 1, 5).tolist() == [5, 5, 7]


def test_threshold_and_shrinks_keep_nan_as_pytorch_does():
    # PyTorch tests ``x <= threshold`` (threshold) and ``|x| <= lambd`` (the shrinks): a
    # NaN fails the test and stays NaN; threshold's NaN passes its gradient
    nan = float("nan")
    x = ember.tensor([nan, 0.5, 2.0, -2.0], requires_grad=True)
    y = F.threshold(x, 1.0, 7.0)
    y.backward(ember.full((4,), 3.0))
    np.testing.assert_array_equal(y.detach().numpy(), [nan, 7.0, 2.0, 7.0])
    assert x.grad.tolist() == [3.0, 0.0, 3.0, 0.0]
    np.testing.assert_array_equal(F.hardshrink(x, 0.5).detach().numpy(), [nan, 0.0, 2.0, -2.0])
    np.testing.assert_array_equal(F.softshrink(x, 0.5).detach().numpy(), [nan, 0.0, 1.5, -1.5])


def test_option_errors():
    x = ember.randn(3, 4)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="foo")
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 0 "
                       "is size 3"):
        F.glu(x, 0)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(ember.tensor(2.0))
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 4"):
        F.prelu(x, ember.ones(3))
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        F.rrelu(x, 0.5, 0.1)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, alpha=0.0)


INPLACE = [
    ("elu", lambda x: F.elu(x, 0.7, inplace=True), lambda x: F.elu(x, 0.7), "EluBackward1"),
    ("selu", lambda x: F.selu(x, inplace=True), F.selu, "EluBackward1"),
    ("celu", lambda x: F.celu_(x, 0.5), lambda x: F.celu(x, 0.5), "CeluBackward1"),
    ("leaky_relu", lambda x: F.leaky_relu_(x, 0.2), lambda x: F.leaky_relu(x, 0.2),
     "LeakyReluBackward1"),
    ("hardtanh", lambda x: F.hardtanh_(x, -0.5, 0.5), lambda x: F.hardtanh(x, -0.5, 0.5),
     "HardtanhBackward1"),
    ("relu6", lambda x: F.relu6(x * 4, inplace=True), lambda x: F.relu6(x * 4), None),
    ("threshold", lambda x: F.threshold_(x, 0.1, 2.0), lambda x: F.threshold(x, 0.1, 2.0),
     "ThresholdBackward1"),
    ("silu", lambda x: F.silu(x, inplace=True), F.silu, "SiluBackward0"),
    ("mish", lambda x: F.mish(x, inplace=True), F.mish, "MishBackward0"),
    ("hardswish", lambda x: F.hardswish(x * 4, inplace=True), lambda x: F.hardswish(x * 4),
     None),
    ("hardsigmoid", lambda x: F.hardsigmoid(x * 4, inplace=True), lambda x: F.hardsigmoid(x * 4),
     None),
    ("relu", lambda x: F.relu(x, inplace=True), F.relu, None),
    ("rrelu_eval", lambda x: F.rrelu_(x, 0.1, 0.3), lambda x: F.rrelu(x, 0.1, 0.3), None),
]


@pytest.mark.parametrize("name,inplace,outplace,node", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_forms(name, inplace, outplace, node):
    leaf = ember.tensor(np.random.default_rng(0).uniform(-2, 2, (3, 4)), requires_grad=True)
    expected = outplace(leaf)
    x = leaf * 1.0
    version = x._version.value
    out = inplace(x)
    assert out is x or name in ("relu6", "hardswish", "hardsigmoid")
    assert_close(out, expected)
    if out is x:
        assert x._version.value > version
    if node is not None:
        assert out.grad_fn.name() == node
    (g_in,) = ember.autograd.grad(out.sum(), leaf)
    (g_out,) = ember.autograd.grad(expected.sum(), leaf)
    assert_close(g_in, g_out)
    # gradients through the in-place forms are exact, to second order
    assert gradcheck(lambda t: inplace(t * 1.0), (leaf,))
    assert gradgradcheck(lambda t: inplace(t * 1.0), (leaf,))


def test_inplace_on_leaf_that_requires_grad_raises():
    x = ember.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.elu(x, inplace=True)


@pytest.mark.parametrize("fn,match", [
    (lambda x: F.leaky_relu_(x, -0.5), "In-place leakyReLu backward"),
    (lambda x: F.elu_(x, -0.5), "In-place elu backward"),
])
def test_inplace_negative_slope_backward_raises_like_pytorch(fn, match):
    x = ember.randn(3, requires_grad=True)
    y = fn(x * 1.0)
    with pytest.raises(RuntimeError, match=match):
        y.sum().backward()


def test_rrelu_training_draws_reproducible_slopes_in_range():
    x = -ember.ones(1000)
    ember.manual_seed(3)
    a = F.rrelu(x, 0.1, 0.3, training=True)
    ember.manual_seed(3)
    b = F.rrelu(x, 0.1, 0.3, training=True)
    assert_close(a, b)
    slopes = -a.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    assert_close(F.rrelu(ember.ones(3), training=True), np.ones(3))
    assert_close(F.rrelu(x[:3], 0.1, 0.3), np.full(3, -0.2))


def test_gelu_values_and_prelu_shapes():
    x = ember.tensor([-1.0, 0.0, 1.0], dtype=ember.float64)
    assert_close(F.gelu(x), np.array([-0.15865525393145707, 0.0, 0.8413447460685429]))
    w = ember.tensor([0.1, 0.2, 0.3], requires_grad=True)
    x3 = ember.tensor(-np.ones((2, 3, 2), dtype=np.float32))
    y = F.prelu(x3, w)
    assert_close(y[0, :, 0], np.array([-0.1, -0.2, -0.3]))
    y.sum().backward()
    assert_close(w.grad, np.full(3, -4.0))
    assert F.prelu(ember.tensor(-2.0), ember.tensor([0.5])).item() == -1.0


def test_top_level_forms():
    x = ember.randn(3, 4)
    assert_close(ember.selu(x), F.selu(x))
    assert_close(ember.celu(x, 0.5), F.celu(x, 0.5))
    assert_close(ember.threshold(x, 0.0, 1.0), F.threshold(x, 0.0, 1.0))
    assert_close(ember.hardshrink(x, 0.3), F.hardshrink(x, 0.3))
    assert_close(ember.prelu(x, ember.tensor([0.2])), F.leaky_relu(x, 0.2))
    assert_close(ember.rrelu(x), F.rrelu(x))
    y = x.clone()
    ember.selu_(y)
    assert_close(y, F.selu(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.softmax(x, 1)  # an explicit dim gives no warning


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_glu_is_one_node_and_both_backward_paths_agree(dim, dtype, numba):
    """glu is one GluBackward0 node (one edge, as in PyTorch); its first-order backward on
    the arrays (the native kernels', or NumPy's) equals the tensor formulas that
    create_graph records, and NumPy's in float64."""
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((4, 6, 8)).astype(dtype)
    g0 = rng.standard_normal(F.glu(ember.tensor(x0), dim).shape).astype(dtype)
    x = ember.tensor(x0, requires_grad=True)
    with native.use_numba(numba):
        y = F.glu(x, dim)
        (first,) = ember.autograd.grad(y, x, ember.tensor(g0))
    assert y.grad_fn.name() == "GluBackward0" and len(y.grad_fn.next_functions) == 1
    (recorded,) = ember.autograd.grad(F.glu(x, dim), x, ember.tensor(g0), create_graph=True)
    a, b = np.split(x0.astype(np.float64), 2, axis=dim)
    s = 1 / (1 + np.exp(-b))
    g = g0.astype(np.float64)
    expected = np.concatenate([g * s, g * a * s * (1 - s)], axis=dim)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(first.numpy(), expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(recorded.detach().numpy(), expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(y.detach().numpy(), a * s, rtol=tol, atol=tol)


def test_glu_matches_pytorch():
    torch = pytest.importorskip("torch")
    x0 = np.random.default_rng(6).standard_normal((3, 4, 10))
    ours = ember.tensor(x0, requires_grad=True)
    theirs = torch.tensor(x0, requires_grad=True)
    y, ref = F.glu(ours, 1), torch.nn.functional.glu(theirs, 1)
    assert y.grad_fn.name() == ref.grad_fn.name()
    (y * y).sum().backward()  # (an expanded, read-only gradient reaches glu's backward)
    (ref * ref).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dim", [1, 2])
def test_glu_cut_over_two_threads_as_native_parts(on_two_threads, monkeypatch, dim):
    """A large glu and its gradient run as two halves of the rows, the worker's as a
    native part (families halves2/halves3), and equal NumPy's float64 values."""
    from ember.ops import _native_cuts

    families = []
    original = _native_cuts.run_cut
    monkeypatch.setattr(_native_cuts, "run_cut",
                        lambda kernel, family, args, cut: families.append(family)
                        or original(kernel, family, args, cut))
    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((64, 96, 64)).astype(np.float32)   # 393K elements: cut
    x = ember.tensor(x0, requires_grad=True)
    y = F.glu(x, dim)
    g0 = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(ember.tensor(g0))
    a, b = np.split(x0.astype(np.float64), 2, axis=dim)
    s = 1 / (1 + np.exp(-b))
    g = g0.astype(np.float64)
    np.testing.assert_allclose(y.detach().numpy(), a * s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(),
                               np.concatenate([g * s, g * a * s * (1 - s)], axis=dim),
                               rtol=1e-5, atol=1e-6)
    assert families == (["halves2", "halves3"] if native.available() else [])


def test_glu_kernels_take_any_layout():
    """A transposed (non-contiguous) or read-only input and an expanded gradient give the
    native kernels' results the NumPy path gives."""
    x0 = np.random.default_rng(8).standard_normal((6, 10)).T   # (10, 6), F-ordered
    x0.flags.writeable = False
    results = []
    for numba in (True, False):
        with native.use_numba(numba):
            x = ember.tensor(x0, requires_grad=True)
            y = F.glu(x, 0)
            y.sum().backward()
            results.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-14)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-14)


@pytest.mark.parametrize("numba", [True, False])
def test_large_float32_logsigmoid_in_one_pass(on_two_threads, numba, monkeypatch):
    """logsigmoid of a large float32 array (one kernel pass, cut over the threads) is
    ``0 - softplus(-x)`` bit for bit, +0.0 (not -0.0) for a large x, and within float32
    rounding of the float64 value."""
    rng = np.random.default_rng(11)
    x0 = (rng.standard_normal((1024, 320)) * 20).astype(np.float32)
    x0[0, :6] = [0.0, -0.0, np.inf, -np.inf, 200.0, -200.0]
    from ember.ops import _native_smooth

    passes = []
    original = _native_smooth.logsigmoid32
    monkeypatch.setattr(_native_smooth, "logsigmoid32",
                        lambda x: passes.append(x.shape) or original(x))
    with native.use_numba(numba):
        got = F.logsigmoid(ember.tensor(x0)).numpy()
        softplus = F.softplus(ember.tensor(-x0), threshold=np.inf).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), (0 - softplus).view(np.uint8))
    assert got[0, 4] == 0 and not np.signbit(got[0, 4]) and got[0, 2] == 0
    assert got[0, 3] == -np.inf and got[0, 5] == -200
    x64 = x0.astype(np.float64)[:, :]
    finite = np.isfinite(x64)
    expected = -np.logaddexp(0, -np.where(finite, x64, 0))
    np.testing.assert_allclose(got[finite], expected[finite], rtol=2e-6, atol=1e-6)
    assert passes == ([x0.shape] if numba and native.available() else [])
