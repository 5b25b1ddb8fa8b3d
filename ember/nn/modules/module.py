"""Module: the base class of every layer and model.

A Module owns Parameters, buffers and child Modules, each kept in an ordered dict
(``_parameters``, ``_buffers``, ``_modules``).  Everything else builds on those
three dicts: iteration (``named_parameters`` walks modules depth-first, in the
order attributes were assigned), ``state_dict``/``load_state_dict``, dtype and
device conversion, train/eval, hooks around ``__call__`` and the printed tree.

**The one piece of magic**: ``Module.__setattr__`` routes assignments by the type
of the value.  ``self.w = Parameter(...)`` registers a parameter,
``self.fc = Linear(...)`` a child module and ``self.b = Buffer(t)`` a buffer (as do
assignments to a name already registered as one of those); anything else is a
plain attribute.  ``__getattr__`` finds registered names again, and
``__delattr__`` unregisters them.  This is why ``__init__`` must call
``super().__init__()`` before assigning layers.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from ..._core.grad_mode import PROCESS, no_grad
from ..._core.tensor import Tensor
from ..parameter import Buffer, Parameter
from . import _hooks, _state_dict
from ._hooks import RemovableHandle, new_hook_dict
from ._state_dict import _IncompatibleKeys  # noqa: F401 - PyTorch's import location
from ...ops.conversion import _parse_to_args
from ...ops.creation import empty_like

__all__ = [
    "Module", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
    "register_module_buffer_registration_hook", "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """Call ``hook(module, args)`` before the forward of every module (before its own)."""
    return RemovableHandle(_hooks.global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Call ``hook(module, args, output)`` after the forward of every module."""
    return _hooks.register_with_options(_hooks.global_forward_hooks, hook, [
        (_hooks.global_forward_hooks_with_kwargs, with_kwargs),
        (_hooks.global_forward_hooks_always_called, always_call)])


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` in the backward of every module."""
    return RemovableHandle(_hooks.global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` in the backward of every module, before its hooks."""
    return RemovableHandle(_hooks.global_backward_pre_hooks, hook)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """Call ``hook(module, name, param)`` whenever any module registers a parameter; a
    non-None return value is registered instead."""
    return RemovableHandle(_hooks.global_parameter_registration_hooks, hook)


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """Call ``hook(module, name, buffer)`` whenever any module registers a buffer; a
    non-None return value is registered instead."""
    return RemovableHandle(_hooks.global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """Call ``hook(module, name, submodule)`` whenever any module registers a child; a
    non-None return value is registered instead."""
    return RemovableHandle(_hooks.global_module_registration_hooks, hook)


def _typename(obj) -> str:
    """The name PyTorch's messages use for an object's type."""
    if isinstance(obj, Tensor):
        return "torch." + obj.type().rsplit(".", 1)[-1]
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _addindent(text: str, spaces: int) -> str:
    """Indent all lines but the first (a child's repr inside its parent's)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return "\n".join([lines[0]] + [pad + line for line in lines[1:]])


def _forward_unimplemented(self, *input):
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function'
    )


def _typed_attribute(module, name: str, kind: type, kind_name: str):
    """``module.<name>``, checked to exist and to be a `kind` (the errors of get_submodule
    and get_parameter)."""
    if not hasattr(module, name):
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    value = getattr(module, name)
    if not isinstance(value, kind):
        raise AttributeError(f"`{name}` is not an {kind_name}")
    return value


# A module's bookkeeping beside its parameters, buffers and children (name, factory of the
# empty value), in the order __init__ makes it; __setstate__ adds what an old pickle lacks.
_BOOKKEEPING = (
    ("_non_persistent_buffers_set", set),
    ("_backward_pre_hooks", new_hook_dict),
    ("_backward_hooks", new_hook_dict),
    ("_forward_hooks", new_hook_dict),
    ("_forward_hooks_with_kwargs", dict),
    ("_forward_hooks_always_called", dict),
    ("_forward_pre_hooks", new_hook_dict),
    ("_forward_pre_hooks_with_kwargs", dict),
    ("_state_dict_hooks", new_hook_dict),
    ("_state_dict_pre_hooks", new_hook_dict),
    ("_load_state_dict_pre_hooks", new_hook_dict),
    ("_load_state_dict_post_hooks", new_hook_dict),
)


