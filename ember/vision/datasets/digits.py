"""The 8x8 handwritten digits bundled with ember: a real data set that needs no download.

1,797 images of the digits 0..9 (about 180 each): the test set of the UCI *Optical
Recognition of Handwritten Digits* data set (Alpaydin & Kaynak, 1998; CC BY 4.0; the copy
scikit-learn ships).  See ``data/ATTRIBUTION.md``.
"""

from __future__ import annotations

import os

import numpy as np

from ..._core.tensor import _make
from .vision import ArrayImages, missing_file_error

BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.npz")


def split_mask(labels: np.ndarray) -> np.ndarray:
    """The fixed split: within each class, in file order, every fifth image (the 5th,
    10th, ...) is a test image.  That gives 355 test and 1,442 training images with the
    classes in the same proportions in both."""
    mask = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels):
        where = np.flatnonzero(labels == c)
        mask[where[4::5]] = True
    return mask


class Digits(ArrayImages):
    """The bundled 8x8 digits.

    Args:
        root: None for the copy inside the package, or a folder holding a ``digits.npz``
            of the same layout (``images`` uint8 (N, 8, 8) with values 0..16, ``labels``).
        train: the training part (True) or the test part (False) of the fixed split (see
            `split_mask`); ignored when `split` is given.
        transform, target_transform: applied to the image and to the label (an int).
        split: ``"train"``, ``"test"`` or ``"all"`` (all 1,797 images); overrides `train`.

    The files store pixel counts 0..16 (set pixels in each 4x4 block of a 32x32 bitmap);
    images come out scaled to 0..255, 8x8 PIL images of mode "L" like the other grayscale
    data sets (uint8 NumPy arrays without Pillow), so ``transforms.ToTensor()`` gives
    values in [0, 1].  ``data``
    (uint8 tensor) and ``targets`` (int64 tensor) hold the selected part.
    """

    classes = [str(i) for i in range(10)]

    def __init__(self, root=None, train: bool = True, transform=None, target_transform=None,
                 split: str | None = None):
        super().__init__(root, transform=transform, target_transform=target_transform)
        if split is None:
            split = "train" if train else "test"
        if split not in ("train", "test", "all"):
            raise ValueError(f"Digits: split must be 'train', 'test' or 'all', got {split!r}")
        self.split = split
        self.train = split == "train"
        path = BUNDLED if root is None else os.path.join(self.root, "digits.npz")
        if not os.path.isfile(path):
            raise missing_file_error("digits.npz", os.path.dirname(path), "Digits",
                                     "made by tools/make_digits.py")
        with np.load(path, allow_pickle=False) as npz:
            counts, labels = npz["images"], npz["labels"].astype(np.int64)
        if split != "all":
            keep = split_mask(labels) == (split == "test")
            counts, labels = counts[keep], labels[keep]
        pixels = (counts.astype(np.uint16) * 255 + 8) // 16
        self.data = _make(pixels.astype(np.uint8))
        self.targets = _make(labels)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
