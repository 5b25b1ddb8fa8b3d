"""Parameter and Buffer: the two kinds of tensors a Module holds.

A ``Parameter`` is a Tensor subclass; assigning one to a Module attribute registers
it, so that ``module.parameters()`` finds it and optimizers update it.  A ``Buffer``
marks a tensor to be registered as a buffer (state saved in ``state_dict`` but not
trained, like BatchNorm's running mean) on assignment.
"""

from __future__ import annotations

from .._core.tensor import Tensor, _make
from ..ops.creation import empty


class Parameter(Tensor):
    """A tensor that is a trainable weight of a Module.

    ``Parameter(data, requires_grad=True)`` shares `data`'s memory.  Assigned as a
    Module attribute it is registered in the module's parameters.  Results of ops on a
    Parameter are plain Tensors.

    >>> p = Parameter(ember.zeros(2))
    >>> p.requires_grad
    True
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(): data must be a Tensor, got {type(data).__name__}"
            )
        param = _make(data._data, cls=cls)
        param._version = data._version
        param.requires_grad_(requires_grad)
        return param

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        # Everything happened in __new__; Tensor.__init__ (the legacy constructor)
        # must not run on the data argument.
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        # Like PyTorch: a copy of the values with the same requires_grad; .grad is not copied.
        if id(self) in memo:
            return memo[id(self)]
        result = _make(self._data.copy(), cls=type(self))
        result._requires_grad = self._requires_grad
        memo[id(self)] = result
        return result


class _BufferMeta(type):
    """Makes ``isinstance(t, Buffer)`` true for the tensors that ``Buffer(...)`` marked."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute.

    ``Buffer(data, persistent=True)`` returns a plain Tensor (`data` detached) tagged
    as a buffer; ``module.name = Buffer(t)`` is then the same as
    ``module.register_buffer("name", t, persistent)``.  Non-persistent buffers are
    left out of ``state_dict``.
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): data must be a Tensor, got {type(data).__name__}")
        tensor = data.detach()
        tensor.persistent = persistent
        tensor._is_buffer = True
        return tensor


class UninitializedParameter(Parameter):
    """A parameter of a lazy module before its first call: no shape and no values yet.
    ``materialize(shape)`` gives it uninitialized memory of that shape and makes it a
    plain ``Parameter``."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return super().__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Take `shape` (memory uninitialized; the module initializes it next)."""
        data = empty(tuple(shape), device=device or self.device, dtype=dtype or self.dtype)
        self._data = data._data
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class UninitializedBuffer(Tensor):
    """A buffer of a lazy module before its first call (see `UninitializedParameter`)."""

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        return _make(empty(0, device=device, dtype=dtype)._data, cls=cls)

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Take `shape` (memory uninitialized) and become a plain Tensor."""
        data = empty(tuple(shape), device=device or self.device, dtype=dtype or self.dtype)
        self._data = data._data
        self.__class__ = Tensor

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"


def is_lazy(param) -> bool:
    """Whether `param` is an uninitialized parameter or buffer of a lazy module."""
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
