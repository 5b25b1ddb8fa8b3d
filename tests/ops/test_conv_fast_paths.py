"""The convolutions' fast paths against the general one (columns and products): depthwise
convolutions through the numba kernels (ember/ops/_native_depthwise.py), 1x1 ones as one
product per image, and the col2im kernel (ember/ops/_native_col2im.py), on the geometries
they serve: strides, dilations, paddings (also uneven), kernel sizes, groups, transposed
convolutions with output_padding, and gradients of every order."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import _native as native
from ember.ops import _native_depthwise

needs_numba = pytest.mark.skipif(not native.available(), reason="numba is not installed")

def _gate(monkeypatch, module, name: str, real, take: bool) -> list:
    """Replace the test `module.name` (whose original is `real`) by one that records its
    calls and answers as `real` when `take`, else False (the general path)."""
    calls = []
    monkeypatch.setattr(module, name, lambda *a: calls.append(1) or (take and real(*a)))
    return calls


def _both_ways(monkeypatch, module, name: str, run) -> list:
    """``[run() with the test module.name answering as itself, run() with it answering
    False]`` (the fast path, then the general one), each run asking the test."""
    real = getattr(module, name)
    results = []
    for take in (True, False):
        calls = _gate(monkeypatch, module, name, real, take)
        results.append(run())
        assert calls
    return results


GEOMETRIES = [dict(stride=1, padding=1), dict(stride=2, padding=1), dict(stride=1, padding=0),
              dict(stride=(2, 1), padding=(2, 0), dilation=(1, 2)),
              dict(stride=1, padding="same", dilation=2), dict(stride=3, padding=2),
              dict(stride=1, padding=(1, 3)),   # (wider than the filter's reach: cropped)
              dict(stride=2, padding=0), dict(stride=(1, 2), padding=(0, 3), dilation=(2, 1))]


def _run(x0, w0, b0, g_seed, transposed=False, **kw):
    x = ember.tensor(x0, requires_grad=True)
    w = ember.tensor(w0, requires_grad=True)
    b = ember.tensor(b0, requires_grad=True)
    conv = F.conv_transpose2d if transposed else F.conv2d
    y = conv(x, w, b, groups=x0.shape[1], **kw)
    g = np.random.default_rng(g_seed).standard_normal(tuple(y.shape)).astype(x0.dtype)
    y.backward(ember.tensor(g))
    return y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()


def _both(monkeypatch, *args, **kw):
    """(kernels' results, general path's results)."""
    calls = []
    real = _native_depthwise.supports
    monkeypatch.setattr(_native_depthwise, "supports",
                        lambda *a: calls.append(1) or real(*a))
    ours = _run(*args, **kw)
    assert calls, "the depthwise kernels did not run"
    monkeypatch.setattr(_native_depthwise, "supports", lambda *a: False)
    return ours, _run(*args, **kw)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", [3, 5, (7, 3), (3, 7)])
@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_depthwise_kernels_match_the_general_path(geometry, kernel, dtype, monkeypatch):
    if geometry.get("padding") == "same" and geometry.get("stride", 1) != 1:
        pytest.skip("padding='same' needs stride 1")
    k = (kernel, kernel) if isinstance(kernel, int) else kernel
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((3, 6, 17, 14)).astype(dtype)
    w0 = rng.standard_normal((6, 1) + k).astype(dtype)
    b0 = rng.standard_normal(6).astype(dtype)
    ours, general = _both(monkeypatch, x0, w0, b0, 1, **geometry)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for a, b in zip(ours, general):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)


@needs_numba
@pytest.mark.parametrize("images", [5, 1])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_work_cut_over_two_threads_matches_the_general_path(stride, images,
                                                                      monkeypatch):
    """From `SPLIT_MIN` elements of work on two threads, the forward and the input's
    gradient are cut by images (the worker's half a native part), and the weight's
    gradient is summed over two halves of the images, one on each thread; one image's
    work is cut by channels."""
    from ember.ops import _native_cuts

    monkeypatch.setattr(native, "SPLIT_MIN", 1)
    shares = []
    for kernel in (_native_depthwise._correlate, _native_depthwise._spread,
                   _native_depthwise._weight_grad):
        monkeypatch.setattr(kernel, "serial", lambda *a, k=kernel, real=kernel.serial:
                            shares.append(k.__name__) or real(*a))
    real_cut, cuts = _native_cuts.run_cut, []

    def cut(kernel, family, args, positions):
        done = real_cut(kernel, family, args, positions)
        if done:   # (the caller's half may run as a serial call too: not counted below)
            cuts.append(f"{kernel.__name__} {family}")
        return done

    monkeypatch.setattr(_native_cuts, "run_cut", cut)
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        rng = np.random.default_rng(6)
        x0 = rng.standard_normal((images, 4, 10, 9))
        w0 = rng.standard_normal((4, 1, 3, 3))
        ours, general = _both(monkeypatch, x0, w0, rng.standard_normal(4), 4, stride=stride,
                              padding=1)
    finally:
        ember.set_num_threads(threads)
    # a share each thread: the forward's and the input gradient's (at stride 2 the
    # forward's reads transposed), the weight gradient's
    adjoint = "_correlate" if stride == 1 else "_spread"
    if images > 1:
        assert cuts == ["_correlate depthwise", adjoint + " depthwise"]
        assert shares.count("_weight_grad") == 2
    else:
        assert cuts == []
        assert sorted(shares) == sorted(["_correlate"] * 2 + [adjoint] * 2
                                        + ["_weight_grad"] * 2)
    for a, b in zip(ours, general):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


@needs_numba
@pytest.mark.parametrize("geometry", [dict(stride=2, padding=1, output_padding=1),
                                      dict(stride=1, padding=0), dict(stride=3, padding=1,
                                                                      output_padding=2)])
def test_depthwise_transposed_convolutions_match_the_general_path(geometry, monkeypatch):
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((2, 4, 9, 8))
    w0 = rng.standard_normal((4, 1, 3, 3))
    ours, general = _both(monkeypatch, x0, w0, rng.standard_normal(4), 2, transposed=True,
                          **geometry)
    for a, b in zip(ours, general):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


@needs_numba
@pytest.mark.parametrize("geometry", [dict(stride=2, padding=1),
                                      dict(stride=1, padding=2, dilation=(2, 1))])
def test_depthwise_gradients_of_every_order(geometry):
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((2, 3, 6, 5)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((3, 1, 3, 3)), requires_grad=True)
    fn = lambda a, b: F.conv2d(a, b, groups=3, **geometry)  # noqa: E731
    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))


@needs_numba
@pytest.mark.parametrize("kernel", [3, (5, 3)])
def test_stride_one_runs_the_padded_plane_kernels(kernel, monkeypatch):
    """At stride 1 the forward, the input's gradient and the weight's gradient are the
    padded-plane kernels (the 3x3 one-pass loop among them), and agree with the general
    path."""
    ran = []
    real = native.run
    monkeypatch.setattr(native, "run",
                        lambda fn, *a, **kw: ran.append(fn.__name__) or real(fn, *a, **kw))
    k = (kernel, kernel) if isinstance(kernel, int) else kernel
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((2, 5, 11, 9)).astype(np.float32)
    w0 = rng.standard_normal((5, 1) + k).astype(np.float32)
    ours, general = _both(monkeypatch, x0, w0, rng.standard_normal(5).astype(np.float32), 3,
                          padding=1)
    assert ran[:3] == ["_correlate", "_correlate", "_weight_grad"]
    for a, b in zip(ours, general):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@needs_numba
@pytest.mark.parametrize("stride", [1, 2, 3])
@pytest.mark.parametrize("where", ["first", "last", "edge"])
def test_non_finite_filters_and_inputs_give_the_general_paths_gradients(stride, where,
                                                                        monkeypatch):
    """The kernels' long loops multiply by the zeros between a plane's rows: an inf
    filter tap (for the input's gradient) or input (for the filter's) goes to the
    general path, whose sums hold real products only (NaN where they do, inf where they
    do; PyTorch's results)."""
    rng = np.random.default_rng(7)
    x0, w0 = rng.standard_normal((2, 3, 9, 8)), rng.standard_normal((3, 1, 3, 3))
    tap, pixel = {"first": ((0, 0), (0, 0)), "last": ((2, 2), (8, 7)),
                  "edge": ((1, 2), (4, 7))}[where]
    w0[0, 0][tap], w0[2, 0][tap] = np.inf, -np.inf
    x0[1, 1][pixel] = np.inf
    ours, general = _both(monkeypatch, x0, w0, rng.standard_normal(3), 8, stride=stride,
                          padding=1)
    for a, b in zip(ours, general):
        finite = np.isfinite(b)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(a[~finite & ~np.isnan(b)], b[~finite & ~np.isnan(b)])
        np.testing.assert_allclose(a[finite], b[finite], rtol=1e-11, atol=1e-11)


@needs_numba
def test_strided_input_gradient_spreads_into_phase_planes(monkeypatch):
    """At stride 2 the input's gradient is `_spread` over (image, channel) planes, not a
    stride-1 correlation of a gradient with zeros put between its elements."""
    ran = []
    real = native.run
    monkeypatch.setattr(native, "run",
                        lambda fn, *a, **kw: ran.append(fn.__name__) or real(fn, *a, **kw))
    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((2, 4, 12, 11)).astype(np.float32)
    w0 = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    ours, general = _both(monkeypatch, x0, w0, rng.standard_normal(4).astype(np.float32), 5,
                          stride=2, padding=1)
    assert ran[:3] == ["_correlate", "_spread", "_weight_grad"]
    for a, b in zip(ours, general):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_depthwise_convolution_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x0, w0 = rng.standard_normal((4, 32, 20, 20)), rng.standard_normal((32, 1, 7, 7))
    results = []
    for lib in (ember, torch):
        x, w = lib.tensor(x0, requires_grad=True), lib.tensor(w0, requires_grad=True)
        y = lib.nn.functional.conv2d(x, w, padding=3, groups=32)
        y.backward(lib.ones_like(y))
        results.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------
# 1x1 convolutions: one product per image (conv_arrays._pointwise), not columns

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial", [(9,), (7, 6), (3, 4, 5)])
@pytest.mark.parametrize("transposed", [False, True])
def test_pointwise_convolutions_match_the_general_path(spatial, transposed, dtype,
                                                       monkeypatch):
    from ember.ops import conv_arrays

    nd = len(spatial)
    conv = getattr(F, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((3, 4) + spatial).astype(dtype)
    w0 = rng.standard_normal((4, 6) + (1,) * nd if transposed else (6, 4) + (1,) * nd)
    b0 = rng.standard_normal(6)
    g0 = rng.standard_normal((3, 6) + spatial).astype(dtype)

    def run():
        x = ember.tensor(x0, requires_grad=True)
        w = ember.tensor(w0.astype(dtype), requires_grad=True)
        b = ember.tensor(b0.astype(dtype), requires_grad=True)
        y = conv(x, w, b)
        y.backward(ember.tensor(g0))
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()

    results = _both_ways(monkeypatch, conv_arrays, "_pointwise", run)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial, stride", [((9,), 2), ((7, 6), 2), ((7, 6), (2, 1)),
                                             ((16, 16), 2), ((3, 4, 5), (1, 2, 3))])
def test_strided_pointwise_convolutions_match_the_general_path(spatial, stride, dtype,
                                                               monkeypatch):
    # a strided 1x1 convolution (a ResNet shortcut) reads every s-th pixel, then is a
    # pointwise product; against the general path's columns, gradients too (its input
    # gradient spreads a 1x1 adjoint over every s-th pixel, its weight gradient sums
    # over those), and the same for the transposed layer
    from ember.ops import conv_arrays

    nd = len(spatial)
    conv = getattr(F, f"conv{nd}d")
    rng = np.random.default_rng(7)
    x0 = rng.standard_normal((2, 4) + spatial).astype(dtype)
    w0 = rng.standard_normal((6, 4) + (1,) * nd).astype(dtype)
    b0 = rng.standard_normal(6).astype(dtype)
    steps = stride if isinstance(stride, tuple) else (stride,) * nd
    picked = x0[(Ellipsis,) + tuple(slice(None, None, s) for s in steps)]
    g0 = rng.standard_normal((2, 6) + picked.shape[2:]).astype(dtype)

    def run():
        x = ember.tensor(x0, requires_grad=True)
        w = ember.tensor(w0, requires_grad=True)
        y = conv(x, w, ember.tensor(b0), stride=stride)
        y.backward(ember.tensor(g0))
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy()

    def run_transposed():
        # (the transposed layer: its forward is the strided layer's input gradient, its
        # input gradient the strided forward; an output padding of one at the end)
        x = ember.tensor(g0, requires_grad=True)
        w = ember.tensor(w0, requires_grad=True)
        transpose = getattr(F, f"conv_transpose{nd}d")
        y = transpose(x, w, ember.tensor(b0[:4]), stride=stride,
                      output_padding=tuple((n - 1) % s for n, s in zip(spatial, steps)))
        assert y.shape == x0.shape
        y.backward(ember.tensor(x0))
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy()

    for a, b in zip(*_both_ways(monkeypatch, conv_arrays, "_strided_pointwise",
                                run_transposed)):
        np.testing.assert_allclose(a, b, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-5 if dtype == np.float32 else 1e-12)
    results = _both_ways(monkeypatch, conv_arrays, "_strided_pointwise", run)
    exact = np.einsum("oc,nc...->no...", w0.reshape(6, 4).astype(np.float64),
                      picked.astype(np.float64)) + b0.reshape((1, 6) + (1,) * nd)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][0], exact, **tol)
    for a, b in zip(*results):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)


