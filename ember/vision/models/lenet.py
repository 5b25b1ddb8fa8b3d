"""LeNet-5 (LeCun et al., 1998) in its common modern form: ReLU and max pooling."""

from __future__ import annotations

from ... import nn


class LeNet(nn.Module):
    """Two 5x5 convolutions (6 and 16 channels, each followed by ReLU and 2x2 max pooling)
    and three linear layers (120, 84, `num_classes`).

    Made for 28x28 images (MNIST): the first convolution pads by 2, so the feature map
    before the classifier is 16 x 5 x 5.  For 32x32 images pass ``padding=0``.
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1, padding: int = 2):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=padding), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def lenet(num_classes: int = 10, **kwargs) -> LeNet:
    """A `LeNet` (no pretrained weights)."""
    return LeNet(num_classes, **kwargs)
