"""Transforms whose numbers must be torchvision's: antialiased Resize (tensor and PIL
paths), Grayscale's rounding, FiveCrop/TenCrop and GaussianBlur.

torchvision itself is not needed: its tensor path is PyTorch's ``interpolate`` /
``conv2d`` (checked against when PyTorch is installed), its PIL path is Pillow's, and
every value is also checked against an independent float64 implementation here.
"""

import math

import numpy as np
import pytest

import ember
from ember.vision import transforms as T
from ember.vision.transforms import functional as F


def pil():
    return pytest.importorskip("PIL.Image")


def chw(a: np.ndarray) -> ember.Tensor:
    return ember.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


def hwc(t: ember.Tensor) -> np.ndarray:
    return t.numpy().transpose(1, 2, 0)


# -- Resize with antialias -------------------------------------------------------------

def reference_resample(x: np.ndarray, size_out: int, mode: str) -> np.ndarray:
    """Antialiased resampling of the last axis, one output pixel at a time (Pillow's
    algorithm, written from its description): the filter stretched by the downscale
    factor, over the input pixels it reaches, weights normalized."""
    size_in = x.shape[-1]
    scale = size_in / size_out
    stretch = max(scale, 1.0)
    radius = (1.0 if mode == "bilinear" else 2.0) * stretch

    def kernel(t):
        t = abs(t)
        if mode == "bilinear":
            return max(0.0, 1.0 - t)
        if t < 1:
            return (1.5 * t - 2.5) * t * t + 1
        return ((-0.5 * t + 2.5) * t - 4) * t + 2 if t < 2 else 0.0

    out = np.zeros(x.shape[:-1] + (size_out,))
    for i in range(size_out):
        center = (i + 0.5) * scale
        first = max(int(center - radius + 0.5), 0)
        last = min(int(center + radius + 0.5), size_in)
        weights = [kernel((j + 0.5 - center) / stretch) for j in range(first, last)]
        total = sum(weights)
        for j, wgt in zip(range(first, last), weights):
            out[..., i] += x[..., j] * wgt / total
    return out


def reference_resize(x: np.ndarray, oh: int, ow: int, mode: str) -> np.ndarray:
    """(..., H, W) -> (..., oh, ow), columns then rows."""
    across = reference_resample(x, ow, mode)
    return np.swapaxes(reference_resample(np.swapaxes(across, -1, -2), oh, mode), -1, -2)


SIZES = [((13, 17), (5, 6)), ((8, 9), (8, 20)), ((20, 11), (7, 11)), ((6, 6), (13, 4)),
         ((5, 5), (2, 2)), ((31, 7), (3, 1))]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size_in,size_out", SIZES)
def test_antialiased_resize_against_a_float64_reference(mode, size_in, size_out):
    x = np.random.default_rng(0).random((2, 3) + size_in)
    out = F.resize(ember.tensor(x), list(size_out), interpolation=mode)
    np.testing.assert_allclose(out.numpy(), reference_resize(x, *size_out, mode), atol=1e-12)
    assert out.dtype is ember.float64


