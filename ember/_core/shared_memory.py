"""Tensors in memory shared between processes (Hogwild training, shared buffers).

``share_memory_()`` moves a CPU tensor's values into an anonymous shared memory map.
Processes forked afterwards (``multiprocessing``'s default start method on Linux) map the
same pages, so an in-place update in one process (an optimizer step) is seen by all.
A process started with the ``spawn`` method receives a copy instead: the map cannot
travel through pickling.  GPU tensors are left as they are, as in PyTorch.
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["share_memory_", "is_shared"]


def share_memory_(tensor):
    """Move `tensor`'s values into shared memory, in place (a no-op when they are there
    already, or on a GPU); returns `tensor`.  Views taken before keep the old memory."""
    data = tensor._data
    if type(data) is not np.ndarray or _in_shared_map(data):
        return tensor
    buffer = mmap.mmap(-1, max(data.nbytes, 1))  # anonymous: MAP_SHARED on POSIX systems
    shared = np.frombuffer(buffer, dtype=data.dtype, count=data.size).reshape(data.shape)
    shared[...] = data
    tensor._data = shared
    return tensor


def is_shared(tensor) -> bool:
    """True when the tensor's values live in shared memory (see ``share_memory_``)."""
    return type(tensor._data) is np.ndarray and _in_shared_map(tensor._data)


def _in_shared_map(array) -> bool:
    owner = array
    while isinstance(owner, np.ndarray):
        owner = owner.base
    if isinstance(owner, memoryview):
        owner = owner.obj
    return isinstance(owner, mmap.mmap)
