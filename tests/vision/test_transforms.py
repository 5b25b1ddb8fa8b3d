"""Every transform against values worked out by hand on small images, on NumPy arrays,
tensors and (when Pillow is installed) PIL images."""

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset
from ember.vision import datasets
from ember.vision import transforms as T
from ember.vision.transforms import functional as F

A3 = np.arange(9, dtype=np.uint8).reshape(3, 3)      # [[0 1 2] [3 4 5] [6 7 8]]
A4 = np.arange(16, dtype=np.uint8).reshape(4, 4)


def pil():
    return pytest.importorskip("PIL.Image")


def as_tensor(a: np.ndarray) -> ember.Tensor:
    """(H, W) or (H, W, C) array -> (C, H, W) tensor of the same values."""
    return ember.from_numpy(np.ascontiguousarray(a[None] if a.ndim == 2 else
                                                 a.transpose(2, 0, 1)))


def values(img) -> np.ndarray:
    """Any image back to an (H, W[, C]) array."""
    if isinstance(img, ember.Tensor):
        a = img.numpy()
        return a[0] if a.shape[0] == 1 else a.transpose(1, 2, 0)
    return np.asarray(img)


def each_kind(array: np.ndarray):
    """The same image as a NumPy array, a tensor and (if Pillow is there) a PIL image."""
    kinds = [array, as_tensor(array)]
    try:
        from PIL import Image
        kinds.append(Image.fromarray(array))
    except ImportError:
        pass
    return kinds


# -- conversions -------------------------------------------------------------------------

def test_to_tensor():
    rgb = np.array([[[0, 51, 255], [102, 153, 204]]], dtype=np.uint8)   # 1x2 RGB
    t = T.ToTensor()(rgb)
    assert tuple(t.shape) == (3, 1, 2) and t.dtype is ember.float32
    np.testing.assert_allclose(t.numpy()[:, 0, :], [[0, 0.4], [0.2, 0.6], [1, 0.8]], rtol=1e-6)
    floats = np.array([[2.5, -1.0]], dtype=np.float64)
    f = T.ToTensor()(floats)                           # not uint8: values kept
    assert f.dtype is ember.float64 and f.numpy().tolist() == [[[2.5, -1.0]]]
    ember.set_default_dtype(ember.float64)
    assert T.ToTensor()(rgb).dtype is ember.float64
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([1, 2])


def test_pil_conversions():
    image_module = pil()
    gray = image_module.fromarray(A3)
    np.testing.assert_allclose(T.ToTensor()(gray).numpy()[0], A3 / 255, rtol=1e-6)
    p = T.PILToTensor()(gray)
    assert p.dtype is ember.uint8 and p.numpy()[0].tolist() == A3.tolist()
    back = T.ToPILImage()(ember.tensor([[[0.0, 0.5], [1.0, 0.999]]]))
    assert back.mode == "L" and np.asarray(back).tolist() == [[0, 127], [255, 254]]
    rgb = T.ToPILImage()(np.zeros((2, 3, 3), np.uint8))
    assert rgb.mode == "RGB" and rgb.size == (3, 2)
    assert T.ToPILImage()(np.zeros((2, 2), np.float32)).mode == "F"
    assert T.ToPILImage()(as_tensor(np.zeros((2, 2, 4), np.uint8))).mode == "RGBA"


def test_convert_image_dtype():
    u8 = ember.tensor([0, 128, 255], dtype=ember.uint8)
    np.testing.assert_allclose(F.convert_image_dtype(u8, ember.float32).numpy(),
                               [0, 128 / 255, 1], rtol=1e-6)
    f = ember.tensor([0.0, 0.5, 1.0])
    # scale by 255.999 and truncate: 0.5 -> 127, 1.0 -> 255
    assert T.ConvertImageDtype(ember.uint8)(f).tolist() == [0, 127, 255]
    assert F.convert_image_dtype(u8, ember.int16).tolist() == [0, 128 * 128, 255 * 128]
    assert F.convert_image_dtype(ember.tensor([32767, 16384], dtype=ember.int16),
                                 ember.uint8).tolist() == [255, 128]  # drop 7 low bits
    assert F.convert_image_dtype(f, ember.float64).dtype is ember.float64
    with pytest.raises(RuntimeError, match="cannot be performed safely"):
        F.convert_image_dtype(f, ember.int32)


