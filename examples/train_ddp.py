"""Train the classic MNIST CNN data-parallel, with DistributedDataParallel over MPI.

    python -m ember.distributed.run --nproc-per-node 2 examples/train_ddp.py
    python examples/train_ddp.py                 # the same training in one process

Each rank trains on its own shard of the data (DistributedSampler, reshuffled every epoch
with set_epoch); DDP averages the gradients during backward, so every rank takes the same
optimizer step as one process would on the whole global batch: with ``--dropout 0`` both
runs end with the same weights and the same accuracy (up to float rounding).

The data are synthetic 28x28 "digits" (ten noisy, randomly shifted blob patterns), so the
example needs no download.  ``--batch-size`` is the global batch: each of the N ranks
loads batch_size / N samples per step.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - the usual idiom
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset


class Net(nn.Module):
    """The CNN of PyTorch's MNIST example."""

    def __init__(self, dropout: float = 1.0):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25 * dropout)
        self.dropout2 = nn.Dropout(0.5 * dropout)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = ember.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def mlp(dropout: float = 1.0) -> nn.Module:
    """A small MLP for quick runs (``--model mlp``)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(),
                         nn.Dropout(0.5 * dropout), nn.Linear(128, 10), nn.LogSoftmax(dim=1))


def synthetic_digits(n: int, seed: int) -> TensorDataset:
    """n noisy 28x28 images of ten classes; each class is a fixed pattern of blobs."""
    patterns = np.zeros((10, 28, 28), dtype=np.float32)
    rng = np.random.default_rng(1234)  # the same ten patterns for every split
    yy, xx = np.mgrid[0:28, 0:28]
    for k in range(10):
        for _ in range(3):
            cy, cx = rng.uniform(6, 22, size=2)
            patterns[k] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = np.empty((n, 1, 28, 28), dtype=np.float32)
    for i, k in enumerate(labels):
        shifted = np.roll(patterns[k], tuple(rng.integers(-2, 3, size=2)), axis=(0, 1))
        images[i, 0] = shifted + 0.4 * rng.standard_normal((28, 28))
    return TensorDataset(ember.tensor(images), ember.tensor(labels))


def evaluate(model, dataset, world: int, rank: int, batch: int) -> tuple:
    """(mean loss, accuracy) over the whole test set; each rank scores its shard."""
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    loader = DataLoader(dataset, batch_size=batch, sampler=sampler)
    model.eval()
    totals = ember.zeros(3, dtype=ember.float64)  # loss sum, correct, count
    with ember.no_grad():
        for x, y in loader:
            out = model(x)
            totals += ember.tensor([F.nll_loss(out, y, reduction="sum").item(),
                                    (out.argmax(1) == y).sum().item(), len(y)],
                                   dtype=ember.float64)
    if world > 1:
        dist.all_reduce(totals)
    model.train()
    loss, correct, count = totals.tolist()
    return loss / count, correct / count


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32, help="global batch size")
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--gamma", type=float, default=0.7)
    p.add_argument("--train-size", type=int, default=512)
    p.add_argument("--test-size", type=int, default=256)
    p.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    p.add_argument("--dropout", type=float, default=1.0, help="scale of the dropout rates")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--save", default=None, help="save the trained weights here (rank 0)")
    args = p.parse_args(argv)

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("mpi")
    world = dist.get_world_size() if distributed else 1
    rank = dist.get_rank() if distributed else 0
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} is not divisible by {world} ranks")

    ember.manual_seed(args.seed)  # the same initial weights everywhere (DDP checks anyway)
    model = Net(args.dropout) if args.model == "cnn" else mlp(args.dropout)
    if distributed:
        model = DDP(model)
    train, test = synthetic_digits(args.train_size, 0), synthetic_digits(args.test_size, 1)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=args.seed,
                                 drop_last=True)
    loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler,
                        drop_last=True)
    opt = ember.optim.Adadelta(model.parameters(), lr=args.lr)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=args.gamma)
    start = time.perf_counter()
    result = {}
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        running = ember.zeros(2, dtype=ember.float64)
        for x, y in loader:
            opt.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            opt.step()
            running += ember.tensor([loss.item(), 1.0], dtype=ember.float64)
        sched.step()
        if distributed:
            dist.all_reduce(running)
        test_loss, accuracy = evaluate(model, test, world, rank, 64)
        result = {"epoch": epoch, "train_loss": running[0].item() / running[1].item(),
                  "test_loss": test_loss, "accuracy": accuracy}
        if rank == 0:
            print(f"epoch {epoch}  train loss {result['train_loss']:.6f}  test loss "
                  f"{test_loss:.6f}  accuracy {100 * accuracy:.2f}%  "
                  f"({time.perf_counter() - start:.1f} s, {world} rank(s))", flush=True)
    if args.save and rank == 0:
        # Save the plain model's weights: DDP's own state_dict() has "module."-prefixed keys.
        plain = model.module if distributed else model
        ember.save(plain.state_dict(), args.save)
    if distributed:
        dist.destroy_process_group()
    return result


if __name__ == "__main__":
    main()
