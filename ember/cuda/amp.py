"""``torch.cuda.amp`` (deprecated there in favour of ``torch.amp``): the same autocast and
GradScaler, for the CUDA device."""

from __future__ import annotations

import warnings

from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast

__all__ = ["GradScaler", "autocast"]


class GradScaler(_GradScaler):
    """``ember.amp.GradScaler("cuda", ...)``: disabled, with a warning, without a GPU."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """``ember.autocast("cuda", ...)``."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled=None):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
