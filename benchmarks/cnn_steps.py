"""Training steps of image networks that run.py does not cover, ember against PyTorch in
one process: a CIFAR ResNet-like network (a 3 -> 16 stem and three basic blocks, 16 ->
16, 16 -> 32 and 32 -> 64, the last two halving the image) at batch 64 on 32x32
images; torchvision's ResNet-18 at batch 8 on 112x112 images; a MobileNet-like one (a
stride-2 stem and four inverted residual blocks: 1x1 expansion, 3x3 depthwise, 1x1
projection, batch norm and ReLU6) at batch 32 on 64x64 images, these three with SGD
(momentum) and cross-entropy; and the DCGAN of pytorch/examples at 32x32 (transposed
convolutions, Adam, binary cross-entropy).  And the batch-1 inference of the three
image networks (eval mode, no_grad; ResNet-18 on one 224x224 image).

They measure the layers of such networks that the MNIST CNN of run.py does not have:
3x3 convolutions of 16-64 channels, strided depthwise convolutions, stride-2 stems
(docs/performance.md, thirty-first session).  The two libraries take turns (run.py's
`alternate`); the ratio is that of the medians.  With --compiled, ember's ResNet,
MobileNet and inference networks run through ``ember.compile`` (PyTorch's stay eager).
Usage:
    python benchmarks/cnn_steps.py [--threads 2] [--repeats 12] [--rounds 3] [--only dcgan]
                                   [--compiled]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._harness import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv(default="2")

import numpy as np  # noqa: E402

import ember  # noqa: E402
from benchmarks import run  # noqa: E402
from benchmarks._harness import libraries_on_threads, turn_arguments  # noqa: E402


def basic_block(nn, inplace: bool):
    """The basic residual block class of a ResNet built from `nn` (two 3x3 convolutions
    with batch norm, a 1x1 projection where the shape changes), its ReLUs in place or
    not."""

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=inplace)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    return Block


def resnet_like(lib):
    """A CIFAR ResNet-like network: stem, three basic blocks, pooling, a linear head."""
    nn = lib.nn
    block = basic_block(nn, inplace=False)
    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         block(16, 16, 1), block(16, 32, 2), block(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def resnet18(lib):
    """torchvision's ResNet-18 layout (7x7 stride-2 stem, max pooling, four stages of two
    basic blocks from 64 to 512 channels, in-place ReLUs), for 10 classes."""
    nn = lib.nn
    block = basic_block(nn, inplace=True)
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [block(cin, cout, stride), block(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))


def mobilenet_like(lib):
    """A MobileNet-like network: a stride-2 stem and four inverted residual blocks
    (without their residual additions), pooling, a linear head."""
    nn = lib.nn

    def block(cin: int, cout: int, stride: int, expand: int = 4):
        mid = cin * expand
        return nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU6(),
                             nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
                             nn.BatchNorm2d(mid), nn.ReLU6(),
                             nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    return nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(),
                         block(16, 24, 2), block(24, 24, 1), block(24, 32, 2), block(32, 64, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def dcgan_step(lib):
    """One step of the DCGAN of pytorch/examples at 32x32 (a generator of transposed
    convolutions from 100 noise channels, a discriminator of stride-2 4x4 convolutions,
    64 base channels, batch norm, Adam): the discriminator on a real and a generated
    batch of 32, then the generator, as a closure."""
    nn = lib.nn
    lib.manual_seed(0)

    def up(cin: int, cout: int, stride: int, padding: int):
        return [nn.ConvTranspose2d(cin, cout, 4, stride, padding, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU(True)]

    generator = nn.Sequential(*up(100, 256, 1, 0), *up(256, 128, 2, 1), *up(128, 64, 2, 1),
                              nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False), nn.Tanh())
    discriminator = nn.Sequential(
        nn.Conv2d(3, 64, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True),
        nn.Conv2d(64, 128, 4, 2, 1, bias=False), nn.BatchNorm2d(128), nn.LeakyReLU(0.2, True),
        nn.Conv2d(128, 256, 4, 2, 1, bias=False), nn.BatchNorm2d(256),
        nn.LeakyReLU(0.2, True), nn.Conv2d(256, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    rng = np.random.default_rng(0)
    real = lib.tensor(rng.uniform(-1, 1, (32, 3, 32, 32)).astype(np.float32))
    noise = lib.tensor(rng.standard_normal((32, 100, 1, 1)).astype(np.float32))
    ones, zeros = lib.ones(32), lib.zeros(32)
    opt_d = lib.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = lib.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCELoss()

    def step():
        discriminator.zero_grad()
        bce(discriminator(real).view(-1), ones).backward()
        fake = generator(noise)
        bce(discriminator(fake.detach()).view(-1), zeros).backward()
        opt_d.step()
        generator.zero_grad()
        bce(discriminator(fake).view(-1), ones).backward()
        opt_g.step()
    return step


NETWORKS = {
    "resnet": ("CIFAR ResNet-like step, batch 64, 32x32",
               lambda lib: training_step(lib, resnet_like, 64, 32)),
    "resnet18": ("ResNet-18 step, batch 8, 112x112",
                 lambda lib: training_step(lib, resnet18, 8, 112)),
    "mobilenet": ("MobileNet-like step, batch 32, 64x64",
                  lambda lib: training_step(lib, mobilenet_like, 32, 64)),
    "dcgan": ("DCGAN step (both nets), batch 32, 32x32", dcgan_step),
    "resnet-infer": ("CIFAR ResNet-like, batch-1 inference, 32x32",
                     lambda lib: inference(lib, resnet_like, 32)),
    "resnet18-infer": ("ResNet-18, batch-1 inference, 224x224",
                       lambda lib: inference(lib, resnet18, 224)),
    "mobilenet-infer": ("MobileNet-like, batch-1 inference, 64x64",
                        lambda lib: inference(lib, mobilenet_like, 64)),
}


COMPILE = {"ember": False}  # --compiled: ember's networks run through ember.compile


def _compiled(lib, model):
    """`model` through ``ember.compile`` when --compiled asks for it (ember only)."""
    return lib.compile(model) if COMPILE["ember"] and lib.__name__ == "ember" else model


def inference(lib, build, size: int):
    """`build`'s network in eval mode on one random image under no_grad, as a closure."""
    lib.manual_seed(0)
    model = build(lib)
    model.eval()
    model = _compiled(lib, model)
    image = lib.tensor(np.random.default_rng(0).standard_normal((1, 3, size, size))
                       .astype(np.float32))

    def infer():
        with lib.no_grad():
            return model(image)
    return infer


