"""The converter tables: Function class -> converter, module class -> (accepts, converter).

Each family file owns the table of its ops; this module only merges them.  A
converter is ``convert(c: Call) -> None``: it reads the record through `c`, emits
ONNX nodes with ``c.op(...)`` and binds the record's outputs with ``c.done(...)``.
"""

from __future__ import annotations

from . import (
    activation, conv, elementwise, functions, indexing, linear, normalization, order, pooling,
    reduction, rnn, shape,
)

TABLE: dict = {}
for _family in (elementwise, activation, linear, conv, pooling, normalization, shape, reduction,
                indexing, order, rnn, functions):
    TABLE.update(_family.CONVERTERS)

# the functions the tracer records as one call each: code object -> marker class
FUNCTIONS: dict = dict(functions.FUNCTIONS)

MODULE_TABLE: dict = {}
MODULE_TABLE.update(activation.MODULE_CONVERTERS)
MODULE_TABLE.update(normalization.MODULE_CONVERTERS)
MODULE_TABLE.update(rnn.MODULE_CONVERTERS)


def module_converter(module, args, kwargs):
    """The module converter to use for this call of `module` (None: trace inside it)."""
    entry = MODULE_TABLE.get(type(module))
    if entry is None:
        return None
    accepts, convert = entry
    return convert if accepts(module, args, kwargs) else None
