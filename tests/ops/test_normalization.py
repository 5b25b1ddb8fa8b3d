"""Focused tests of ember/ops/normalization.py: running statistics, errors as in PyTorch,
the fused batch/layer norm gradients (first and second order) and the torch.* forms."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.testing import assert_close


def _x(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).normal(size=shape))


def test_batch_norm_updates_running_stats_with_unbiased_variance():
    x = _x(4, 3, 2, 2)
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    v0 = rm._version.value
    F.batch_norm(x, rm, rv, training=True, momentum=0.3)
    data = x.numpy()
    mean = data.mean(axis=(0, 2, 3))
    var = data.var(axis=(0, 2, 3), ddof=1)
    assert_close(rm, 0.3 * mean)
    assert_close(rv, 0.7 + 0.3 * var)
    assert rm._version.value > v0
    # eval mode normalizes with the running statistics
    out = F.batch_norm(x, rm, rv, training=False, eps=0.0)
    expected = (data - rm.numpy()[:, None, None]) / np.sqrt(rv.numpy()[:, None, None])
    assert_close(out, expected)


def test_batch_norm_errors():
    x = _x(3, 4)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when "
                       r"training, got input size torch.Size\(\[1, 4\]\)"):
        F.batch_norm(_x(1, 4), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        F.batch_norm(x, ember.zeros(3), ember.ones(3), training=True)
    with pytest.raises(RuntimeError, match="weight should contain 4 elements not 3"):
        F.batch_norm(x, None, None, ember.ones(3), training=True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.batch_norm(_x(4), None, None, training=True)


def test_instance_norm_running_stats_average_the_instances():
    x = _x(2, 3, 5)
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    F.instance_norm(x, rm, rv, momentum=0.5)
    data = x.numpy()
    assert_close(rm, 0.5 * data.mean(axis=2).mean(0))
    assert_close(rv, 0.5 + 0.5 * data.var(axis=2, ddof=1).mean(0))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(_x(2, 6, 1))
    out = F.instance_norm(x, rm, rv, use_input_stats=False, eps=0.0)
    assert_close(out, (data - rm.numpy()[:, None]) / np.sqrt(rv.numpy()[:, None]))


def test_layer_group_rms_errors():
    x = _x(3, 4)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with "
                       r"shape \[\*, 5\], but got input of size\[3, 4\]"):
        F.layer_norm(x, (5,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as "
                       r"normalized_shape, but got weight of shape \[5\]"):
        F.layer_norm(x, (4,), ember.ones(5))
    with pytest.raises(TypeError, match="must be tuple of ints, not float"):
        F.layer_norm(x, 4.0)
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be "
                       r"divisible by num_groups, but got input of shape \[2, 6, 4\] and "
                       "num_groups=4"):
        F.group_norm(_x(2, 6, 4), 4)
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions"):
        F.group_norm(_x(6), 3)
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*5\]"):
        F.rms_norm(x, (5,))
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
        F.local_response_norm(x, 2)
    assert F.layer_norm(x, 4).shape == (3, 4)


def test_rms_norm_default_eps_is_dtype_eps():
    x = ember.zeros(2, 3)
    assert_close(F.rms_norm(x, (3,)), np.zeros((2, 3)))
    y = ember.ones(2, 3, dtype=ember.float64)
    expected = 1 / np.sqrt(1 + np.finfo(np.float64).eps)
    assert_close(F.rms_norm(y, [3]), np.full((2, 3), expected))


def test_layer_norm_is_stable_for_large_offsets():
    x = ember.tensor([[1e4 + 1.0, 1e4 - 1.0, 1e4]], dtype=ember.float64)
    assert_close(F.layer_norm(x, (3,)), np.array([[1.2247, -1.2247, 0.0]]), atol=1e-4)


def test_fused_norms_double_backward_with_mixed_uses():
    """Gradients through the input, weight and bias together, taken twice."""
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.normal(size=(3, 2, 2)), requires_grad=True)
    w = ember.tensor(rng.uniform(0.5, 1.5, 2), requires_grad=True)
    b = ember.tensor(rng.normal(size=2), requires_grad=True)
    fn = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True) ** 2  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    wl = ember.tensor(rng.uniform(0.5, 1.5, (2, 2)), requires_grad=True)
    fl = lambda x, w: F.layer_norm(x, (2, 2), w).sin()  # noqa: E731
    assert gradcheck(fl, (x, wl))
    assert gradgradcheck(fl, (x, wl))
    fg = lambda x: F.group_norm(x.reshape(1, 6, 2), 3).exp()  # noqa: E731
    assert gradgradcheck(fg, (x,))


def test_node_names_and_top_level_forms():
    x = _x(4, 3).requires_grad_()
    assert F.batch_norm(x, None, None, training=True).grad_fn.name() == \
        "NativeBatchNormBackward0"
    assert F.layer_norm(x, (3,)).grad_fn.name() == "NativeLayerNormBackward0"
    assert_close(ember.layer_norm(x, [3]), F.layer_norm(x, (3,)))
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    a = ember.batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5, False)
    assert_close(a, F.batch_norm(x, None, None, training=True))
    assert rm.abs().sum().item() > 0
    assert_close(ember.group_norm(_x(2, 4, 3), 2), F.group_norm(_x(2, 4, 3), 2))
    assert_close(ember.instance_norm(_x(2, 4, 3), None, None, None, None, True, 0.1, 1e-5,
                                     False), F.instance_norm(_x(2, 4, 3)))


def test_half_precision_batch_norm_runs_in_float32_statistics():
    x = ember.tensor(np.random.default_rng(0).normal(size=(8, 3)) * 100 + 1000,
                     dtype=ember.float16)
    out = F.batch_norm(x, None, None, training=True)
    assert out.dtype is ember.float16
    assert np.abs(out.float().numpy().mean(0)).max() < 0.05


def test_normalize():
    x = _x(3, 4)
    assert_close(F.normalize(x).norm(dim=1), np.ones(3))
    assert_close(F.normalize(ember.zeros(2, 3)), np.zeros((2, 3)))
    out = ember.empty(3, 4, dtype=ember.float64)
    F.normalize(x, p=1.0, dim=0, out=out)
    assert_close(out.abs().sum(0), np.ones(4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, normalized, affine", [
    ((4, 7, 9), (9,), True), ((3, 5, 2, 6), (2, 6), True), ((6, 33), (33,), False)])
def test_rms_norm_node_against_float64_numpy(dtype, shape, normalized, affine):
    """rms_norm as one node (ops/normalization_rms.py): forward and both gradients
    against the formulas in float64, with a strided gradient, and the composition's
    gradients under create_graph."""
    rng = np.random.default_rng(len(shape))
    xn = rng.standard_normal(shape)
    wn = rng.standard_normal(normalized) if affine else None
    gn = rng.standard_normal(shape)
    x = ember.tensor(xn.astype(dtype), requires_grad=True)
    w = ember.tensor(wn.astype(dtype), requires_grad=True) if affine else None
    y = F.rms_norm(x, normalized, w, eps=1e-5)
    assert y.grad_fn.name() == "RmsNormBackward0"
    axes = tuple(range(len(shape) - len(normalized), len(shape)))
    xd, n = xn.astype(dtype).astype(np.float64), int(np.prod(normalized))
    rstd = 1 / np.sqrt((xd * xd).mean(axes, keepdims=True) + 1e-5)
    wd = 1.0 if wn is None else wn.astype(dtype).astype(np.float64)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(y.detach().numpy(), xd * rstd * wd, **tol)
    # d/dx: rstd * (g w) - x rstd^3 mean(g w x);  d/dw: sum over rows of g x rstd
    gw_x = gn * wd
    expected_gx = rstd * gw_x - xd * rstd ** 3 * (gw_x * xd).sum(axes, keepdims=True) / n
    g = ember.tensor(np.asfortranarray(gn.astype(dtype)))   # (not C-contiguous)
    grads = ember.autograd.grad(y, [x] + ([w] if affine else []), g)
    np.testing.assert_allclose(grads[0].numpy(), expected_gx, **tol)
    if affine:
        lead = tuple(range(len(shape) - len(normalized)))
        np.testing.assert_allclose(grads[1].numpy(), (gn * xd * rstd).sum(lead),
                                   rtol=tol["rtol"] * 10, atol=tol["atol"] * 10)
    recorded = ember.autograd.grad(F.rms_norm(x, normalized, w, eps=1e-5),
                                   [x] + ([w] if affine else []), g, create_graph=True)
    for a, b in zip(grads, recorded):
        np.testing.assert_allclose(b.detach().numpy(), a.numpy(), **tol)


def test_rms_norm_takes_the_composition_where_the_node_does_not_apply():
    x = ember.randn(2, 3, dtype=ember.float16, requires_grad=True)
    assert F.rms_norm(x, (3,)).grad_fn.name() == "MulBackward0"   # (float16: composed)
    y = F.rms_norm(x.float().requires_grad_(), (3,), ember.ones(3, dtype=ember.float64))
    assert y.grad_fn.name() == "MulBackward0"   # (weight of another dtype: composed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, dim", [((5, 7), 1), ((5, 7), 0), ((3, 4, 6), 1),
                                        ((3, 4, 6), -1), ((2, 3, 4, 5), 2)])
def test_normalize_node_against_float64_numpy(dtype, shape, dim):
    """normalize(x, 2, dim) as one node (ops/normalization_l2.py): values and gradient
    against the formulas in float64, a zero vector (norm clamped to eps: divided by eps,
    gradient g / eps), and the composition's gradient under create_graph."""
    rng = np.random.default_rng(len(shape) + dim)
    xn = rng.standard_normal(shape).astype(dtype)
    index = [0] * len(shape)
    index[dim] = slice(None)
    xn[tuple(index)] = 0
    gn = rng.standard_normal(shape)
    x = ember.tensor(xn, requires_grad=True)
    y = F.normalize(x, dim=dim, eps=1e-3)
    assert y.grad_fn.name() == "L2NormalizeBackward0"
    xd = xn.astype(np.float64)
    norm = np.sqrt((xd * xd).sum(dim, keepdims=True))
    s = 1 / np.maximum(norm, 1e-3)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(y.detach().numpy(), xd * s, **tol)
    gd = gn.astype(dtype).astype(np.float64)
    expected = gd * s - xd * s ** 3 * (gd * xd).sum(dim, keepdims=True) * (norm >= 1e-3)
    (gx,) = ember.autograd.grad(y, x, ember.tensor(gn.astype(dtype)))
    np.testing.assert_allclose(gx.numpy(), expected, **tol)
    (recorded,) = ember.autograd.grad(F.normalize(x, dim=dim, eps=1e-3), x,
                                      ember.tensor(gn.astype(dtype)), create_graph=True)
    np.testing.assert_allclose(recorded.detach().numpy(), gx.numpy(), **tol)


