"""Direct 3x3 convolutions for few input channels (ops/_native_direct_conv.py): the
forward convolution against float64 im2col, its cut over the threads, gradcheck,
non-finite inputs, and the cases that stay on the other paths (test_winograd.py also
checks a layer's float32 gradients and the environment switch of this path)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_direct_conv as direct
from ember.ops import _parallel, conv_arrays
from ember.ops.conv_arrays import Geometry, conv_array

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.fixture(autouse=True)
def _blocked_kernels_off(no_blocked_conv):
    """These tests are of the paths that ops/_native_blocked_conv.py's kernels take over
    where they run (tests/ops/test_blocked_conv.py has theirs)."""


def _case(rng, n, c, o, h, w, dtype=np.float32):
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    k = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    return x, k, b


def _im2col(x, k, geo, b):
    """The im2col path's result in float64 (the direct path switched off)."""
    before = direct.ENABLED
    direct.ENABLED = False
    try:
        return conv_array(x.astype(np.float64), k.astype(np.float64), geo,
                          None if b is None else b.astype(np.float64))
    finally:
        direct.ENABLED = before


def _geometry(h, w, pad):
    return Geometry((h, w), (1, 1), (pad, pad), (pad, pad), (1, 1), 1)


def _strided(h, w, pad):
    return Geometry((h, w), (2, 2), (pad, pad), (pad, pad), (1, 1), 1)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-6), (np.float64, 1e-14)])
@pytest.mark.parametrize("n, c, o, h, w, pad, bias", [
    (1, 1, 32, 28, 28, 0, True),    # MNIST's first layer, one image
    (3, 1, 8, 7, 11, 1, True),      # padded, not square
    (2, 3, 16, 9, 5, 1, False),     # no bias
    (1, 7, 4, 3, 3, 0, True),       # a 1x1 output
    (4, 2, 5, 4, 30, 0, True),
    (2, 16, 16, 10, 12, 1, True),   # whole blocks of four output channels
    (3, 9, 14, 7, 9, 1, False),     # three blocks and two channels one at a time
])
def test_forward_matches_float64_im2col(n, c, o, h, w, pad, bias, dtype, tol):
    x, k, b = _case(np.random.default_rng(n + c + o), n, c, o, h, w, dtype)
    b = b if bias else None
    geo = _geometry(h, w, pad)
    assert direct.supports(np.dtype(dtype), n, c, o, (3, 3), geo)
    got = conv_array(x, k, geo, b)
    exact = _im2col(x, k, geo, b)
    assert got.dtype == dtype and got.shape == exact.shape
    np.testing.assert_allclose(got, exact, rtol=0, atol=tol * np.abs(exact).max())


def test_the_path_is_taken(monkeypatch):
    calls = []
    real = direct.conv_forward
    monkeypatch.setattr(direct, "conv_forward",
                        lambda *args: calls.append(args[0].shape) or real(*args))
    x, k, b = _case(np.random.default_rng(1), 2, 1, 8, 6, 6)
    conv_array(x, k, _geometry(6, 6, 1), b)
    assert calls == [(2, 1, 6, 6)]   # (the images as they are: the kernel pads them)


def test_batches_cut_over_the_threads_give_the_serial_result(monkeypatch):
    x, k, b = _case(np.random.default_rng(2), 16, 1, 32, 28, 28)
    geo = _geometry(28, 28, 0)
    cut = []
    real = _parallel.run_parts
    monkeypatch.setattr(_parallel, "run_parts",
                        lambda fn, parts: cut.append(len(parts)) or real(fn, parts))
    before = _parallel.threads()
    _parallel.set_threads(2)
    try:
        threaded = conv_array(x, k, geo, b)
    finally:
        _parallel.set_threads(before)
    assert cut == [2]
    out = np.empty_like(threaded)
    direct._conv3x3.serial(x, k, b, out, 0, 0)
    np.testing.assert_array_equal(threaded, out)   # each image is summed the same way