def test_antialias_by_hand_and_switched_off():
    row = ember.tensor([[[0.0, 2.0, 4.0, 6.0]]])
    # halving: the triangle is 2 pixels wide on each side; output 0 is centred at 1.0 and
    # weighs pixels 0, 1, 2 by 0.75, 0.75, 0.25 (normalized by 1.75)
    out = F.resize(row, [1, 2])
    np.testing.assert_allclose(out.numpy()[0, 0], [2.5 / 1.75, 8 / 1.75], rtol=1e-6)
    assert F.resize(row, [1, 2], antialias=False).tolist() == [[[1.0, 5.0]]]
    assert T.Resize([1, 2], antialias=False)(row).tolist() == [[[1.0, 5.0]]]
    # nearest ignores antialias; upscaling bilinear is the same either way
    near = F.resize(row, [1, 2], interpolation="nearest")
    assert near.tolist() == [[[0.0, 4.0]]]
    up = ember.tensor(np.random.default_rng(1).random((1, 4, 5)))
    np.testing.assert_allclose(F.resize(up, [9, 11]).numpy(),
                               F.resize(up, [9, 11], antialias=False).numpy(), atol=1e-6)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_tensor_resize_matches_pytorch_interpolate(mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    # NOTE: not ((31, 7), (3, 1)): PyTorch 2.13's antialiased kernel is off for an output
    # one pixel wide (Pillow agrees with us there: test_pillow_agrees_on_one_pixel_wide)
    for size_in, size_out in SIZES[:-1]:
        x = rng.random((2, 3) + size_in).astype(np.float32)
        ref = torch.nn.functional.interpolate(torch.from_numpy(x), size=size_out, mode=mode,
                                              antialias=True, align_corners=False)
        ours = F.resize(ember.from_numpy(x), list(size_out), interpolation=mode)
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), atol=2e-6)
        # uint8: computed in float and rounded (torchvision's float path)
        u8 = rng.integers(0, 256, (3,) + size_in, dtype=np.uint8)
        ref8 = torch.nn.functional.interpolate(torch.from_numpy(u8)[None].float(),
                                               size=size_out, mode=mode, antialias=True)
        ref8 = ref8.clamp(0, 255).round().to(torch.uint8)[0].numpy()
        ours8 = F.resize(ember.from_numpy(u8), list(size_out), interpolation=mode).numpy()
        assert np.abs(ours8.astype(int) - ref8).max() <= 1  # float32 there, float64 here
        assert (ours8 != ref8).mean() < 0.01


def test_pillow_agrees_on_one_pixel_wide():
    image_module = pil()
    x = np.random.default_rng(9).random((31, 7)).astype(np.float32)
    for mode, code in (("bilinear", 2), ("bicubic", 3)):
        theirs = np.asarray(image_module.fromarray(x, mode="F").resize((1, 3), resample=code))
        ours = F.resize(ember.from_numpy(x[None]), [3, 1], interpolation=mode).numpy()[0]
        np.testing.assert_allclose(ours, theirs, atol=1e-6)


def smooth_image(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    wave = np.sin(xx / w * rng.uniform(1, 5) + rng.uniform(0, 6)) * \
        np.cos(yy / h * rng.uniform(1, 5))
    planes = [127.5 + 120 * wave * s for s in (1.0, -0.7, 0.4)]
    return np.clip(np.rint(np.stack(planes, axis=-1)), 0, 255).astype(np.uint8)


def test_uint8_tensor_resize_matches_pillow_within_rounding():
    image_module = pil()
    rng = np.random.default_rng(3)
    for trial in range(40):
        h, w = (int(v) for v in rng.integers(2, 50, 2))
        oh, ow = (int(v) for v in rng.integers(1, 50, 2))
        noise = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        smooth = smooth_image(h, w, trial)
        # Pillow works in fixed point and rounds between its two passes: at most 1 apart.
        # (Bicubic overshoots on noise, where Pillow's clipping between the passes
        # matters, so it is compared on smooth images, as PyTorch's own uint8 kernel is.)
        for mode, code, img in (("bilinear", 2, noise), ("bilinear", 2, smooth),
                                ("bicubic", 3, smooth)):
            ours = hwc(F.resize(chw(img), [oh, ow], interpolation=mode))
            theirs = np.asarray(image_module.fromarray(img).resize((ow, oh), resample=code))
            assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= 1, (mode, h, w)


def test_pil_images_are_resized_by_pillow():
    image_module = pil()
    img = image_module.fromarray(np.random.default_rng(4).integers(0, 256, (9, 14, 3),
                                                                   dtype=np.uint8))
    for mode, code in (("bilinear", 2), ("bicubic", 3), ("nearest", 0), ("lanczos", 1),
                       ("box", 4), ("hamming", 5)):
        out = F.resize(img, [5, 6], interpolation=T.InterpolationMode(mode))
        assert out.size == (6, 5) and out.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(out),
                                      np.asarray(img.resize((6, 5), resample=code)))
    assert T.Resize(7)(img).size == (10, 7)                     # smaller edge 9 -> 7
    assert F.resize(img, [9, 14]) is img                         # nothing to do
    with pytest.raises(NotImplementedError, match="lanczos"):   # tensors: not in ember
        F.resize(ember.rand(3, 9, 14), [5, 6], interpolation=T.InterpolationMode.LANCZOS)


