"""Parametrizations: make a module's parameter the output of a function of other tensors.

``register_parametrization(layer, "weight", P())`` replaces ``layer.weight`` by a
property that returns ``P()(original)`` each time it is read, where ``original`` is the
former parameter, now kept at ``layer.parametrizations.weight.original``.  Optimizers
then train ``original``; the layer sees the constrained value (a symmetric matrix, a
unit-norm weight...).  Several parametrizations on one tensor are applied in order.

How: the module's class is swapped for a one-off subclass ``Parametrized<Class>`` that
carries the property (so other instances of the class are untouched), and the module
gets a ``parametrizations`` ModuleDict holding one `ParametrizationList` per tensor.

* If the parametrization has ``right_inverse(value)``, it is used on registration (the
  original becomes ``right_inverse(weight)``) and when the tensor is assigned
  (``layer.weight = value``).  ``right_inverse`` may return several tensors; they are
  then kept as ``original0``, ``original1``... and passed to ``forward`` in that order.
* Inside ``with cached():`` each parametrized tensor is computed once and reused.
* ``remove_parametrizations`` turns the tensor back into an ordinary parameter (with its
  current parametrized value, by default).
"""

from __future__ import annotations

import copy
from contextlib import contextmanager

from ..._core.grad_mode import no_grad
from ..._core.tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization",
           "remove_parametrizations", "is_parametrized", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_depth = 0
_cache: dict = {}


@contextmanager
def cached():
    """Compute each parametrized tensor once inside the block and reuse the result.

    Useful when a parametrized weight is read many times in one forward (an RNN's
    weight at every time step).  The cache is dropped when the outermost block exits.
    """
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _assign(target: Tensor, value: Tensor) -> None:
    """Write `value` into `target` in place, keeping `target`'s identity (no autograd)."""
    with no_grad():
        if target.shape == value.shape and target.dtype == value.dtype:
            target.copy_(value)
        else:
            target.data = value.detach().clone()


def _check_same(what: str, before: Tensor, after, unsafe_hint: str) -> None:
    """ValueError when a parametrization (or its inverse) changes dtype or shape."""
    if not isinstance(after, Tensor):
        raise ValueError(f"{what} must return a tensor. Got {type(after).__name__}.")
    if after.dtype != before.dtype:
        raise ValueError(f"{unsafe_hint} may not change the dtype of the tensor, unless the "
                         f"`unsafe` flag is enabled.\nunparametrized dtype: {before.dtype}\n"
                         f"parametrized dtype: {after.dtype}")
    if after.shape != before.shape:
        raise ValueError(f"{unsafe_hint} may not change the shape of the tensor, unless the "
                         f"`unsafe` flag is enabled.\nunparametrized shape: {before.shape}\n"
                         f"parametrized shape: {after.shape}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and the tensor(s) they start from.

    Holds ``original`` (or ``original0``, ``original1``... when the first
    parametrization's ``right_inverse`` returns several tensors), registered as
    parameters when the tensor was a parameter, as buffers otherwise.  Calling it
    evaluates the chain.
    """

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe:
                _check_same("right_inverse", original, new, "When `right_inverse` outputs one "
                            "tensor, it")
            _assign(original, new)
            self._register_original("original", original, original)
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the sequence "
                                     f"with type {type(value).__name__}.")
                self._register_original(f"original{i}", value.detach().clone(), original)
        if not unsafe:
            _check_same("A parametrization", original, self(), "Registering a parametrization")

    def _register_original(self, name: str, value: Tensor, like: Tensor) -> None:
        if isinstance(like, Parameter):
            if not isinstance(value, Parameter):
                value = Parameter(value, like.requires_grad)
            self.register_parameter(name, value)
        else:
            self.register_buffer(name, value)

    def right_inverse(self, value: Tensor) -> None:
        """Set the original tensor(s) so that the chain evaluates to `value`."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if not self.unsafe:
                    _check_same("right_inverse", self.original, value, "The tensor returned "
                                "by `right_inverse`")
                _assign(self.original, value)
            else:
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, v in enumerate(value):
                    _assign(getattr(self, f"original{i}"), v)

    def forward(self):
        modules = list(self)
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


def _not_picklable(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _deepcopy(self, memo):
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module: Module) -> None:
    """Give `module` a class of its own (a subclass of its class) to carry the properties."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                            {"__getstate__": _not_picklable, "__deepcopy__": _deepcopy})


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth:
            return parametrization()
        key = (id(self), tensor_name)
        value = _cache.get(key)
        if value is None:
            value = _cache[key] = parametrization()
        return value

    def set_original(self, value) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of `parametrization` (a Module).

    The first registration moves the tensor to
    ``module.parametrizations[tensor_name].original``; later ones append to the chain.
    Unless `unsafe`, the parametrization must keep the tensor's shape and dtype.
    Returns `module`.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            current = getattr(module, tensor_name)
            result = parametrization(current)
            _check_same("A parametrization", current, result, "Registering a parametrization")
            if hasattr(parametrization, "right_inverse"):
                back = parametrization.right_inverse(result)
                _check_same("right_inverse", current, back, "The tensor returned by "
                            "`right_inverse`")
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._parameters or tensor_name in module._buffers:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has parametrizations (on `tensor_name`, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Turn ``module.<tensor_name>`` back into a plain parameter (or buffer).

    With `leave_parametrized` it keeps its current parametrized value (for a single
    original, in the original Parameter object, so optimizers still hold it); without,
    it returns to the original tensor.  Returns `module`.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _assign(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        value = getattr(module, tensor_name)
        first = chain.original0
        if isinstance(first, Parameter):
            original = Parameter(value.detach().clone(), value.requires_grad)
        else:
            original = value.detach().clone()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class `module` had before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Copy the parametrizations (and their original tensors) of `from_module` onto
    `to_module`, for one tensor or all of them.  Returns `to_module`."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        chain = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach().clone()))
        for parametrization in chain:
            register_parametrization(to_module, name, parametrization, unsafe=True)
        target = to_module.parametrizations[name]
        with no_grad():
            if chain.is_tensor:
                _assign(target.original, chain.original)
            else:
                for i in range(chain.ntensors):
                    _assign(getattr(target, f"original{i}"), getattr(chain, f"original{i}"))
    return to_module