def test_gradcheck_float64():
    rng = np.random.default_rng(4)
    x, k, b = _case(rng, 2, 2, 3, 5, 4, np.float64)
    args = [ember.tensor(a, requires_grad=True) for a in (x, k, b)]
    assert ember.autograd.gradcheck(lambda *a: F.conv2d(*a, padding=1), args)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("stride", [1, 2])
def test_non_finite_inputs_land_where_im2col_puts_them(bad, stride):
    rng = np.random.default_rng(5)
    x, k, b = _case(rng, 2, 1, 8, 10, 10)
    x[1, 0, 4, 9] = bad     # on a row's last column: the wide plane's wrapped columns read it
    x[0, 0, 0, 0] = bad
    geo = _geometry(10, 10, 0) if stride == 1 else _strided(10, 10, 1)
    got = conv_array(x, k, geo, b)
    exact = _im2col(x, k, geo, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(exact))
    finite = np.isfinite(exact)
    np.testing.assert_allclose(got[finite], exact[finite], rtol=0, atol=1e-5)
    # the weight gradient's dot products would turn the inf into NaN: the general path's
    g = rng.standard_normal(exact.shape).astype(np.float32)
    if stride == 1:
        assert direct.weight_grad(x, g, geo) is None
    else:
        assert direct.weight_grad_strided(x, g, geo) is None
    weight = conv_arrays.conv_weight_array(x, g, (3, 3), geo)
    np.testing.assert_array_equal(np.isnan(weight), np.isnan(_im2col_weight(x, g, geo)))


def test_what_takes_the_other_paths(monkeypatch):
    geo = _geometry(28, 28, 0)
    assert direct.supports(np.float32, 1, 1, 32, (3, 3), geo)
    assert direct.supports(np.float64, 64, 4, 32, (3, 3), geo)
    assert not direct.supports(np.float16, 1, 1, 32, (3, 3), geo)            # dtype
    assert direct.supports(np.float32, 64, 16, 16, (3, 3), geo)              # blocks of four
    assert not direct.supports(np.float32, 1, 16, 32, (3, 3), geo)           # im2col's
    assert direct.weight_supports(np.float32, 1, 16, 32, (3, 3), _geometry(32, 32, 1))
    assert not direct.weight_supports(np.float32, 1, 16, 32, (3, 3), geo)    # (28x28)
    assert not direct.weight_supports(np.float32, 1, 32, 64, (3, 3), _geometry(32, 32, 1))
    assert not direct.supports(np.float32, 1, 1, 32, (5, 5), geo)            # other kernels
    assert not direct.supports(np.float32, 1, 1, 32, (3, 3), geo._replace(stride=(2, 1)))
    assert not direct.supports(np.float32, 1, 1, 32, (3, 3), geo._replace(dilation=(2, 2)))
    assert not direct.supports(np.float32, 1, 2, 32, (3, 3), geo._replace(groups=2))
    assert not direct.supports(np.float32, 1, 1, 32, (3, 3), geo._replace(lo=(-1, 0)))
    # many channels on a large output: im2col's product does better
    assert not direct.supports(np.float32, 64, 6, 64, (3, 3), geo)
    assert direct.supports(np.float32, 1, 6, 64, (3, 3), geo)                # (small output)
    with native.use_numba(False):
        assert not direct.supports(np.float32, 1, 1, 32, (3, 3), geo)
    monkeypatch.setattr(direct, "ENABLED", False)
    assert not direct.supports(np.float32, 1, 1, 32, (3, 3), geo)
    monkeypatch.setattr(direct, "conv_forward", lambda *a: pytest.fail("called"))
    x, k, b = _case(np.random.default_rng(6), 1, 1, 4, 6, 6)
    np.testing.assert_allclose(conv_arrays.conv_array(x, k, _geometry(6, 6, 0), b),
                               _im2col(x, k, _geometry(6, 6, 0), b), rtol=0, atol=1e-5)