# -- Grayscale ---------------------------------------------------------------------------

def test_grayscale_truncates_like_torchvision():
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]], np.uint8)
    # 0.2989*255 = 76.22, 0.587*255 = 149.69, 0.114*255 = 29.07, 18.149: truncated
    assert F.rgb_to_grayscale(chw(rgb)).flatten().tolist() == [76, 149, 29, 18]
    assert T.Grayscale()(rgb).tolist() == [[[76], [149], [29], [18]]]  # (H, W, 1)
    assert T.Grayscale(3)(rgb)[0, 1].tolist() == [149] * 3
    floats = F.rgb_to_grayscale(chw(rgb).float() / 255)
    np.testing.assert_allclose(floats.numpy()[0, 0], [0.2989, 0.587, 0.114, 18.149 / 255],
                               rtol=1e-6)


def test_grayscale_matches_pytorch_arithmetic_bit_for_bit():
    torch = pytest.importorskip("torch")
    img = np.random.default_rng(5).integers(0, 256, (3, 64, 256), dtype=np.uint8)
    r, g, b = torch.from_numpy(img).unbind(0)
    expected = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).to(torch.uint8)
    ours = F.rgb_to_grayscale(ember.from_numpy(img))
    np.testing.assert_array_equal(ours.numpy()[0], expected.numpy())
    as_float = img.astype(np.float32) / 255
    r, g, b = torch.from_numpy(as_float).unbind(0)
    expected = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114)
    np.testing.assert_array_equal(F.rgb_to_grayscale(ember.from_numpy(as_float)).numpy()[0],
                                  expected.numpy())


def test_grayscale_of_pil_images_is_pillows():
    image_module = pil()
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]], np.uint8)
    img = image_module.fromarray(rgb)
    gray = T.Grayscale()(img)
    assert gray.mode == "L" and np.asarray(gray).tolist() == [[76, 150, 29, 18]]  # rounded
    three = T.Grayscale(3)(img)
    assert three.mode == "RGB" and np.asarray(three)[0, 1].tolist() == [150] * 3


# -- colour adjustments ------------------------------------------------------------------

def torchvision_blend(torch, image, other, ratio):
    """torchvision's tensor blend, written with PyTorch ops from its documented behaviour:
    ``ratio * image + (1 - ratio) * other`` in float, clamped, truncated for integers."""
    out = image.mul(ratio).add_(other, alpha=1.0 - ratio).clamp_(0, 255)
    return out if image.is_floating_point() else out.to(image.dtype)


def torchvision_gray(image):
    r, g, b = image.unbind(dim=-3)
    return r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).unsqueeze(dim=-3)


def test_color_adjustments_of_uint8_tensors_match_torchvision_arithmetic():
    torch = pytest.importorskip("torch")
    img = np.random.default_rng(10).integers(0, 256, (3, 32, 48), dtype=np.uint8)
    theirs = torch.from_numpy(img)
    ours = ember.from_numpy(img)
    for factor in (0.0, 0.3, 0.5, 1.0, 1.7):
        expected = theirs.mul(factor).clamp_(0, 255).to(torch.uint8)
        np.testing.assert_array_equal(F.adjust_brightness(ours, factor).numpy(),
                                      expected.numpy())
        gray = torchvision_gray(theirs).floor_()
        expected = torchvision_blend(torch, theirs, gray, factor)
        np.testing.assert_array_equal(F.adjust_saturation(ours, factor).numpy(),
                                      expected.numpy())
        mean = torch.mean(gray, dim=(-3, -2, -1), keepdim=True)
        expected = torchvision_blend(torch, theirs, mean, factor).numpy()
        out = F.adjust_contrast(ours, factor).numpy()
        # the mean is summed in another order: a level apart at most, rarely
        assert np.abs(out.astype(int) - expected).max() <= 1
        assert (out != expected).mean() < 0.01


