"""Register-blocked 3x3 convolutions (ops/_native_blocked_conv.py, explicit SIMD vectors
from ops/_native_vectors.py): the forward, the input gradient and the weight gradient
against float64 references from the definition, the cut over the threads, a layer's
gradients through autograd, non-finite inputs, which convolutions take the path, and its
environment switch.  The kernels run wherever numba does (with AVX's 8 lanes where the
processor lacks AVX-512); the path is chosen only on AVX-512 processors."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import _native as native
from ember.ops import conv_arrays
from ember.ops.conv_arrays import Geometry

pytestmark = pytest.mark.skipif(not native.available(), reason="numba is not installed")


@pytest.fixture
def blocked():
    from ember.ops import _native_blocked_conv

    return _native_blocked_conv


def _geometry(h, w, lo=(1, 1), hi=(1, 1), stride=1):
    return Geometry((h, w), (stride, stride), lo, hi, (1, 1), 1)


def _reference(x, k, geo, bias=None):
    """The correlation from its definition, in float64: a sum over the filters' taps of
    the zero-padded input's shifted (and strided) windows."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (geo.lo[0], geo.hi[0]),
                                      (geo.lo[1], geo.hi[1])))
    s, side = geo.stride[0], k.shape[2]
    out_h, out_w = geo.out((side, side))
    out = np.zeros((x.shape[0], k.shape[0], out_h, out_w))
    for ky in range(side):
        for kx in range(side):
            window = x[:, :, ky:ky + s * (out_h - 1) + 1:s, kx:kx + s * (out_w - 1) + 1:s]
            out += np.einsum("nchw,oc->nohw", window, k[:, :, ky, kx].astype(np.float64))
    if bias is not None:
        out += bias.astype(np.float64)[None, :, None, None]
    return out


def _case(seed, n, c, o, h, w, side=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    k = (rng.standard_normal((o, c, side, side)) / np.sqrt(side * side * c)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    return x, k, b


SHAPES = [  # n, c, o, h, w, lo, hi, bias
    (2, 16, 16, 32, 32, (1, 1), (1, 1), True),    # a CIFAR ResNet's first stage
    (3, 1, 32, 28, 28, (0, 0), (0, 0), True),     # MNIST's first layer, unpadded
    (1, 3, 5, 9, 13, (1, 1), (1, 1), False),      # one image, a partial block of five
    (2, 7, 17, 6, 5, (1, 0), (0, 1), True),       # padded on one side, three blocks
    (2, 4, 8, 3, 3, (0, 0), (0, 0), True),        # a 1x1 output: one pass, mostly past it
    (2, 12, 9, 4, 40, (2, 1), (1, 2), True),      # a wide plane, padding of two
]


STRIDED = [  # n, c, o, h, w, lo, hi, bias
    (2, 16, 32, 32, 32, (1, 1), (1, 1), True),    # a ResNet's stage-2 entry
    (3, 3, 16, 17, 12, (1, 1), (1, 1), False),    # a stem, odd and even sides
    (2, 5, 9, 7, 9, (0, 0), (0, 0), True),        # unpadded: rows past the input unread
    (1, 4, 12, 8, 8, (1, 0), (0, 1), True),       # one image, padded on one side each
    (2, 8, 3, 3, 3, (0, 0), (0, 0), True),        # a 1x1 output
    (2, 3, 20, 12, 10, (1, 1), (1, 1), True),     # two blocks of output channels
]


@pytest.mark.parametrize("n, c, o, h, w, lo, hi, bias, stride",
                         [shape + (1,) for shape in SHAPES]
                         + [shape + (2,) for shape in STRIDED])
def test_forward_matches_the_definition(blocked, n, c, o, h, w, lo, hi, bias, stride):
    x, k, b = _case(n + c + o, n, c, o, h, w)
    b = b if bias else None
    geo = _geometry(h, w, lo, hi, stride)
    got = blocked.conv_forward(x, k, geo, b)
    exact = _reference(x, k, geo, b)
    assert got.dtype == np.float32 and got.shape == exact.shape
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


@pytest.mark.parametrize("side, stride, n, c, o, h, w, pad", [
    (7, 2, 2, 3, 16, 23, 20, 3),     # a ResNet stem
    (7, 1, 1, 2, 9, 12, 7, 0),       # an output narrower than the filters' reach
    (5, 1, 3, 1, 6, 14, 14, 0),      # LeNet's first layer
    (5, 1, 2, 6, 10, 9, 11, 2),
    (4, 2, 2, 5, 12, 16, 16, 1),     # DCGAN's discriminator
    (4, 1, 2, 3, 8, 7, 6, 1),        # an even side at stride 1
    (2, 2, 2, 4, 9, 9, 8, 0),
])
def test_other_filter_sides_match_the_definition(blocked, side, stride, n, c, o, h, w,
                                                 pad):
    x, k, b = _case(side + n + c, n, c, o, h, w, side)
    geo = Geometry((h, w), (stride, stride), (pad, pad), (pad, pad), (1, 1), 1)
    assert blocked.stride_taken((side, side), geo) == stride
    got = blocked.conv_forward(x, k, geo, b)
    exact = _reference(x, k, geo, b)
    assert got.shape == exact.shape
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


@pytest.mark.parametrize("n, c, o, h, w, lo, hi, bias, stride",
                         [shape + (1,) for shape in SHAPES]
                         + [shape + (2,) for shape in STRIDED])
def test_weight_gradient_matches_the_definition(blocked, n, c, o, h, w, lo, hi, bias,
                                                stride):
    x, k, _ = _case(n * c + o, n, c, o, h, w)
    geo = _geometry(h, w, lo, hi, stride)
    out_h, out_w = geo.out((3, 3))
    g = np.random.default_rng(o).standard_normal((n, o, out_h, out_w)).astype(np.float32)
    got = blocked.weight_grad(x, g, geo)
    # <conv(x, w), g> = <w, dw>: each filter tap's sum of g times the window it read
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (lo[0], hi[0]), (lo[1], hi[1])))
    exact = np.stack([np.einsum("nchw,nohw->oc",
                                padded[:, :, ky:ky + stride * (out_h - 1) + 1:stride,
                                       kx:kx + stride * (out_w - 1) + 1:stride],
                                g.astype(np.float64))
                      for ky in range(3) for kx in range(3)], axis=-1).reshape(k.shape)
    assert got.dtype == np.float32 and got.shape == k.shape
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


