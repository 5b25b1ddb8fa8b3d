"""How multiprocessing's pickler sends a tensor: as its shared memory, not as a copy."""

from __future__ import annotations

from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from .._core import shared_memory
from .._core.tensor import Tensor, _make
from ..nn.parameter import Parameter


def reduce_tensor(tensor: Tensor):
    """Move `tensor` into shared memory and describe it by a duplicate of its descriptor."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    if tensor.device.type != "cpu":
        raise NotImplementedError(
            f"ember.multiprocessing: sending a {tensor.device.type} tensor to another process")
    shared_memory.share_memory_(tensor)
    shared, offset = shared_memory.shared_location(tensor._data)
    if shared.fd is None:  # no memfd on this system: the pages cannot be named, send values
        return _rebuild_copy, (type(tensor), tensor._data.copy(), tensor.requires_grad)
    data = tensor._data
    layout = (data.dtype.str, data.shape, data.strides, offset, len(shared))
    return _rebuild_shared, (type(tensor), DupFd(shared.fd), layout, tensor.requires_grad)


def _rebuild_shared(cls, dup, layout, requires_grad: bool) -> Tensor:
    dtype, shape, strides, offset, size = layout
    shared = shared_memory.map_descriptor(dup.detach(), size)
    array = np.ndarray(shape, np.dtype(dtype), buffer=shared, offset=offset, strides=strides)
    return _wrap(cls, array, requires_grad)


def _rebuild_copy(cls, array, requires_grad: bool) -> Tensor:
    return _wrap(cls, array, requires_grad)


def _wrap(cls, array, requires_grad: bool) -> Tensor:
    return _make(array, requires_grad, cls=cls)


def init_reductions() -> None:
    """Register the tensor reducers with multiprocessing's pickler (done on import)."""
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)
