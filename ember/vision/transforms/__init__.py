"""Image transforms (``torchvision.transforms``' API) for PIL images, NumPy images and
tensors; the functional forms are in ``ember.vision.transforms.functional``."""

from . import functional
from .functional import InterpolationMode
from .transforms import (
    CenterCrop, ColorJitter, Compose, ConvertImageDtype, FiveCrop, GaussianBlur, Grayscale,
    Lambda, Normalize, Pad, PILToTensor, RandomAffine, RandomApply, RandomChoice, RandomCrop,
    RandomErasing, RandomGrayscale, RandomHorizontalFlip, RandomOrder, RandomResizedCrop,
    RandomRotation, RandomVerticalFlip, Resize, TenCrop, ToPILImage, ToTensor,
)

__all__ = [
    "CenterCrop", "ColorJitter", "Compose", "ConvertImageDtype", "FiveCrop", "GaussianBlur",
    "Grayscale", "InterpolationMode", "Lambda", "Normalize", "PILToTensor", "Pad", "RandomAffine",
    "RandomApply", "RandomChoice", "RandomCrop", "RandomErasing", "RandomGrayscale",
    "RandomHorizontalFlip", "RandomOrder", "RandomResizedCrop", "RandomRotation",
    "RandomVerticalFlip", "Resize", "TenCrop", "ToPILImage", "ToTensor", "functional",
]
