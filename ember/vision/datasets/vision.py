"""What every vision data set shares: a root folder, the transforms, a readable repr, the
one error raised when a file is missing (ember never downloads), and the in-memory base of
the MNIST family and the bundled digits."""

from __future__ import annotations

import os

from ...utils.data import Dataset
from .._pil import image_or_array


class VisionDataset(Dataset):
    """Base class of the image data sets.

    `transform` is applied to the image, `target_transform` to the target; `transforms`
    (a callable taking and returning ``(image, target)``) is the joint alternative and
    cannot be combined with the other two.
    """

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        if isinstance(root, (str, os.PathLike)):
            root = os.path.expanduser(os.fspath(root))
        self.root = root
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError("Only transforms or transform/target_transform can be passed as "
                             "argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = transforms

    def _apply(self, image, target):
        if self.transforms is not None:
            return self.transforms(image, target)
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"Root location: {self.root}")
        lines += [line for line in self.extra_repr().splitlines() if line]
        for name in ("transforms", "transform", "target_transform"):
            value = getattr(self, name)
            if value is not None:
                text = repr(value).replace("\n", "\n" + " " * self._repr_indent)
                lines.append(f"{name.replace('_', ' ').capitalize()}: {text}")
        body = "\n".join(" " * self._repr_indent + line for line in lines)
        return f"Dataset {type(self).__name__}\n{body}"


class DatasetNotFoundError(FileNotFoundError, RuntimeError):
    """A data set's files are not on disk.  A RuntimeError, as torchvision raises
    ("Dataset not found"), and a FileNotFoundError."""


def missing_file_error(name: str, folder: str, what: str,
                       source: str = "") -> DatasetNotFoundError:
    """The error for a data file that is not on disk: which file, and where to put it."""
    hint = f" ({source})" if source else ""
    return DatasetNotFoundError(
        f"Dataset not found: {what} file {name!r} is not there. Put it in "
        f"{os.path.abspath(folder)}{hint}. ember never downloads data sets; download=True "
        "only checks that the files are there.")


class ArrayImages(VisionDataset):
    """A data set held in memory as tensors: `data` (uint8, N x H x W) and `targets`
    (int64); samples are ``(image, int label)``, the image as `image_or_array` gives it.
    Subclasses load the two tensors and name their `classes`."""

    classes: list = []

    @property
    def class_to_idx(self) -> dict:
        return {name: i for i, name in enumerate(self.classes)}

    def __len__(self) -> int:
        return self.data.shape[0]

    def __getitem__(self, index: int):
        image = image_or_array(self.data.cpu_array()[index])
        return self._apply(image, int(self.targets.cpu_array()[index]))
