"""Attach the op functions to Tensor as methods and operators, from one table.

The core (``ember/_core/tensor.py``) knows nothing of the ops; this file, which
sits above ``ember/ops``, is the one place where the Tensor method surface is
written down.  Each entry is ``method name -> function``; the function takes the
tensor as its first argument.
"""

from __future__ import annotations

from ._core.tensor import Tensor
from .ops import arithmetic, conversion, creation, reduction, shape
from .ops._util import SCALAR_TYPES

_OPERAND_TYPES = (Tensor,) + SCALAR_TYPES


def _reflected(fn):
    def method(self, other):
        return fn(other, self)
    method.__doc__ = fn.__doc__
    return method


def _not_implemented_for_others(fn):
    """Operators return NotImplemented for operand types they do not know."""
    def method(self, other):
        if isinstance(other, _OPERAND_TYPES):
            return fn(self, other)
        return NotImplemented
    method.__doc__ = fn.__doc__
    return method


METHODS = {
    # conversion ------------------------------------------------------------
    "to": conversion.to,
    "float": conversion.float_,
    "double": conversion.double,
    "half": conversion.half,
    "bfloat16": conversion.bfloat16,
    "long": conversion.long,
    "int": conversion.int_,
    "short": conversion.short,
    "char": conversion.char,
    "byte": conversion.byte,
    "bool": conversion.bool_,
    "cfloat": conversion.cfloat,
    "cpu": conversion.cpu,
    "cuda": conversion.cuda,
    "clone": conversion.clone,
    "contiguous": conversion.contiguous,
    "copy_": conversion.copy_,
    # creation ----------------------------------------------------------------
    "new_zeros": creation.new_zeros,
    "new_ones": creation.new_ones,
    "new_empty": creation.new_empty,
    "new_full": creation.new_full,
    "new_tensor": creation.new_tensor,
    # arithmetic --------------------------------------------------------------
    "add": arithmetic.add,
    "sub": arithmetic.sub,
    "subtract": arithmetic.sub,
    "mul": arithmetic.mul,
    "multiply": arithmetic.mul,
    "div": arithmetic.div,
    "divide": arithmetic.div,
    "true_divide": arithmetic.true_divide,
    "neg": arithmetic.neg,
    "negative": arithmetic.neg,
    "add_": arithmetic.add_,
    "sub_": arithmetic.sub_,
    "mul_": arithmetic.mul_,
    "div_": arithmetic.div_,
    "neg_": arithmetic.neg_,
    # reduction ---------------------------------------------------------------
    "sum": reduction.sum,
    "sum_to_size": reduction.sum_to_size,
    # shape -------------------------------------------------------------------
    "view": shape.view,
    "view_as": shape.view_as,
    "reshape": shape.reshape,
    "reshape_as": shape.reshape_as,
    "permute": shape.permute,
    "transpose": shape.transpose,
    "expand": shape.expand,
    "expand_as": shape.expand_as,
    # elementwise (ops/elementwise.py) ----------------------------------------
    # comparison (ops/comparison.py) ------------------------------------------
    # indexing (ops/indexing.py) ----------------------------------------------
    # linalg (ops/linalg.py) --------------------------------------------------
    # random (random.py) ------------------------------------------------------
}

OPERATORS = {
    "__add__": _not_implemented_for_others(arithmetic.add),
    "__radd__": _not_implemented_for_others(_reflected(arithmetic.add)),
    "__iadd__": _not_implemented_for_others(arithmetic.add_),
    "__sub__": _not_implemented_for_others(arithmetic.sub),
    "__rsub__": _not_implemented_for_others(_reflected(arithmetic.sub)),
    "__isub__": _not_implemented_for_others(arithmetic.sub_),
    "__mul__": _not_implemented_for_others(arithmetic.mul),
    "__rmul__": _not_implemented_for_others(_reflected(arithmetic.mul)),
    "__imul__": _not_implemented_for_others(arithmetic.mul_),
    "__truediv__": _not_implemented_for_others(arithmetic.div),
    "__rtruediv__": _not_implemented_for_others(_reflected(arithmetic.div)),
    "__itruediv__": _not_implemented_for_others(arithmetic.div_),
    "__neg__": arithmetic.neg,
    "__pos__": lambda self: self,
    # elementwise operators (** // % abs) --------------------------------------
    # comparison operators (== != < <= > >= & | ^ ~ << >>) ---------------------
    # indexing operators (__getitem__ __setitem__) -----------------------------
    # linalg operators (@) -----------------------------------------------------
}

PROPERTIES = {
    # shape properties (T, mT, H, mH) -------------------------------------------
}


def attach() -> None:
    """Install the table on Tensor (called once by ``ember/__init__.py``)."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in OPERATORS.items():
        setattr(Tensor, name, fn)
    for name, fget in PROPERTIES.items():
        setattr(Tensor, name, property(fget))
