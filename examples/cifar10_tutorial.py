"""Training an image classifier: the CIFAR-10 exercise from PyTorch's 60-minute
introduction, run on ember.

    python examples/cifar10_tutorial.py --root data       # real CIFAR-10 if it is there

The steps are the usual ones: load and normalize the data with ``vision.datasets`` and
``transforms``, define a small convolutional network, pick a loss and an optimizer, train
for two epochs, save the weights, load them back and measure the accuracy on the test set,
overall and per class.

ember never downloads.  Put the python version (``cifar-10-batches-py/``) or the binary
version (``cifar-10-batches-bin/``) of CIFAR-10 under ``--root``.  Without them the script
runs on ``FakeData`` (random 32x32 colour images with random labels, 512 for training), so
every step still runs in well under a minute; the accuracy is then chance (about 10%), since
there is nothing to learn.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.utils.data import DataLoader
from ember.vision import datasets, transforms
from ember.vision.utils import save_image

CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def load_data(root: str, batch_size: int, fake_size: int):
    """Train and test loaders; images normalized from [0, 1] to [-1, 1]."""
    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    ])
    have_cifar = any(os.path.isdir(os.path.join(root, d))
                     for d in ("cifar-10-batches-py", "cifar-10-batches-bin"))
    if have_cifar:
        trainset = datasets.CIFAR10(root=root, train=True, transform=transform)
        testset = datasets.CIFAR10(root=root, train=False, transform=transform)
        print(f"CIFAR-10 from {root}: {len(trainset)} training, {len(testset)} test images")
    else:
        trainset = datasets.FakeData(size=fake_size, image_size=(3, 32, 32), num_classes=10,
                                     transform=transform)
        testset = datasets.FakeData(size=fake_size // 4, image_size=(3, 32, 32),
                                    num_classes=10, transform=transform,
                                    random_offset=fake_size)
        print(f"no CIFAR-10 files under {root!r}: using FakeData ({len(trainset)} training, "
              f"{len(testset)} test images of random pixels; expect chance accuracy)")
    trainloader = DataLoader(trainset, batch_size=batch_size, shuffle=True)
    testloader = DataLoader(testset, batch_size=batch_size, shuffle=False)
    return trainloader, testloader


class Net(nn.Module):
    """Two convolutions with max pooling, then three fully connected layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)         # 3x32x32 -> 6x28x28
        self.pool = nn.MaxPool2d(2, 2)          # halves height and width
        self.conv2 = nn.Conv2d(6, 16, 5)        # 6x14x14 -> 16x10x10
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)                 # everything but the batch dimension
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def train(net, trainloader, epochs: int, report_every: int) -> None:
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    for epoch in range(epochs):
        running_loss = 0.0
        for i, (inputs, labels) in enumerate(trainloader):
            optimizer.zero_grad()               # gradients accumulate unless cleared
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % report_every == report_every - 1:
                print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / report_every:.3f}")
                running_loss = 0.0
    print("Finished Training")


def evaluate(net, testloader) -> float:
    correct = total = 0
    correct_pred = {name: 0 for name in CLASSES}
    total_pred = {name: 0 for name in CLASSES}
    with torch.no_grad():                       # no graph needed for inference
        for images, labels in testloader:
            predictions = net(images).argmax(1)
            total += labels.size(0)
            correct += (predictions == labels).sum().item()
            for label, prediction in zip(labels.tolist(), predictions.tolist()):
                total_pred[CLASSES[label]] += 1
                correct_pred[CLASSES[label]] += int(label == prediction)
    accuracy = correct / total
    print(f"Accuracy of the network on the {total} test images: {100 * accuracy:.1f} %")
    for name in CLASSES:
        if total_pred[name]:
            print(f"Accuracy for class: {name:5s} is "
                  f"{100 * correct_pred[name] / total_pred[name]:.1f} %")
    return accuracy


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default="data", help="folder holding CIFAR-10")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--fake-size", type=int, default=512,
                        help="FakeData training images when CIFAR-10 is absent")
    parser.add_argument("--out", default="runs/cifar10_tutorial")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    trainloader, testloader = load_data(args.root, args.batch_size, args.fake_size)

    # a look at some training images (the tutorial shows them with matplotlib)
    images, labels = next(iter(trainloader))
    save_image(images / 2 + 0.5, out / "train_batch.png")   # undo the normalization
    print("saved", out / "train_batch.png", "showing:",
          " ".join(f"{CLASSES[label]:5s}" for label in labels.tolist()))

    net = Net()
    train(net, trainloader, args.epochs, report_every=max(1, len(trainloader) // 4))

    path = out / "cifar_net.pth"
    torch.save(net.state_dict(), path)
    net = Net()
    net.load_state_dict(torch.load(path, weights_only=True))
    return evaluate(net, testloader)


if __name__ == "__main__":
    main()