def test_normalize():
    t = ember.tensor([[[1.0, 2.0]], [[3.0, 5.0]]])    # C=2, H=1, W=2
    out = T.Normalize([1.0, 1.0], [0.5, 2.0])(t)
    assert out.tolist() == [[[0.0, 2.0]], [[1.0, 2.0]]]
    assert t.tolist() == [[[1.0, 2.0]], [[3.0, 5.0]]]  # untouched
    same = F.normalize(t, [1.0, 1.0], [0.5, 2.0], inplace=True)
    assert same is t and t.tolist() == [[[0.0, 2.0]], [[1.0, 2.0]]]
    batch = F.normalize(ember.ones(2, 2, 1, 1), [1.0, 0.0], [1.0, 0.5])
    assert batch.flatten().tolist() == [0.0, 2.0, 0.0, 2.0]
    with pytest.raises(TypeError, match="float tensor"):
        F.normalize(ember.ones(1, 2, 2, dtype=ember.uint8), [0], [1])
    with pytest.raises(ValueError, match="std evaluated to zero"):
        F.normalize(ember.ones(1, 2, 2), [0], [0])
    assert repr(T.Normalize([0.5], [0.25])) == "Normalize(mean=[0.5], std=[0.25])"


# -- geometry ----------------------------------------------------------------------------

def test_resize_bilinear_by_hand():
    # 1-D along each axis: [a0, a1] -> [a0, (3 a0 + a1)/4, (a0 + 3 a1)/4, a1]
    t = ember.tensor([[[0.0, 4.0], [8.0, 12.0]]])
    out = T.Resize([4, 4])(t)
    expected = np.add.outer([0.0, 2.0, 6.0, 8.0], [0.0, 1.0, 3.0, 4.0])
    np.testing.assert_allclose(out.numpy()[0], expected)
    u8 = F.resize(np.array([[0, 4], [8, 12]], np.uint8), [4, 4])
    np.testing.assert_array_equal(u8, expected.astype(np.uint8))
    down = F.resize(ember.tensor([[[0.0, 2.0, 4.0, 6.0]]]), [1, 2], antialias=False)
    assert down.tolist() == [[[1.0, 5.0]]]             # reads positions 0.5 and 2.5
    # (antialiased, the default, in test_transforms_parity.py)


def test_resize_sizes_and_modes():
    img = np.zeros((4, 6), np.uint8)
    assert F.resize(img, 2).shape == (2, 3)            # smaller edge 4 -> 2
    assert F.resize(np.zeros((6, 4), np.uint8), [2]).shape == (3, 2)
    assert F.resize(np.zeros((4, 8), np.uint8), 2, max_size=3).shape == (1, 3)
    with pytest.raises(ValueError, match="max_size"):
        F.resize(img, 4, max_size=3)
    near = F.resize(np.array([[1, 2], [3, 4]], np.uint8), [4, 4],
                    interpolation=T.InterpolationMode.NEAREST)
    np.testing.assert_array_equal(near, np.kron([[1, 2], [3, 4]], np.ones((2, 2), np.uint8)))
    cubic = F.resize(np.full((3, 3), 7.0, np.float32), [5, 5], interpolation="bicubic")
    np.testing.assert_allclose(cubic, 7.0, rtol=1e-6)   # cubic weights sum to one
    with pytest.raises(NotImplementedError, match="lanczos"):
        F.resize(img, 2, interpolation=T.InterpolationMode.LANCZOS)


def test_center_crop():
    for img in each_kind(A4):
        assert values(T.CenterCrop(2)(img)).tolist() == [[5, 6], [9, 10]]
    five = np.arange(25, dtype=np.uint8).reshape(5, 5)
    assert F.center_crop(five, 2).tolist() == [[12, 13], [17, 18]]   # top = round(1.5) = 2
    padded = F.center_crop(np.array([[1, 2]], np.uint8), [3, 4])
    assert padded.tolist() == [[0, 0, 0, 0], [0, 1, 2, 0], [0, 0, 0, 0]]


