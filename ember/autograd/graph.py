"""The autograd graph's public types: ``Node`` is the class of every ``grad_fn``.

``isinstance(t.grad_fn, Node)`` holds for built-in ops, custom Functions,
``AccumulateGrad`` (the leaf nodes) and ``CopySlices``.  A node has ``name()``,
``next_functions``, ``metadata``, ``register_hook`` and ``register_prehook``.
"""

from __future__ import annotations

from .._core.function import Node

__all__ = ["Node"]