@pytest.mark.parametrize("n, c, o, h, w, side, pad, short", [
    (2, 16, 8, 32, 32, 3, 1, 0),     # a ResNet's stride-2 layer
    (3, 9, 5, 9, 12, 3, 0, 0),       # unpadded, an odd plane: its last row read by none
    (2, 8, 3, 16, 16, 4, 1, 0),      # DCGAN's 4x4 layers
    (2, 10, 4, 15, 11, 4, 2, 1),     # the gradient one row and column short
    (1, 8, 6, 8, 9, 2, 0, 0),        # 2x2: one tap a phase
])
def test_strided_input_gradient_matches_the_general_path(blocked, n, c, o, h, w, side,
                                                         pad, short):
    """Each phase of the padded input as a stride-1 correlation of the gradient (a
    transposed convolution's forward too, `short` as its output padding leaves it):
    against col2im's float64 result."""
    geo = Geometry((h, w), (2, 2), (pad, pad), (pad, pad), (1, 1), 1)
    out_h, out_w = geo.out((side, side))
    rng = np.random.default_rng(n + c + side)
    g = rng.standard_normal((n, o, out_h - short, out_w - short)).astype(np.float32)
    k = rng.standard_normal((o, c, side, side)).astype(np.float32)
    bias = rng.standard_normal(c).astype(np.float32)
    got = blocked.input_grad_strided(g, k, geo, bias)
    exact = conv_arrays._transpose_col2im(g.astype(np.float64), k.astype(np.float64), geo,
                                          bias.astype(np.float64))
    assert got.shape == exact.shape == (n, c, h, w)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