def test_pad_modes():
    row = np.array([[1, 2, 3]], dtype=np.uint8)
    assert F.pad(row, [2, 0], padding_mode="reflect").tolist() == [[3, 2, 1, 2, 3, 2, 1]]
    assert F.pad(row, [2, 0], padding_mode="symmetric").tolist() == [[2, 1, 1, 2, 3, 3, 2]]
    assert F.pad(row, [2, 0], padding_mode="edge").tolist() == [[1, 1, 1, 2, 3, 3, 3]]
    assert T.Pad([1, 0, 0, 1], fill=9)(row).tolist() == [[9, 1, 2, 3], [9, 9, 9, 9]]
    rgb = T.Pad(1, fill=(1, 2, 3))(np.zeros((1, 1, 3), np.uint8))
    assert rgb.shape == (3, 3, 3) and rgb[0, 0].tolist() == [1, 2, 3]
    assert rgb[1, 1].tolist() == [0, 0, 0]
    t = F.pad(ember.tensor([[[1.0, 2.0]]]), [-1, 0, 0, 0])   # negative: crop
    assert t.tolist() == [[[2.0]]]
    with pytest.raises(ValueError, match="Padding mode"):
        T.Pad(1, padding_mode="wrap")


def test_random_crop():
    ember.manual_seed(3)
    i, j, h, w = T.RandomCrop.get_params(A4, (2, 3))
    assert (h, w) == (2, 3) and 0 <= i <= 2 and 0 <= j <= 1
    ember.manual_seed(3)
    np.testing.assert_array_equal(T.RandomCrop((2, 3))(A4), A4[i:i + 2, j:j + 3])
    # padded by 1 and cropped to the padded size: exactly the padded image
    out = T.RandomCrop(5, padding=1, fill=7)(A3)
    assert out[0].tolist() == [7] * 5 and out[1].tolist() == [7, 0, 1, 2, 7]
    grown = T.RandomCrop((3, 5), pad_if_needed=True, padding_mode="edge")(A3)
    assert grown.shape == (3, 5) and grown[:, 0].tolist() == grown[:, 1].tolist()
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop(4)(A3)


def test_random_resized_crop():
    ember.manual_seed(0)
    out = T.RandomResizedCrop(4, scale=(1.0, 1.0), ratio=(1.0, 1.0))(A4)
    np.testing.assert_array_equal(out, A4)             # the whole image, same size
    ember.manual_seed(0)
    small = T.RandomResizedCrop((2, 3))(ember.rand(3, 10, 12))
    assert tuple(small.shape) == (3, 2, 3)
    # impossible ratios: the central crop of the closest shape
    assert T.RandomResizedCrop.get_params(np.zeros((4, 8)), (1.0, 1.0), (1.0, 1.0)) == \
        (0, 2, 4, 4)


def test_flips():
    for img in each_kind(A3):
        assert values(T.RandomHorizontalFlip(p=1.0)(img)).tolist() == A3[:, ::-1].tolist()
        assert values(T.RandomVerticalFlip(p=1.0)(img)).tolist() == A3[::-1].tolist()
        assert values(T.RandomHorizontalFlip(p=0.0)(img)).tolist() == A3.tolist()
    batch = F.hflip(ember.tensor(np.arange(4.0).reshape(2, 1, 1, 2)))
    assert batch.flatten().tolist() == [1.0, 0.0, 3.0, 2.0]


def test_rotation_and_affine_by_hand():
    for img in each_kind(A3):
        # counter-clockwise quarter turn: the right column comes to the top
        assert values(T.RandomRotation((90, 90))(img)).tolist() == np.rot90(A3).tolist()
        # affine's angle turns clockwise
        assert values(F.affine(img, 90, [0, 0], 1.0, 0.0)).tolist() == \
            np.rot90(A3, -1).tolist()
    assert F.rotate(A3, 180).tolist() == A3[::-1, ::-1].tolist()
    tall = np.arange(6, dtype=np.uint8).reshape(3, 2)
    assert F.rotate(tall, 90, expand=True).shape[:2] == (2, 4)  # (3, 2) turned, rounded up
    assert F.affine(A3, 0, [1, 0], 1.0, 0.0).tolist() == [[0, 0, 1], [0, 3, 4], [0, 6, 7]]
    assert F.affine(A3, 0, [0, -1], 1.0, 0.0, fill=9).tolist() == [[3, 4, 5], [6, 7, 8],
                                                                    [9, 9, 9]]
    # x-shear of 45 degrees: (x, y) -> (x - y, y) about the centre row
    assert F.affine(A3, 0, [0, 0], 1.0, [45, 0]).tolist() == [[0, 0, 1], [3, 4, 5],
                                                              [7, 8, 0]]
    # scale 2 about the centre, nearest: the centre pixel covers the middle
    assert F.affine(A3, 0, [0, 0], 2.0, 0.0)[1, 1] == 4
    # bilinear, half-pixel shift: averages of neighbours, the fill weighed in at the edge
    half = F.affine(np.array([[0.0, 2.0, 4.0]]), 0, [0.5, 0], 1.0, 0.0,
                    interpolation=T.InterpolationMode.BILINEAR, fill=10.0)
    np.testing.assert_allclose(half, [[5.0, 1.0, 3.0]])
    ember.manual_seed(1)
    angle = T.RandomRotation.get_params([-30, 30])
    assert -30 <= angle <= 30