def training_step(lib, build, batch: int, size: int):
    """One SGD step of `build`'s network on a fixed random batch, as a closure."""
    lib.manual_seed(0)
    model = build(lib)
    rng = np.random.default_rng(0)
    images = lib.tensor(rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    labels = lib.tensor(rng.integers(0, 10, batch))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model = _compiled(lib, model)

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(images), labels).backward()
        opt.step()
    return step


def main() -> None:
    args = turn_arguments(__doc__, 12, "comma-separated: resnet, resnet18, mobilenet, dcgan, "
                          "resnet-infer, resnet18-infer, mobilenet-infer",
                          "ember's networks (not DCGAN's) through ember.compile")
    COMPILE["ember"] = args.compiled
    torch = libraries_on_threads(args.threads)
    print(f"{args.threads} threads, median of {args.repeats} steps in {args.rounds} turns, ms"
          + ("; ember compiled" if args.compiled else ""))
    print(f"{'network':<42} {'ember':>8} {'PyTorch':>8} {'ratio':>6}  rounds")
    for key, (name, make_step) in NETWORKS.items():
        if args.only and key not in args.only.split(","):
            continue
        theirs = make_step(torch) if torch is not None else None
        e, t, spread = run.alternate(make_step(ember), theirs, args.repeats,
                                     rounds=args.rounds)
        ratio = f"{e / t:6.2f}" if t else f"{'-':>6}"
        torch_ms = f"{t * 1e3:8.2f}" if t else f"{'-':>8}"
        rounds = f"{min(spread):.2f}-{max(spread):.2f}" if spread else ""
        print(f"{name:<42} {e * 1e3:8.2f} {torch_ms} {ratio}  {rounds}")


if __name__ == "__main__":
    main()
