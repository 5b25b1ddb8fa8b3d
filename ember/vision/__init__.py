"""Computer vision on ember (``torchvision``'s API): data sets, transforms, models and
image utilities.

    from ember.vision import datasets, transforms, models
    train = datasets.Digits(transform=transforms.ToTensor())   # bundled, no download

Images in memory are NumPy uint8 arrays, (H, W) for gray and (H, W, C) for colour: that
is what the array-backed data sets yield (torchvision yields PIL images there).  PIL
images (Pillow, the ``data`` extra) work wherever torchvision takes them.
"""

from . import datasets, models, transforms, utils

__all__ = ["datasets", "models", "transforms", "utils"]
