"""SyncBatchNorm: batch normalization whose statistics span every rank of a process group,
for data-parallel training with small per-rank batches.

In training on more than one rank, the forward all-reduces the per-channel sums (then the
squared deviations from the global mean) with the element count, so every rank normalizes
with the statistics of the whole global batch and updates the same running averages; the
backward all-reduces the two per-channel sums the input gradient needs.  The weight and
bias gradients stay per-rank sums, as in PyTorch: DistributedDataParallel averages them.
In eval mode, on one rank, or outside a process group it is plain BatchNorm.
"""

from __future__ import annotations

import numpy as np

from ..._core.function import Function
from ..._core.grad_mode import STATE, no_grad
from ..._core.tensor import _make
from ...ops._util import xp_of
from .batchnorm import _BatchNorm
from ... import distributed as dist

__all__ = ["SyncBatchNorm"]


def _all_reduce(array, group):
    """The elementwise sum of `array` over the ranks of `group` (a new array)."""
    t = _make(array.copy())
    dist.all_reduce(t, group=group)
    return t._data


def _global_statistics(x, eps: float, group) -> tuple:
    """(mean, invstd, biased variance, count) per channel over the batch of every rank:
    one all-reduce of the sums and counts, then one of the squared deviations."""
    xp = xp_of(x)
    channels = x.shape[1]
    axes = (0,) + tuple(range(2, x.ndim))
    local = np.zeros(channels + 1, np.float64)
    local[:channels] = _host(x.sum(axes, dtype=np.float64))
    local[channels] = x.size // channels
    total = _all_reduce(local, group)
    count = float(total[channels])
    mean = total[:channels] / count
    shape = (1, channels) + (1,) * (x.ndim - 2)
    centered = x - xp.asarray(mean.astype(x.dtype)).reshape(shape)
    var = _all_reduce(_host((centered * centered).sum(axes, dtype=np.float64)), group) / count
    return mean, 1.0 / np.sqrt(var + eps), var, count


class _SyncBatchNormFunction(Function):
    """``(x - mean) * invstd * weight + bias`` with the global statistics; the backward
    all-reduces the per-channel sums of grad and grad * xhat."""

    _name = "SyncBatchNormBackward"

    @staticmethod
    def forward(ctx, x, weight, bias, mean, invstd, count, group):
        xp = xp_of(x)
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        normalized = (x - xp.asarray(mean.astype(x.dtype)).reshape(shape)) * \
            xp.asarray(invstd.astype(x.dtype)).reshape(shape)
        out = normalized
        if weight is not None:
            out = out * weight.reshape(shape)
        if bias is not None:
            out = out + bias.reshape(shape)
        ctx.normalized, ctx.invstd, ctx.count, ctx.group = normalized, invstd, count, group
        ctx.axes, ctx.shape = (0,) + tuple(range(2, x.ndim)), shape
        ctx.save_for_backward(weight)
        return out

    @staticmethod
    def backward(ctx, grad):
        if STATE.enabled:
            raise RuntimeError("SyncBatchNorm: double backward is not supported")
        (weight,) = ctx.saved_tensors
        g, xhat = grad._data, ctx.normalized
        xp = xp_of(g)
        axes, shape, channels = ctx.axes, ctx.shape, g.shape[1]
        sum_dy = g.sum(axes, dtype=np.float64)
        sum_dy_xhat = (g * xhat).sum(axes, dtype=np.float64)
        grad_weight = _make(sum_dy_xhat.astype(g.dtype)) if weight is not None else None
        grad_bias = _make(sum_dy.astype(g.dtype)) if ctx._edges[2][0] is not None else None
        sums = _all_reduce(np.concatenate([_host(sum_dy), _host(sum_dy_xhat)]), ctx.group)
        mean_dy = xp.asarray((sums[:channels] / ctx.count).astype(g.dtype)).reshape(shape)
        mean_dy_xhat = xp.asarray((sums[channels:] / ctx.count).astype(g.dtype)).reshape(shape)
        scale = xp.asarray(ctx.invstd).reshape(shape)
        if weight is not None:
            scale = scale * weight._data.reshape(shape)
        grad_input = (g - mean_dy - xhat * mean_dy_xhat) * scale
        return _make(grad_input), grad_weight, grad_bias


def _host(array):
    """A NumPy copy of a backend array (the collectives take host memory)."""
    return array if type(array) is np.ndarray else array.get()


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the global batch of a process group (see the module
    docstring).  Takes inputs of 2 or more dims, (N, C, ...)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _synchronized(self) -> bool:
        return (self.training and dist.is_initialized()
                and dist.get_world_size(self.process_group) > 1)

    def forward(self, input):
        if not self._synchronized():
            return super().forward(input)
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        mean, invstd, var, count = _global_statistics(input._data, self.eps,
                                                       self.process_group)
        out = _SyncBatchNormFunction.apply(input, self.weight, self.bias, mean, invstd, count,
                                           self.process_group)
        if self.track_running_stats and self.running_mean is not None:
            self._update_running_stats(mean, var, count)
        return out

    def _update_running_stats(self, mean, var, count) -> None:
        self.num_batches_tracked.add_(1)
        factor = (1.0 / float(self.num_batches_tracked.item()) if self.momentum is None
                  else self.momentum)
        unbiased = var * count / max(count - 1, 1)
        xp = xp_of(self.running_mean._data)
        dtype = self.running_mean._data.dtype
        with no_grad():
            self.running_mean.mul_(1 - factor).add_(_make(xp.asarray(mean.astype(dtype))),
                                                    alpha=factor)
            self.running_var.mul_(1 - factor).add_(_make(xp.asarray(unbiased.astype(dtype))),
                                                   alpha=factor)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm1d/2d/3d inside it replaced by a SyncBatchNorm that
        keeps its parameters, buffers and training mode."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            with no_grad():
                if module.affine:
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted

