"""The memory plan of a compiled graph: buffers allocated once and reused across calls.

Each fused kernel writes into a buffer of a `BufferPool` instead of a fresh array.  A
buffer is handed out again only when nothing but the pool refers to it any more -- the
tensor that wrapped it, its views and the autograd nodes that saved it are all gone
(the step ended, or ``zero_grad`` dropped a gradient) -- which the array's reference
count tells exactly.  So results that the caller keeps are never overwritten, and a
training loop settles on a fixed set of buffers after its first step: no allocation,
and no page faults on fresh memory, for the arrays the compiled kernels write.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

# getrefcount of a buffer only the pool's list holds: the list and getrefcount's argument
_FREE = 2


class BufferPool:
    """Reusable arrays by thread, shape and dtype; at most `limit` of each are kept."""

    def __init__(self, limit: int = 8):
        self.limit = limit
        # (per thread: between the reference count test and the caller's taking the
        # buffer, another thread could be handed the same one; a thread's buffers go
        # with it)
        self._local = threading.local()
        self.allocated = 0  # how many arrays the pool made (for tests and reports)

    def take(self, shape: tuple, dtype) -> np.ndarray:
        """An array of `shape` and `dtype` that nothing else uses (contents undefined)."""
        mine = getattr(self._local, "buffers", None)
        if mine is None:
            mine = self._local.buffers = {}
        key = (tuple(shape), np.dtype(dtype))
        buffers = mine.setdefault(key, [])
        for buffer in buffers:
            if sys.getrefcount(buffer) == _FREE + 1:  # (+1: the loop variable)
                return buffer
        buffer = np.empty(key[0], key[1])
        self.allocated += 1
        if len(buffers) < self.limit:
            buffers.append(buffer)
        return buffer
