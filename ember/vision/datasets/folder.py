"""Data sets read from a folder tree with one sub-folder per class:
``root/<class>/<any path>/<file>``.

`DatasetFolder` takes a `loader` for any kind of file; `ImageFolder` loads images with
Pillow (the ``data`` extra), converted to RGB, as torchvision does.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .._pil import pil_image
from .vision import VisionDataset

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff",
                  ".webp")


def has_file_allowed_extension(filename: str, extensions) -> bool:
    """True if `filename` ends with one of `extensions` (a string or tuple; any case)."""
    if isinstance(extensions, str):
        extensions = (extensions,)
    return filename.lower().endswith(tuple(e.lower() for e in extensions))


def is_image_file(filename: str) -> bool:
    """True if `filename` has one of the image extensions ImageFolder accepts."""
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory) -> tuple[list[str], dict[str, int]]:
    """The class names (the sub-folders of `directory`, sorted) and their indices."""
    directory = os.fspath(directory)
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory, class_to_idx: dict | None = None, extensions=None,
                 is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> list[tuple[str, int]]:
    """The ``(path, class index)`` pairs under `directory`, class by class, files sorted.

    Exactly one of `extensions` and `is_valid_file` says which files count.  A class
    with no file is an error unless `allow_empty`.
    """
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any "
                         "samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at "
                         "the same time")
    if extensions is not None:
        def is_valid_file(path: str) -> bool:
            return has_file_allowed_extension(path, extensions)

    instances, found = [], set()
    for name in sorted(class_to_idx):
        index = class_to_idx[name]
        folder = os.path.join(directory, name)
        if not os.path.isdir(folder):
            continue
        for dirpath, _, filenames in sorted(os.walk(folder, followlinks=True)):
            for filename in sorted(filenames):
                path = os.path.join(dirpath, filename)
                if is_valid_file(path):
                    instances.append((path, index))
                    found.add(name)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        message = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            exts = extensions if isinstance(extensions, str) else ", ".join(extensions)
            message += f"Supported extensions are: {exts}"
        raise FileNotFoundError(message)
    return instances


class DatasetFolder(VisionDataset):
    """Samples are the files of ``root/<class>/...``; ``dataset[i]`` is
    ``(loader(path), class index)`` after the transforms.

    Attributes: ``classes`` (sorted folder names), ``class_to_idx``, ``samples`` (list of
    ``(path, index)``) and ``targets`` (the indices).
    """

    def __init__(self, root, loader: Callable, extensions=None, transform=None,
                 target_transform=None, is_valid_file=None, allow_empty: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"{type(self).__name__}: folder {self.root!r} not found")
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx, extensions, is_valid_file,
                                    allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [target for _, target in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None,
                     allow_empty: bool = False):
        """See the module function `make_dataset` (override to change the layout)."""
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions, is_valid_file,
                            allow_empty=allow_empty)

    def find_classes(self, directory):
        """See the module function `find_classes` (override to change the classes)."""
        return find_classes(directory)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        return self._apply(self.loader(path), target)

    def __len__(self) -> int:
        return len(self.samples)


def pil_loader(path: str):
    """Open an image file with Pillow and convert it to RGB."""
    image_module = pil_image("loading image files")
    with open(path, "rb") as f:
        image = image_module.open(f)
        return image.convert("RGB")


def default_loader(path: str):
    """The loader ImageFolder uses by default (Pillow, RGB)."""
    return pil_loader(path)


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/...`` (extensions: `IMG_EXTENSIONS`), loaded as RGB PIL
    images.  Needs Pillow (``pip install "ember[data]"``).  ``imgs`` is ``samples``."""

    def __init__(self, root, transform=None, target_transform=None,
                 loader: Callable = default_loader, is_valid_file=None,
                 allow_empty: bool = False):
        if loader is default_loader:
            pil_image("ImageFolder")  # fail early, naming the extra
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None,
                         transform=transform, target_transform=target_transform,
                         is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
