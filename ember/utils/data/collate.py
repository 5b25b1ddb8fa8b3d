"""Turning a list of samples into one batch (`default_collate`), and samples into tensors
(`default_convert`).

`collate` walks the structure of the first sample: tensors and NumPy arrays are stacked
along a new first dimension, Python numbers become 1-d tensors, strings stay a list, and
mappings, namedtuples and sequences are collated field by field.  `default_collate_fn_map`
says what to do per element type; `collate(batch, collate_fn_map=...)` lets a user add
types without rewriting the walk.
"""

from __future__ import annotations

import collections.abc
import re

import numpy as np

from ..._core.tensor import Tensor
from ...ops.creation import as_tensor, from_numpy, tensor
from ...ops.joining import stack

_COLLATE_ERROR = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
                  "dicts or lists; found {}")
_STRING_DTYPE = re.compile("[SaUO]")


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _stack_tensors(batch, *, collate_fn_map=None) -> Tensor:
    # NOTE: a plain NumPy stack (no graph, ~2x faster for small samples) unless a sample
    # requires grad or lives on a GPU; the result is a fresh array workers ship as is.
    arrays = [t._data for t in batch]
    if all(type(a) is np.ndarray for a in arrays) and not any(t._requires_grad for t in batch):
        return from_numpy(np.stack(arrays))

    return stack(list(batch), 0)


def _collate_ndarray(batch, *, collate_fn_map=None):
    if _STRING_DTYPE.search(batch[0].dtype.str) is not None:
        raise TypeError(_COLLATE_ERROR.format(batch[0].dtype))
    return from_numpy(np.stack(batch))


def _collate_numpy_scalar(batch, *, collate_fn_map=None):
    return as_tensor(np.array(batch))


def _collate_float(batch, *, collate_fn_map=None):
    return from_numpy(np.array(batch, dtype=np.float64))


def _collate_int(batch, *, collate_fn_map=None):
    # bool is an int subclass: a batch of bools gives a bool tensor, as in PyTorch.
    if all(type(x) is bool for x in batch):
        return from_numpy(np.array(batch, dtype=np.bool_))
    try:
        return from_numpy(np.array(batch, dtype=np.int64))
    except OverflowError:
        return tensor(batch)   # ember's own error for an integer out of range


def _collate_str(batch, *, collate_fn_map=None):
    return list(batch)


default_collate_fn_map: dict = {
    Tensor: _stack_tensors,
    np.ndarray: _collate_ndarray,
    (np.bool_, np.number): _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def _lookup(elem_type, collate_fn_map):
    if elem_type in collate_fn_map:
        return collate_fn_map[elem_type]
    for known, fn in collate_fn_map.items():
        if issubclass(elem_type, known):
            return fn
    return None


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate a list of samples with per-type functions from `collate_fn_map`.

    Each function is called as ``fn(batch, collate_fn_map=collate_fn_map)``; types not in
    the map are walked: mappings key by key, namedtuples and sequences field by field.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = _lookup(elem_type, collate_fn_map)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                  for key in elem}
        try:
            return elem_type(fields)
        except TypeError:  # a mapping type that cannot be built from a dict
            return fields
    if _is_namedtuple(elem):
        return elem_type(*(collate(list(field), collate_fn_map=collate_fn_map)
                           for field in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [collate(list(field), collate_fn_map=collate_fn_map) for field in zip(*batch)]
        if isinstance(elem, tuple):
            return fields  # tuples give lists, as in PyTorch
        try:
            return elem_type(fields)
        except TypeError:  # a sequence type that cannot be built from a list
            return fields
    raise TypeError(_COLLATE_ERROR.format(elem_type))


def default_collate(batch):
    """Stack a list of samples into a batch.

    Tensors and NumPy arrays are stacked along a new first dimension; Python floats become
    a float64 tensor, ints an int64 tensor (bools a bool tensor); strings and bytes stay a
    list; dicts, namedtuples, tuples and lists are collated field by field (tuples give
    lists).

    >>> default_collate([(ember.zeros(2), 0), (ember.ones(2), 1)])
    [tensor([[0., 0.],
            [1., 1.]]), tensor([0, 1])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Convert NumPy arrays and scalars inside `data` to tensors, keeping the structure.

    The default `collate_fn` when a DataLoader does not batch (``batch_size=None``).
    Arrays of strings or objects, Python numbers and other objects are returned unchanged;
    tuples become lists, as in PyTorch.
    """
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        if _STRING_DTYPE.search(data.dtype.str) is not None:
            return data
        return from_numpy(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        fields = {key: default_convert(value) for key, value in data.items()}
        try:
            return type(data)(fields)
        except TypeError:
            return fields
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        fields = [default_convert(d) for d in data]
        try:
            return type(data)(fields)
        except TypeError:
            return fields
    return data


__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]