@pytest.mark.parametrize("n, c, o, h, w, pad", [
    (2, 3, 20, 16, 16, 1),    # DCGAN's first discriminator layer (two blocks of lanes)
    (3, 5, 4, 9, 12, 0),      # unpadded, an odd plane
    (2, 7, 17, 11, 8, 2),
])
def test_4x4_weight_gradient_matches_the_definition(blocked, n, c, o, h, w, pad):
    x, k, _ = _case(n + c + o, n, c, o, h, w, 4)
    geo = Geometry((h, w), (2, 2), (pad, pad), (pad, pad), (1, 1), 1)
    out_h, out_w = geo.out((4, 4))
    g = np.random.default_rng(o).standard_normal((n, o, out_h, out_w)).astype(np.float32)
    got = blocked.weight_grad(x, g, geo, 4)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    exact = np.stack([np.einsum("nchw,nohw->oc",
                                padded[:, :, ky:ky + 2 * (out_h - 1) + 1:2,
                                       kx:kx + 2 * (out_w - 1) + 1:2], g.astype(np.float64))
                      for ky in range(4) for kx in range(4)], axis=-1).reshape(k.shape)
    assert got.dtype == np.float32 and got.shape == k.shape
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


def test_non_finite_weight_gradient_is_left_to_the_general_path(blocked):
    """The weight gradient's wide planes also multiply the input by the zeros between the
    gradient's rows: an inf there gives NaN where the general path's sums do not, so the
    kernel answers None and conv_weight_array takes another path."""
    x, _, _ = _case(3, 2, 8, 8, 32, 32)
    x[1, 2, 5, 31] = np.inf   # (read by a dropped column of the wide plane)
    geo = _geometry(32, 32)
    g = np.ones((2, 8, 32, 32), np.float32)
    assert blocked.weight_grad(x, g, geo) is None
    got = conv_arrays.conv_weight_array(x, g, (3, 3), geo)
    assert np.isinf(got[:, 2]).any() and not np.isnan(got).any()


def test_threads_cut_the_batch_without_changing_bits(blocked, on_two_threads, monkeypatch):
    """Two threads take halves of the batch, or of a lone image's blocks of output
    channels (each sum is made as on one thread): the same bits as the kernel on one
    thread, forward and weight gradient."""
    x, k, b = _case(5, 16, 16, 20, 32, 32)
    geo = _geometry(32, 32)
    g = np.random.default_rng(6).standard_normal((16, 20, 32, 32)).astype(np.float32)
    monkeypatch.setattr(blocked, "LONE_SPLIT_MIN", 0)
    parts = []
    real = blocked._parallel.run_parts
    monkeypatch.setattr(blocked._parallel, "run_parts",
                        lambda fn, cut: parts.append(len(cut)) or real(fn, cut))
    cut = [blocked.conv_forward(x, k, geo, b), blocked.weight_grad(x, g, geo),
           blocked.conv_forward(x[:1], k, geo, b)]
    assert parts == [2, 2, 2]
    ember.set_num_threads(1)
    np.testing.assert_array_equal(blocked.conv_forward(x, k, geo, b), cut[0])
    np.testing.assert_array_equal(blocked.weight_grad(x, g, geo), cut[1])
    np.testing.assert_array_equal(blocked.conv_forward(x[:1], k, geo, b), cut[2])
    assert parts == [2, 2, 2]


@pytest.mark.parametrize("side, stride, kernels", [
    (3, 1, ["conv_forward", "conv_forward", "weight_grad"]),
    (3, 2, ["conv_forward", "input_grad_strided", "weight_grad"]),
    (4, 2, ["conv_forward", "input_grad_strided", "weight_grad"]),   # DCGAN's
])
def test_a_layer_trains_through_the_path(blocked, monkeypatch, side, stride, kernels):
    """conv2d's output and its three gradients through the blocked kernels (the forward,
    the weight gradient, and the input gradient: at stride 1 a forward of the flipped
    filters, at stride 2 phase by phase) against the same layer in float64 (on the
    general paths)."""
    if not blocked.AVX512:
        monkeypatch.setattr(blocked, "AVX512", True)   # (the choice: any processor here)
    taken = []
    for name in ("conv_forward", "weight_grad", "input_grad_strided"):
        real = getattr(blocked, name)
        monkeypatch.setattr(blocked, name, lambda *a, _real=real, _name=name:
                            taken.append(_name) or _real(*a))
    x, k, b = _case(7, 4, 16, 16, 32, 32, side)
    out = {}
    for dtype in (np.float32, np.float64):
        xt = ember.tensor(x.astype(dtype), requires_grad=True)
        kt = ember.tensor(k.astype(dtype), requires_grad=True)
        bt = ember.tensor(b.astype(dtype), requires_grad=True)
        y = F.conv2d(xt, kt, bt, stride=stride, padding=1)
        (y * y).sum().backward()
        out[dtype] = [t.detach().numpy().astype(np.float64)
                      for t in (y, xt.grad, kt.grad, bt.grad)]
    assert taken == kernels
    for got, exact in zip(out[np.float32], out[np.float64]):
        np.testing.assert_allclose(got, exact, rtol=0, atol=2e-5 * np.abs(exact).max())


