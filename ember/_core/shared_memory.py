"""Tensors in memory shared between processes (Hogwild training, shared buffers).

``share_memory_()`` moves a CPU tensor's values into a shared memory map.  Processes
forked afterwards (``multiprocessing``'s default start method on Linux) map the same
pages, so an in-place update in one process (an optimizer step) is seen by all.  Where
the system has ``memfd_create`` (Linux) the map is backed by a file descriptor, which
`ember.multiprocessing` passes to processes started with ``spawn`` or to the other end of
a queue, so that they map the same pages too (PyTorch's "file_descriptor" strategy).
GPU tensors are left as they are, as in PyTorch.
"""

from __future__ import annotations

import mmap
import os
import weakref

import numpy as np

__all__ = ["share_memory_", "is_shared"]


class SharedMap(mmap.mmap):
    """A shared memory map that remembers the descriptor of its memory (None: anonymous)."""

    fd: int | None = None


def share_memory_(tensor):
    """Move `tensor`'s values into shared memory, in place (a no-op when they are there
    already, or on a GPU); returns `tensor`.  Views taken before keep the old memory."""
    data = tensor._data
    if type(data) is not np.ndarray or _shared_map_of(data) is not None:
        return tensor
    shared = np.ndarray(data.shape, data.dtype, buffer=new_map(data.nbytes))
    shared[...] = data
    tensor._data = shared
    return tensor


def is_shared(tensor) -> bool:
    """True when the tensor's values live in shared memory (see ``share_memory_``)."""
    return type(tensor._data) is np.ndarray and _shared_map_of(tensor._data) is not None


def new_map(nbytes: int) -> SharedMap:
    """A fresh shared map of `nbytes` (at least one byte), backed by a memfd if possible."""
    size = max(nbytes, 1)
    if not hasattr(os, "memfd_create"):
        return SharedMap(-1, size)  # anonymous: MAP_SHARED on POSIX systems
    fd = os.memfd_create("ember_shared", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
        return map_descriptor(fd, size)
    except BaseException:
        os.close(fd)
        raise


def map_descriptor(fd: int, size: int) -> SharedMap:
    """Map the shared memory behind `fd` (which the map then owns and closes)."""
    shared = SharedMap(fd, size)
    shared.fd = fd
    weakref.finalize(shared, os.close, fd)
    return shared


def shared_location(array: np.ndarray) -> tuple[SharedMap, int] | None:
    """(the shared map holding `array`, the byte offset of its first element), or None."""
    shared = _shared_map_of(array)
    if shared is None:
        return None
    start = np.frombuffer(shared, dtype=np.uint8, count=0).__array_interface__["data"][0]
    return shared, array.__array_interface__["data"][0] - start


def _shared_map_of(array):
    owner = array
    while isinstance(owner, np.ndarray):
        owner = owner.base
    if isinstance(owner, memoryview):
        owner = owner.obj
    return owner if isinstance(owner, mmap.mmap) else None