class Module:
    """Base class of layers and models.

    Subclasses call ``super().__init__()``, assign Parameters, buffers and child
    modules as attributes in ``__init__``, and define ``forward``.  Calling the module
    runs ``forward`` between the registered hooks.

    >>> class Net(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> [name for name, _ in Net().named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    dump_patches: bool = False
    _version: int = 1
    training: bool
    call_super_init: bool = False

    forward = _forward_unimplemented

    def __init__(self, *args, **kwargs) -> None:
        if self.call_super_init is False and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if self.call_super_init is False and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument "
                            f"but {len(args) + 1} were given")
        # object.__setattr__: our own __setattr__ needs these dicts to exist first.
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        for name, make in _BOOKKEEPING:
            setattr_(self, name, make())
        setattr_(self, "_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ------------------------------------------------------------------
    # registration

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not trained (e.g. running statistics).

        Persistent buffers are part of ``state_dict``; all buffers follow ``to()``.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if _hooks.global_buffer_registration_hooks:
            tensor = _hooks.registered(_hooks.global_buffer_registration_hooks, self, name,
                                       tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a declared but absent parameter such as a bias)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name)
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_typename(param)}' object to parameter "
                                f"'{name}' (torch.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(
                    f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                    f"must be created explicitly. To express '{name}' as a function of "
                    "another Tensor, compute the value in the forward() method."
                )
        if _hooks.global_parameter_registration_hooks:
            param = _hooks.registered(_hooks.global_parameter_registration_hooks, self, name,
                                      param)
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as attribute `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = self._registered_module(name, module)

    register_module = add_module

    def _check_name(self, kind: str, name) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        registry = self._parameters if kind == "parameter" else self._buffers
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    # ------------------------------------------------------------------
    # attribute routing (see the module docstring)

    def __getattr__(self, name: str):
        # Only called when normal lookup fails, i.e. for registered names.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            members = d.get(registry)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        modules = d.get("_modules")
        buffers = d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._unregister(name, keep=params)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._unregister(name, keep=modules)
            modules[name] = self._registered_module(name, value)
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = self._registered_module(name, value)
        elif isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def _registered_module(self, name: str, module):
        """`module` after the global module registration hooks."""
        hooks = _hooks.global_module_registration_hooks
        return _hooks.registered(hooks, self, name, module) if hooks else module

    def _unregister(self, name: str, keep: dict) -> None:
        """Forget `name` everywhere but in `keep` (an attribute changes its kind)."""
        d = self.__dict__
        d.pop(name, None)
        for registry in (d["_parameters"], d["_buffers"], d["_modules"]):
            if registry is not keep:
                registry.pop(name, None)
        d["_non_persistent_buffers_set"].discard(name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = (list(dir(type(self))) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # Pickles made before a hook dict existed still load.
        for name, make in _BOOKKEEPING:
            self.__dict__.setdefault(name, make())

    # ------------------------------------------------------------------
    # lookup by dotted name

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path such as ``"encoder.layers.0"`` ("" is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            mod = _typed_attribute(mod, item, Module, "nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless `strict`, add) the submodule at a dotted path."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path such as ``"fc.weight"``."""
        module_path, _, name = target.rpartition(".")
        return _typed_attribute(self.get_submodule(module_path), name, Parameter, "nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``"bn.running_mean"``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    def get_extra_state(self):
        """Extra state to save in ``state_dict`` (override with ``set_extra_state``)."""
        raise RuntimeError(
            "Module.get_extra_state() was called but not overridden; a module that saves "
            "extra state must implement get_extra_state() and set_extra_state()."
        )

    def set_extra_state(self, state) -> None:
        """Restore the extra state returned by ``get_extra_state``."""
        raise RuntimeError(
            "Module.set_extra_state() was called but not overridden; a module that saves "
            "extra state must implement get_extra_state() and set_extra_state()."
        )

    def _has_extra_state(self) -> bool:
        return type(self).get_extra_state is not Module.get_extra_state

    # ------------------------------------------------------------------
    # iteration

    def _named_members(self, get_members, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        seen = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (module_prefix + "." + name if module_prefix else name), value

    def parameters(self, recurse: bool = True):
        """Iterate over the parameters (of submodules too when `recurse`), each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """Iterate over (dotted name, parameter); a shared parameter comes once, by its
        first name, unless `remove_duplicate` is False."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Iterate over the buffers (persistent or not)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        """Iterate over (dotted name, buffer)."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self):
        """Iterate over the direct child modules."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """Iterate over (name, direct child module), each module once."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def modules(self):
        """Iterate over all modules of the tree, self first, depth-first."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True):
        """Iterate over (dotted name, module) for the whole tree, self first (name "")."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + "." + name if prefix else name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    # ------------------------------------------------------------------
    # modes and gradients

    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and all submodules; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``): dropout off, batch norm uses running stats."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default) or to zeros."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                grad = p.grad
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def to_empty(self, *, device=None, recurse: bool = True) -> Module:
        """Replace every parameter and buffer by uninitialized memory on `device`."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> Module:
        """Move every parameter and buffer into shared memory (``Tensor.share_memory_``):
        processes forked afterwards update the same values (Hogwild training)."""
        return self._apply(lambda t: t.share_memory_())

    # ------------------------------------------------------------------
    # conversion

    def _apply(self, fn, recurse: bool = True) -> Module:
        """Replace every parameter's and buffer's data by ``fn(tensor)``, in place.

        Parameters keep their identity (optimizers hold them): the converted values are
        assigned with ``param.data = ...``; gradients are converted the same way.
        """
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is not param:
                param.data = new
            grad = param._grad
            if grad is not None:
                with no_grad():
                    new_grad = fn(grad)
                if new_grad is not grad:
                    grad.data = new_grad
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn) -> Module:
        """Call ``fn(module)`` on every submodule (children first) and then self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move and/or cast parameters and buffers in place; returns self.

        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)`` (its device
        and dtype), and ``memory_format=`` for the 4-D and 5-D ones (e.g. conv weights in
        ``ember.channels_last``).  A dtype applies to floating-point and complex tensors
        only; integer buffers keep theirs.
        """
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)
        args = tuple(a for a in args if not isinstance(a, bool))  # non_blocking positionally
        device, dtype, _ = _parse_to_args(args, dict(kwargs))
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")
            if dtype.is_complex:
                warnings.warn("Complex parameters in modules are experimental: some modules "
                              "might not work as expected with complex tensors.",
                              stacklevel=2)

        def convert(t: Tensor) -> Tensor:
            # as in PyTorch, a memory format applies to the 4-D and 5-D tensors only
            layout = {"memory_format": fmt} if fmt is not None and t.dim() in (4, 5) else {}
            floating = t.is_floating_point() or t.is_complex()
            if dtype is not None and floating:
                return t.to(device=device, dtype=dtype, **layout)
            return t.to(device=device, **layout)

        return self._apply(convert)

    def cpu(self) -> Module:
        """Move parameters and buffers to CPU memory."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> Module:
        """Move parameters and buffers to the GPU."""
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type) -> Module:
        """Cast all parameters and buffers (integer ones too) to `dst_type`."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        """Cast floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        """Cast floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ------------------------------------------------------------------
    # state dict

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of the parameters and persistent buffers by dotted name.

        Order: each module's parameters, then its persistent buffers, then its children
        recursively.  Values are detached tensors sharing memory with the module's
        (the tensors themselves with ``keep_vars=True``).
        """
        if args:
            destination, prefix, keep_vars = _state_dict.positional_state_dict_args(
                args, destination, prefix, keep_vars)
        return _state_dict.collect(self, destination, prefix, keep_vars)

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """Write this module's own entries (not its children's) into `destination`."""
        _state_dict.save_own(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from `state_dict` into this module.

        Values are copied into the existing tensors (converting dtype), or, with
        ``assign=True``, the module's attributes are set to the given tensors.  With
        `strict`, missing or unexpected keys raise RuntimeError; either way they are
        returned as ``(missing_keys, unexpected_keys)``.  Shape mismatches always raise.
        """
        return _state_dict.load(self, state_dict, strict, assign)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        """Load this module's own entries (not its children's) from `state_dict`.

        Subclasses override it to convert old checkpoints (calling ``super()``); it
        appends to the three lists instead of raising.
        """
        _state_dict.load_own(self, state_dict, prefix, local_metadata, strict, missing_keys,
                             unexpected_keys, error_msgs)

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Call ``hook(module, prefix, keep_vars)`` before ``state_dict`` collects entries."""
        return RemovableHandle(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict``."""
        return RemovableHandle(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its entries."""
        return RemovableHandle(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Call ``hook(module, incompatible_keys)`` after this module and its children
        loaded; the hook may edit the key lists in place."""
        return RemovableHandle(self._load_state_dict_post_hooks, hook)

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """Older form of ``register_state_dict_post_hook`` (its hook may return a new dict)."""
        return RemovableHandle(self._state_dict_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """Older form of ``register_load_state_dict_pre_hook``: without `with_module` the
        hook is called without the module argument."""
        return RemovableHandle(self._load_state_dict_pre_hooks,
                               hook if with_module else _hooks.WithoutModule(hook))

    # ------------------------------------------------------------------
    # hooks and calling

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` before ``forward``.

        It may return new args (a tuple, or one value).  With `with_kwargs` it is called
        as ``hook(module, args, kwargs)`` and may return ``(args, kwargs)``.
        """
        return _hooks.register_with_options(
            self._forward_pre_hooks, hook, [(self._forward_pre_hooks_with_kwargs, with_kwargs)],
            prepend=prepend)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after ``forward``; it may return a new output.

        With `with_kwargs`: ``hook(module, args, kwargs, output)``.  With `always_call`
        it also runs when forward raised.
        """
        return _hooks.register_with_options(self._forward_hooks, hook, [
            (self._forward_hooks_with_kwargs, with_kwargs),
            (self._forward_hooks_always_called, always_call)], prepend=prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the
        module's inputs are computed; it may return new grad_input.

        grad_input has one entry per positional input (None for non-tensors and inputs
        that need no gradient); grad_output one per output.
        """
        return RemovableHandle(self._backward_hooks, hook, prepend=prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients w.r.t. the module's
        outputs are known; it may return new grad_output."""
        return RemovableHandle(self._backward_pre_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Deprecated: registers `hook` as a full backward hook (with a warning).

        PyTorch's old, non-full hooks saw the gradients of the last operation inside
        the module rather than of the module's inputs; ember only has full hooks, so
        grad_input here is w.r.t. the module's inputs.
        """
        warnings.warn("register_backward_hook is deprecated; ember registers it as a full "
                      "backward hook (grad_input is w.r.t. the module's inputs, not the "
                      "inputs of its last operation). Use register_full_backward_hook.",
                      FutureWarning, stacklevel=2)
        return self.register_full_backward_hook(hook)

    def __call__(self, *args, **kwargs):
        if PROCESS.observer is not None:  # profiling: an "nn.Module: <class>" scope
            return PROCESS.observer.module(self, args, kwargs)
        # NOTE: _call_impl's two lines inline: a module call is hot, a call level costs.
        if not _hooks.any_hooks(self):
            return self.forward(*args, **kwargs)
        return _hooks.call_with_hooks(self, args, kwargs)

    def _call_impl(self, *args, **kwargs):
        """The call without the observer branch: forward, with the hooks when any are set
        (an observer runs a module through this, ``ops/_observer.run_module``)."""
        if not _hooks.any_hooks(self):
            return self.forward(*args, **kwargs)
        return _hooks.call_with_hooks(self, args, kwargs)

    # ------------------------------------------------------------------
    # printing

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses when printed (override it)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(module), 2)
                       for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"
