"""One op, one definition: the in-place variant of a Function class and the pair of public
functions (``name`` and ``name_``) built from it.

An in-place op runs the same kernel and gradient as its out-of-place op, with the result
written into the first argument (``Function.apply`` does the writing when the class says
``_inplace = True``); its backward node keeps the out-of-place op's name, as in PyTorch.
So a family file defines the Function once and writes one line::

    exp, exp_ = op_pair(Exp, "exp", "``e ** input``, elementwise.", prepare=float_input,
                        check_=float_target)
"""

from __future__ import annotations

from collections.abc import Callable

from .._core.tensor import Tensor
from ._direct import direct_unary

__all__ = ["inplace_form", "op_function", "op_pair", "binary_function", "binary_pair",
           "named"]


def inplace_form(cls, name: str | None = None):
    """The in-place variant of an op class: the same kernel and gradient, with the result
    written into the first argument; its node is named `name` (by default the op's own
    node name, as PyTorch names most in-place nodes)."""
    node = name or cls._name or cls.__name__ + "Backward0"
    return type(cls.__name__ + "Inplace", (cls,), {"_inplace": True, "_name": node,
                                                   "__module__": cls.__module__})


def named(fn: Callable, name: str, doc: str, source) -> Callable:
    """`fn`, a public function built from `source` (an op class or another function), with
    its name, docstring and module set as ``def name`` in the family file would set them."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = source.__module__
    return fn


def op_function(cls, name: str, doc: str, *, prepare: Callable | None = None,
                check: Callable | None = None, direct: bool = False):
    """The public function ``name(input)`` of a one-tensor op class (`prepare`, `check`
    and `direct` as in `op_pair`)."""
    def op(input: Tensor) -> Tensor:
        if check is not None:
            check(input)
        if direct:
            out = direct_unary(cls.compute, input)
            if out is not None:
                return out
        return cls.apply(input if prepare is None else prepare(input))

    return named(op, name, doc, cls)


def op_pair(cls, name: str, doc: str, *, prepare: Callable | None = None,
            check: Callable | None = None, check_: Callable | None = None,
            inplace_name: str | None = None, direct: bool = False):
    """The public functions ``name(input)`` and ``name_(input)`` of a one-tensor op class.

    `check(input)` runs first in both (argument checks that raise PyTorch's errors);
    `check_(op_name, input)` runs in the in-place one only (a float op can't write into an
    integer tensor); `prepare(input)` turns the input of the out-of-place one into what
    the class takes (an integer tensor into the default float dtype).  `inplace_name` is
    the in-place node's name where PyTorch gives it another.  With `direct`, the
    out-of-place one computes ``cls.compute`` on the array when nothing is recorded
    (`_direct.direct_unary`; for formulas that need no error-state block).
    """
    inplace = inplace_form(cls, inplace_name)

    def op_(input: Tensor) -> Tensor:
        if check is not None:
            check(input)
        if check_ is not None:
            check_(name + "_", input)
        return inplace.apply(input)

    op_ = named(op_, name + "_", f"In-place ``{name}``.", cls)
    op_.Function = inplace  # the in-place class, for the tools that map ops to classes
    return op_function(cls, name, doc, prepare=prepare, check=check, direct=direct), op_


def binary_function(cls, name: str, doc: str, run: Callable):
    """The public function ``name(input, other)`` of a two-operand op class; `run` as in
    `binary_pair`."""
    def op(input, other) -> Tensor:
        return run(name, cls, input, other)

    return named(op, name, doc, cls)


def binary_pair(cls, name: str, doc: str, run: Callable, run_: Callable, inplace=None):
    """The public functions ``name(input, other)`` and ``name_(input, other)`` of a
    two-operand op class.

    `run(name, cls, input, other)` and `run_(name_, inplace_cls, input, other)` are the
    family's rules around ``apply`` (promotion, shape and dtype checks); `inplace` is the
    in-place class when the family builds its own (by default ``inplace_form(cls)``).
    """
    inplace = inplace or inplace_form(cls)

    def op_(input: Tensor, other) -> Tensor:
        return run_(name + "_", inplace, input, other)

    op_ = named(op_, name + "_", f"In-place ``{name}`` (the result in `input`'s dtype).", cls)
    op_.Function = inplace
    return binary_function(cls, name, doc, run), op_
