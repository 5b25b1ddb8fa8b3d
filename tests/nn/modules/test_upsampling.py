"""Upsample / UpsamplingNearest2d / UpsamplingBilinear2d, Fold / Unfold, PixelShuffle /
PixelUnshuffle, CosineSimilarity / PairwiseDistance, and the F.interpolate options the op
table does not cover (scale_factor, recompute_scale_factor, errors)."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck
from ember.testing import assert_close
from tests.ops.db_resample import ref_interpolate


def test_reprs_and_attributes():
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.Upsample(size=3, mode="bilinear")) == "Upsample(size=3, mode='bilinear')"
    assert repr(nn.UpsamplingNearest2d(scale_factor=2)) == (
        "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')")
    m = nn.UpsamplingBilinear2d(size=4)
    assert repr(m) == "UpsamplingBilinear2d(size=4, mode='bilinear')"
    assert m.align_corners is True and m.recompute_scale_factor is None
    assert repr(nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
    assert repr(nn.Unfold(2, padding=1)) == "Unfold(kernel_size=2, dilation=1, padding=1, stride=1)"
    assert repr(nn.Fold((4, 5), 2)) == (
        "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)")


def test_upsample_modules():
    x = ember.randn(1, 2, 3, 4, dtype=ember.float64)
    assert_close(nn.Upsample(scale_factor=2)(x), ref_interpolate(x.numpy(), (6, 8)))
    assert_close(nn.UpsamplingBilinear2d(size=(5, 6))(x),
                 ref_interpolate(x.numpy(), (5, 6), "bilinear", True))
    assert_close(nn.UpsamplingNearest2d(size=(6, 8))(x), ref_interpolate(x.numpy(), (6, 8)))


def test_scale_factor_without_recompute_uses_the_given_scale():
    # 5 * 1.7 -> 8 outputs; the source step is 1 / 1.7, not 5 / 8
    x = ember.arange(5.0).reshape(1, 1, 5)
    out = F.interpolate(x, scale_factor=1.7, mode="linear")
    src = np.maximum((np.arange(8) + 0.5) / 1.7 - 0.5, 0)
    assert_close(out.numpy().ravel(), np.minimum(src, 4), atol=1e-6, rtol=1e-6)
    re = F.interpolate(x, scale_factor=1.7, mode="linear", recompute_scale_factor=True)
    assert_close(re, ref_interpolate(x.numpy().astype(np.float64), (8,), "linear"))


def test_interpolate_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful"):
        F.interpolate(x, size=3, mode="bilinear", recompute_scale_factor=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(x, size=3, antialias=True)
    with pytest.raises(ValueError, match="same number of spatial dimensions"):
        F.interpolate(x, size=(3, 4, 5))
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(x, scale_factor=0.1)
    with pytest.raises(NotImplementedError, match="Only 3D, 4D and 5D input"):
        F.interpolate(ember.randn(5, 5), size=3)


def test_deprecated_upsample_functions_warn():
    x = ember.randn(1, 1, 2, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert F.upsample(x, scale_factor=2).shape == (1, 1, 4, 4)
        assert F.upsample_bilinear(x, size=3).shape == (1, 1, 3, 3)
        assert F.upsample_nearest(x, size=3).shape == (1, 1, 3, 3)
    assert sum("deprecated" in str(w.message) for w in caught) == 3


def test_fold_unfold_modules_and_adjointness():
    x = ember.randn(2, 3, 5, 6, dtype=ember.float64)
    cols = nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=2)(x)
    back = nn.Fold((5, 6), (2, 3), dilation=(1, 2), padding=1, stride=2)(cols)
    c = ember.randn(*cols.shape, dtype=ember.float64)
    lhs = float((cols * c).sum())
    rhs = float((x * F.fold(c, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=2)).sum())
    assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(lhs))
    assert back.shape == x.shape
    assert F.unfold(ember.randn(3, 4, 4), 2).shape == (12, 9)       # unbatched
    with pytest.raises(RuntimeError, match="calculated shape of the array of sliding blocks"):
        F.unfold(ember.randn(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="match the calculated number of sliding blocks"):
        F.fold(ember.randn(1, 4, 5), (3, 3), 2)


def test_pixel_shuffle_roundtrip_and_errors():
    x = ember.randn(2, 3, 8, 4, 6, dtype=ember.float64, requires_grad=True)
    up = nn.PixelShuffle(2)(x)
    assert up.shape == (2, 3, 2, 8, 12)
    assert_close(nn.PixelUnshuffle(2)(up), x)
    assert gradcheck(lambda t: F.pixel_shuffle(t, 2), (x[:1, :1],))
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(ember.randn(1, 3, 2, 2), 2)
    with pytest.raises(RuntimeError, match="expects height to be divisible by downscale_factor"):
        F.pixel_unshuffle(ember.randn(1, 3, 3, 4), 2)


def test_distance_modules():
    a, b = ember.randn(4, 5), ember.randn(4, 5)
    assert_close(nn.CosineSimilarity(dim=1)(a, b), F.cosine_similarity(a, b))
    assert_close(nn.PairwiseDistance(p=1.0)(a, b), F.pairwise_distance(a, b, p=1.0))
    assert nn.PairwiseDistance(keepdim=True)(a, b).shape == (4, 1)


def test_one_hot_errors():
    with pytest.raises(RuntimeError, match="only applicable to index tensor of type LongTensor"):
        F.one_hot(ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(ember.tensor([1, -2]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(ember.tensor([1, 5]), 3)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
        F.one_hot(ember.tensor([], dtype=ember.int64))
    assert F.one_hot(ember.tensor([], dtype=ember.int64), 3).shape == (0, 3)


def test_grid_sample_and_affine_grid_errors():
    x = ember.randn(2, 3, 5, 6)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or"):
        F.grid_sample(x, ember.rand(2, 4, 7, 2), mode="foo", align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x, ember.rand(3, 4, 7, 2), align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, ember.rand(2, 4, 7, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(ember.randn(2, 3, 4, 5, 6), ember.rand(2, 4, 7, 2, 3), mode="bicubic",
                      align_corners=False)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(x, ember.rand(2, 4, 7, 2))
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape "
                                         "Nx2x3"):
        F.affine_grid(ember.randn(2, 3, 3), (2, 3, 5, 6), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(ember.randn(2, 2, 3), (2, 3, 5), align_corners=False)


def test_identity_affine_grid_reproduces_the_input():
    x = ember.randn(1, 2, 4, 5, dtype=ember.float64)
    theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=ember.float64)
    for corners in (False, True):
        grid = F.affine_grid(theta, (1, 2, 4, 5), align_corners=corners)
        assert_close(F.grid_sample(x, grid, align_corners=corners), x)


def test_channel_shuffle():
    x = ember.arange(12.0).reshape(1, 6, 2, 1)
    out = nn.ChannelShuffle(3)(x)
    assert out[0, :, 0, 0].tolist() == [0.0, 4.0, 8.0, 2.0, 6.0, 10.0]
    assert repr(nn.ChannelShuffle(3)) == "ChannelShuffle(groups=3)"
    with pytest.raises(RuntimeError, match="divisible by groups. Got 6 channels and 4 groups"):
        nn.functional.channel_shuffle(x, 4)
    with pytest.raises(RuntimeError, match="expects input with > 2 dims"):
        nn.functional.channel_shuffle(ember.ones(6), 2)


@pytest.mark.parametrize("mode, kw", [("nearest", {}), ("nearest-exact", {}),
                                      ("bilinear", {"align_corners": False}),
                                      ("bilinear", {"align_corners": True}),
                                      ("bicubic", {}), ("area", {})])
def test_axis_map_kernels_and_the_numpy_path_agree(mode, kw):
    """Resampling maps run through numba kernels (ops/_native_axis_map.py) or NumPy's
    takes and sorted sums: the same values and gradients, along every axis."""
    from ember.ops import _native as native

    x0 = np.random.default_rng(0).standard_normal((2, 3, 7, 9))
    g0 = np.random.default_rng(1).standard_normal((2, 3, 12, 20))
    results = []
    for flag in (True, False):
        with native.use_numba(flag):
            x = ember.tensor(x0, requires_grad=True)
            y = F.interpolate(x, size=(12, 20), mode=mode, **kw)
            y.backward(ember.tensor(g0))
        results.append((y.detach().numpy(), x.grad.numpy()))
    for kernels, numpy_path in zip(*results):
        np.testing.assert_allclose(kernels, numpy_path, rtol=1e-12, atol=1e-12)


def test_padding_maps_agree_on_both_paths():
    from ember.ops import _native as native

    x0 = np.random.default_rng(2).standard_normal((2, 3, 6, 5, 4)).astype(np.float32)
    results = []
    for flag in (True, False):
        with native.use_numba(flag):
            x = ember.tensor(x0, requires_grad=True)
            y = F.pad(x, (1, 2, 3, 1, 2, 2), mode="reflect") + F.pad(x, (2, 0, 1, 1, 0, 3),
                                                                      mode="replicate").sum()
            y.backward(ember.ones_like(y))
        results.append((y.detach().numpy(), x.grad.numpy()))
    for kernels, numpy_path in zip(*results):
        np.testing.assert_allclose(kernels, numpy_path, rtol=1e-5, atol=1e-5)


def test_resampling_keeps_non_finite_values_to_their_own_outputs():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 2], x[0, 0, 3, 0] = np.inf, np.nan
    y = F.interpolate(ember.tensor(x), scale_factor=2).numpy()
    np.testing.assert_array_equal(np.isinf(y), np.kron(np.isinf(x), np.ones((2, 2))) > 0)
    np.testing.assert_array_equal(np.isnan(y), np.kron(np.isnan(x), np.ones((2, 2))) > 0)