def test_random_affine_params_and_output():
    ember.manual_seed(0)
    angle, (tx, ty), scale, (sx, sy) = T.RandomAffine.get_params(
        (-10, 10), (0.5, 0.25), (0.8, 1.2), (-5, 5, -3, 3), [8, 4])
    assert -10 <= angle <= 10 and -4 <= tx <= 4 and -1 <= ty <= 1
    assert 0.8 <= scale <= 1.2 and -5 <= sx <= 5 and -3 <= sy <= 3
    assert isinstance(tx, int) and isinstance(ty, int)
    out = T.RandomAffine(degrees=(90, 90))(A3)
    assert out.tolist() == np.rot90(A3, -1).tolist()
    assert T.RandomAffine(0)(A3).tolist() == A3.tolist()
    with pytest.raises(ValueError, match="translate"):
        T.RandomAffine(0, translate=(2, 0))


def test_color_adjustments_by_hand():
    rgb = np.array([[[255, 0, 0], [10, 20, 30]]], dtype=np.uint8)
    assert F.adjust_brightness(rgb, 2.0).tolist() == [[[255, 0, 0], [20, 40, 60]]]
    assert F.adjust_brightness(rgb, 0.5).tolist() == [[[127, 0, 0], [5, 10, 15]]]  # trunc
    # contrast 0: every pixel becomes the mean of the floored luma, (76 + 18) / 2 = 47
    assert F.adjust_contrast(rgb, 0.0).tolist() == [[[47, 47, 47], [47, 47, 47]]]
    # saturation 0: the luma of each pixel
    assert F.adjust_saturation(rgb, 0.0).tolist() == [[[76, 76, 76], [18, 18, 18]]]
    # hue: a third of a turn takes red to green, minus a third to blue
    red = rgb[:, :1]
    assert F.adjust_hue(red, 1 / 3).tolist() == [[[0, 255, 0]]]
    assert F.adjust_hue(red, -1 / 3).tolist() == [[[0, 0, 255]]]
    assert F.adjust_hue(red, 0.0).tolist() == red.tolist()
    f = F.adjust_brightness(ember.tensor([[[0.25]], [[0.5]], [[0.75]]]), 2.0)
    assert f.flatten().tolist() == [0.5, 1.0, 1.0]     # floats clip at 1
    with pytest.raises(ValueError, match="hue_factor"):
        F.adjust_hue(red, 0.6)


def test_color_jitter_and_grayscale():
    rgb = np.array([[[255, 0, 0], [10, 20, 30]]], dtype=np.uint8)
    assert T.ColorJitter(brightness=(2, 2))(rgb).tolist() == [[[255, 0, 0], [20, 40, 60]]]
    assert T.ColorJitter(saturation=(0, 0))(rgb).tolist() == [[[76, 76, 76], [18, 18, 18]]]
    assert T.ColorJitter(hue=(1 / 3, 1 / 3))(rgb[:, :1]).tolist() == [[[0, 255, 0]]]
    assert T.ColorJitter()(rgb).tolist() == rgb.tolist()
    assert T.ColorJitter(brightness=0.5).brightness == (0.5, 1.5)
    ember.manual_seed(5)
    order, b, c, s, h = T.ColorJitter.get_params((0.5, 1.5), None, (1, 2), None)
    assert sorted(order) == [0, 1, 2, 3] and 0.5 <= b <= 1.5 and 1 <= s <= 2
    assert c is None and h is None
    assert T.Grayscale()(rgb).tolist() == [[[76], [18]]]   # round(0.299 * 255) = 76
    assert T.Grayscale(3)(rgb).tolist() == [[[76] * 3, [18] * 3]]
    assert T.RandomGrayscale(p=1.0)(rgb).shape == (1, 2, 3)
    t = F.rgb_to_grayscale(as_tensor(rgb))
    assert tuple(t.shape) == (1, 1, 2) and t.flatten().tolist() == [76, 18]