def test_pointwise_convolution_gradients_of_every_order():
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((2, 3, 4, 5)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((2, 3, 1, 1)), requires_grad=True)
    assert gradcheck(lambda a, b: F.conv2d(a, b), (x, w))
    assert gradgradcheck(lambda a, b: F.conv2d(a, b), (x, w))


# ---------------------------------------------------------------------------
# whole-window convolutions (the kernel as large as the input): one product each,
# conv_arrays._whole_window

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", [(5,), (4, 4), (2, 3, 2)])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("transposed", [False, True])
def test_whole_window_convolutions_match_the_general_path(transposed, stride, kernel, dtype,
                                                          monkeypatch):
    from ember.ops import conv_arrays

    nd = len(kernel)
    conv = getattr(F, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    rng = np.random.default_rng(8)
    x0 = rng.standard_normal((3, 4) + ((1,) * nd if transposed else kernel)).astype(dtype)
    w0 = rng.standard_normal((4, 6) + kernel if transposed else (6, 4) + kernel)
    b0 = rng.standard_normal(6)
    g0 = rng.standard_normal((3, 6) + (kernel if transposed else (1,) * nd)).astype(dtype)
    results = []
    real_products = conv_arrays._flat_images
    for take in (True, False):
        calls = _gate(monkeypatch, conv_arrays, "_whole_window", conv_arrays._whole_window,
                      take)
        products = _gate(monkeypatch, conv_arrays, "_flat_images", real_products, True)
        x = ember.tensor(x0, requires_grad=True)
        w = ember.tensor(w0.astype(dtype), requires_grad=True)
        b = ember.tensor(b0.astype(dtype), requires_grad=True)
        y = conv(x, w, b, stride=stride)
        y.backward(ember.tensor(g0))
        results.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()))
        monkeypatch.undo()
        # forward, input gradient and weight gradient each asked, and each a product
        assert len(calls) >= 3 and (len(products) >= 4) == take
    assert results[0][0].shape == g0.shape
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **tol)


