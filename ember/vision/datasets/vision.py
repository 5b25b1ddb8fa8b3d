"""What every vision data set shares: a root folder, the transforms, a readable repr, and
the one error raised when a file is missing (ember never downloads)."""

from __future__ import annotations

import os

from ...utils.data import Dataset


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


def missing_file_error(name: str, folder: str, what: str, source: str = "") -> FileNotFoundError:
    """The error for a data file that is not on disk: which file, and where to put it."""
    hint = f" ({source})" if source else ""
    return FileNotFoundError(
        f"{what}: file {name!r} not found. Put it in {os.path.abspath(folder)}{hint}. "
        "ember never downloads data sets; download=True only checks that the files are "
        "there.")

