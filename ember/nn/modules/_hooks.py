"""Hook plumbing for Module: removable handles and the full backward hooks.

A module's full backward hooks see the gradients w.r.t. the module's inputs and
outputs.  They are built from one identity ``autograd.Function``,
``BackwardHookFunction``: the module's tensor inputs pass through it before
``forward`` and its tensor outputs after.  A pre-hook on the output node sees (and
may replace) the gradients of the outputs; a hook on the input node, which runs
once the gradients of all inputs are known, calls the user's hooks with both.

``call_with_hooks`` is ``Module.__call__`` when any hook is registered: forward
pre-hooks, forward, forward hooks, and the backward-hook wrapping above.
"""

from __future__ import annotations

import warnings

from ..._core.grad_mode import STATE
from ..._core.tensor import HookDict, Tensor
from ..._core.tensor import RemovableHandle as _CoreHandle
from ...autograd import Function


class RemovableHandle(_CoreHandle):
    """Handle returned by hook registration; ``remove()`` unregisters the hook.

    Besides the hook itself, it removes the hook's id from `extra_dicts` (the
    dicts that remember options such as ``with_kwargs`` per hook).
    """

    def __init__(self, hooks_dict: dict, hook, extra_dicts=(), prepend: bool = False):
        super().__init__(hooks_dict, hook)
        self._extra_dicts = tuple(extra_dicts)
        if prepend:
            # Dicts keep insertion order: re-insert the others after the new hook.
            others = [(k, v) for k, v in hooks_dict.items() if k != self.id]
            for k, _ in others:
                del hooks_dict[k]
            hooks_dict.update(others)

    def remove(self) -> None:
        super().remove()
        for extra in self._extra_dicts:
            extra.pop(self.id, None)


def register_with_options(hooks_dict: dict, hook, options, prepend: bool = False
                          ) -> RemovableHandle:
    """Register `hook` in `hooks_dict`; `options` are ``(option_dict, enabled)`` pairs: the
    hook's id is marked in each enabled option's dict, and ``remove()`` clears all of them."""
    handle = RemovableHandle(hooks_dict, hook, prepend=prepend,
                             extra_dicts=[option_dict for option_dict, _ in options])
    for option_dict, enabled in options:
        if enabled:
            option_dict[handle.id] = True
    return handle


class WithoutModule:
    """Calls a hook without its first (module) argument; picklable, unlike a lambda."""

    def __init__(self, hook):
        self.hook = hook

    def __call__(self, module, *args):
        return self.hook(*args)


def new_hook_dict() -> HookDict:
    """An ordered hook dict that handles can reference weakly."""
    return HookDict()


class BackwardHookFunction(Function):
    """Identity on its tensor arguments; a place in the graph to attach module hooks."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """Connects a module's full backward (pre-)hooks to the graph of one forward call."""

    def __init__(self, module, user_hooks: list, user_pre_hooks: list):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.n_outputs = 0
        self.input_index = None  # positions of the wrapped tensors among the inputs
        self.output_index = None

    @staticmethod
    def _spread(index, values, n: int) -> tuple:
        """Gradients of the wrapped tensors placed at their positions, None elsewhere."""
        out = [None] * n
        for i, v in zip(index, values):
            out[i] = v
        return tuple(out)

    @staticmethod
    def _wrap(values: tuple, attach):
        """Pass the tensors among `values` through one BackwardHookFunction node.

        Returns (new values, positions of the tensors), or (values, None) when no
        tensor requires grad (then there is nothing to hook).
        """
        index = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        tensors = [values[i] for i in index]
        if not (STATE.enabled and any(t.requires_grad for t in tensors)):
            return values, None
        wrapped = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in wrapped if t.grad_fn is not None)
        attach(node)
        out = list(values)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args: tuple) -> tuple:
        """Wrap the inputs; their node's hook calls the user's full backward hooks."""
        self.n_inputs = len(args)
        new_args, self.input_index = self._wrap(args, lambda node: node.register_hook(
            self._input_hook))
        return new_args

    def setup_output_hook(self, result):
        """Wrap the outputs; their node's pre-hook records (and may change) grad_output."""
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        self.n_outputs = len(values)
        new, self.output_index = self._wrap(values, lambda node: node.register_prehook(
            self._output_prehook))
        return new[0] if single else new

    def _input_hook(self, grad_inputs, _grad_outputs):
        if not self.user_hooks:
            self.grad_outputs = None
            return None
        res = self._spread(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(out)}, but expected {len(res)}"
                )
            res = tuple(out)
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)

    def _output_prehook(self, grad_outputs):
        self.grad_outputs = self._spread(self.output_index, grad_outputs, self.n_outputs)
        for hook in self.user_pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, got "
                    f"{len(out)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = tuple(out)
        current = self.grad_outputs
        if self.input_index is None:
            # No input requires grad: the input node never runs, so call the hooks now.
            if self.user_hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients.",
                              stacklevel=2)
            no_grads = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, no_grads, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(g is None for g in res)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(current[i] for i in self.output_index)