def test_whole_window_convolution_by_hand_and_gradients_of_every_order():
    from ember.ops import conv_arrays

    rng = np.random.default_rng(9)
    x0, w0 = rng.standard_normal((2, 3, 4, 4)), rng.standard_normal((5, 3, 4, 4))
    y = F.conv2d(ember.tensor(x0), ember.tensor(w0))
    expected = np.einsum("nchw,ochw->no", x0, w0)[:, :, None, None]
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-12)
    x = ember.tensor(x0, requires_grad=True)
    w = ember.tensor(w0, requires_grad=True)
    assert gradcheck(lambda a, b: F.conv2d(a, b), (x, w))
    assert gradgradcheck(lambda a, b: F.conv2d(a, b), (x, w))
    c = ember.tensor(rng.standard_normal((2, 3, 1, 1)), requires_grad=True)
    assert gradcheck(lambda a, b: F.conv_transpose2d(a, b, stride=2), (c, w.detach()
                                                                       .transpose(0, 1)
                                                                       .requires_grad_()))
    # not whole windows: padding, groups, dilation, a smaller kernel
    geo = conv_arrays.Geometry
    assert conv_arrays._whole_window((4, 4), geo((4, 4), (1, 1), (0, 0), (0, 0), (1, 1), 1))
    assert not conv_arrays._whole_window((4, 4), geo((4, 4), (1, 1), (1, 1), (1, 1),
                                                     (1, 1), 1))
    assert not conv_arrays._whole_window((4, 4), geo((4, 4), (1, 1), (0, 0), (0, 0),
                                                     (1, 1), 2))
    assert not conv_arrays._whole_window((2, 2), geo((3, 3), (1, 1), (0, 0), (0, 0),
                                                     (2, 2), 1))
    assert not conv_arrays._whole_window((3, 3), geo((4, 4), (1, 1), (0, 0), (0, 0),
                                                     (1, 1), 1))


