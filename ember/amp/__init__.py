"""Automatic mixed precision (``torch.amp``): ``GradScaler``, and ``autocast``, which is
not supported yet (only its disabled form, ``autocast(..., enabled=False)``, runs)."""

from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_available", "GradScaler"]
