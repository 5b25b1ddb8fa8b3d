"""Residual networks (He et al., 2015): the ImageNet family with torchvision's
constructors, weight enums and module names (so torchvision state dicts load), and the
small CIFAR variants (resnet20/32/44/56).

Pretrained weights come only from the local hub cache (``ember.hub``): pass
``weights=ResNet18_Weights.DEFAULT`` after putting ``resnet18-f37072fd.pth`` (the file
``ResNet18_Weights.IMAGENET1K_V1.url`` names) in ``$TORCH_HOME/hub/checkpoints/``.
"""

from __future__ import annotations

import warnings
from functools import partial

from ... import nn
from ..transforms._presets import ImageClassification
from ._api import Weights, WeightsEnum
from ._meta import IMAGENET_CATEGORIES

__all__ = [
    "BasicBlock", "Bottleneck", "ResNet", "ResNet18_Weights", "ResNet34_Weights",
    "ResNet50_Weights", "ResNet101_Weights", "ResNet152_Weights", "CifarResNet", "resnet18",
    "resnet34", "resnet50", "resnet101", "resnet152", "resnet20", "resnet32", "resnet44",
    "resnet56",
]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1,
            dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution with 'same' padding, no bias (a batch norm follows)."""
    return nn.Conv2d(in_planes, out_planes, 3, stride=stride, padding=dilation,
                     groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution, no bias."""
    return nn.Conv2d(in_planes, out_planes, 1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and a shortcut: ``relu(bn2(conv2(relu(bn1(conv1 x)))) + x)``."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1x1 (reduce), 3x3 (carries the stride), 1x1 (expand by 4) and a shortcut."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


def _init_weights(model: nn.Module, zero_init_residual: bool) -> None:
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)
    if zero_init_residual:  # each block starts as the identity
        for m in model.modules():
            if isinstance(m, Bottleneck):
                nn.init.constant_(m.bn3.weight, 0)
            elif isinstance(m, BasicBlock):
                nn.init.constant_(m.bn2.weight, 0)


class ResNet(nn.Module):
    """The ImageNet ResNet: a 7x7 stride-2 stem and max pool, four stages of `block`s
    (``layers`` blocks each, 64/128/256/512 planes, stride 1/2/2/2), global average pool
    and a linear classifier.  Module names follow torchvision (``conv1``, ``bn1``,
    ``layer1.0.conv1``, ``layer2.0.downsample.0``, ``fc``...)."""

    def __init__(self, block, layers, num_classes: int = 1000, zero_init_residual: bool = False,
                 groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        self._norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes = 64
        self.dilation = 1
        replace_stride_with_dilation = replace_stride_with_dilation or [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element "
                             f"tuple, got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, 7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2, replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], 2, replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], 2, replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        _init_weights(self, zero_init_residual)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1,
                    dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups,
                        self.base_width, previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups,
                                base_width=self.base_width, dilation=self.dilation,
                                norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


# -- weights --------------------------------------------------------------------------

def _meta(num_params: int, acc1: float, acc5: float, recipe: str) -> dict:
    return {
        "min_size": (1, 1),
        "categories": IMAGENET_CATEGORIES,
        "num_params": num_params,
        "recipe": recipe,
        "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}},
        "_docs": "ImageNet-1K weights (the file must be in the local hub cache).",
    }


_URL = "https://download.pytorch.org/models/"
_V1_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#resnet"
_V2_RECIPE = "https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621"
_V1_TRANSFORMS = partial(ImageClassification, crop_size=224)
_V2_TRANSFORMS = partial(ImageClassification, crop_size=224, resize_size=232)


def _v1(file: str, num_params: int, acc1: float, acc5: float) -> Weights:
    """Weights of torchvision's first ImageNet recipe (evaluated at 224 from 256)."""
    return Weights(_URL + file, _V1_TRANSFORMS, _meta(num_params, acc1, acc5, _V1_RECIPE))


def _v2(file: str, num_params: int, acc1: float, acc5: float) -> Weights:
    """Weights of the second recipe (evaluated at 224 from 232)."""
    return Weights(_URL + file, _V2_TRANSFORMS, _meta(num_params, acc1, acc5, _V2_RECIPE))


class ResNet18_Weights(WeightsEnum):  # noqa: N801 - torchvision's name
    IMAGENET1K_V1 = _v1("resnet18-f37072fd.pth", 11689512, 69.758, 89.078)
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):  # noqa: N801
    IMAGENET1K_V1 = _v1("resnet34-b627a593.pth", 21797672, 73.314, 91.420)
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):  # noqa: N801
    IMAGENET1K_V1 = _v1("resnet50-0676ba61.pth", 25557032, 76.130, 92.862)
    IMAGENET1K_V2 = _v2("resnet50-11ad3fa6.pth", 25557032, 80.858, 95.434)
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):  # noqa: N801
    IMAGENET1K_V1 = _v1("resnet101-63fe2227.pth", 44549160, 77.374, 93.546)
    IMAGENET1K_V2 = _v2("resnet101-cd907fc2.pth", 44549160, 81.886, 95.780)
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):  # noqa: N801
    IMAGENET1K_V1 = _v1("resnet152-394f9c45.pth", 60192808, 78.312, 94.046)
    IMAGENET1K_V2 = _v2("resnet152-f82ba261.pth", 60192808, 82.284, 96.002)
    DEFAULT = IMAGENET1K_V2