def test_normalize_other_norms_and_gradcheck():
    x = ember.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    assert F.normalize(x, p=1.0).grad_fn.name() == "DivBackward0"   # (composed)
    assert ember.autograd.gradcheck(lambda t: F.normalize(t, dim=0), (x,))
    assert ember.autograd.gradgradcheck(lambda t: F.normalize(t, dim=1), (x,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), ((0, 2), True),
                                          (-1, True), ((), False)])
def test_two_norm_sums_of_squares_against_float64(dtype, dim, keepdim):
    # the 2-norm's sums of squares are one einsum pass (ops/linalg_norms.py)
    xn = np.random.default_rng(3).standard_normal((5, 6, 7)).astype(dtype)
    got = ember.linalg.vector_norm(ember.tensor(xn), 2, dim, keepdim).numpy()
    axes = None if dim in (None, ()) else dim
    expected = np.sqrt((xn.astype(np.float64) ** 2).sum(axis=axes, keepdims=keepdim))
    assert got.shape == expected.shape and got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=2e-6 if dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 7), (1, 3, 4, 5), (2, 3, 2, 3, 2),
                                   (1, 3, 64, 64), (2, 3, 300, 300)])
@pytest.mark.parametrize("affine", [True, False])
def test_inference_batch_norm_on_the_arrays_gives_the_recorded_bits(dtype, shape, affine):
    # with nothing recorded (no_grad, or nothing needing a gradient) eval-mode batch norm
    # runs on the arrays: the same bits as the recorded ops, against float64 too (from
    # 8K elements in one numba pass, the largest shape cut over the threads)
    rng = np.random.default_rng(len(shape))
    x = ember.tensor(rng.normal(size=shape).astype(dtype))
    rm = ember.tensor(rng.normal(size=3).astype(dtype))
    rv = ember.tensor(rng.uniform(0.5, 2, 3).astype(dtype))
    w = ember.tensor(rng.normal(size=3).astype(dtype)) if affine else None
    b = ember.tensor(rng.normal(size=3).astype(dtype)) if affine else None
    with ember.no_grad():
        fast = F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3)
    plain = F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3)
    recorded = F.batch_norm(x.clone().requires_grad_(), rm, rv, w, b, training=False,
                            eps=1e-3)
    assert recorded.grad_fn is not None and fast.grad_fn is None and plain.grad_fn is None
    assert fast.dtype == recorded.dtype and fast.shape == recorded.shape
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())
    np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())
    view = (-1,) + (1,) * (len(shape) - 2)
    scale = (w.numpy().astype(np.float64) if affine else 1) / np.sqrt(
        rv.numpy().astype(np.float64) + 1e-3)
    exact = (x.numpy().astype(np.float64) - rm.numpy().reshape(view)) * scale.reshape(view)
    if affine:
        exact = exact + b.numpy().reshape(view)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fast.numpy(), exact, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_weight, use_bias", [(True, False), (False, True)])
