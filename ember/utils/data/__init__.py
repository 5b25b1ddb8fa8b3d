"""Datasets, samplers, collation and the DataLoader (``torch.utils.data``'s API)."""

from . import distributed
from ._worker import WorkerInfo, get_worker_info
from .collate import collate, default_collate, default_collate_fn_map, default_convert
from .dataloader import DataLoader
from .dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
    "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler",
    "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
    "WorkerInfo", "collate", "default_collate", "default_collate_fn_map", "default_convert",
    "get_worker_info", "random_split",
]
