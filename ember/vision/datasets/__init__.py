"""Image data sets (``torchvision.datasets``' API).  None of them downloads: a missing file
raises an error naming the file and the folder to put it in.

Images come out as torchvision's do, as PIL images (from the MNIST family, CIFAR,
FakeData, the bundled Digits and ImageFolder); without Pillow the array-backed sets give
uint8 NumPy arrays, (H, W) or (H, W, C).  Every transform in ``ember.vision.transforms``
accepts both, and ``ToTensor`` turns either into a tensor.  A missing data set raises
``DatasetNotFoundError``: a RuntimeError, as torchvision's, and a FileNotFoundError.
"""

from .cifar import CIFAR10, CIFAR100, load_array_pickle
from .digits import Digits
from .fakedata import FakeData
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, pil_loader
from .mnist import EMNIST, KMNIST, MNIST, FashionMNIST, read_idx
from .vision import DatasetNotFoundError, VisionDataset

__all__ = [
    "CIFAR10", "CIFAR100", "DatasetFolder", "DatasetNotFoundError", "Digits", "EMNIST",
    "FakeData", "FashionMNIST",
    "IMG_EXTENSIONS", "ImageFolder", "KMNIST", "MNIST", "VisionDataset", "default_loader",
    "load_array_pickle", "pil_loader", "read_idx",
]
