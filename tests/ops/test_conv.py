"""The convolution kernels of ops/conv_arrays.py: the two stride-1 input-gradient paths
(`_transpose_by_shifts`, `_transpose_as_conv`) against the general col2im path and
against PyTorch, the choice between them, and gradchecks through each."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.ops import conv_arrays as conv

TOL = {np.float32: 2e-6, np.float64: 1e-13}    # relative to the result's largest value

# (kernel, lo, hi, dilation, size); every one stride 1
GEOMETRIES = {
    "2d k3 p0": ((3, 3), (0, 0), (0, 0), (1, 1), (7, 6)),
    "2d k3 p1": ((3, 3), (1, 1), (1, 1), (1, 1), (5, 6)),
    "2d k3 p2": ((3, 3), (2, 2), (2, 2), (1, 1), (4, 5)),
    "2d same, even kernel": ((4, 2), (1, 0), (2, 1), (1, 1), (6, 5)),
    "2d dilation 2": ((3, 3), (1, 2), (1, 2), (2, 2), (7, 8)),
    "2d non-square k": ((2, 5), (0, 1), (0, 1), (1, 1), (5, 7)),
    "2d pad > kernel span": ((1, 2), (2, 3), (1, 2), (1, 1), (3, 4)),
    "1d k5 p2": ((5,), (2,), (2,), (1,), (9,)),
    "1d dilation 3": ((3,), (1,), (0,), (3,), (10,)),
    "3d k(3,2,1) p1": ((3, 2, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1), (4, 3, 5)),
}
HELPERS = {"shifts": conv._transpose_by_shifts, "as_conv": conv._transpose_as_conv,
           "dispatch": conv.conv_transpose_array}


def _case(name, dtype, groups=1, cin=3, cout=4, batch=3, short=0, seed=0):
    """c, w, bias and geometry; `short` drops that many outputs at the end of each dim
    (a transposed convolution's output_padding leaves them uncovered)."""
    kernel, lo, hi, dilation, size = GEOMETRIES[name]
    geo = conv.Geometry(size, (1,) * len(kernel), lo, hi, dilation, groups)
    out = tuple(max(o - short, 1) for o in geo.out(kernel))
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((batch, cout * groups) + out).astype(dtype)
    w = rng.standard_normal((cout * groups, cin) + kernel).astype(dtype)
    bias = rng.standard_normal(cin * groups).astype(dtype)
    return c, w, bias, geo


def _assert_same(got, expected, dtype):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    scale = max(np.abs(expected).max(), 1)
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOL[dtype] * scale)


@pytest.mark.parametrize("helper", list(HELPERS))
@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stride1_paths_match_col2im(helper, name, dtype):
    for groups, cin, cout, short in ((1, 3, 4, 0), (1, 4, 2, 0), (2, 2, 3, 0), (1, 2, 3, 1)):
        c, w, bias, geo = _case(name, dtype, groups, cin, cout, short=short)
        expected = conv._transpose_col2im(c, w, geo, bias)
        _assert_same(HELPERS[helper](c, w, geo, bias), expected, dtype)
        _assert_same(HELPERS[helper](c, w, geo, None), expected - bias.reshape(
            (-1,) + (1,) * len(geo.size)), dtype)


def test_depthwise_and_single_image():
    c, w, bias, geo = _case("2d k3 p1", np.float64, groups=5, cin=1, cout=1, batch=1)
    expected = conv._transpose_col2im(c, w, geo, bias)
    for helper in HELPERS.values():
        _assert_same(helper(c, w, geo, bias), expected, np.float64)


def test_many_chunks(monkeypatch):
    monkeypatch.setattr(conv, "_CHUNK_BYTES", 2000)    # a few images a chunk, last one short
    c, w, bias, geo = _case("2d same, even kernel", np.float64, cin=3, cout=2, batch=7)
    expected = conv._transpose_col2im(c, w, geo, bias)
    for helper in HELPERS.values():
        _assert_same(helper(c, w, geo, bias), expected, np.float64)