def test_inference_batch_norm_scale_and_shift_give_the_recorded_bits(dtype, use_weight,
                                                                     use_bias):
    # the per-channel scale and shift in one numba pass: the recorded ops' bits, with a
    # zero variance, a negative one (NaN, as the ops give) and only one of weight and bias
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.normal(size=(1, 4, 3, 3)).astype(dtype))
    rm = ember.tensor(rng.normal(size=4).astype(dtype))
    rv = ember.tensor(np.array([0.0, -1.0, 1e-7, 3.5], dtype))
    w = ember.tensor(rng.normal(size=4).astype(dtype)) if use_weight else None
    b = ember.tensor(rng.normal(size=4).astype(dtype)) if use_bias else None
    with ember.no_grad():
        fast = F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5)
        with native.use_numba(False):
            numpy_path = F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5)
    recorded = F.batch_norm(x.clone().requires_grad_(), rm, rv, w, b, training=False,
                            eps=1e-5)
    assert np.isnan(fast.numpy()[0, 1]).all()
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())
    np.testing.assert_array_equal(numpy_path.numpy(), recorded.detach().numpy())


def test_inference_batch_norm_checks_what_the_fast_path_skips():
    # a per-channel tensor of the wrong size, or a non-tensor input, still gets its error
    x = ember.ones(1, 3, 2, 2)
    with ember.no_grad(), pytest.raises(RuntimeError, match="running_mean should contain 3"):
        F.batch_norm(x, ember.zeros(4), ember.ones(3), training=False)
    with ember.no_grad(), pytest.raises(RuntimeError, match="weight should contain 3"):
        F.batch_norm(x, ember.zeros(3), ember.ones(3), ember.ones(2), training=False)
    with ember.no_grad(), pytest.raises(TypeError, match="must be Tensor"):
        F.batch_norm(np.ones((1, 3, 2, 2)), ember.zeros(3), ember.ones(3), training=False)