def test_color_adjustments_of_pil_images_are_pillows():
    image_module = pil()
    from PIL import ImageEnhance

    arr = np.random.default_rng(11).integers(0, 256, (6, 7, 3), dtype=np.uint8)
    img = image_module.fromarray(arr)
    for fn, kind in ((F.adjust_brightness, "Brightness"), (F.adjust_contrast, "Contrast"),
                     (F.adjust_saturation, "Color")):
        out = fn(img, 0.6)
        assert out.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(out),
                                      np.asarray(getattr(ImageEnhance, kind)(img).enhance(0.6)))
    shifted = F.adjust_hue(img, 0.25)
    h, s, v = img.convert("HSV").split()
    expected_h = (np.asarray(h).astype(int) + 63) % 256               # int(0.25 * 255) = 63
    got_h, got_s, _ = (np.asarray(c) for c in shifted.convert("HSV").split())
    assert shifted.mode == "RGB" and shifted.size == img.size
    # back through RGB: the hue plane comes back within a few levels
    assert np.abs(((got_h.astype(int) - expected_h + 128) % 256) - 128)[got_s > 64].max() <= 3
    gray = image_module.fromarray(arr[:, :, 0])
    assert F.adjust_hue(gray, 0.25) is gray


def test_hue_of_uint8_tensors_scales_back_like_torchvision():
    red = ember.from_numpy(np.array([[[255]], [[0]], [[0]]], np.uint8))
    assert F.adjust_hue(red, 1 / 3).flatten().tolist() == [0, 255, 0]
    half = ember.from_numpy(np.array([[[128]], [[0]], [[0]]], np.uint8))
    # 128 / 255 * 255.999 = 128.5: truncated to 128 (rounding would give 129)
    assert F.adjust_hue(half, 1 / 3).flatten().tolist() == [0, 128, 0]


# -- rotate and affine of PIL images ---------------------------------------------------