@pytest.mark.parametrize("cin,cout,groups,kernel,dtype,path", [
    (32, 64, 1, 3, np.float64, "_transpose_by_shifts"),  # MNIST conv2: c has more channels
    (64, 32, 1, 3, np.float64, "_transpose_as_conv"),    # c has fewer channels
    (1, 16, 16, 3, np.float64, "_transpose_as_conv"),    # depthwise
    (1, 32, 1, 3, np.float64, "_transpose_col2im"),      # 9 columns for 32 channels of c
    (128, 64, 1, 3, np.float64, "_transpose_col2im"),    # filters larger than c
    # float32: Winograd's forward (and without numba, the result has fewer pixels)
    (64, 64, 1, 3, np.float32, "_transpose_as_conv"),
])
def test_choice_of_path(monkeypatch, cin, cout, groups, kernel, dtype, path):
    # (the general path's choice: depthwise ones take ops/_native_depthwise.py first)
    monkeypatch.setattr(conv._native_depthwise, "supports", lambda *a: False)
    called = []
    for name in ("_transpose_by_shifts", "_transpose_as_conv", "_transpose_col2im"):
        real = getattr(conv, name)
        monkeypatch.setattr(conv, name, lambda *a, _n=name, _f=real: called.append(_n) or _f(*a))
    geo = conv.Geometry((10, 10), (1, 1), (1, 1), (1, 1), (1, 1), groups)
    c = np.ones((8, cout, 10, 10), dtype)   # (more values than the filters, but last case)
    conv.conv_transpose_array(c, np.ones((cout, cin, kernel, kernel), dtype), geo)
    assert called == [path]


def test_strided_and_non_finite_weights_keep_the_general_path(monkeypatch):
    called = []
    real = conv._transpose_col2im
    monkeypatch.setattr(conv, "_transpose_col2im", lambda *a: called.append(1) or real(*a))
    c = np.ones((1, 2, 3, 3))
    w = np.ones((2, 1, 3, 3))
    conv.conv_transpose_array(c, w, conv.Geometry((7, 7), (2, 2), (0, 0), (0, 0), (1, 1), 1))
    w[0, 0, 0, 0] = np.inf
    got = conv.conv_transpose_array(c, w, conv.Geometry((5, 5), (1, 1), (0, 0), (0, 0),
                                                         (1, 1), 1))
    assert called == [1, 1]
    # inf only where the inf weight meets the gradient (the zero border would give NaN)
    assert np.isinf(got[0, 0, :3, :3]).all() and np.isfinite(got[0, 0, 3:]).all()


def _torch_conv_grads(torch, nd, x, w, b, grad, transposed=False, **kw):
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    fn = getattr(torch.nn.functional, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    y = fn(tx, tw, tb, **kw)
    y.backward(torch.tensor(grad))
    return y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()


def _ember_conv_grads(nd, x, w, b, grad, transposed=False, **kw):
    ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    fn = getattr(F, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    y = fn(ex, ew, eb, **kw)
    y.backward(ember.tensor(grad))
    return y.detach().numpy(), ex.grad.numpy(), ew.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nd,kernel,kw", [
    (2, (3, 3), {}),
    (2, (3, 3), {"padding": 1}),
    (2, (3, 3), {"padding": 2}),
    (2, (4, 2), {"padding": "same"}),
    (2, (3, 3), {"padding": 2, "dilation": 2}),
    (2, (2, 5), {"padding": (0, 2)}),
    (2, (3, 3), {"padding": 1, "groups": 2}),
    (1, (5,), {"padding": 2}),
    (1, (4,), {"padding": "same", "dilation": 3}),
    (3, (3, 2, 1), {"padding": 1}),
])
@pytest.mark.parametrize("cin,cout", [(4, 6), (6, 2)])
def test_conv_gradients_match_pytorch(dtype, nd, kernel, kw, cin, cout):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    size = (9, 8, 7)[:nd]
    x = rng.standard_normal((3, cin) + size).astype(dtype)
    w = rng.standard_normal((cout, cin // kw.get("groups", 1)) + kernel).astype(dtype)
    b = rng.standard_normal(cout).astype(dtype)
    out = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w),
                                                     **kw).shape
    grad = rng.standard_normal(tuple(out)).astype(dtype)
    expected = _torch_conv_grads(torch, nd, x, w, b, grad, **kw)
    for got, ref in zip(_ember_conv_grads(nd, x, w, b, grad, **kw), expected):
        _assert_same(got, ref, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"padding": 1},
                                {"padding": 1, "dilation": 2, "output_padding": 1},
                                {"stride": 2, "dilation": 3, "output_padding": 2}])
def test_conv_transpose_stride1_matches_pytorch(dtype, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 6, 7)).astype(dtype)
    w = rng.standard_normal((5, 3, 3, 3)).astype(dtype)
    b = rng.standard_normal(3).astype(dtype)
    out = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(w), **kw).shape
    grad = rng.standard_normal(tuple(out)).astype(dtype)
    expected = _torch_conv_grads(torch, 2, x, w, b, grad, transposed=True, **kw)
    for got, ref in zip(_ember_conv_grads(2, x, w, b, grad, transposed=True, **kw), expected):
        _assert_same(got, ref, dtype)


