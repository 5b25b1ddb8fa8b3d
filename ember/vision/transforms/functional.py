"""Image transforms as functions (``torchvision.transforms.functional``' API).

Each function takes a PIL image, a NumPy image ((H, W) or (H, W, C), the layout of the
data sets' images and of ``numpy.asarray(pil_image)``) or a tensor ((..., C, H, W) or
(H, W)), and returns the same kind.  The work is done once, on NumPy arrays of shape
(B, C, H, W), in ``_kernels.py``; tensors on a GPU go through the host.  Transforms do not
record gradients.

Where torchvision hands PIL images to Pillow (resizing, grayscale, colour adjustments,
rotate, affine) so does ember, so those numbers are Pillow's; elsewhere PIL images are
processed by the same code as arrays.  Tensors and arrays follow torchvision's arithmetic (see
docs/vision.md).
Interpolation: nearest, nearest-exact, bilinear and (for resizing) bicubic; PIL images
also resize with box, hamming and lanczos.
"""

from __future__ import annotations

import numbers
from enum import Enum

import numpy as np

from ..._core import dtype as dtypes
from ..._core.tensor import Tensor, _make
from .._pil import is_pil_image, pil_image
from . import _kernels as K
from . import _pil_ops as P


class InterpolationMode(Enum):
    """How to resample: the names torchvision uses."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_PIL_CODES = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR,
              3: InterpolationMode.BICUBIC, 4: InterpolationMode.BOX,
              5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}
_PIL_RESAMPLE = {mode: code for code, mode in _PIL_CODES.items()}
_PIL_RESAMPLE[InterpolationMode.NEAREST_EXACT] = 0  # Pillow's nearest reads pixel centres


def _interpolation(interpolation) -> InterpolationMode:
    if isinstance(interpolation, int) and not isinstance(interpolation, bool):
        interpolation = _PIL_CODES.get(interpolation, interpolation)
    if isinstance(interpolation, str):
        interpolation = InterpolationMode(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be of type InterpolationMode, got "
                        f"{type(interpolation).__name__}")
    return interpolation


def _mode(interpolation) -> str:
    """The interpolation as the array kernels name it (those they support)."""
    interpolation = _interpolation(interpolation)
    if interpolation.value in ("box", "hamming", "lanczos"):
        raise NotImplementedError(f"interpolation {interpolation.value!r} is not supported "
                                  "by ember for tensors and NumPy images (PIL images have "
                                  "it); use nearest, bilinear or bicubic")
    return interpolation.value


# -- one layout for every kind of image ----------------------------------------------

def _unpack(img):
    """``(array of shape (B, C, H, W), function turning such an array back)``."""
    if isinstance(img, Tensor):
        if img.ndim < 2:
            raise TypeError(f"Tensor is not an image: expected at least 2 dimensions "
                            f"(..., H, W), got {img.ndim}")
        shape, device = tuple(img.shape), img.device
        lead = shape[:-3] if img.ndim >= 3 else ()
        arr = img.cpu_array().reshape((-1,) + (shape[-3:] if img.ndim >= 3 else (1,) +
                                                shape))

        def restore(out: np.ndarray) -> Tensor:
            if img.ndim == 2:
                new = out.reshape(out.shape[-2:]) if out.shape[1] == 1 else out[0]
            else:
                new = out.reshape(lead + out.shape[1:])
            result = _make(np.ascontiguousarray(new))
            return result if device.type == "cpu" else result.to(device)
        return arr, restore
    if isinstance(img, np.ndarray):
        if img.ndim == 2:
            return img[None, None], lambda out: (out[0, 0] if out.shape[1] == 1
                                                 else out[0].transpose(1, 2, 0))
        if img.ndim == 3:
            return (img.transpose(2, 0, 1)[None],
                    lambda out: np.ascontiguousarray(out[0].transpose(1, 2, 0)))
        raise TypeError(f"a NumPy image must be (H, W) or (H, W, C), got shape {img.shape}")
    if is_pil_image(img):
        return _unpack_pil(img)
    raise TypeError(f"img should be a PIL Image, a NumPy array or a Tensor, got "
                    f"{type(img).__name__}")


def _unpack_pil(img):
    image_module = pil_image("transforms on PIL images")
    mode, palette = img.mode, img.getpalette() if img.mode == "P" else None
    array = np.asarray(img)
    if array.ndim == 2:
        array = array[:, :, None]

    def restore(out: np.ndarray):
        layout = out[0].transpose(1, 2, 0)
        if layout.shape[2] == 1:
            layout = layout[:, :, 0]
        layout = np.ascontiguousarray(layout)
        if out.shape[1] != array.shape[2]:  # the channel count changed (grayscale)
            return image_module.fromarray(layout)
        result = image_module.fromarray(layout)
        if result.mode != mode:
            result = image_module.frombytes(mode, (layout.shape[1], layout.shape[0]),
                                            layout.tobytes())
        if palette is not None:
            result.putpalette(palette)
        return result
    return array.transpose(2, 0, 1)[None], restore


def get_dimensions(img) -> list[int]:
    """``[channels, height, width]`` of an image."""
    arr, _ = _unpack(img)
    return [int(arr.shape[1]), int(arr.shape[2]), int(arr.shape[3])]


def get_image_size(img) -> list[int]:
    """``[width, height]`` of an image (torchvision's order)."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img) -> int:
    """The number of channels of an image."""
    return get_dimensions(img)[0]


# -- conversions ----------------------------------------------------------------------

def to_tensor(pic) -> Tensor:
    """A PIL image or NumPy (H, W[, C]) image as a (C, H, W) tensor; uint8 values become
    floats in [0, 1] (the default float dtype), other types keep their values."""
    if is_pil_image(pic):
        array = np.asarray(pic)
        if pic.mode == "1":
            array = array.astype(np.uint8) * 255
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = pic
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if array.ndim == 2:
        array = array[:, :, None]
    chw = np.ascontiguousarray(array.transpose(2, 0, 1))
    if chw.dtype == np.uint8:
        return _make((chw / 255.0).astype(dtypes.get_default_dtype().np_dtype))
    return _make(chw.copy())


def pil_to_tensor(pic) -> Tensor:
    """A PIL image as a (C, H, W) tensor of its own pixel type, values unchanged."""
    if not is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    array = np.asarray(pic)
    if array.ndim == 2:
        array = array[:, :, None]
    return _make(np.ascontiguousarray(array.transpose(2, 0, 1)))


_MODES_BY_CHANNELS = {2: "LA", 3: "RGB", 4: "RGBA"}
_GRAY_MODES = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16",
               np.dtype(np.uint16): "I;16", np.dtype(np.int32): "I",
               np.dtype(np.float32): "F"}