def torchvision_inverse_affine(center, angle, translate, scale, shear):
    """The inverse map torchvision hands to Pillow, from its documented formula: rotation
    R(angle), shears (sx, sy) and scale about `center`, then the translation."""
    rot, sx, sy = (math.radians(v) for v in (angle, *shear))
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [v / scale for v in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    return m


def test_pil_affine_is_pillows_transform_with_torchvisions_matrix():
    image_module = pil()
    arr = np.random.default_rng(12).integers(0, 256, (21, 30, 3), dtype=np.uint8)
    img = image_module.fromarray(arr)
    method = getattr(image_module, "Transform", image_module).AFFINE
    for angle, translate, scale, shear, center in ((30, [3, -2], 1.1, [10, 5], None),
                                                   (-45, [0, 0], 0.8, [0, 0], [10, 15]),
                                                   (12, [1, 4], 1.0, [-7, 0], None)):
        ours = F.affine(img, angle, translate, scale, shear, interpolation="bilinear",
                        fill=[1, 2, 3], center=center)
        matrix = torchvision_inverse_affine(center or (15.0, 10.5), angle, translate, scale,
                                            shear)
        theirs = img.transform(img.size, method, matrix, 2, fillcolor=(1, 2, 3))
        assert np.abs(np.asarray(ours).astype(int) - np.asarray(theirs)).max() <= 1


def test_pil_rotate_is_pillows_and_agrees_with_the_tensor_path():
    image_module = pil()
    img = np.zeros((40, 50), np.uint8)
    img[5, 8] = img[30, 40] = 255
    pim = image_module.fromarray(img)
    for kwargs in ({"angle": 90, "center": [20, 12]}, {"angle": 180, "center": [20, 12]},
                   {"angle": 20, "expand": True}, {"angle": 135, "expand": True},
                   {"angle": 33, "fill": 7}):
        ours = F.rotate(pim, **kwargs)
        pil_kwargs = {k: tuple(v) if k == "center" else v for k, v in kwargs.items()
                      if k != "fill"}
        theirs = pim.rotate(resample=0, fillcolor=kwargs.get("fill", 0), **pil_kwargs)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
        # the same conventions (centre, direction, expansion) as the array path
        tensor_path = F.rotate(img, **kwargs)
        assert tensor_path.shape == np.asarray(ours).shape
        assert (np.argwhere(tensor_path == 255).tolist()
                == np.argwhere(np.asarray(ours) == 255).tolist())
    rgb = image_module.fromarray(np.zeros((4, 4, 3), np.uint8))
    assert np.asarray(F.rotate(rgb, 45, fill=[9]))[0, 0].tolist() == [9, 9, 9]
    with pytest.raises(ValueError, match="number of elements in 'fill'"):
        F.rotate(rgb, 45, fill=[1, 2])
    with pytest.raises(ValueError, match="nearest, bilinear and bicubic"):
        F.rotate(rgb, 45, interpolation=T.InterpolationMode.LANCZOS)


# -- FiveCrop and TenCrop ----------------------------------------------------------------

A5 = np.arange(25, dtype=np.uint8).reshape(5, 5)


def test_five_crop():
    tl, tr, bl, br, center = F.five_crop(A5, 2)
    assert tl.tolist() == [[0, 1], [5, 6]] and tr.tolist() == [[3, 4], [8, 9]]
    assert bl.tolist() == [[15, 16], [20, 21]] and br.tolist() == [[18, 19], [23, 24]]
    assert center.tolist() == [[12, 13], [17, 18]]
    crops = T.FiveCrop((2, 3))(ember.from_numpy(A5[None].copy()))
    assert len(crops) == 5 and all(tuple(c.shape) == (1, 2, 3) for c in crops)
    assert crops[1].tolist() == [[[2, 3, 4], [7, 8, 9]]]
    assert repr(T.FiveCrop(2)) == "FiveCrop(size=(2, 2))"
    with pytest.raises(ValueError, match="bigger than input size"):
        F.five_crop(A5, 6)


def test_ten_crop():
    crops = T.TenCrop(2)(A5)
    assert len(crops) == 10
    assert crops[5].tolist() == [[4, 3], [9, 8]]          # the mirrored top-left corner
    assert crops[9].tolist() == [[12, 11], [17, 16]]      # centre of the mirror image
    flipped = T.TenCrop(2, vertical_flip=True)(A5)
    assert flipped[5].tolist() == [[20, 21], [15, 16]]
    assert repr(T.TenCrop(2, True)) == "TenCrop(size=(2, 2), vertical_flip=True)"
    image_module = pil()
    pil_crops = T.TenCrop(2)(image_module.fromarray(A5))
    assert [np.asarray(c).tolist() for c in pil_crops] == [c.tolist() for c in crops]


# -- GaussianBlur ------------------------------------------------------------------------

def gaussian(size: int, sigma: float) -> np.ndarray:
    x = np.arange(size) - (size - 1) / 2
    k = np.exp(-x ** 2 / (2 * sigma ** 2))
    return k / k.sum()


def test_gaussian_blur_of_an_impulse_is_the_kernel():
    img = np.zeros((1, 11, 13))
    img[0, 5, 6] = 1.0
    out = F.gaussian_blur(ember.tensor(img), [5, 3], [1.5, 0.7])
    expected = np.zeros((11, 13))
    expected[4:7, 4:9] = np.outer(gaussian(3, 0.7), gaussian(5, 1.5))  # (ky, kx)
    np.testing.assert_allclose(out.numpy()[0], expected, atol=1e-12)
    # the default sigma is 0.15 * k + 0.35
    np.testing.assert_allclose(F.gaussian_blur(ember.tensor(img), 5).numpy()[0, 3:8, 4:9],
                               np.outer(gaussian(5, 1.1), gaussian(5, 1.1)), atol=1e-12)


def test_gaussian_blur_reflects_at_the_borders_and_rounds_integers():
    row = np.array([[10, 0, 0, 0, 200]], np.uint8)
    k = gaussian(3, 1.0)
    out = F.gaussian_blur(row, [3, 1], 1.0)
    padded = np.array([0, 10, 0, 0, 0, 200, 0], float)      # reflect: the edge not repeated
    expected = np.rint([padded[i:i + 3] @ k for i in range(5)])
    assert out.tolist() == [expected.astype(int).tolist()]
    with pytest.raises(RuntimeError, match="less than the image size"):
        F.gaussian_blur(np.zeros((2, 2), np.uint8), 5)


def test_gaussian_blur_matches_pytorch_conv2d():
    torch = pytest.importorskip("torch")
    img = np.random.default_rng(6).random((2, 3, 12, 10)).astype(np.float32)
    kx, ky, sx, sy = 5, 7, 1.3, 2.1
    kernel = np.outer(gaussian(ky, sy), gaussian(kx, sx)).astype(np.float32)
    padded = torch.nn.functional.pad(torch.from_numpy(img), [kx // 2, kx // 2, ky // 2,
                                                             ky // 2], mode="reflect")
    weight = torch.from_numpy(kernel).expand(3, 1, ky, kx)
    expected = torch.nn.functional.conv2d(padded, weight, groups=3).numpy()
    out = F.gaussian_blur(ember.from_numpy(img), [kx, ky], [sx, sy]).numpy()
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_gaussian_blur_transform_draws_sigma_and_checks_arguments():
    img = ember.rand(3, 9, 9)
    ember.manual_seed(7)
    sigma = T.GaussianBlur.get_params(0.5, 1.5)
    assert 0.5 <= sigma <= 1.5
    ember.manual_seed(7)
    out = T.GaussianBlur(5, sigma=(0.5, 1.5))(img)
    np.testing.assert_allclose(out.numpy(), F.gaussian_blur(img, 5, sigma).numpy())
    fixed = T.GaussianBlur((3, 5), sigma=0.8)
    assert fixed.sigma == (0.8, 0.8) and fixed.kernel_size == (3, 5)
    assert repr(fixed) == "GaussianBlur(kernel_size=(3, 5), sigma=(0.8, 0.8))"
    for bad in ({"kernel_size": 4}, {"kernel_size": 0}, {"kernel_size": 3, "sigma": 0},
                {"kernel_size": 3, "sigma": (2.0, 1.0)}, {"kernel_size": 3, "sigma": (1, 2, 3)}):
        with pytest.raises(ValueError):
            T.GaussianBlur(**bad)
    with pytest.raises(ValueError, match="odd and positive"):
        F.gaussian_blur(img, [3, 4])
    with pytest.raises(ValueError, match="sigma should have positive values"):
        F.gaussian_blur(img, 3, -1.0)
    with pytest.raises(TypeError, match="kernel_size should be int"):
        F.gaussian_blur(img, 3.0)


def test_gaussian_blur_of_a_pil_image_keeps_its_mode():
    image_module = pil()
    arr = np.random.default_rng(8).integers(0, 256, (8, 9, 3), dtype=np.uint8)
    out = F.gaussian_blur(image_module.fromarray(arr), 3, 1.0)
    assert out.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(out), F.gaussian_blur(arr, 3, 1.0))
    assert math.isclose(float(np.asarray(out).mean()), float(arr.mean()), rel_tol=0.05)