def test_lambda_compose_apply():
    add_one = T.Lambda(lambda x: x + 1)
    twice = T.Compose([add_one, T.Lambda(lambda x: x * 2)])
    assert twice(3) == 8
    assert T.RandomApply([add_one], p=0.0)(3) == 3
    assert T.RandomApply([add_one, add_one], p=1.0)(3) == 5
    assert T.RandomChoice([add_one], p=[1.0])(3) == 4
    assert T.RandomOrder([add_one, add_one])(0) == 2
    assert repr(T.Compose([T.ToTensor(), T.CenterCrop(2)])) == \
        "Compose(\n    ToTensor()\n    CenterCrop(size=(2, 2))\n)"
    with pytest.raises(TypeError, match="callable"):
        T.Lambda(3)


def test_random_erasing():
    img = ember.zeros(2, 6, 6)
    ember.manual_seed(0)
    _ = ember.rand(1)  # forward first draws whether to erase at all
    i, j, h, w, v = T.RandomErasing.get_params(img, (0.1, 0.3), (0.5, 2.0), [5.0])
    assert v.flatten().tolist() == [5.0] and 0.1 * 36 - 6 <= h * w <= 0.3 * 36 + 6
    ember.manual_seed(0)
    out = T.RandomErasing(p=1.0, scale=(0.1, 0.3), ratio=(0.5, 2.0), value=5)(img)
    expected = np.zeros((2, 6, 6), np.float32)
    expected[:, i:i + h, j:j + w] = 5
    np.testing.assert_array_equal(out.numpy(), expected)
    assert img.sum().item() == 0                       # not in place by default
    kept = T.RandomErasing(p=0.0)(img)
    assert kept is img
    noisy = T.RandomErasing(p=1.0, value="random")(ember.zeros(1, 8, 8))
    assert (noisy != 0).sum().item() > 0
    per_channel = T.RandomErasing(p=1.0, value=(1, 2))(ember.zeros(2, 8, 8))
    assert set(per_channel[1].flatten().tolist()) <= {0.0, 2.0}
    with pytest.raises(TypeError, match="Tensor"):
        T.RandomErasing(p=1.0)(np.zeros((3, 3)))


def test_kinds_agree():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    # (not resize with filters, the colour adjustments, rotate and affine: PIL images go
    # to Pillow for those, as in torchvision; see test_transforms_parity.py)
    for op in (lambda x: F.resize(x, [3, 4], interpolation="nearest-exact"),
               lambda x: F.pad(x, [1, 2], padding_mode="reflect"),
               lambda x: F.crop(x, 1, 2, 3, 3), lambda x: F.hflip(x),
               lambda x: F.gaussian_blur(x, 3, 0.8)):
        outs = [values(op(k)) for k in each_kind(img)]
        for out in outs[1:]:
            np.testing.assert_array_equal(out, outs[0])


def test_pil_images_keep_mode():
    image_module = pil()
    gray = image_module.fromarray(A4)
    out = T.RandomRotation((90, 90))(gray)
    assert out.mode == "L" and np.asarray(out).tolist() == np.rot90(A4).tolist()
    assert F.get_image_size(gray) == [4, 4] and F.get_image_num_channels(gray) == 1
    rgb = image_module.fromarray(np.zeros((2, 3, 3), np.uint8))
    assert T.Grayscale()(rgb).mode == "L" and T.Resize((4, 5))(rgb).size == (5, 4)


class Augmented(Dataset):
    def __init__(self):
        self.base = datasets.FakeData(16, (3, 8, 8), 4)
        self.tf = T.Compose([T.RandomCrop(6, padding=1), T.RandomHorizontalFlip(),
                             T.ColorJitter(0.3, 0.3), T.ToTensor(), T.RandomErasing()])

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        img, label = self.base[i]
        return self.tf(img), label


def test_random_transforms_reproducible_across_workers():
    runs = []
    for workers in (0, 2):
        loader = DataLoader(Augmented(), batch_size=4, shuffle=True, num_workers=workers,
                            generator=ember.Generator().manual_seed(7))
        runs.append([b[0].numpy() for b in loader])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