def to_pil_image(pic, mode: str | None = None):
    """A (C, H, W) tensor or (H, W[, C]) NumPy image as a PIL image.

    Float tensors are taken as [0, 1] and scaled to uint8 (``x * 255`` truncated);
    `mode` picks the PIL mode (by default from the channel count and type).
    """
    image_module = pil_image("to_pil_image")
    if isinstance(pic, Tensor):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = pic.cpu_array()
        array = array[None] if array.ndim == 2 else array
        array = array.transpose(1, 2, 0)
        if np.issubdtype(array.dtype, np.floating) and mode != "F":
            array = (array * 255).astype(np.uint8)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    channels = array.shape[2]
    if channels == 1:
        array = array[:, :, 0]
        inferred = _GRAY_MODES.get(array.dtype)
        if inferred is None:
            raise TypeError(f"Input type {array.dtype} is not supported")
        if inferred == "I;16":
            array = array.astype(np.uint16)
    elif channels in _MODES_BY_CHANNELS:
        if array.dtype != np.uint8:
            raise TypeError(f"Input type {array.dtype} is not supported for a "
                            f"{channels}-channel image (only uint8)")
        inferred = _MODES_BY_CHANNELS[channels]
    else:
        raise ValueError(f"pic should not have > 4 channels. Got {channels} channels.")
    array = np.ascontiguousarray(array)
    if mode is None or mode == inferred:
        return image_module.fromarray(array)
    return image_module.frombytes(mode, (array.shape[1], array.shape[0]), array.tobytes())


