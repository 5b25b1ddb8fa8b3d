"""Model architectures (``torchvision.models``' names): LeNet, the ImageNet ResNets with
their weight enums, and the small CIFAR ResNets.  Pretrained weights are read only from
the local hub cache (see ``ember.hub``)."""

from ._api import Weights, WeightsEnum
from .lenet import LeNet, lenet
from .resnet import (
    BasicBlock, Bottleneck, CifarResNet, ResNet, ResNet18_Weights, ResNet34_Weights,
    ResNet50_Weights, ResNet101_Weights, ResNet152_Weights, resnet18, resnet20, resnet32,
    resnet34, resnet44, resnet50, resnet56, resnet101, resnet152,
)

__all__ = [
    "BasicBlock", "Bottleneck", "CifarResNet", "LeNet", "ResNet", "ResNet18_Weights",
    "ResNet34_Weights", "ResNet50_Weights", "ResNet101_Weights", "ResNet152_Weights",
    "Weights", "WeightsEnum", "lenet", "resnet18", "resnet20", "resnet32", "resnet34",
    "resnet44", "resnet50", "resnet56", "resnet101", "resnet152",
]
