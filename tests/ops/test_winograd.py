"""Winograd convolutions (ops/_native_winograd.py): the forward convolution and the
input gradient of 3x3 stride-1 float32 convolutions, against float64 im2col, and the
cases that stay on im2col."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import _native_direct_conv as direct
from ember.ops import _native_winograd as winograd
from ember.ops import conv_arrays
from ember.ops.conv_arrays import Geometry, conv_array, conv_transpose_array

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.fixture(autouse=True)
def _blocked_kernels_off(no_blocked_conv):
    """These tests are of the paths that ops/_native_blocked_conv.py's kernels take over
    where they run (tests/ops/test_blocked_conv.py has theirs)."""


@pytest.fixture
def few_channels(monkeypatch):
    """The path taken down to 8 channels on any output, so that the kernels' tests run
    on small, quick shapes (the real minimums: `test_what_stays_on_im2col`); the direct
    kernels, which take such channel counts first, switched off."""
    monkeypatch.setattr(direct, "ENABLED", False)
    for name in ("MIN_CHANNELS", "MIN_CHANNELS_SMALL_OUTPUT"):
        monkeypatch.setattr(winograd, name, 8)
    monkeypatch.setattr(winograd, "MIN_CHANNEL_PRODUCT", 64)


def _case(rng, n, c, o, h, w):
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    k = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    return x, k, b


def _wide(*arrays):
    return [a.astype(np.float64) for a in arrays]


@pytest.mark.parametrize("n, c, o, h, w, pad", [
    (5, 8, 16, 9, 9, 0), (3, 16, 24, 13, 7, 1), (2, 9, 17, 3, 30, 1), (1, 32, 64, 26, 26, 0),
])
def test_forward_matches_float64(n, c, o, h, w, pad, few_channels):
    x, k, b = _case(np.random.default_rng(n + c), n, c, o, h, w)
    geo = Geometry((h, w), (1, 1), (pad, pad), (pad, pad), (1, 1), 1)
    assert winograd.supports(n, np.float32, c, o, (3, 3), geo)
    got = conv_array(x, k, geo, b)
    exact = conv_array(*_wide(x, k), geo, b.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == exact.shape
    # a few hundred float32 roundings of the output's scale (see the module's NOTE)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


def test_input_gradient_goes_through_the_forward_path(monkeypatch, few_channels):
    x, k, _ = _case(np.random.default_rng(7), 4, 16, 32, 12, 12)
    geo = Geometry((12, 12), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    c = np.random.default_rng(8).standard_normal((4, 32, 12, 12)).astype(np.float32)
    calls = []
    real = winograd.conv_forward
    monkeypatch.setattr(winograd, "conv_forward",
                        lambda *args: calls.append(args[0].shape) or real(*args))
    got = conv_transpose_array(c, k, geo)
    assert calls == [(4, 32, 12, 12)]
    exact = conv_transpose_array(*_wide(c, k), geo)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


@pytest.mark.parametrize("n, c, o, h, w, pad", [
    (5, 8, 16, 9, 9, 0), (3, 16, 24, 13, 7, 1), (2, 9, 17, 3, 30, 1), (1, 32, 64, 26, 26, 0),
    (4, 8, 8, 14, 14, 1),
])
def test_weight_gradient_matches_float64(n, c, o, h, w, pad, few_channels, monkeypatch):
    """F(3x3, 4x4) weight gradients, partial tiles at the edges and padding included,
    on two threads (one per image run) and on one."""
    from ember.ops import _parallel

    monkeypatch.setattr(winograd, "GRADIENT_MIN_TILES", 1)
    rng = np.random.default_rng(n + c + 1)
    x, _, _ = _case(rng, n, c, o, h, w)
    geo = Geometry((h, w), (1, 1), (pad, pad), (pad, pad), (1, 1), 1)
    grad = rng.standard_normal((n, o) + geo.out((3, 3))).astype(np.float32)
    assert winograd.weight_supports(n, np.float32, c, o, (3, 3), geo)
    exact = conv_arrays.conv_weight_array(*_wide(x, grad), (3, 3), geo)
    before = _parallel.threads()
    for threads in (2, 1):
        _parallel.set_threads(threads)
        try:
            got = winograd.conv_weight(x, grad, geo)
            routed = conv_arrays.conv_weight_array(x, grad, (3, 3), geo)
        finally:
            _parallel.set_threads(before)
        assert got.dtype == np.float32 and got.shape == (o, c, 3, 3)
        # sums of a few thousand products: float32 roundings of the result's scale
        np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())
        np.testing.assert_array_equal(routed, got)


@pytest.mark.parametrize("tiles", [1, 8, 20, 1000])
def test_products_over_several_images(tiles, few_channels, on_two_threads, monkeypatch):
    """Products over the tiles of one image, of two (with a short last step), or of all:
    the forward and the weight gradient give the same values, on two threads."""
    monkeypatch.setattr(winograd, "TILES_PER_PRODUCT", tiles)  # 3x2 tiles an image
    rng = np.random.default_rng(16)
    x, k, b = _case(rng, 5, 8, 16, 10, 7)
    geo = Geometry((10, 7), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    grad = rng.standard_normal((5, 16, 10, 7)).astype(np.float32)
    out = winograd.conv_forward(x, k, geo, b)
    weight = winograd.conv_weight(x, grad, geo)
    exact = conv_array(*_wide(x, k), geo, b.astype(np.float64))
    np.testing.assert_allclose(out, exact, rtol=0, atol=2e-5 * np.abs(exact).max())
    exact = conv_arrays.conv_weight_array(*_wide(x, grad), (3, 3), geo)
    np.testing.assert_allclose(weight, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_weight_gradients_land_where_im2col_puts_them(bad, few_channels,
                                                                monkeypatch):
    monkeypatch.setattr(winograd, "GRADIENT_MIN_TILES", 1)
    rng = np.random.default_rng(11)
    x, _, _ = _case(rng, 2, 8, 16, 10, 10)
    grad = rng.standard_normal((2, 16, 8, 8)).astype(np.float32)
    x[1, 3, 4, 5] = bad
    geo = Geometry((10, 10), (1, 1), (0, 0), (0, 0), (1, 1), 1)
    assert winograd.conv_weight(x, grad, geo) is None
    got = conv_arrays.conv_weight_array(x, grad, (3, 3), geo)
    monkeypatch.setattr(winograd, "ENABLED", False)
    direct = conv_arrays.conv_weight_array(x, grad, (3, 3), geo)
    np.testing.assert_array_equal(got, direct)
    assert not np.isfinite(got).all()


def test_images_a_product_take():
    assert winograd._images_per_product(36, 32 + 64) == 4        # MNIST's conv2: 144 tiles
    assert winograd._images_per_product(4, 512 + 512) == 14      # ~8 MB of tiles a thread
    assert winograd._images_per_product(200, 64 + 64) == 1       # one image at least
    assert winograd._images_per_product(64, 1024 + 1024) == 1


def test_which_weight_gradients_take_the_path():
    at = Geometry((24, 24), (1, 1), (0, 0), (0, 0), (1, 1), 1)   # 22x22: 6x6 tiles
    assert winograd.weight_supports(1, np.float32, 32, 64, (3, 3), at)      # 36 tiles
    big = Geometry((32, 32), (1, 1), (1, 1), (1, 1), (1, 1), 1)  # 8x8 tiles an image
    assert not winograd.weight_supports(8, np.float32, 32, 64, (3, 3), big)
    assert winograd.weight_supports(8, np.float32, 64, 64, (3, 3), big)
    small = Geometry((8, 8), (1, 1), (1, 1), (1, 1), (1, 1), 1)  # 2x2 tiles an image
    assert not winograd.weight_supports(8, np.float32, 64, 64, (3, 3), small)
    assert winograd.weight_supports(9, np.float32, 64, 64, (3, 3), small)
    assert not winograd.weight_supports(9, np.float64, 64, 64, (3, 3), small)
    assert not winograd.weight_supports(64, np.float32, 8, 64, (3, 3), at)  # few channels
    assert winograd.weight_supports(16, np.float32, 256, 256, (3, 3), small)
    assert not winograd.weight_supports(16, np.float32, 512, 512, (3, 3), small)  # memory


@pytest.mark.parametrize("n, c, o, h, w", [(3, 8, 16, 10, 10),
                                           (2, 3, 6, 8, 9)])   # (the direct path's)
def test_layer_gradients_match_float64(n, c, o, h, w, few_channels):
    """A layer's output and gradients in float32 (Winograd, or the direct path for few
    input channels) against float64."""
    rng = np.random.default_rng(3)
    x, k, b = _case(rng, n, c, o, h, w)
    grads = []
    for dtype in (ember.float32, ember.float64):
        t = ember.tensor(x, dtype=dtype, requires_grad=True)
        w = ember.tensor(k, dtype=dtype, requires_grad=True)
        out = F.conv2d(t, w, ember.tensor(b, dtype=dtype), padding=1)
        (out * ember.tensor(np.cos(np.arange(out.numel())).reshape(out.shape),
                            dtype=dtype)).sum().backward()
        grads.append((out.detach().numpy(), t.grad.numpy(), w.grad.numpy()))
    for got, exact in zip(*grads):
        np.testing.assert_allclose(got, exact, rtol=0, atol=3e-5 * np.abs(exact).max())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_inputs_land_where_im2col_puts_them(bad, few_channels):
    x, k, b = _case(np.random.default_rng(4), 2, 8, 16, 10, 10)
    x[1, 3, 4, 5] = bad
    assert_like_im2col(x, k, Geometry((10, 10), (1, 1), (0, 0), (0, 0), (1, 1), 1), b)


def assert_like_im2col(x, k, geo, b):
    """`conv_array` on inputs with a non-finite value gives im2col's non-finite places,
    and its values elsewhere."""
    got = conv_array(x, k, geo, b)
    winograd.ENABLED = False
    try:
        im2col = conv_array(x, k, geo, b)
    finally:
        winograd.ENABLED = True
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(im2col))
    np.testing.assert_allclose(got[np.isfinite(got)], im2col[np.isfinite(im2col)],
                               rtol=1e-4, atol=1e-4)


def test_what_stays_on_im2col(monkeypatch):
    big = Geometry((16, 16), (1, 1), (1, 1), (1, 1), (1, 1), 1)     # 16x16 outputs
    small = Geometry((15, 16), (1, 1), (1, 1), (1, 1), (1, 1), 1)   # 15x16: a few tiles
    for ci, co in ((16, 16), (16, 32), (32, 16), (16, 64), (32, 32)):
        assert winograd.supports(8, np.float32, ci, co, (3, 3), big)
    for ci, co in ((8, 64), (64, 8), (15, 64), (15, 17)):             # few channels
        assert not winograd.supports(8, np.float32, ci, co, (3, 3), big)
    assert winograd.supports(8, np.float32, 64, 64, (3, 3), small)
    for ci, co in ((16, 32), (32, 16), (16, 64), (32, 32), (32, 64), (63, 128)):  # too few
        assert not winograd.supports(8, np.float32, ci, co, (3, 3), small)         # for it
    geo = big
    # many channels over few tiles: the filters' transform costs more than it saves
    four, two = Geometry((4, 4), (1, 1), (1, 1), (1, 1), (1, 1), 1), small._replace(size=(2, 2))
    seven = four._replace(size=(7, 7))
    monkeypatch.setattr(winograd, "_products_on_mkl", lambda: False)   # (OpenBLAS's)
    assert not winograd.supports(8, np.float32, 512, 512, (3, 3), four)      # 8 tiles
    assert not winograd.supports(32, np.float32, 512, 512, (3, 3), two)      # 32 tiles
    assert winograd.supports(64, np.float32, 512, 512, (3, 3), four)         # 64 tiles
    assert winograd.supports(16, np.float32, 512, 512, (3, 3), seven)
    # with MKL's products, im2col's gains: at most 2048 filters a tile of output pixels
    monkeypatch.setattr(winograd, "_products_on_mkl", lambda: True)
    assert not winograd.supports(64, np.float32, 512, 512, (3, 3), four)
    assert not winograd.supports(16, np.float32, 512, 512, (3, 3), seven)
    assert not winograd.supports(8, np.float32, 256, 256, (3, 3), seven)    # 49 of 64 used
    assert winograd.supports(16, np.float32, 256, 256, (3, 3), seven)
    assert winograd.supports(32, np.float32, 256, 256, (3, 3), four)
    assert not winograd.supports(8, np.float64, 16, 32, (3, 3), geo)         # float64
    assert not winograd.supports(8, np.float32, 16, 32, (5, 5), geo)         # other kernels
    assert not winograd.supports(8, np.float32, 16, 32, (3, 3), geo._replace(stride=(2, 2)))
    assert not winograd.supports(8, np.float32, 16, 32, (3, 3), geo._replace(dilation=(2, 1)))
    assert not winograd.supports(8, np.float32, 16, 32, (3, 3), geo._replace(groups=2))
    with native.use_numba(False):
        assert not winograd.supports(8, np.float32, 16, 32, (3, 3), geo)
    monkeypatch.setattr(winograd, "ENABLED", False)
    assert not winograd.supports(8, np.float32, 16, 32, (3, 3), geo)
    # with the path off, conv_array never calls it
    monkeypatch.setattr(winograd, "conv_forward", lambda *a: pytest.fail("called"))
    x, k, _ = _case(np.random.default_rng(5), 2, 16, 32, 16, 16)
    conv_arrays.conv_array(x, k, geo)


def test_toom_cook_matrices_give_the_correlation():
    at, g, bt = winograd.toom_cook(4, 3)
    rng = np.random.default_rng(6)
    d, f = rng.standard_normal(6), rng.standard_normal(3)
    np.testing.assert_allclose(at @ ((g @ f) * (bt @ d)),
                               [d[i:i + 3] @ f for i in range(4)], rtol=1e-10, atol=1e-10)
    assert np.array_equal(bt, np.round(bt))      # the input transform rounds nothing


@pytest.mark.skipif(not native.enabled(), reason="the row kernels need numba")
def test_row_transforms_are_the_toom_cook_matrices():
    """The input and output transforms' formulas (the matrices' entries written into the
    kernels) give BT and AT of `toom_cook` times six rows."""
    rng = np.random.default_rng(8)
    rows = rng.integers(-50, 50, (6, 37)).astype(np.float32)   # (exact in float32)
    into = np.empty((6, 37), np.float32)
    winograd._input_rows(*rows, *into)
    np.testing.assert_array_equal(into, winograd.BT @ rows)
    base = rng.integers(-50, 50, 37).astype(np.float32)
    out = np.empty((4, 37), np.float32)
    winograd._output_rows(*rows, base, *out)
    np.testing.assert_array_equal(out, base + winograd.AT_OUT @ rows)


def test_weight_gradient_matrices_give_the_correlation():
    """F(3, 4) with the output gradient's transform unscaled (`_gradient_rows`, exact
    integers) and the scales in AT_GRADIENT: three taps from four outputs' gradients."""
    rng = np.random.default_rng(12)
    d, e = rng.standard_normal(6), rng.standard_normal(4)
    np.testing.assert_allclose(
        winograd.AT_GRADIENT @ ((winograd.G_GRADIENT @ e) * (winograd.BT @ d)),
        [d[i:i + 4] @ e for i in range(3)], rtol=1e-10, atol=1e-10)
    if not native.enabled():
        return
    rows = rng.integers(-50, 50, (4, 29)).astype(np.float32)
    into = np.empty((6, 29), np.float32)
    winograd._gradient_rows(*rows, *into)
    np.testing.assert_array_equal(into, winograd.G_GRADIENT @ rows)