def convert_image_dtype(image: Tensor, dtype=None) -> Tensor:
    """Convert a tensor image to `dtype`, rescaling values between the value ranges:
    [0, 1] for floats, [0, max] for integers (e.g. uint8 255 -> float 1.0)."""
    if not isinstance(image, Tensor):
        raise TypeError(f"Input img should be Tensor Image, got {type(image).__name__}")
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    src, dst = image.cpu_array(), dtype.np_dtype
    if image.dtype is dtype:
        return image
    src_float = dtypes.is_floating(image.dtype)
    if src_float and dtype.is_floating_point:
        out = src.astype(dst)
    elif src_float:
        if (image.dtype is dtypes.float32 and dtype in (dtypes.int32, dtypes.int64)) or \
                (image.dtype is dtypes.float64 and dtype is dtypes.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed "
                               "safely.")
        # NOTE: 1 - 1e-3 below max + 1, so 1.0 maps to max and values spread evenly
        out = (src * (K.max_value(np.dtype(dst)) + 1.0 - 1e-3)).astype(dst)
    elif dtype.is_floating_point:
        out = (src.astype(dst) / K.max_value(src.dtype)).astype(dst)
    else:
        src_max, dst_max = K.max_value(src.dtype), K.max_value(np.dtype(dst))
        if src_max > dst_max:
            out = (src.astype(np.int64) // ((src_max + 1) // (dst_max + 1))).astype(dst)
        else:
            out = src.astype(np.int64) * ((dst_max + 1) // (src_max + 1))
            out = out.astype(dst)
    result = _make(out)
    return result if image.device.type == "cpu" else result.to(image.device)


def normalize(tensor: Tensor, mean, std, inplace: bool = False) -> Tensor:
    """``(tensor - mean[c]) / std[c]`` for each channel c of a float (..., C, H, W) tensor."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tuple(tensor.shape)}")
    np_dtype = tensor.dtype.np_dtype
    mean_a = np.asarray(mean, dtype=np_dtype).reshape(-1, 1, 1)
    std_a = np.asarray(std, dtype=np_dtype).reshape(-1, 1, 1)
    if np.any(std_a == 0):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading "
                         "to division by zero.")
    mean_t = _make(mean_a).to(tensor.device)
    std_t = _make(std_a).to(tensor.device)
    if inplace:
        return tensor.sub_(mean_t).div_(std_t)
    return (tensor - mean_t) / std_t


# -- geometry -------------------------------------------------------------------------

def _size_pair(size, name: str = "size") -> tuple[int, int]:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    size = tuple(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {name}.")
    return int(size[0]), int(size[1])


def _resized_size(h: int, w: int, size, max_size) -> tuple[int, int]:
    if isinstance(size, (list, tuple)) and len(size) == 2:
        if max_size is not None:
            raise ValueError("max_size should only be passed if size specifies the length of "
                             "the smaller edge, i.e. size should be an int or a sequence of "
                             f"length 1 in torchscript mode, got size={size}")
        return int(size[0]), int(size[1])
    short_target = int(size if isinstance(size, numbers.Number) else size[0])
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = short_target, int(short_target * long / short)
    if max_size is not None:
        if max_size <= short_target:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                             f"requested size for the smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_long, new_short) if w <= h else (new_short, new_long)


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
           antialias=True):
    """Resize to `size`: (h, w), or an int for the smaller edge (keeping the aspect ratio,
    the longer edge capped at `max_size`).

    As in torchvision: a PIL image is resized by Pillow (``Image.resize``, which always
    antialiases bilinear and bicubic); tensors and NumPy images are antialiased when
    `antialias` (bilinear and bicubic only), with the filter Pillow uses, computed in
    float (integer images rounded back).
    """
    mode = _interpolation(interpolation)
    if is_pil_image(img):
        w, h = img.size
        oh, ow = _resized_size(h, w, size, max_size)
        if (oh, ow) == (h, w):
            return img
        return img.resize((ow, oh), resample=_PIL_RESAMPLE[mode])
    arr, restore = _unpack(img)
    h, w = arr.shape[-2:]
    oh, ow = _resized_size(h, w, size, max_size)
    return restore(K.resize(arr, oh, ow, _mode(mode), antialias=bool(antialias)))


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad the borders: `padding` is one int (all sides), (left/right, top/bottom), or
    (left, top, right, bottom); `padding_mode` is constant (with `fill`), edge, reflect
    or symmetric."""
    if isinstance(padding, numbers.Number):
        amounts = [int(padding)] * 4
    else:
        padding = [int(p) for p in padding]
        if len(padding) == 1:
            amounts = padding * 4
        elif len(padding) == 2:
            amounts = [padding[0], padding[1], padding[0], padding[1]]
        elif len(padding) == 4:
            amounts = padding
        else:
            raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                             f"{len(padding)} element tuple")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or "
                         "symmetric")
    arr, restore = _unpack(img)
    return restore(K.pad(arr, *amounts, fill=fill, mode=padding_mode))


