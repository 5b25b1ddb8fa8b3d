"""Run on 2 ranks: DistributedDataParallel against single-process training.

Every check asserts; the last line printed by each rank is "DDP-OK <rank>".
"""

import os
import sys

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - the usual idiom
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset

RTOL, ATOL = 1e-4, 1e-5


class MnistNet(nn.Module):
    """The classic MNIST CNN (dropout probability configurable, 0 for exact comparisons)."""

    def __init__(self, p1=0.25, p2=0.5):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(p1)
        self.dropout2 = nn.Dropout(p2)
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


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 32), nn.ReLU(), nn.Linear(32, 10),
                         nn.LogSoftmax(dim=1))


def params_of(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def check_same_across_ranks(model, what):
    for name, p in model.named_parameters():
        both = [ember.zeros_like(p) for _ in range(dist.get_world_size())]
        dist.all_gather(both, p.detach().contiguous())
        assert np.array_equal(both[0].numpy(), both[1].numpy()), f"{what}: {name} differs"


def data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    x = ember.tensor(rng.standard_normal((n, 1, 28, 28)).astype(np.float32))
    y = ember.tensor(rng.integers(0, 10, n))
    return TensorDataset(x, y)


def training_matches_single_process(make_model, epochs=2, batch=2, n=8):
    """DDP with DistributedSampler == one process on the concatenated batches."""
    rank, world = dist.get_rank(), dist.get_world_size()
    dataset = data(n)
    ember.manual_seed(1)
    model = make_model()
    ember.manual_seed(1)
    reference = make_model()
    ddp = DDP(model)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    samplers = [DistributedSampler(dataset, num_replicas=world, rank=r, seed=3)
                for r in range(world)]
    loaders = [DataLoader(dataset, batch_size=batch, sampler=s) for s in samplers]
    steps = 0
    for epoch in range(epochs):
        for s in samplers:
            s.set_epoch(epoch)
        for batches in zip(*loaders):
            x, y = batches[rank]
            opt.zero_grad()
            F.nll_loss(ddp(x), y).backward()
            opt.step()
            # the same step in one process, on all ranks' batches at once
            xs = ember.cat([b[0] for b in batches])
            ys = ember.cat([b[1] for b in batches])
            ref_opt.zero_grad()
            F.nll_loss(reference(xs), ys).backward()
            ref_opt.step()
            steps += 1
            check_same_across_ranks(ddp.module, f"step {steps}")
            for (name, p), q in zip(model.named_parameters(), reference.parameters()):
                np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=RTOL,
                                           atol=ATOL, err_msg=f"step {steps}: {name}")
    assert steps == epochs * (n // world // batch)
    return steps


def no_sync_equals_large_batch():
    rank, world = dist.get_rank(), dist.get_world_size()
    dataset = data(16, seed=5)
    ember.manual_seed(2)
    model = mlp()
    ember.manual_seed(2)
    reference = mlp()
    ddp = DDP(model, bucket_cap_mb=0.01)  # several buckets
    assert len(ddp._buckets) > 1
    micro = [dataset[i * 4:(i + 1) * 4] for i in range(4)]  # (rank 0: 0, 2) (rank 1: 1, 3)
    mine = [micro[rank], micro[rank + world]]
    with ddp.no_sync():
        F.nll_loss(ddp(mine[0][0]), mine[0][1]).div(2).backward()
    local = [p.grad.numpy().copy() for p in model.parameters()]
    F.nll_loss(ddp(mine[1][0]), mine[1][1]).div(2).backward()
    xs, ys = dataset[0:16]
    F.nll_loss(reference(xs), ys).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=f"no_sync: {name}")
    # inside no_sync the gradients stayed local (they differ between the ranks)
    gathered = [None, None]
    dist.all_gather_object(gathered, local[0])
    assert not np.allclose(gathered[0], gathered[1])


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)  # used on rank 0 only
        self.never = nn.Linear(4, 4)  # used on no rank
        self.use_b = True

    def forward(self, x):
        y = self.a(x)
        return self.b(y) if self.use_b else y