def test_inference_batch_norm_of_a_strided_input_gives_the_recorded_bits():
    # a view with gaps (every other column of a larger image) takes NumPy's operations
    rng = np.random.default_rng(9)
    x = ember.tensor(rng.normal(size=(1, 4, 64, 128)).astype(np.float32))[..., ::2]
    rm, rv = ember.tensor(rng.normal(size=4)), ember.tensor(rng.uniform(0.5, 2, 4))
    rm, rv = rm.float(), rv.float()
    assert not x.is_contiguous() and x.numel() >= 8192
    with ember.no_grad():
        fast = F.batch_norm(x, rm, rv, training=False)
    recorded = F.batch_norm(x.clone().requires_grad_(), rm, rv, training=False)
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())


def test_inference_batch_norm_of_mixed_dtypes_takes_the_ops():
    # a float32 input with float64 statistics promotes as the ops do
    x = ember.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 3, 2))
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    with ember.no_grad():
        out = F.batch_norm(x, rm, rv, training=False)
    recorded = F.batch_norm(x.clone().requires_grad_(), rm, rv, training=False)
    assert out.dtype == recorded.dtype
    np.testing.assert_array_equal(out.numpy(), recorded.detach().numpy())


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape, normalized", [((1, 64, 128), (128,)), ((3, 4, 5, 6), (5, 6))])
def test_inference_layer_norm_gives_the_recorded_bits(affine, shape, normalized):
    # with nothing recorded, layer norm runs its row kernel on the arrays, without the op
    rng = np.random.default_rng(len(shape))
    x = ember.tensor(rng.normal(size=shape).astype(np.float32))
    w = ember.tensor(rng.normal(size=normalized).astype(np.float32)) if affine else None
    b = ember.tensor(rng.normal(size=normalized).astype(np.float32)) if affine else None
    with ember.no_grad():
        fast = F.layer_norm(x, normalized, w, b, eps=1e-5)
    recorded = F.layer_norm(x.clone().requires_grad_(), normalized, w, b, eps=1e-5)
    assert fast.grad_fn is None and recorded.grad_fn is not None
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())
    exact = x.numpy().astype(np.float64)
    axes = tuple(range(len(shape) - len(normalized), len(shape)))
    exact = (exact - exact.mean(axes, keepdims=True)) / np.sqrt(
        exact.var(axes, keepdims=True) + 1e-5)
    if affine:
        exact = exact * w.numpy() + b.numpy()
    np.testing.assert_allclose(fast.numpy(), exact, rtol=1e-4, atol=1e-4)