# ---------------------------------------------------------------------------
# the general path's col2im through the numba kernel (ember/ops/_native_col2im.py)

@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", [dict(stride=2, padding=1), dict(stride=2, padding=0,
                                                                      output_padding=1),
                                      dict(stride=(3, 2), padding=(1, 2), dilation=2),
                                      dict(stride=2, padding=1, groups=2)])
def test_col2im_kernel_matches_numpys_strided_adds(geometry, dtype, monkeypatch):
    from ember.ops import _native_col2im

    rng = np.random.default_rng(7)
    groups = geometry.get("groups", 1)
    x0 = rng.standard_normal((3, 4, 6, 5)).astype(dtype)
    w0 = rng.standard_normal((4, 6 // groups, 4, 3)).astype(dtype)

    def run():
        x = ember.tensor(x0, requires_grad=True)
        w = ember.tensor(w0, requires_grad=True)
        y = F.conv_transpose2d(x, w, **geometry)      # col2im in the forward
        z = F.conv2d(y, w, stride=geometry["stride"], groups=groups)  # and in a backward
        z.backward(ember.ones_like(z))
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy()

    results = _both_ways(monkeypatch, _native_col2im, "supports", run)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, **tol)


@needs_numba
@pytest.mark.parametrize("stride, dilation, kernel", [((2, 2), (1, 1), (3, 3)),
                                                      ((3, 2), (2, 1), (4, 3)),
                                                      ((1, 1), (1, 1), (3, 3))])
def test_col2im_kernel_cut_over_two_threads_gives_numpys_bits(stride, dilation, kernel,
                                                              on_two_threads):
    """A col2im large enough to be cut over the threads by channels (each thread its
    channels' phase rows): the bits of NumPy's strided adds, tap after tap, and of one
    thread."""
    from ember.ops import _native, _native_col2im

    rng = np.random.default_rng(11)
    channels, images, out_h, out_w = 12, 11, 15, 17
    cols = rng.standard_normal((channels,) + kernel + (images, out_h, out_w))
    cols = cols.astype(np.float32)
    assert _native.cuts(cols.size)
    height = (out_h - 1) * stride[0] + (kernel[0] - 1) * dilation[0] + 1
    width = (out_w - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1
    expected = np.zeros((images, channels, height, width), np.float32)
    for a in range(kernel[0]):
        for b in range(kernel[1]):
            rows = slice(a * dilation[0], a * dilation[0] + stride[0] * out_h, stride[0])
            lines = slice(b * dilation[1], b * dilation[1] + stride[1] * out_w, stride[1])
            expected[:, :, rows, lines] += cols[:, a, b].swapaxes(0, 1)
    got = np.zeros_like(expected)
    _native_col2im.add_columns(cols, got, stride, dilation)
    np.testing.assert_array_equal(got, expected)
    ember.set_num_threads(1)
    alone = np.zeros_like(expected)
    _native_col2im.add_columns(cols, alone, stride, dilation)
    np.testing.assert_array_equal(alone, expected)


@needs_numba
@pytest.mark.parametrize("geometry", [g for g in GEOMETRIES if g.get("stride", 1) != 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_small_planes_split_by_a_map_give_the_rows_bits(geometry, dtype, monkeypatch):
    """Strided planes up to SMALL_PLANE elements go into their phase planes by a map
    (`phase_index`) instead of row by row: the forward, the input's gradient and the
    weight's gradient come out bit for bit the same either way."""
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((3, 6, 17, 14)).astype(dtype)
    w0 = rng.standard_normal((6, 1, 3, 3)).astype(dtype)
    results = []
    for small in (10**9, 0):   # (every plane by the map, then none)
        monkeypatch.setattr(_native_depthwise, "SMALL_PLANE", small)
        results.append(_run(x0, w0, np.zeros(6, dtype), 5, **geometry))
    for by_map, by_rows in zip(*results):
        np.testing.assert_array_equal(by_map, by_rows)


def test_phase_index_places_each_element_where_the_rows_put_it():
    # stride 2, padding 1, 8x8 planes, 3x3: phase planes of 5x5, (ee, eo, oe, oo)
    index = _native_depthwise.phase_index((8, 8), (4, 4), (3, 3), (2, 2, 1, 1, 1, 1))
    assert index.shape == (64,)
    # element (0, 0) sits at padded (1, 1): phase (odd, odd), position (0, 0)
    assert index[0] == 3 * 25
    # element (1, 1) sits at padded (2, 2): phase (even, even), position (1, 1)
    assert index[9] == 1 * 5 + 1
    # element (7, 7) sits at padded (8, 8): phase (even, even), position (4, 4)
    assert index[63] == 4 * 5 + 4
    assert _native_depthwise.phase_index((8, 8), (8, 8), (3, 3), (1, 1, 1, 1, 1, 1)).size == 0
    assert _native_depthwise.phase_index((40, 40), (20, 20), (3, 3),
                                         (2, 2, 1, 1, 1, 1)).size == 0   # (a large plane)