def test_a_transposed_layer_runs_its_forward_phase_by_phase(blocked, monkeypatch):
    """conv_transpose2d at stride 2 (DCGAN's generator): its forward is a strided input
    gradient, taken by the blocked path, and equals the layer in float64."""
    monkeypatch.setattr(blocked, "AVX512", True)
    taken = []
    real = blocked.input_grad_strided
    monkeypatch.setattr(blocked, "input_grad_strided",
                        lambda *a: taken.append(1) or real(*a))
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 16, 7, 7)).astype(np.float32)
    k = rng.standard_normal((16, 8, 4, 4)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    got = F.conv_transpose2d(ember.tensor(x), ember.tensor(k), ember.tensor(b), stride=2,
                             padding=1, output_padding=1).numpy()
    exact = F.conv_transpose2d(ember.tensor(x.astype(np.float64)),
                               ember.tensor(k.astype(np.float64)),
                               ember.tensor(b.astype(np.float64)), stride=2, padding=1,
                               output_padding=1).numpy()
    assert taken == [1] and got.shape == exact.shape == (2, 8, 15, 15)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


def test_which_convolutions_take_the_path(blocked, monkeypatch):
    monkeypatch.setattr(blocked, "AVX512", True)
    geo, f32 = _geometry(32, 32), np.dtype(np.float32)
    assert blocked.supports(f32, 64, 16, 16, (3, 3), geo)
    assert blocked.supports(f32, 64, 32, 32, (3, 3), geo)
    assert not blocked.supports(f32, 64, 32, 64, (3, 3), geo)   # Winograd's
    assert blocked.supports(f32, 1, 16, 16, (3, 3), geo)
    assert not blocked.supports(f32, 1, 16, 32, (3, 3), geo)    # a lone image: one thread
    assert not blocked.supports(np.dtype(np.float64), 64, 16, 16, (3, 3), geo)
    assert blocked.supports(f32, 64, 16, 16, (5, 5), geo)
    assert blocked.supports(f32, 8, 3, 64, (7, 7), geo._replace(stride=(2, 2)))
    assert blocked.supports(f32, 32, 64, 128, (4, 4), _geometry(16, 16, stride=2))
    assert blocked.supports(f32, 8, 128, 256, (4, 4), _geometry(32, 32, stride=2))
    assert not blocked.supports(f32, 32, 128, 256, (4, 4), _geometry(8, 8, stride=2))
    assert not blocked.supports(f32, 8, 256, 256, (4, 4), _geometry(32, 32, stride=2))
    assert not blocked.supports(f32, 1, 64, 128, (4, 4), _geometry(32, 32, stride=2))
    assert not blocked.supports(f32, 64, 16, 16, (9, 9), geo)
    assert not blocked.supports(f32, 64, 16, 16, (3, 5), geo)
    assert blocked.supports(f32, 64, 1, 16, (3, 3), _geometry(224, 224))
    assert not blocked.supports(f32, 64, 1024, 1, (3, 3), _geometry(224, 224))  # 200 MB
    assert not blocked.supports(f32, 64, 16, 16, (5, 5), geo._replace(dilation=(2, 2)))
    assert not blocked.weight_supports(f32, 16, 16, (5, 5), geo)
    assert blocked.weight_supports(f32, 3, 64, (4, 4), geo._replace(stride=(2, 2)))
    assert blocked.weight_supports(f32, 64, 3, (4, 4), geo._replace(stride=(2, 2)))
    assert not blocked.weight_supports(f32, 128, 256, (4, 4), geo._replace(stride=(2, 2)))
    assert not blocked.weight_supports(f32, 3, 64, (4, 4), geo)         # stride 1
    assert blocked.input_supports(f32, 32, 64, (3, 3), geo._replace(stride=(2, 2)))
    assert blocked.input_supports(f32, 64, 128, (4, 4), geo._replace(stride=(2, 2)))
    assert not blocked.input_supports(f32, 128, 256, (3, 3), geo._replace(stride=(2, 2)))
    assert not blocked.input_supports(f32, 3, 64, (4, 4), geo._replace(stride=(2, 2)))
    assert not blocked.input_supports(f32, 32, 64, (3, 3), geo)          # stride 1
    assert not blocked.input_supports(f32, 32, 64, (1, 1), geo._replace(stride=(2, 2)))
    strided = geo._replace(stride=(2, 2))
    assert blocked.supports(f32, 64, 64, 128, (3, 3), strided)          # no Winograd there
    assert not blocked.supports(f32, 64, 128, 128, (3, 3), strided)
    assert blocked.supports(f32, 1, 32, 64, (3, 3), strided)
    assert not blocked.supports(f32, 1, 64, 64, (3, 3), _geometry(12, 12, stride=2))
    # a lone image's small planes: far more channels (stride 1: outputs of 8 to 16 a
    # side; stride 2: at least 8)
    assert blocked.supports(f32, 1, 64, 64, (3, 3), _geometry(8, 8))
    assert blocked.supports(f32, 1, 256, 256, (3, 3), _geometry(14, 14))
    assert not blocked.supports(f32, 1, 512, 512, (3, 3), _geometry(14, 14))
    assert not blocked.supports(f32, 1, 256, 256, (3, 3), _geometry(7, 7))
    assert not blocked.supports(f32, 1, 64, 64, (3, 3), _geometry(28, 28))   # Winograd's
    assert not blocked.supports(f32, 2, 64, 64, (3, 3), _geometry(8, 8))
    assert blocked.supports(f32, 1, 64, 64, (3, 3), strided)
    assert blocked.supports(f32, 1, 128, 256, (3, 3), _geometry(28, 28, stride=2))
    assert not blocked.supports(f32, 1, 256, 512, (3, 3), _geometry(28, 28, stride=2))
    assert not blocked.supports(f32, 1, 256, 512, (3, 3), _geometry(14, 14, stride=2))
    assert not blocked.supports(f32, 64, 16, 16, (3, 3), geo._replace(stride=(3, 3)))
    assert not blocked.supports(f32, 64, 16, 16, (3, 3), strided._replace(dilation=(2, 2)))
    assert blocked.weight_supports(f32, 16, 16, (3, 3), geo)
    assert blocked.weight_supports(f32, 32, 32, (3, 3), _geometry(16, 16))
    assert blocked.weight_supports(f32, 3, 16, (3, 3), geo)
    assert not blocked.weight_supports(f32, 1, 32, (3, 3), geo)         # one input
    assert not blocked.weight_supports(f32, 16, 8, (3, 3), geo)         # lanes unfilled
    assert not blocked.weight_supports(f32, 32, 64, (3, 3), geo)        # many channels
    assert not blocked.weight_supports(f32, 16, 16, (3, 3), _geometry(8, 8))   # small
    assert blocked.weight_supports(f32, 32, 64, (3, 3), _geometry(16, 16, stride=2))
    assert blocked.weight_supports(f32, 3, 16, (3, 3), _geometry(64, 64, stride=2))
    assert not blocked.weight_supports(f32, 64, 64, (3, 3), _geometry(16, 16, stride=2))
    with native.use_numba(False):
        assert not blocked.supports(f32, 64, 16, 16, (3, 3), geo)
    monkeypatch.setattr(blocked, "AVX512", False)   # (AVX's 16 registers: sums spill)
    assert not blocked.supports(f32, 64, 16, 16, (3, 3), geo)
    assert not blocked.weight_supports(f32, 16, 16, (3, 3), geo)
    monkeypatch.setattr(blocked, "AVX512", True)
    monkeypatch.setattr(blocked, "ENABLED", False)
    assert not blocked.supports(f32, 64, 16, 16, (3, 3), geo)
    x, k, b = _case(8, 2, 16, 16, 32, 32)
    monkeypatch.setattr(blocked, "conv_forward", lambda *a: pytest.fail("called"))
    got = conv_arrays.conv_array(x, k, geo, b)
    np.testing.assert_allclose(got, _reference(x, k, geo, b), rtol=0, atol=1e-5)


def test_filters_are_read_in_their_own_layout(blocked):
    # whole blocks of output channels: the weight itself, reshaped (no copy); a partial
    # last block: a copy padded with zero filters
    k = np.arange(16 * 3 * 9, dtype=np.float32).reshape(16, 3, 3, 3)
    filters, bias = blocked.filters_in_blocks(k, None)
    assert filters.shape == (2, blocked.BLOCK, 3, 9) and np.shares_memory(filters, k)
    assert filters[1, 2, 1, 4] == k[blocked.BLOCK + 2, 1, 1, 1] and not bias.any()
    filters, bias = blocked.filters_in_blocks(k[:5], np.arange(5, dtype=np.float32))
    assert filters.shape == (1, blocked.BLOCK, 3, 9) and not np.shares_memory(filters, k)
    np.testing.assert_array_equal(filters[0, :5], k[:5].reshape(5, 3, 9))
    assert not filters[0, 5:].any() and list(bias) == [0, 1, 2, 3, 4, 0, 0, 0]


@pytest.mark.parametrize("c, o, side, stride", [(64, 64, 8, 1), (32, 48, 12, 1),
                                                (24, 40, 17, 2)])
def test_a_lone_image_of_many_channels(blocked, monkeypatch, c, o, side, stride):
    # a batch-1 layer of a small plane, through conv_array, on the blocked path
    monkeypatch.setattr(blocked, "AVX512", True)
    x, k, b = _case(c + o, 1, c, o, side, side)
    geo = _geometry(side, side, stride=stride)
    assert blocked.supports(np.dtype(np.float32), 1, c, o, (3, 3), geo)
    got = conv_arrays.conv_array(x, k, geo, b)
    exact = _reference(x, k, geo, b)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


def test_a_layer_of_many_channels_and_larger_outputs(blocked, monkeypatch):
    # 4x4 stride-2 filters of 64 -> 128 channels (DCGAN's) to 8x8 outputs: past the
    # general limit for other sides, through conv_array on the blocked path
    monkeypatch.setattr(blocked, "AVX512", True)
    x, k, b = _case(11, 2, 64, 128, 16, 16, side=4)
    geo = _geometry(16, 16, stride=2)
    assert blocked.supports(np.dtype(np.float32), 2, 64, 128, (4, 4), geo)
    got = conv_arrays.conv_array(x, k, geo, b)
    exact = _reference(x, k, geo, b)
    np.testing.assert_allclose(got, exact, rtol=0, atol=2e-6 * np.abs(exact).max())


def test_environment_switch(monkeypatch):
    """EMBER_NO_BLOCKED_CONV, read when the module is loaded (run afresh here)."""
    import importlib.util

    def fresh():
        spec = importlib.util.find_spec("ember.ops._native_blocked_conv")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    for value, expected in (("1", False), ("0", True), ("", True)):
        monkeypatch.setenv("EMBER_NO_BLOCKED_CONV", value)
        assert fresh().ENABLED is expected


def test_a_tile_transposed_in_registers():
    """`transpose_tile`: LANES rows from any offsets and steps become columns."""
    import numba

    from ember.ops._native_vectors import LANES, transpose_tile

    @numba.njit
    def transpose(source, target, source_at, source_step, target_at, target_step):
        transpose_tile(source, source_at, source_step, target, target_at, target_step)

    source = np.arange(LANES * 40, dtype=np.float32)
    target = np.zeros(LANES * 40, np.float32)
    transpose(source, target, 3, 40, 5, 21)
    rows = np.array([source[3 + r * 40:3 + r * 40 + LANES] for r in range(LANES)])
    columns = np.array([target[5 + k * 21:5 + k * 21 + LANES] for k in range(LANES)])
    np.testing.assert_array_equal(columns, rows.T)
    assert np.count_nonzero(target) == LANES * LANES - (rows == 0).sum()   # nothing else


def test_vector_lanes_follow_the_processor():
    from llvmlite import binding

    from ember.ops import _native_vectors

    avx512 = "+avx512f" in binding.get_host_cpu_features().flatten().split(",")
    assert _native_vectors.AVX512 is avx512
    assert _native_vectors.LANES == (16 if avx512 else 8)
