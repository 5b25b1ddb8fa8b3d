"""Image data sets (``torchvision.datasets``' API).  None of them downloads: a missing file
raises an error naming the file and the folder to put it in.

Images from the array-backed sets (MNIST family, CIFAR, FakeData, Digits) are NumPy uint8
arrays, (H, W) or (H, W, C); ImageFolder yields PIL images.  Every transform in
``ember.vision.transforms`` accepts both, and ``ToTensor`` turns either into a tensor.
"""

from .cifar import CIFAR10, CIFAR100, load_array_pickle
from .digits import Digits
from .fakedata import FakeData
from .folder import IMG_EXTENSIONS, DatasetFolder, ImageFolder, default_loader, pil_loader
from .mnist import EMNIST, KMNIST, MNIST, FashionMNIST, read_idx
from .vision import VisionDataset

__all__ = [
    "CIFAR10", "CIFAR100", "DatasetFolder", "Digits", "EMNIST", "FakeData", "FashionMNIST",
    "IMG_EXTENSIONS", "ImageFolder", "KMNIST", "MNIST", "VisionDataset", "default_loader",
    "load_array_pickle", "pil_loader", "read_idx",
]