def _resnet(block, layers, weights_enum, weights, progress: bool, kwargs) -> ResNet:
    if "pretrained" in kwargs:  # torchvision's old argument
        pretrained = kwargs.pop("pretrained")
        warnings.warn("The parameter 'pretrained' is deprecated, please use 'weights' "
                      "instead.", UserWarning, stacklevel=3)
        if pretrained and weights is None:
            weights = weights_enum.IMAGENET1K_V1
    weights = weights_enum.verify(weights)
    if weights is not None:
        expected = len(weights.meta["categories"])
        if kwargs.get("num_classes", expected) != expected:
            raise ValueError(f"The parameter 'num_classes' expected value {expected} but got "
                             f"{kwargs['num_classes']} instead.")
        kwargs["num_classes"] = expected
    model = ResNet(block, layers, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


def resnet18(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-18 (BasicBlocks 2-2-2-2), optionally with `weights` from the local cache."""
    return _resnet(BasicBlock, [2, 2, 2, 2], ResNet18_Weights, weights, progress, kwargs)


def resnet34(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-34 (BasicBlocks 3-4-6-3)."""
    return _resnet(BasicBlock, [3, 4, 6, 3], ResNet34_Weights, weights, progress, kwargs)


def resnet50(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-50 (Bottlenecks 3-4-6-3)."""
    return _resnet(Bottleneck, [3, 4, 6, 3], ResNet50_Weights, weights, progress, kwargs)


def resnet101(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-101 (Bottlenecks 3-4-23-3)."""
    return _resnet(Bottleneck, [3, 4, 23, 3], ResNet101_Weights, weights, progress, kwargs)


def resnet152(*, weights=None, progress: bool = True, **kwargs) -> ResNet:
    """ResNet-152 (Bottlenecks 3-8-36-3)."""
    return _resnet(Bottleneck, [3, 8, 36, 3], ResNet152_Weights, weights, progress, kwargs)


# -- the CIFAR variants ---------------------------------------------------------------

class CifarResNet(nn.Module):
    """ResNet for 32x32 images (He et al., section 4.2): a 3x3 stem with 16 channels,
    three stages of `n` BasicBlocks (16/32/64 planes, stride 1/2/2), global average pool
    and a linear classifier; depth 6n + 2.  Shortcuts that change shape are 1x1
    convolutions with batch norm (the paper's option B)."""

    def __init__(self, n: int, num_classes: int = 10, in_channels: int = 3):
        super().__init__()
        self.inplanes = 16
        self.conv1 = conv3x3(in_channels, 16)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(16, n, 1)
        self.layer2 = self._make_layer(32, n, 2)
        self.layer3 = self._make_layer(64, n, 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(64, num_classes)
        _init_weights(self, zero_init_residual=False)

    def _make_layer(self, planes: int, blocks: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(self.avgpool(x).flatten(1))


def resnet20(num_classes: int = 10, **kwargs) -> CifarResNet:
    """ResNet-20 for CIFAR (3 blocks per stage, about 0.27M parameters)."""
    return CifarResNet(3, num_classes, **kwargs)


def resnet32(num_classes: int = 10, **kwargs) -> CifarResNet:
    """ResNet-32 for CIFAR (5 blocks per stage)."""
    return CifarResNet(5, num_classes, **kwargs)


def resnet44(num_classes: int = 10, **kwargs) -> CifarResNet:
    """ResNet-44 for CIFAR (7 blocks per stage)."""
    return CifarResNet(7, num_classes, **kwargs)


def resnet56(num_classes: int = 10, **kwargs) -> CifarResNet:
    """ResNet-56 for CIFAR (9 blocks per stage)."""
    return CifarResNet(9, num_classes, **kwargs)
