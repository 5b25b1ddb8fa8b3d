"""FakeData: random images and labels, the same for the same index every time."""

from __future__ import annotations

import numpy as np

from .._pil import image_or_array
from .vision import VisionDataset


class FakeData(VisionDataset):
    """`size` random images of shape `image_size` (C, H, W) with labels in
    ``[0, num_classes)``.

    The arguments are torchvision's, in its order.  Sample ``i`` is drawn from its own
    generator seeded with ``i + random_offset``, so it is the same on every access, in
    every worker, and does not touch the global random state.  Images are PIL images, as
    torchvision's (mode "L" for one channel, "RGB" for three; uint8 NumPy arrays (H, W)
    or (H, W, C) without Pillow); labels are ints.
    """

    def __init__(self, size: int = 1000, image_size=(3, 224, 224), num_classes: int = 10,
                 transform=None, target_transform=None, random_offset: int = 0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        image_size = tuple(int(s) for s in image_size)
        if len(image_size) != 3 or min(image_size) < 1:
            raise ValueError(f"FakeData: image_size must be (C, H, W), got {image_size}")
        if size < 0 or num_classes < 1:
            raise ValueError(f"FakeData: need size >= 0 and num_classes >= 1, got size={size}"
                             f", num_classes={num_classes}")
        self.size = int(size)
        self.image_size = image_size
        self.num_classes = int(num_classes)
        self.random_offset = int(random_offset)

    def __getitem__(self, index: int):
        if not -self.size <= index < self.size:
            raise IndexError(f"{type(self).__name__} index out of range ({index} not in "
                             f"[0, {self.size}))")
        index %= self.size
        rng = np.random.default_rng(index + self.random_offset)
        channels, height, width = self.image_size
        image = rng.integers(0, 256, size=(height, width, channels), dtype=np.uint8)
        if channels == 1:
            image = image[:, :, 0]
        target = int(rng.integers(0, self.num_classes))
        return self._apply(image_or_array(image), target)

    def __len__(self) -> int:
        return self.size