@pytest.mark.parametrize("cin,cout,padding,path", [
    (2, 5, 1, "_transpose_by_shifts"),
    (3, 2, "same", "_transpose_as_conv"),
])
def test_gradcheck_through_stride1_paths(monkeypatch, cin, cout, padding, path):
    called = []
    real = getattr(conv, path)
    monkeypatch.setattr(conv, path, lambda *a: called.append(1) or real(*a))
    x = ember.randn(2, cin, 5, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(cout, cin, 3, 2, dtype=ember.float64, requires_grad=True)
    b = ember.randn(cout, dtype=ember.float64, requires_grad=True)

    def fn(x, w, b):
        return F.conv2d(x, w, b, padding=padding)

    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    assert called


@pytest.mark.parametrize("kw", [{"padding": 1, "dilation": 2, "output_padding": 1},
                                {"stride": 2, "dilation": 3, "output_padding": 2}])
def test_gradcheck_conv_transpose_output_padding_past_the_windows(kw):
    """output_padding >= stride leaves windows that the input does not cover: the
    gradients (and their gradients) are cut to the input's size."""
    x = ember.randn(1, 2, 3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 3, 2, 3, dtype=ember.float64, requires_grad=True)

    def fn(x, w):
        return F.conv_transpose2d(x, w, **kw)

    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))


@pytest.mark.parametrize("name", ["2d k3 p1", "2d same, even kernel", "3d k(3,2,1) p1"])
@pytest.mark.parametrize("groups, short", [(1, 0), (2, 0), (1, 1)])
def test_weight_gradient_sums_either_way_round(monkeypatch, on_two_threads, no_blocked_conv,
                                                name, groups, short):
    """The general weight gradient over the whole batch at once (one product split over
    the threads), or in chunks of images accumulated as (Cg*k, Og) and transposed at the
    end (small filters) or as (Og, Cg*k) (from _TRANSPOSED_MAX weights on, where the
    transposed copy cost more than the product): each equals a float64 reference made
    from the definition, with a transposed convolution's uncovered outputs (`short`)
    included."""
    for kind in ("_native_direct_conv", "_native_winograd"):
        monkeypatch.setattr(getattr(conv, kind), "ENABLED", False)
    monkeypatch.setattr(conv._native_depthwise, "supports", lambda *a: False)
    c, w, _, geo = _case(name, np.float32, groups=groups, cin=3, cout=4, batch=5,
                         short=short, seed=2)
    kernel = w.shape[2:]
    x = np.random.default_rng(3).standard_normal(
        (c.shape[0], w.shape[1] * groups) + tuple(geo.size)).astype(np.float32)
    # the definition: each weight times each window's element, summed over windows
    padded = conv.pad_array(x.astype(np.float64), geo.lo, geo.hi)
    cg, og = w.shape[1], w.shape[0] // groups
    expected = np.zeros(w.shape)
    for index, slices in conv.kernel_offsets(kernel, geo.stride, geo.dilation, c.shape[2:]):
        window = padded[(Ellipsis,) + slices]           # (N, C, *out) for this offset
        for group in range(groups):
            xs = window[:, group * cg:(group + 1) * cg].reshape(len(c), cg, -1)
            cs = c[:, group * og:(group + 1) * og].astype(np.float64).reshape(len(c), og, -1)
            expected[(slice(group * og, (group + 1) * og), slice(None)) + index] = \
                np.einsum("ncp,nop->oc", xs, cs)
    taken = []
    real = conv._whole_batch
    monkeypatch.setattr(conv, "_whole_batch", lambda *a: taken.append(real(*a)) or taken[-1])
    monkeypatch.setattr(conv, "_SPLIT_COLUMNS", 1)   # (the whole batch's columns: two threads)
    for chunk_bytes, limit in ((4 << 20, 0), (3000, 0), (3000, 1 << 30)):
        # the whole batch; chunks as (Og, Cg*k); chunks as (Cg*k, Og)
        monkeypatch.setattr(conv, "_CHUNK_BYTES", chunk_bytes)
        monkeypatch.setattr(conv, "_WEIGHT_CHUNK_BYTES", chunk_bytes)
        monkeypatch.setattr(conv, "_TRANSPOSED_MAX", limit)
        got = conv.conv_weight_array(x, c, kernel, geo)
        assert got.shape == w.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=0,
                                   atol=2e-6 * max(np.abs(expected).max(), 1))
    assert taken == [groups == 1, False, False]