def unused_parameters():
    rank = dist.get_rank()
    ember.manual_seed(3)
    model = Branchy()
    model.use_b = rank == 0
    ddp = DDP(model, find_unused_parameters=True)
    x = ember.ones(2, 4) * (rank + 1)
    ddp(x)  # a forward without backward (e.g. a look at the loss) is simply forgotten
    ddp(x).sum().backward()
    assert model.never.weight.grad is None, "a parameter no rank used must keep grad None"
    grads = [None, None]
    dist.all_gather_object(grads, [model.a.weight.grad.numpy(), model.b.weight.grad.numpy()])
    for a, b in zip(grads[0], grads[1]):
        np.testing.assert_array_equal(a, b)
    # b's average: rank 0's gradient and rank 1's zeros, halved
    ember.manual_seed(3)
    solo = Branchy()
    solo(ember.ones(2, 4)).sum().backward()
    np.testing.assert_allclose(model.b.weight.grad.numpy(), solo.b.weight.grad.numpy() / 2,
                               rtol=RTOL, atol=ATOL)
    # static_graph: the walk is done once and reused
    ember.manual_seed(3)
    model2 = Branchy()
    model2.use_b = rank == 0
    ddp2 = DDP(model2, static_graph=True)
    for _ in range(2):
        ddp2.zero_grad()
        ddp2(x).sum().backward()
    np.testing.assert_allclose(model2.b.weight.grad.numpy(), model.b.weight.grad.numpy(),
                               rtol=RTOL, atol=ATOL)
    # without find_unused_parameters, the next forward explains what went wrong
    ember.manual_seed(3)
    model3 = Branchy()
    ddp3 = DDP(model3)
    ddp3(x).sum().backward()
    try:
        ddp3(x)
    except RuntimeError as exc:
        assert "find_unused_parameters=True" in str(exc) and "never.weight" in str(exc), exc
    else:
        raise AssertionError("expected the unfinished-reduction error")


def bucket_views_buffers_and_state_dict():
    rank = dist.get_rank()
    ember.manual_seed(4)
    model = mlp()
    model.register_buffer("step_count", ember.zeros(3) + rank * 7)
    ddp = DDP(model, gradient_as_bucket_view=True, bucket_cap_mb=0.001)
    ember.manual_seed(4)
    plain = DDP(mlp())
    # construction broadcast rank 0's buffers
    assert model.step_count.tolist() == [0.0, 0.0, 0.0], model.step_count
    x = ember.randn(4, 1, 28, 28, generator=ember.Generator().manual_seed(rank))
    for _ in range(2):  # twice: the second backward accumulates into the views
        ddp(x).sum().backward()
        plain(x).sum().backward()
    for p, q in zip(ddp.module.parameters(), plain.module.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=RTOL, atol=ATOL)
        assert any(np.shares_memory(p.grad.numpy(), b.buffer) for b in ddp._buckets)
    ddp.zero_grad()  # set_to_none: the next backward puts them back into the buckets
    ddp(x).sum().backward()
    assert all(any(np.shares_memory(p.grad.numpy(), b.buffer) for b in ddp._buckets)
               for p in model.parameters())
    # buffers are broadcast from rank 0 before every forward
    if rank == 1:
        model.step_count.fill_(99.0)
    ddp(x)
    assert model.step_count.tolist() == [0.0, 0.0, 0.0]
    # state_dict: the module. prefix, and how to load into a plain model
    keys = list(ddp.state_dict())
    assert all(k.startswith("module.") for k in keys), keys
    fresh = mlp()
    fresh.register_buffer("step_count", ember.zeros(3))
    fresh.load_state_dict(ddp.module.state_dict())
    fresh.load_state_dict({k.removeprefix("module."): v for k, v in ddp.state_dict().items()})


def uneven_inputs_with_join():
    """Rank 0 has 3 batches, rank 1 has 2: join() lets rank 1 stand in for step 3."""
    rank = dist.get_rank()
    dataset = data(10, seed=7)
    ember.manual_seed(5)
    model = mlp()
    ember.manual_seed(5)
    reference = mlp()
    ddp = DDP(model)
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = ember.optim.SGD(reference.parameters(), lr=0.1)
    batches = [dataset[0:2], dataset[2:4], dataset[4:6], dataset[6:8], dataset[8:10]]
    mine = batches[0::2] if rank == 0 else batches[1::2][:2]  # rank 0: 3 batches, rank 1: 2
    with ddp.join():
        for x, y in mine:
            opt.zero_grad()
            F.nll_loss(ddp(x), y).backward()
            opt.step()
    for step in range(3):  # the same in one process; step 3 has rank 0's batch only
        ref_opt.zero_grad()
        if step < 2:
            xs = ember.cat([batches[2 * step][0], batches[2 * step + 1][0]])
            ys = ember.cat([batches[2 * step][1], batches[2 * step + 1][1]])
            F.nll_loss(reference(xs), ys).backward()
        else:  # divided by the initial world size
            F.nll_loss(reference(batches[4][0]), batches[4][1]).div(2).backward()
        ref_opt.step()
    check_same_across_ranks(model, "after join")
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=f"join: {name}")


def main():
    dist.init_process_group("mpi")
    assert dist.get_world_size() == 2
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("all", "mlp"):
        training_matches_single_process(mlp, epochs=2, batch=2, n=8)
    if which in ("all", "cnn"):
        training_matches_single_process(lambda: MnistNet(0.0, 0.0), epochs=2, batch=2, n=4)
    if which in ("all", "no_sync"):
        no_sync_equals_large_batch()
    if which in ("all", "unused"):
        unused_parameters()
    if which in ("all", "misc"):
        bucket_views_buffers_and_state_dict()
    if which in ("all", "join"):
        uneven_inputs_with_join()
    dist.barrier()
    print(f"DDP-OK {dist.get_rank()} pid={os.getpid()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