def crop(img, top: int, left: int, height: int, width: int):
    """The window of size (height, width) at (top, left); outside the image is zero."""
    arr, restore = _unpack(img)
    return restore(K.crop(arr, int(top), int(left), int(height), int(width)).copy())


def center_crop(img, output_size):
    """The central window of `output_size` (padded with zeros if the image is smaller)."""
    th, tw = _size_pair(output_size, "output_size")
    _, h, w = get_dimensions(img)
    if tw > w or th > h:
        img = pad(img, [(tw - w) // 2 if tw > w else 0, (th - h) // 2 if th > h else 0,
                        (tw - w + 1) // 2 if tw > w else 0, (th - h + 1) // 2 if th > h else 0])
        _, h, w = get_dimensions(img)
        if (h, w) == (th, tw):
            return img
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def resized_crop(img, top: int, left: int, height: int, width: int, size,
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
    """`crop` then `resize` to `size`."""
    return resize(crop(img, top, left, height, width), size, interpolation,
                  antialias=antialias)


def five_crop(img, size) -> tuple:
    """The four corner windows of `size` ((h, w) or an int) and the central one:
    ``(top_left, top_right, bottom_left, bottom_right, center)``."""
    th, tw = _size_pair(size)
    _, h, w = get_dimensions(img)
    if tw > w or th > h:
        raise ValueError(f"Requested crop size {(th, tw)} is bigger than input size "
                         f"{(h, w)}")
    corners = [crop(img, top, left, th, tw)
               for top, left in ((0, 0), (0, w - tw), (h - th, 0), (h - th, w - tw))]
    return tuple(corners) + (center_crop(img, [th, tw]),)


def ten_crop(img, size, vertical_flip: bool = False) -> tuple:
    """`five_crop` of the image, then of its mirror image (left-right, or top-bottom with
    `vertical_flip`): ten windows."""
    mirrored = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(mirrored, size)


def hflip(img):
    """Mirror left to right."""
    arr, restore = _unpack(img)
    return restore(np.ascontiguousarray(arr[..., ::-1]))


def vflip(img):
    """Mirror top to bottom."""
    arr, restore = _unpack(img)
    return restore(np.ascontiguousarray(arr[..., ::-1, :]))


def _center_offset(center, h: int, w: int) -> tuple[float, float]:
    # `center` is in continuous (x, y) coordinates (pixel i spans [i, i + 1]); the
    # kernels measure from the image centre
    if center is None:
        return 0.0, 0.0
    return float(center[0]) - w * 0.5, float(center[1]) - h * 0.5


def _check_fill(fill):
    if fill is not None and not isinstance(fill, (numbers.Number, list, tuple)):
        raise TypeError("Argument fill should be either int, float, tuple or list")
    return fill


def affine(img, angle: float, translate, scale: float, shear,
           interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """Rotate by `angle` degrees clockwise, scale, shear (degrees, clockwise; one number
    or (x, y)) and then translate (pixels), keeping `center` (default: the image centre)
    fixed.  Uncovered pixels get `fill` (default 0).  PIL images go through Pillow
    (``Image.transform``), as in torchvision."""
    if not isinstance(translate, (list, tuple)) or len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear) + [0.0] * (2 - len(shear))
    w, h = img.size if is_pil_image(img) else get_image_size(img)
    matrix = K.affine_matrix(float(angle), [float(t) for t in translate], float(scale),
                             [float(s) for s in shear], _center_offset(center, h, w))
    if is_pil_image(img):
        return P.affine(img, matrix, _pil_resample(interpolation), _check_fill(fill))
    arr, restore = _unpack(img)
    return restore(K.warp(arr, matrix, (h, w), _mode(interpolation), _check_fill(fill)))


def _pil_resample(interpolation) -> int:
    mode = _interpolation(interpolation)
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR,
                    InterpolationMode.BICUBIC):
        raise ValueError(f"rotation and affine transforms of PIL images support nearest, "
                         f"bilinear and bicubic interpolation, got {mode.value!r}")
    return _PIL_RESAMPLE[mode]


def rotate(img, angle: float, interpolation=InterpolationMode.NEAREST, expand: bool = False,
           center=None, fill=None):
    """Rotate by `angle` degrees counter-clockwise about `center` (default: the image
    centre).  `expand` enlarges the output to hold the whole rotated image (about the
    image centre).  Uncovered pixels get `fill` (default 0).  PIL images are rotated by
    Pillow (``Image.rotate``), as torchvision does."""
    if is_pil_image(img):
        return P.rotate(img, float(angle), _pil_resample(interpolation), expand, center,
                        _check_fill(fill))
    arr, restore = _unpack(img)
    h, w = arr.shape[-2:]
    offset = (0.0, 0.0) if expand else _center_offset(center, h, w)
    matrix = K.affine_matrix(-float(angle), [0.0, 0.0], 1.0, [0.0, 0.0], offset)
    out_size = K.expanded_size(matrix, h, w) if expand else (h, w)
    return restore(K.warp(arr, matrix, out_size, _mode(interpolation), _check_fill(fill)))


# -- colour ---------------------------------------------------------------------------

def _rgb(arr: np.ndarray, name: str) -> None:
    if arr.shape[1] != 3:
        raise TypeError(f"{name}: input image should have 3 channels (RGB), got "
                        f"{arr.shape[1]}")


def rgb_to_grayscale(img, num_output_channels: int = 1):
    """Luma as 1 or 3 equal channels; a 1-channel image passes through.

    As in torchvision: PIL images go through Pillow (``convert("L")``); tensors and NumPy
    images get ``0.2989 R + 0.587 G + 0.114 B`` in float32, truncated for integer types.
    """
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if is_pil_image(img):
        gray = img.convert("L")
        return gray if num_output_channels == 1 else gray.convert("RGB")
    arr, restore = _unpack(img)
    if arr.shape[1] == 1:
        gray = arr
    else:
        _rgb(arr, "rgb_to_grayscale")
        gray = K.grayscale(arr)
        gray = gray.astype(arr.dtype) if arr.dtype != np.bool_ else gray >= 0.5
    return restore(np.repeat(gray, num_output_channels, axis=1))


to_grayscale = rgb_to_grayscale


def _blended(img, factor: float, name: str, pil_kind: str, reference):
    """What adjust_brightness, _contrast and _saturation share: check `factor` (named
    `name`); a PIL image is enhanced by Pillow's `pil_kind`, any other image is blended
    with ``reference(arr)``: ``factor * arr + (1 - factor) * reference`` (a copy of the
    image where the reference is None)."""
    if factor < 0:
        raise ValueError(f"{name} ({factor}) is not non-negative.")
    if is_pil_image(img):
        return P.enhance(img, pil_kind, factor)
    arr, restore = _unpack(img)
    ref = reference(arr)
    return restore(arr.copy() if ref is None else K.blend(arr, ref, factor))


def adjust_brightness(img, brightness_factor: float):
    """Scale the intensities by `brightness_factor` (0 gives black, 1 the original)."""
    return _blended(img, brightness_factor, "brightness_factor", "Brightness", lambda arr: 0.0)


def _gray_for_blending(arr: np.ndarray) -> np.ndarray:
    """The grayscale image contrast and saturation blend with (floored for integer
    images, as torchvision does)."""
    gray = K.grayscale(arr)
    return gray if K.is_float(arr.dtype) else np.floor(gray)


def _mean_gray(arr: np.ndarray) -> np.ndarray:
    """The mean gray level of each image, the reference of `adjust_contrast`."""
    if arr.shape[1] == 3:
        gray = _gray_for_blending(arr)
    else:
        gray = arr if K.is_float(arr.dtype) else arr.astype(np.float32)
    return gray.mean(axis=(-3, -2, -1), keepdims=True, dtype=gray.dtype)


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean gray level: 0 gives a flat gray image, 1 the original."""
    return _blended(img, contrast_factor, "contrast_factor", "Contrast", _mean_gray)


def _saturation_reference(arr: np.ndarray) -> np.ndarray | None:
    """The grayscale image, the reference of `adjust_saturation` (None for a one-channel
    image: it has no saturation to change)."""
    if arr.shape[1] == 1:
        return None
    _rgb(arr, "adjust_saturation")
    return _gray_for_blending(arr)


def adjust_saturation(img, saturation_factor: float):
    """Blend with the grayscale image: 0 gives gray, 1 the original, 2 doubles saturation."""
    return _blended(img, saturation_factor, "saturation_factor", "Color",
                    _saturation_reference)


def adjust_hue(img, hue_factor: float):
    """Shift the hue by `hue_factor` turns (in [-0.5, 0.5]) in HSV space.  As in
    torchvision: PIL images in Pillow's HSV (8-bit hue, wrapping around); others in
    float, integer images scaled back by ``x * (max + 1 - 1e-3)`` truncated."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if is_pil_image(img):
        return P.adjust_hue(img, hue_factor)
    arr, restore = _unpack(img)
    if arr.shape[1] == 1:
        return restore(arr.copy())
    _rgb(arr, "adjust_hue")
    bound = K.max_value(arr.dtype)
    hsv = K.rgb_to_hsv(K.working(arr) / bound)
    hsv[:, 0] = (hsv[:, 0] + hue_factor) % 1.0
    rgb = K.hsv_to_rgb(hsv)
    if K.is_float(arr.dtype):
        return restore((rgb * bound).astype(arr.dtype))
    # NOTE: max + 1 - 1e-3, truncated: 1.0 maps to max, and the levels spread evenly
    return restore(np.clip(rgb * (bound + 1.0 - 1e-3), 0, bound).astype(arr.dtype))


# -- filters --------------------------------------------------------------------------

def _two(value, name: str, kind) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            value = [value[0], value[0]]
        if len(value) != 2:
            raise ValueError(f"If {name} is a sequence its length should be 2. Got "
                             f"{len(value)}")
        return list(value)
    if not isinstance(value, kind):
        what = "int or a sequence of integers" if kind is int else \
            "either float or sequence of floats"
        raise TypeError(f"{name} should be {what}. Got {type(value)}")
    return [value, value]


def gaussian_blur(img, kernel_size, sigma=None):
    """Blur with a Gaussian kernel of `kernel_size` ((kx, ky) or an int: odd, positive)
    and standard deviation `sigma` ((sx, sy) or a number; by default
    ``0.15 * kernel_size + 0.35``), the borders extended by reflection (as torchvision
    does, also for PIL images).  Integer images are rounded back."""
    kernel_size = _two(kernel_size, "kernel_size", int)
    for k in kernel_size:
        if k % 2 == 0 or k < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got "
                             f"{kernel_size}")
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in kernel_size]
    sigma = [float(s) for s in _two(sigma, "sigma", numbers.Real)]
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    if is_pil_image(img):  # through a tensor, as torchvision does
        return to_pil_image(gaussian_blur(pil_to_tensor(img), kernel_size, sigma), img.mode)
    arr, restore = _unpack(img)
    return restore(K.gaussian_blur(arr, kernel_size, sigma))


# -- tensors only ---------------------------------------------------------------------

def erase(img: Tensor, i: int, j: int, h: int, w: int, v, inplace: bool = False) -> Tensor:
    """Set the window of size (h, w) at (i, j) of a (..., C, H, W) tensor to `v` (a tensor
    broadcastable to the window, or a number)."""
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img