def test_whole_batch_forward_matches_chunks(monkeypatch, on_two_threads, no_blocked_conv):
    """The general forward over the whole batch (one product split over the threads,
    its columns copied by one thread or by both) and in chunks of images, bias folded
    in: the same values as float64."""
    for kind in ("_native_direct_conv", "_native_winograd"):
        monkeypatch.setattr(getattr(conv, kind), "ENABLED", False)
    c, w, bias, geo = _case("2d k3 p1", np.float32, cin=6, cout=5, batch=7, seed=4)
    x = np.random.default_rng(5).standard_normal((7, 5) + tuple(geo.size)).astype(np.float32)
    wt = np.ascontiguousarray(w.swapaxes(0, 1))                      # (6, 5, 3, 3)
    expected = conv.conv_array(x.astype(np.float64), wt.astype(np.float64), geo,
                               bias.astype(np.float64)[:6])
    taken = []
    real = conv._whole_batch
    monkeypatch.setattr(conv, "_whole_batch", lambda *a: taken.append(real(*a)) or taken[-1])
    for chunk_bytes, split in ((4 << 20, 1 << 30), (4 << 20, 1), (2000, 1)):
        monkeypatch.setattr(conv, "_CHUNK_BYTES", chunk_bytes)
        monkeypatch.setattr(conv, "_SPLIT_COLUMNS", split)
        _assert_same(conv.conv_array(x, wt, geo, bias[:6]), expected.astype(np.float32),
                     np.float32)
    assert taken[-3:] == [True, True, False]


@pytest.mark.parametrize("threads", [1, 2])
def test_chunks_are_near_equal_and_dealt_evenly(threads, monkeypatch):
    """The batch's chunks cover it in order, hold at most the per-thread budget, differ
    by at most one image (the larger first: the first's size is the buffers'), and come
    in a multiple of the threads wherever there are images enough."""
    monkeypatch.setattr(conv._parallel, "threads", lambda: threads)
    for n in (1, 2, 3, 5, 7, 8, 31, 64, 65):
        for item_bytes in (1, 100, 900, 3000, 10 ** 6):
            budget = 4000
            parts = conv._chunks(np, n, item_bytes, budget)
            sizes = [s.stop - s.start for s in parts]
            assert parts[0].start == 0 and parts[-1].stop == n
            assert all(a.stop == b.start for a, b in zip(parts, parts[1:]))
            assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)
            assert max(sizes) <= max(1, budget // threads // item_bytes)
            assert len(parts) % threads == 0 or len(parts) == n
            fewest = -(-n // max(1, budget // threads // item_bytes))
            assert len(parts) < fewest + threads
    assert conv._chunks(np, 0, 10) == []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel, stride, pad, size", [
    ((4, 4), (2, 2), (1, 1), (16, 16)),      # DCGAN's (the native col2im)
    ((3, 3), (2, 2), (1, 1), (9, 7)),
    ((3, 3), (2, 2), (0, 0), (9, 9)),        # (no padding: no buffer to crop)
    ((3,), (2,), (1,), (15,)),               # (NumPy's strided adds)
    ((2, 3, 3), (2, 1, 2), (0, 1, 1), (5, 4, 7)),
])
def test_strided_col2im_on_each_threads_own_images_matches_split_products(
        kernel, stride, pad, size, dtype, monkeypatch, on_two_threads):
    """A strided transposed convolution (the general col2im path) with its chunks of
    images dealt to the threads, each making its own products and adds into a padded
    buffer of its own (cropped into its images), gives what the chunks' products split
    over the threads in turn give."""
    monkeypatch.setattr(conv, "_CHUNK_BYTES", 6000)   # several chunks
    nd = len(kernel)
    rng = np.random.default_rng(7)
    # (batch, groups, outputs short of the last window: a transposed convolution's
    # output_padding leaves them uncovered)
    for batch, groups, short in ((6, 1, 0), (5, 1, 0), (1, 1, 0), (4, 2, 0), (6, 1, 1)):
        geo = conv.Geometry(size, stride, pad, pad, (1,) * nd, groups)
        out = tuple(max(o - short, 1) for o in geo.out(kernel))
        c = rng.standard_normal((batch, 4) + out).astype(dtype)
        w = rng.standard_normal((4, 3) + kernel).astype(dtype)
        bias = rng.standard_normal(3 * groups).astype(dtype)
        results, chosen = [], []
        for evenly in (True, False):
            monkeypatch.setattr(conv, "_dealt_evenly",
                                lambda xp, parts, on=evenly, seen=chosen: seen.append(on) or on)
            results.append(conv._transpose_col2im(c, w, geo, bias))
        assert chosen == [True, False]
        _assert_same(results[0], results[1], dtype)
        monkeypatch.undo()
        monkeypatch.setattr(conv, "_CHUNK_BYTES", 6000)
        parts = conv._chunks(np, batch, 3 * groups * math.prod(kernel) * math.prod(out)
                             * c.itemsize)
        assert conv._dealt_evenly(np, parts) == (batch > 1)
