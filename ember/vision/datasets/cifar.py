"""CIFAR-10 and CIFAR-100, from either of the two versions their authors distribute.

- the **python version** (``cifar-10-batches-py/``, ``cifar-100-python/``): pickled
  dicts of a NumPy array and lists.  They are read with `load_array_pickle`, ember's
  allow-list unpickler given NumPy's array rebuild functions only, so a file cannot run
  code;
- the **binary version** (``cifar-10-batches-bin/``, ``cifar-100-binary/``): fixed-size
  records of label byte(s) then 3,072 pixel bytes (the red plane, green, blue).

Both are looked for under `root`, the python version first.  Images come out as 32x32 RGB
PIL images, as torchvision's (uint8 NumPy arrays (32, 32, 3) without Pillow); ``data``
holds all of them as (N, 32, 32, 3) and ``targets`` is a list of ints, as in torchvision.
No checksum is asked of files the user placed.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle

import numpy as np

from ...serialization._restricted_pickle import AllowListUnpickler, latin1_encode
from .._pil import image_or_array
from .vision import DatasetNotFoundError, VisionDataset

# ---------------------------------------------------------------------------------------
# a pickle loader for plain containers and NumPy arrays


def _reconstruct(subtype, shape, dtype):
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError(f"only numpy.ndarray may be rebuilt, not {subtype!r}")
    return np.ndarray.__new__(np.ndarray, shape, dtype)


def _reconstructor(cls, base, state):
    if cls is not np.ndarray or base not in (object, np.ndarray):
        raise pickle.UnpicklingError("copyreg._reconstructor is only allowed for "
                                     "numpy.ndarray")
    return copyreg._reconstructor(cls, base, state)


def _dtype(spec, align=False, copy=False):
    result = np.dtype(spec, align, copy)
    if result.hasobject:
        raise pickle.UnpicklingError("arrays of Python objects are not allowed")
    return result


def _frombuffer(buffer, dtype, shape, order):
    if np.dtype(dtype).hasobject:
        raise pickle.UnpicklingError("arrays of Python objects are not allowed")
    array = np.frombuffer(buffer, dtype=dtype)
    return array.reshape(shape, order=order).copy(order=order)


_ALLOWED = {
    "numpy.core.multiarray._reconstruct": _reconstruct,
    "numpy._core.multiarray._reconstruct": _reconstruct,
    "numpy.core.numeric._frombuffer": _frombuffer,
    "numpy._core.numeric._frombuffer": _frombuffer,
    "numpy.ndarray": np.ndarray,
    "numpy.dtype": _dtype,
    "copyreg._reconstructor": _reconstructor,
    "_codecs.encode": latin1_encode,
}


def _not_data(full: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(f"the pickle refers to {full}; only plain containers and "
                                  "NumPy arrays are allowed in a data file")


def load_array_pickle(file, encoding: str = "latin1"):
    """Unpickle `file` (a path, a binary file object or bytes), admitting only plain
    containers (dict, list, tuple, str, bytes, numbers) and NumPy arrays.

    `encoding` decodes Python 2 strings (CIFAR's python batches were written by Python 2;
    latin1 keeps their bytes).  Anything else a pickle could name raises
    ``pickle.UnpicklingError``, so loading never runs code from the file.
    """
    if isinstance(file, (bytes, bytearray)):
        return _unpickler(io.BytesIO(file), encoding).load()
    if isinstance(file, (str, os.PathLike)):
        with open(file, "rb") as f:
            return _unpickler(f, encoding).load()
    return _unpickler(file, encoding).load()


def _unpickler(f, encoding: str) -> AllowListUnpickler:
    return AllowListUnpickler(f, _ALLOWED.get, refuse=_not_data, encoding=encoding)


# ---------------------------------------------------------------------------------------
# the data sets


def _read_binary_records(path: str, label_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    raw = np.fromfile(path, dtype=np.uint8)
    record = label_bytes + 3072
    if raw.size % record:
        raise ValueError(f"{path}: {raw.size} bytes is not a whole number of "
                         f"{record}-byte CIFAR records")
    raw = raw.reshape(-1, record)
    return raw[:, :label_bytes].astype(np.int64), raw[:, label_bytes:]


class CIFAR10(VisionDataset):
    """CIFAR-10: 60,000 32x32 colour images in 10 classes (50,000 for training).

    Args:
        root: the folder holding ``cifar-10-batches-py/`` or ``cifar-10-batches-bin/``.
        train: the five training batches if True, else the test batch.
        transform, target_transform: applied to the image (a PIL image) and to the label.
        download: accepted; ember never downloads, it only checks the files are there.
    """

    base_folder = "cifar-10-batches-py"
    binary_folder = "cifar-10-batches-bin"
    train_list = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
                  "data_batch_5"]
    test_list = ["test_batch"]
    meta_file = "batches.meta"
    label_key = "labels"
    names_key = "label_names"
    source = "https://www.cs.toronto.edu/~kriz/cifar.html"

    def __init__(self, root, train: bool = True, transform=None, target_transform=None,
                 download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        names = self.train_list if train else self.test_list
        py_folder = os.path.join(self.root, self.base_folder)
        bin_folder = os.path.join(self.root, self.binary_folder)
        if os.path.isdir(py_folder):
            images, labels = self._load_python(py_folder, names)
        elif os.path.isdir(bin_folder):
            images, labels = self._load_binary(bin_folder)
        else:
            raise DatasetNotFoundError(
                f"Dataset not found: {type(self).__name__}: neither {self.base_folder}/ "
                f"(python version) nor {self.binary_folder}/ (binary version) found in "
                f"{os.path.abspath(self.root)}. Unpack the archive from {self.source} "
                "there. ember never downloads data sets; download=True only checks that the "
                "files are there.")
        self.data = np.ascontiguousarray(images.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        self.targets = [int(t) for t in labels]

    # python version --------------------------------------------------------------------

    def _require(self, folder: str, name: str) -> str:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise DatasetNotFoundError(
                f"Dataset not found: {type(self).__name__}: file {name!r} not found. Put it in "
                f"{os.path.abspath(folder)} (from {self.source}). ember never downloads "
                "data sets.")
        return path

    def _load_python(self, folder: str, names: list[str]):
        images, labels = [], []
        for name in names:
            entry = load_array_pickle(self._require(folder, name))
            if not isinstance(entry, dict) or "data" not in entry:
                raise ValueError(f"{os.path.join(folder, name)}: not a CIFAR batch (no "
                                 "'data' entry)")
            images.append(np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3072))
            labels.extend(entry[self.label_key])
            self._extra_labels(entry)
        meta = os.path.join(folder, self.meta_file)
        if os.path.isfile(meta):
            self.classes = list(load_array_pickle(meta)[self.names_key])
        else:
            self.classes = list(self.default_classes)
        return np.concatenate(images), labels

    def _extra_labels(self, entry: dict) -> None:
        pass

    # binary version --------------------------------------------------------------------

    binary_train = [f"data_batch_{i}.bin" for i in range(1, 6)]
    binary_test = ["test_batch.bin"]
    binary_meta = "batches.meta.txt"
    default_classes = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog",
                       "horse", "ship", "truck")

    def _load_binary(self, folder: str):
        files = self.binary_train if self.train else self.binary_test
        images, labels = [], []
        for name in files:
            label_part, pixels = self._read_binary(self._require(folder, name))
            images.append(pixels)
            labels.append(label_part)
        meta = os.path.join(folder, self.binary_meta)
        if os.path.isfile(meta):
            with open(meta, encoding="utf-8") as f:
                self.classes = [line.strip() for line in f if line.strip()]
        else:
            self.classes = list(self.default_classes)
        return np.concatenate(images), np.concatenate(labels)

    def _read_binary(self, path: str):
        labels, pixels = _read_binary_records(path, 1)
        return labels[:, 0], pixels

    # -----------------------------------------------------------------------------------

    @property
    def class_to_idx(self) -> dict:
        return {name: i for i, name in enumerate(self.classes)}

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        return self._apply(image_or_array(self.data[index]), self.targets[index])

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: like CIFAR-10 with 100 fine classes (``targets``) grouped into 20 coarse
    ones (``coarse_targets``, an ember extra).  Folders: ``cifar-100-python/`` (files
    ``train``, ``test``, ``meta``) or ``cifar-100-binary/`` (``train.bin``, ``test.bin``,
    ``fine_label_names.txt``)."""

    base_folder = "cifar-100-python"
    binary_folder = "cifar-100-binary"
    train_list = ["train"]
    test_list = ["test"]
    meta_file = "meta"
    label_key = "fine_labels"
    names_key = "fine_label_names"
    binary_train = ["train.bin"]
    binary_test = ["test.bin"]
    binary_meta = "fine_label_names.txt"
    default_classes = tuple(str(i) for i in range(100))

    def __init__(self, root, train: bool = True, transform=None, target_transform=None,
                 download: bool = False):
        self.coarse_targets = []
        super().__init__(root, train, transform, target_transform, download)

    def _extra_labels(self, entry: dict) -> None:
        self.coarse_targets.extend(int(t) for t in entry.get("coarse_labels", []))

    def _read_binary(self, path: str):
        labels, pixels = _read_binary_records(path, 2)
        self.coarse_targets.extend(labels[:, 0].tolist())
        return labels[:, 1], pixels
