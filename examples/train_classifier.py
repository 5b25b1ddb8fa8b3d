"""Train a small convolutional network to classify images, written as a PyTorch user would.

    python examples/train_classifier.py                      # the bundled 8x8 digits
    python examples/train_classifier.py --dataset mnist --root data --epochs 3
    python examples/train_classifier.py --dataset cifar10 --root data --device cuda

By default it trains on the handwritten digits bundled with ember (1,442 training and 355
test images, no download) and reaches about 99% test accuracy in well under a minute.  With
``--dataset mnist``, ``fashion-mnist`` or ``cifar10`` it reads the files you placed under
``--root`` (``root/MNIST/raw/...``, ``root/cifar-10-batches-py/...``; nothing is
downloaded).

Each epoch shows a progress bar (tqdm, from the ``data`` extra; plain lines without it),
then evaluates on the test set.  In ``--out`` (default ``runs/classifier``) it writes
``best.safetensors`` (the state dict of the best epoch, ``ember.save``: a safetensors file
that ``ember.load`` reads, and PyTorch reads with ``torch.load`` (2.13 knows the suffix) or
``safetensors.torch.load_file``),
``metrics.json`` and ``curves.png`` (loss and accuracy per epoch; needs matplotlib, the
``viz`` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# NOTE: this network's matrix products are tiny.  Multi-threaded OpenBLAS spends more time
# waking its threads than computing on them (we measured a training step 20x slower with
# 2 threads than with 1 on a busy 2-core machine), so use one thread unless told otherwise.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import ember as torch  # noqa: E402 - after the thread settings above
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.utils.data import DataLoader  # noqa: E402
from ember.vision import datasets, transforms  # noqa: E402

CHECKPOINT = "best.safetensors"  # ember.save writes safetensors: the name says so

# name -> (channels, image size, classes, mean, std)
DATASETS = {
    "digits": (1, 8, 10, (0.3052,), (0.3760,)),
    "mnist": (1, 28, 10, (0.1307,), (0.3081,)),
    "fashion-mnist": (1, 28, 10, (0.2860,), (0.3530,)),
    "cifar10": (3, 32, 10, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
}


def make_datasets(name: str, root: str):
    """The training and test sets, with their transforms."""
    _, _, _, mean, std = DATASETS[name]
    test_tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean, std)])
    if name == "digits":
        return (datasets.Digits(train=True, transform=test_tf),
                datasets.Digits(train=False, transform=test_tf))
    if name == "cifar10":
        train_tf = transforms.Compose([
            transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
            transforms.ToTensor(), transforms.Normalize(mean, std)])
        return (datasets.CIFAR10(root, train=True, transform=train_tf),
                datasets.CIFAR10(root, train=False, transform=test_tf))
    kind = datasets.MNIST if name == "mnist" else datasets.FashionMNIST
    return kind(root, train=True, transform=test_tf), kind(root, train=False, transform=test_tf)


class Net(nn.Module):
    """Stages of two 3x3 convolutions (batch norm, ReLU) and a 2x2 max pool, until the
    feature map is at most 7 pixels wide, then a two-layer classifier."""

    def __init__(self, in_channels: int, image_size: int, num_classes: int):
        super().__init__()
        layers, channels, size, width = [], in_channels, image_size, 32
        while True:
            layers += [nn.Conv2d(channels, width, 3, padding=1), nn.BatchNorm2d(width),
                       nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
                       nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2)]
            channels, size = width, size // 2
            if size <= 7:
                break
            width *= 2
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Dropout(0.25), nn.Linear(channels * size * size, 128), nn.ReLU(),
            nn.Linear(128, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def progress(loader, epoch: int, epochs: int):
    """A tqdm bar over `loader`, or the loader itself when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return loader
    return tqdm(loader, desc=f"epoch {epoch}/{epochs}", unit="batch", leave=True,
                dynamic_ncols=True)


def train_epoch(model, loader, optimizer, scheduler, device, epoch: int, epochs: int) -> dict:
    model.train()
    total_loss, correct, seen, start = 0.0, 0, 0, time.perf_counter()
    bar = progress(loader, epoch, epochs)
    for images, labels in bar:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        total_loss += loss.item() * labels.shape[0]
        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.shape[0]
        if bar is not loader:
            bar.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.3f}",
                            samples_s=f"{seen / (time.perf_counter() - start):.0f}")
    elapsed = time.perf_counter() - start
    if bar is loader:
        print(f"epoch {epoch}/{epochs}  train loss {total_loss / seen:.4f}  "
              f"acc {correct / seen:.3f}  {seen / elapsed:.0f} samples/s")
    return {"train_loss": total_loss / seen, "train_acc": correct / seen,
            "samples_per_s": seen / elapsed}


@torch.no_grad()
def evaluate(model, loader, device) -> dict:
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.shape[0]
    return {"test_loss": total_loss / seen, "test_acc": correct / seen}


def plot_curves(history: list[dict], path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install \"ember[viz]\"): no curves.png")
        return
    epochs = [h["epoch"] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, [h["train_loss"] for h in history], "o-", label="train")
    ax_loss.plot(epochs, [h["test_loss"] for h in history], "o-", label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy loss", title="loss")
    ax_acc.plot(epochs, [h["train_acc"] for h in history], "o-", label="train")
    ax_acc.plot(epochs, [h["test_acc"] for h in history], "o-", label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="digits")
    parser.add_argument("--root", default="data", help="folder holding the data set files")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (Adam)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--out", default="runs/classifier", help="output folder")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA GPU is available (needs CuPy: pip install "
                 "\"ember[cuda]\")")
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    train_set, test_set = make_datasets(args.dataset, args.root)
    channels, size, classes, _, _ = DATASETS[args.dataset]
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers,
                              generator=torch.Generator().manual_seed(args.seed))
    test_loader = DataLoader(test_set, batch_size=256, num_workers=args.workers)
    model = Net(channels, size, classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader))
    print(f"{args.dataset}: {len(train_set)} training and {len(test_set)} test images; "
          f"{sum(p.numel() for p in model.parameters()):,} parameters on {device}")

    history, best = [], {"test_acc": -1.0}
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        record = {"epoch": epoch}
        record.update(train_epoch(model, train_loader, optimizer, scheduler, device, epoch,
                                  args.epochs))
        record.update(evaluate(model, test_loader, device))
        history.append(record)
        note = ""
        if record["test_acc"] > best["test_acc"]:
            best = record
            torch.save(model.state_dict(), out / CHECKPOINT)
            note = f"  (best so far: saved {CHECKPOINT})"
        print(f"epoch {epoch}/{args.epochs}  test loss {record['test_loss']:.4f}  "
              f"test acc {record['test_acc']:.4f}{note}", flush=True)
    elapsed = time.perf_counter() - start
    summary = {"dataset": args.dataset, "best_epoch": best["epoch"],
               "best_test_acc": best["test_acc"], "final_test_acc": history[-1]["test_acc"],
               "train_seconds": elapsed, "history": history}
    (out / "metrics.json").write_text(json.dumps(summary, indent=2))
    plot_curves(history, out / "curves.png")
    print(f"best test accuracy {best['test_acc']:.4f} at epoch {best['epoch']}; "
          f"{elapsed:.1f} s of training; outputs in {out}/")
    print(f"{out / CHECKPOINT} is a safetensors file: ember.load() reads it; with PyTorch, "
          "torch.load() or safetensors.torch.load_file()")
    return summary


if __name__ == "__main__":
    main()
