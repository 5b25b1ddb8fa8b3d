"""How a Module saves and loads its state (the bodies of ``Module.state_dict`` & co.).

Keys are dotted paths; each module contributes its parameters, then its persistent
buffers (then ``_extra_state`` when it defines ``get_extra_state``), then its
children in registration order.  Loading walks the same tree: every module loads
its own entries through its ``_load_from_state_dict`` (which subclasses override to
convert old checkpoints), collecting missing and unexpected keys and error messages
instead of raising, so that one error report lists every problem.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ..._core.grad_mode import no_grad
from ..._core.tensor import Tensor, size_str
from ..parameter import Parameter


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` did not match: (missing_keys, unexpected_keys)."""

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def positional_state_dict_args(args: tuple, destination, prefix: str, keep_vars: bool):
    """Old-style ``state_dict(destination, prefix, keep_vars)`` calls, with a warning."""
    warnings.warn("Positional args are being deprecated, use kwargs instead.", FutureWarning,
                  stacklevel=3)
    given = dict(zip(("destination", "prefix", "keep_vars"), args))
    return (given.get("destination", destination), given.get("prefix", prefix),
            given.get("keep_vars", keep_vars))


def collect(module, destination, prefix: str, keep_vars: bool):
    """``module.state_dict(...)``: fill `destination` (a new OrderedDict when None)."""
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    local_metadata = {"version": module._version}
    if hasattr(destination, "_metadata"):
        destination._metadata[prefix[:-1]] = local_metadata
    for hook in module._state_dict_pre_hooks.values():
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
    for hook in module._state_dict_hooks.values():
        result = hook(module, destination, prefix, local_metadata)
        if result is not None:
            destination = result
    return destination


def save_own(module, destination, prefix: str, keep_vars: bool) -> None:
    """``module._save_to_state_dict``: the module's own entries, not its children's."""
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()
    if module._has_extra_state():
        destination[prefix + "_extra_state"] = module.get_extra_state()


def load(module, state_dict: Mapping, strict: bool, assign: bool) -> _IncompatibleKeys:
    """``module.load_state_dict(...)``."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing_keys: list = []
    unexpected_keys: list = []
    error_msgs: list = []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)
    if metadata is not None:
        state_dict._metadata = metadata

    def load_tree(mod, local_state: dict, prefix: str = "") -> None:
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        # Missing keys are always collected; `strict` only decides whether they raise.
        mod._load_from_state_dict(local_state, prefix, local_metadata, True, missing_keys,
                                  unexpected_keys, error_msgs)
        for name, child in mod._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                child_state = {k: v for k, v in local_state.items()
                               if k.startswith(child_prefix)}
                load_tree(child, child_state, child_prefix)
        report = _IncompatibleKeys(missing_keys, unexpected_keys)
        for hook in mod._load_state_dict_post_hooks.values():
            if hook(mod, report) is not None:
                raise RuntimeError("load_state_dict post hooks must return None")

    load_tree(module, state_dict)
    if strict:
        if unexpected_keys:
            error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected_keys)))
        if missing_keys:
            error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing_keys)))
    if error_msgs:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(error_msgs)))
    return _IncompatibleKeys(missing_keys, unexpected_keys)


def load_own(module, state_dict, prefix, local_metadata, strict, missing_keys,
             unexpected_keys, error_msgs) -> None:
    """``module._load_from_state_dict``: load the module's own entries."""
    for hook in module._load_state_dict_pre_hooks.values():
        hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
             unexpected_keys, error_msgs)
    persistent = {k: v for k, v in module._buffers.items()
                  if k not in module._non_persistent_buffers_set}
    local_state = {k: v for k, v in itertools.chain(module._parameters.items(),
                                                    persistent.items()) if v is not None}
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, param in local_state.items():
        key = prefix + name
        if key not in state_dict:
            if strict:
                missing_keys.append(key)
            continue
        value = state_dict[key]
        if not isinstance(value, Tensor):
            error_msgs.append(
                f'While copying the parameter named "{key}", expected torch.Tensor or '
                f"Tensor-like object from checkpoint but received {type(value)}")
            continue
        if param.dim() == 0 and tuple(value.shape) == (1,):
            value = value.reshape(())  # checkpoints of old PyTorch versions
        if value.shape != param.shape:
            error_msgs.append(
                f"size mismatch for {key}: copying a param with shape {size_str(value.shape)} "
                f"from checkpoint, the shape in current model is {size_str(param.shape)}.")
            continue
        try:
            with no_grad():
                if assign:
                    if isinstance(param, Parameter):
                        if isinstance(value, Parameter):
                            value.requires_grad_(param.requires_grad)
                        else:
                            value = Parameter(value, requires_grad=param.requires_grad)
                    setattr(module, name, value)
                else:
                    param.copy_(value)
        except Exception as exc:  # reported with the others, like PyTorch
            error_msgs.append(
                f'While copying the parameter named "{key}", whose dimensions in the model are '
                f"{size_str(param.shape)} and whose dimensions in the checkpoint are "
                f"{size_str(value.shape)}, an exception occurred : {exc.args}.")
    extra_key = prefix + "_extra_state"
    if module._has_extra_state():
        if extra_key in state_dict:
            module.set_extra_state(state_dict[extra_key])
        elif strict:
            missing_keys.append(extra_key)
    elif strict and extra_key in state_dict:
        unexpected_keys.append(extra_key)
    if strict:
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                first = key[len(prefix):].split(".", 1)
                if len(first) > 1:
                    if first[0] not in module._modules:
                        unexpected_keys.append(key)
                elif first[0] not in local_state:
                    unexpected_keys.append(key)
