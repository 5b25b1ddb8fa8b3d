"""LinearCrossEntropyOptions: the settings of PyTorch's chunked linear_cross_entropy.

PyTorch can compute ``cross_entropy(linear(x, W), y)`` in batch chunks so that the full
logits tensor is never held at once.  ember always takes the reference path (logits, then
cross entropy), which gives the same numbers; it accepts these options so that programs
written for PyTorch run, and records them without acting on them.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = ["LinearCrossEntropyOptions"]


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Chunking settings for ``F.linear_cross_entropy`` (accepted; ember does not chunk)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: object | None = None