# ----------------------------------------------------------------------
# hooks that apply to every module (register_module_*_hook in module.py)

global_forward_pre_hooks = new_hook_dict()
global_forward_hooks = new_hook_dict()
global_forward_hooks_with_kwargs: dict = {}
global_forward_hooks_always_called: dict = {}
global_backward_hooks = new_hook_dict()
global_backward_pre_hooks = new_hook_dict()
# called when a parameter, buffer or child module is registered on any module
global_parameter_registration_hooks = new_hook_dict()
global_buffer_registration_hooks = new_hook_dict()
global_module_registration_hooks = new_hook_dict()


def registered(hooks: dict, module, name: str, value):
    """`value` after the registration hooks: each may return a replacement (or None)."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def any_hooks(module) -> bool:
    """Whether a call of `module` must go through ``call_with_hooks``."""
    return bool(module._forward_hooks or module._forward_pre_hooks or module._backward_hooks
                or module._backward_pre_hooks or global_forward_hooks
                or global_forward_pre_hooks or global_backward_hooks
                or global_backward_pre_hooks)


def call_with_hooks(module, args: tuple, kwargs: dict):
    """``module(*args, **kwargs)`` with forward pre-hooks, forward hooks and the setup of
    full backward hooks; hooks registered with ``always_call`` also run when forward
    raises."""
    result = None
    called = set()  # ids of always_call hooks that ran

    def with_kwargs(hook_id) -> bool:
        return (hook_id in module._forward_hooks_with_kwargs
                or hook_id in global_forward_hooks_with_kwargs)

    def always_called(hook_id) -> bool:
        return (hook_id in module._forward_hooks_always_called
                or hook_id in global_forward_hooks_always_called)

    forward_hooks = (*global_forward_hooks.items(), *module._forward_hooks.items())
    try:
        for hook_id, hook in (*global_forward_pre_hooks.items(),
                              *module._forward_pre_hooks.items()):
            if hook_id in module._forward_pre_hooks_with_kwargs:
                new = hook(module, args, kwargs)
                if new is not None:
                    if not (isinstance(new, tuple) and len(new) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {new}.")
                    args, kwargs = new
            else:
                new = hook(module, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        backward_hooks = [*global_backward_hooks.values(), *module._backward_hooks.values()]
        backward_pre_hooks = [*global_backward_pre_hooks.values(),
                              *module._backward_pre_hooks.values()]
        bw_hook = None
        if backward_hooks or backward_pre_hooks:
            bw_hook = BackwardHook(module, backward_hooks, backward_pre_hooks)
            args = bw_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        for hook_id, hook in forward_hooks:
            if always_called(hook_id):
                called.add(hook_id)
            if with_kwargs(hook_id):
                new = hook(module, args, kwargs, result)
            else:
                new = hook(module, args, result)
            if new is not None:
                result = new
        if bw_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a "
                              f"Tensor or a tuple of Tensors but received {type(result)}",
                              stacklevel=3)
            result = bw_hook.setup_output_hook(result)
        return result
    except Exception:
        for hook_id, hook in forward_hooks:
            if always_called(hook_id) and hook_id not in called:
                try:
                    if with_kwargs(hook_id):
                        hook(module, args, kwargs, result)
                    else:
                        hook(module, args, result)
                except Exception as exc:
                    warnings.warn("module forward hook with ``always_call=True`` raised an "
                                  "exception that was silenced as another error was raised "
                                  f"in forward: {exc}", stacklevel=3)
        raise
