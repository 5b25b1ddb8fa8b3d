"""Automatic mixed precision (``torch.amp``): ``autocast`` (ops in bfloat16/float16 where
it is safe) and ``GradScaler`` (loss scaling for float16 gradients)."""

from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_available", "GradScaler"]
