"""Batch normalization layers (BatchNorm1d/2d/3d) and the base they share with instance norm.

In training, a batch is normalized with its own per-channel statistics, and the running
statistics (buffers ``running_mean``, ``running_var``, ``num_batches_tracked``) are
updated: ``running = (1 - momentum) * running + momentum * batch`` (momentum None: the
cumulative average).  In eval mode the running statistics are used instead.
"""

from __future__ import annotations

from ..._core import dtype as dtypes
from ...ops.creation import ones, tensor, zeros
from .. import functional as F
from ._deferred import deferred_exports
from ._params import optional_parameter, reset_affine
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]

__getattr__ = deferred_exports(__name__, {
    "lazy": ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"),
    "sync_batchnorm": ("SyncBatchNorm",),
})


class _NormBase(Module):
    """Per-channel affine parameters and running statistics (shared with InstanceNorm)."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        kw = {"device": device, "dtype": dtype}
        optional_parameter(self, "weight", affine, num_features, **kw)
        optional_parameter(self, "bias", affine and bias, num_features, **kw)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, **kw))
            self.register_buffer("running_var", ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 tensor(0, dtype=dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics; weight to ones and bias to zeros."""
        self.reset_running_stats()
        reset_affine(self.weight, self.bias)

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints older than version 2 have no num_batches_tracked: start it at 0
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked
                                   is not None else tensor(0, dtype=dtypes.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        # batch statistics in training, and in eval mode when there are no running ones
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs over the batch (and length)."""

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs over the batch and spatial dims."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs over the batch and spatial dims."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
