"""The op table: every differentiable op, one entry each (see opinfo.py).

Each family keeps its entries in its own file; this module joins them.
"""

from __future__ import annotations

import importlib

FAMILIES = ("arithmetic", "elementwise", "comparison", "reduction", "shape", "indexing",
            "linalg", "creation", "activation", "loss", "normalization", "conv", "pooling",
            "resample", "nn_misc", "quantization")

OP_DB = []
for _family in FAMILIES:
    try:
        _module = importlib.import_module(f"tests.ops.db_{_family}")
    except ModuleNotFoundError as exc:  # a family not written yet
        if exc.name != f"tests.ops.db_{_family}":
            raise
        continue
    OP_DB.extend(_module.OPS)

_names = [op.name for op in OP_DB]
assert len(_names) == len(set(_names)), "duplicate op names in the op table"
