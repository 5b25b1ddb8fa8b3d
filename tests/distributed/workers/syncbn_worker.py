"""Run on 2 ranks: SyncBatchNorm on half a batch per rank equals BatchNorm on the whole
batch in one process (outputs, input and parameter gradients, running statistics).

The last line printed by each rank is "SYNCBN-OK <rank> pid=<pid>".
"""

import os

import numpy as np

import ember
import ember.distributed as dist
from ember import nn


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    full = rng.standard_normal((8, 3, 4, 5)) * 2 + 1  # the same on every rank
    grad = rng.standard_normal((8, 3, 4, 5))
    half = slice(rank * 4, rank * 4 + 4)
    for dtype in (np.float64, np.float32):
        reference = nn.BatchNorm2d(3, momentum=0.3).to(ember.float64)
        with ember.no_grad():
            reference.weight.copy_(ember.tensor([1.0, -2.0, 0.5]))
            reference.bias.copy_(ember.tensor([0.1, 0.2, 0.3]))
        synced = nn.SyncBatchNorm.convert_sync_batchnorm(
            nn.Sequential(nn.BatchNorm2d(3, momentum=0.3)))[0].to(ember.float64)
        synced.load_state_dict(reference.state_dict())
        reference.to(dtype), synced.to(dtype)
        x_full = ember.tensor(full.astype(dtype), requires_grad=True)
        x_half = ember.tensor(full[half].astype(dtype), requires_grad=True)
        for _ in range(2):  # two steps: the running statistics follow
            ref_out = reference(x_full)
            out = synced(x_half)
        ref_out.backward(ember.tensor(grad.astype(dtype)))
        out.backward(ember.tensor(grad[half].astype(dtype)))
        tol = 1e-10 if dtype == np.float64 else 2e-5
        np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy()[half],
                                   rtol=tol, atol=tol)
        np.testing.assert_allclose(x_half.grad.numpy(), x_full.grad.numpy()[half],
                                   rtol=tol, atol=tol)
        for name in ("weight", "bias"):  # per-rank sums: they add up to the full gradient
            g = getattr(synced, name).grad.clone()
            dist.all_reduce(g)
            np.testing.assert_allclose(g.numpy(), getattr(reference, name).grad.numpy(),
                                       rtol=tol, atol=tol)
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(synced, name).numpy(),
                                       getattr(reference, name).numpy(), rtol=tol, atol=tol)
        assert int(synced.num_batches_tracked) == 2
        synced.eval()  # eval: the running statistics, no collectives
        np.testing.assert_allclose(synced(x_half).detach().numpy(),
                                   reference.eval()(x_full).detach().numpy()[half],
                                   rtol=tol, atol=tol)
    print(f"SYNCBN-OK {rank} pid={os.getpid()}", flush=True)
    assert world == 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