def _im2col_weight(x, g, geo):
    """The general path's weight gradient in float64 (the direct path switched off)."""
    before = direct.ENABLED
    direct.ENABLED = False
    try:
        return conv_arrays.conv_weight_array(x.astype(np.float64), g.astype(np.float64),
                                             (3, 3), geo)
    finally:
        direct.ENABLED = before


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-13)])
@pytest.mark.parametrize("n, c, o, h, w, pad", [
    (64, 1, 32, 28, 28, 0),     # MNIST's first layer
    (8, 3, 16, 32, 32, 1),      # a CIFAR network's first layer
    (2, 7, 5, 9, 11, 1),        # not square, odd output channels
    (1, 2, 1, 3, 3, 0),         # one output element, one output channel
    (4, 16, 16, 12, 12, 1),     # pairs of output channels (and halves of eight each)
    (2, 9, 15, 8, 10, 1),       # seven pairs and one channel alone
    (1, 24, 20, 32, 32, 1),     # more channels on a large plane: the weight gradient only
])
def test_weight_gradient_matches_float64_im2col(on_two_threads, n, c, o, h, w, pad, dtype,
                                                tol, monkeypatch):
    rng = np.random.default_rng(n + c + o)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    geo = _geometry(h, w, pad)
    g = rng.standard_normal((n, o) + geo.out((3, 3))).astype(dtype)
    taken = []
    real = direct.weight_grad
    monkeypatch.setattr(direct, "weight_grad", lambda *a: taken.append(1) or real(*a))
    # (a 3x3 input with no padding is one whole window, a product of its own: kept off
    # so that the kernel's one-output case is tested)
    monkeypatch.setattr(conv_arrays, "_whole_window", lambda *a: False)
    got = conv_arrays.conv_weight_array(x, g, (3, 3), geo)
    exact = _im2col_weight(x, g, geo)
    assert taken == [1]
    assert got.dtype == dtype and got.shape == (o, c, 3, 3)
    np.testing.assert_allclose(got, exact, rtol=0, atol=tol * np.abs(exact).max())
    # the output channels cut over the threads: each summed as on one thread
    ember.set_num_threads(1)
    np.testing.assert_array_equal(conv_arrays.conv_weight_array(x, g, (3, 3), geo), got)
    # and two channels a pass over the images (a bounded buffer): the same sums
    monkeypatch.setattr(direct, "WIDE_BYTES", 1)
    np.testing.assert_array_equal(conv_arrays.conv_weight_array(x, g, (3, 3), geo), got)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_non_finite_input_leaves_the_weight_gradient_to_im2col(bad):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 1, 8, 8)).astype(np.float32)
    x[0, 0, 3, 7] = bad    # (a row's last column: the wide plane's zeros multiply it)
    geo = _geometry(8, 8, 0)
    g = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    assert direct.weight_grad(x, g, geo) is None
    got = conv_arrays.conv_weight_array(x, g, (3, 3), geo)
    exact = _im2col_weight(x, g, geo)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    finite = np.isfinite(exact)
    np.testing.assert_allclose(got[finite], exact[finite], rtol=0, atol=1e-4)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-6), (np.float64, 1e-14)])