@pytest.mark.parametrize("n, threads, runs", [(1, 2, 1), (1, 3, 1), (3, 2, 2), (2, 4, 2)])
def test_bands_split_over_threads_across_images(n, threads, runs, monkeypatch,
                                                 few_channels):
    """Runs of bands dealt to the threads, also across images; a lone image, which
    conv_array sends here too, is one run."""
    from ember.ops import _parallel

    dealt = []
    real = _parallel.run_parts
    monkeypatch.setattr(_parallel, "run_parts",
                        lambda fn, parts: dealt.append(len(parts)) or real(fn, parts))
    x, k, b = _case(np.random.default_rng(9 + n), n, 8, 16, 18, 11)
    geo = Geometry((18, 11), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    before = _parallel.threads()
    _parallel.set_threads(threads)
    try:
        got = conv_array(x, k, geo, b)
    finally:
        _parallel.set_threads(before)
    assert dealt == [runs]
    exact = conv_array(*_wide(x, k), geo, b.astype(np.float64))
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


def test_filter_transform_is_g_w_gt():
    w = np.random.default_rng(10).standard_normal((5, 3, 3, 3)).astype(np.float32)
    g = winograd.G_FILTER
    expected = np.einsum("ik,ockl,jl->ijco", g, w.astype(np.float64), g).reshape(36, 3, 5)
    # float32 sums of nine terms: an ulp or two of the largest of them
    np.testing.assert_allclose(winograd._filter_transform(w), expected, rtol=1e-6,
                               atol=1e-6 * np.abs(expected).max())


def test_filter_transform_cut_over_two_threads(on_two_threads, monkeypatch):
    """From FILTERS_SPLIT_MIN filters each thread transforms a run of input channels:
    the same G w G^T as on one thread, for every filter."""
    w = np.random.default_rng(11).standard_normal((24, 7, 3, 3)).astype(np.float32)
    g = winograd.G_FILTER
    expected = np.einsum("ik,ockl,jl->ijco", g, w.astype(np.float64), g).reshape(36, 7, 24)
    runs = []
    real = winograd._filter_kernel
    monkeypatch.setattr(winograd, "_filter_kernel",
                        lambda *a: runs.append(a[1].shape[1]) or real(*a))
    monkeypatch.setattr(winograd, "FILTERS_SPLIT_MIN", 1)
    got = winograd._filter_transform(w)
    assert sorted(runs) == [3 * 24, 4 * 24]          # 7 input channels: runs of 3 and 4
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())
    monkeypatch.setattr(winograd, "FILTERS_SPLIT_MIN", 1 << 30)
    np.testing.assert_allclose(winograd._filter_transform(w), got, rtol=1e-6,
                               atol=1e-6 * np.abs(expected).max())
    assert len(runs) == 3


def _fresh_module(name: str):
    """A new instance of ember.ops.`name`, its top level run again (it reads its switch
    from the environment there), without replacing the imported one."""
    import importlib.util
    spec = importlib.util.find_spec(f"ember.ops.{name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("module, variable", [("_native_winograd", "EMBER_NO_WINOGRAD"),
                                              ("_native_direct_conv", "EMBER_NO_DIRECT_CONV")])
def test_environment_switch(module, variable, monkeypatch):
    """Each convolution kernel path's variable (this one's and the direct path's), read
    when its module is loaded.  (A module run afresh, not a new process: four Python
    processes importing ember took 5.9 s of the suite.)"""
    for value, expected in (("1", False), ("0", True), ("", True)):
        monkeypatch.setenv(variable, value)
        assert _fresh_module(module).ENABLED is expected
    monkeypatch.delenv(variable)
    assert _fresh_module(module).ENABLED is True
