"""MNIST and the data sets stored in its IDX format: FashionMNIST, KMNIST and EMNIST.

The files are looked up where torchvision keeps them, ``root/<ClassName>/raw/``, and then
in `root` itself; each may be gzipped (``name.gz``) or not.  Images come out as
torchvision's do, 28x28 PIL images of mode "L" (uint8 NumPy arrays when Pillow is not
installed); ``transforms.ToTensor()`` turns them into float tensors in [0, 1].  Missing
files raise a RuntimeError ("Dataset not found", as torchvision's), which is also a
FileNotFoundError.
"""

from __future__ import annotations

import gzip
import os
import string

import numpy as np

from ..._core.tensor import _make
from .vision import ArrayImages, missing_file_error

# IDX type codes -> big-endian NumPy dtypes
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str) -> np.ndarray:
    """Read one IDX file (gzipped when its name ends in ``.gz``) into a NumPy array.

    The header is two zero bytes, a type code, the number of dimensions, then each
    dimension as a big-endian int32; the values follow, big-endian.
    """
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number {data[:4].hex()})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: IDX header is truncated")
    shape = tuple(int(d) for d in np.frombuffer(data, ">u4", ndim, 4))
    dtype = np.dtype(_IDX_TYPES[data[2]])
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"{path}: IDX file holds {len(data)} bytes, its header {shape} "
                         f"announces {expected}")
    values = np.frombuffer(data, dtype, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


class MNIST(ArrayImages):
    """The MNIST handwritten digits (60,000 training and 10,000 test images, 28x28).

    Args:
        root: the folder holding ``MNIST/raw/`` (or the IDX files themselves).
        train: the training files (``train-*``) if True, else the test files (``t10k-*``).
        transform, target_transform: applied to the image (a PIL image) and to the label
            (an int).
        download: accepted for compatibility; ember never downloads, so this only checks
            that the files are there (as it always does).

    ``data`` (uint8 tensor N x 28 x 28) and ``targets`` (int64 tensor) hold everything.
    """

    resources_names = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                       "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]
    source = "http://yann.lecun.com/exdb/mnist/"

    def __init__(self, root, train: bool = True, transform=None, target_transform=None,
                 download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        images, labels = self._file_names()
        self.data = _make(np.ascontiguousarray(read_idx(self._find(images))))
        self.targets = _make(read_idx(self._find(labels)).astype(np.int64))
        if self.data.shape[0] != self.targets.shape[0]:
            raise ValueError(f"{type(self).__name__}: {self.data.shape[0]} images but "
                             f"{self.targets.shape[0]} labels")

    def _file_names(self) -> tuple[str, str]:
        prefix = "train" if self.train else "t10k"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    def _find(self, name: str) -> str:
        for folder in (self.raw_folder, self.root):
            for candidate in (name, name + ".gz"):
                path = os.path.join(folder, candidate)
                if os.path.isfile(path):
                    return path
        raise missing_file_error(name + "[.gz]", self.raw_folder, type(self).__name__,
                                 f"from {self.source}")

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 28x28 grayscale clothing images in 10 classes, stored like
    MNIST (same file names) under ``root/FashionMNIST/raw/``."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]
    source = "https://github.com/zalandoresearch/fashion-mnist"


class KMNIST(MNIST):
    """Kuzushiji-MNIST: 28x28 cursive Japanese characters in 10 classes, stored like MNIST
    under ``root/KMNIST/raw/``."""

    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
    source = "https://github.com/rois-codh/kmnist"


_MERGED = set("cijklmopsuvwxyz")  # lower-case letters EMNIST merges into their capitals
_DIGITS = list(string.digits)
_ALL = _DIGITS + list(string.ascii_uppercase) + list(string.ascii_lowercase)


class EMNIST(MNIST):
    """EMNIST: handwritten digits and letters, 28x28, in IDX files named
    ``emnist-<split>-<train|test>-<images-idx3|labels-idx1>-ubyte`` under
    ``root/EMNIST/raw/``.

    `split` is one of ``byclass`` (62 classes), ``bymerge`` and ``balanced`` (47),
    ``letters`` (26, labels 1..26), ``digits`` and ``mnist`` (10).  As in torchvision the
    images are returned as stored in the files, which is transposed with respect to MNIST
    (apply ``transforms.Lambda(lambda x: x.T)`` on arrays to see them upright).
    """

    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    classes_split_dict = {
        "byclass": _ALL,
        "bymerge": [c for c in _ALL if c not in _MERGED],
        "balanced": [c for c in _ALL if c not in _MERGED],
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": _DIGITS,
        "mnist": _DIGITS,
    }
    source = "https://www.nist.gov/itl/products-and-services/emnist-dataset"

    def __init__(self, root, split: str, train: bool = True, transform=None,
                 target_transform=None, download: bool = False):
        if split not in self.splits:
            raise ValueError(f"Unknown value '{split}' for argument split. Valid values are "
                             f"{{{', '.join(repr(s) for s in self.splits)}}}.")
        self.split = split
        self.classes = self.classes_split_dict[split]
        super().__init__(root, train=train, transform=transform,
                         target_transform=target_transform, download=download)

    def _file_names(self) -> tuple[str, str]:
        part = "train" if self.train else "test"
        stem = f"emnist-{self.split}-{part}"
        return f"{stem}-images-idx3-ubyte", f"{stem}-labels-idx1-ubyte"