@pytest.mark.parametrize("n, c, o, h, w, pad", [
    (4, 3, 16, 32, 32, 1),      # a stem: 3 -> 16 channels, the image halved
    (2, 1, 8, 9, 11, 1),        # odd sizes
    (3, 2, 5, 8, 8, 0),         # no padding
    (2, 3, 4, 7, 6, 2),         # more padding than the filter's reach on one side
    (20, 3, 32, 14, 14, 1),     # small planes: split by the phase map
    (3, 16, 30, 12, 10, 1),     # blocks of four output channels and pairs, two left
])
def test_stride_2_forward_and_weight_gradient_match_float64_im2col(
        on_two_threads, n, c, o, h, w, pad, dtype, tol, monkeypatch):
    rng = np.random.default_rng(n * c + o)
    x, k, b = _case(rng, n, c, o, h, w, dtype)
    geo = _strided(h, w, pad)
    assert direct.supports_strided(np.dtype(dtype), n, c, o, (3, 3), geo)
    taken = []
    for name in ("conv_forward_strided", "weight_grad_strided"):
        real = getattr(direct, name)
        monkeypatch.setattr(direct, name, lambda *a, real=real, name=name:
                            taken.append(name) or real(*a))
    got = conv_array(x, k, geo, b)
    exact = _im2col(x, k, geo, b)
    assert got.dtype == dtype and got.shape == exact.shape
    np.testing.assert_allclose(got, exact, rtol=0, atol=tol * np.abs(exact).max())
    g = rng.standard_normal(exact.shape).astype(dtype)
    weight = conv_arrays.conv_weight_array(x, g, (3, 3), geo)
    weight_exact = _im2col_weight(x, g, geo)
    np.testing.assert_allclose(weight, weight_exact, rtol=0,
                               atol=5 * tol * np.abs(weight_exact).max())
    assert taken == ["conv_forward_strided", "weight_grad_strided"]
    # one thread: each image and each output channel summed as on two
    ember.set_num_threads(1)
    np.testing.assert_array_equal(conv_array(x, k, geo, b), got)
    np.testing.assert_array_equal(conv_arrays.conv_weight_array(x, g, (3, 3), geo), weight)
    monkeypatch.setattr(direct, "WIDE_BYTES", 1)   # two channels a pass over the images
    np.testing.assert_array_equal(conv_arrays.conv_weight_array(x, g, (3, 3), geo), weight)


def test_stride_2_gradcheck_float64():
    rng = np.random.default_rng(8)
    x, k, b = _case(rng, 2, 2, 3, 7, 6, np.float64)
    args = [ember.tensor(a, requires_grad=True) for a in (x, k, b)]
    assert ember.autograd.gradcheck(lambda *a: F.conv2d(*a, stride=2, padding=1), args)


def test_what_the_stride_2_path_takes():
    geo = _strided(64, 64, 1)
    assert direct.supports_strided(np.float32, 32, 3, 32, (3, 3), geo)
    assert not direct.supports_strided(np.float32, 32, 3, 32, (3, 3), geo._replace(stride=(2, 1)))
    assert not direct.supports_strided(np.float32, 32, 3, 32, (3, 3), geo._replace(stride=(1, 1)))
    assert not direct.supports_strided(np.float32, 32, 3, 32, (3, 3),
                                       geo._replace(dilation=(2, 2)))
    assert not direct.supports_strided(np.float32, 32, 3, 32, (5, 5), geo)
    assert direct.supports_strided(np.float32, 32, 16, 32, (3, 3), geo)       # blocks
    assert not direct.supports_strided(np.float32, 32, 32, 32, (3, 3), geo)    # channels
    assert not direct.supports_strided(np.float32, 32, 6, 128, (3, 3), geo)    # large output
    assert direct.supports_strided(np.float32, 1, 6, 128, (3, 3), _strided(8, 8, 1))
    assert not direct.supports_strided(np.float16, 32, 3, 32, (3, 3), geo)
    with native.use_numba(False):
        assert not direct.supports_strided(np.float32, 32, 3, 32, (3, 3), geo)


@pytest.mark.parametrize("lo, hi", [((1, 0), (2, 1)), ((0, 2), (1, 0)), ((2, 2), (0, 0))])
def test_uneven_padding_is_padded_in_the_kernel(lo, hi):
    """Each image is padded inside the kernels (a buffer per run, zeros kept around the
    interior): uneven padding, as a transposed convolution's output padding makes,
    lands where im2col's padded copy puts it, forward and weight gradient."""
    rng = np.random.default_rng(12)
    x, k, b = _case(rng, 5, 6, 10, 7, 9)
    geo = Geometry((7, 9), (1, 1), lo, hi, (1, 1), 1)
    assert direct.supports(np.float32, 5, 6, 10, (3, 3), geo)
    got = conv_array(x, k, geo, b)
    exact = _im2col(x, k, geo, b)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())
    g = rng.standard_normal(exact.shape).astype(np.float32)
    weight = direct.weight_grad(x, g, geo)
    weight_exact = _im2col_weight(x, g, geo)
    np.testing.assert_allclose(weight, weight_exact, rtol=0,
                               atol=1e-5 * np.abs(weight_exact).max())
