"""ember.nn.parallel: data-parallel training across processes (DistributedDataParallel), and
the single-process DataParallel wrapper."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
