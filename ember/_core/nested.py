"""Mapping a function over the leaves of nested tuples (named ones too), lists and dicts."""

from __future__ import annotations

from collections.abc import Callable


def map_nested(obj, leaf_type: type, fn: Callable):
    """`obj` rebuilt with ``fn(leaf)`` in place of each instance of `leaf_type` inside its
    nested tuples, named tuples, lists and dicts (visited in order); anything else is kept.

    >>> map_nested({"a": (1, [2])}, int, lambda x: x * 10)
    {'a': (10, [20])}
    """
    if isinstance(obj, leaf_type):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a named tuple
        return type(obj)(*(map_nested(o, leaf_type, fn) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(map_nested(o, leaf_type, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: map_nested(v, leaf_type, fn) for k, v in obj.items()}
    return obj
