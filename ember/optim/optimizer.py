"""Optimizer: the base class every algorithm in ``ember.optim`` builds on.

The base class owns everything that is the same for all algorithms: parameter groups
(per-group options over ``defaults``), per-parameter ``state``, ``zero_grad``,
``state_dict``/``load_state_dict`` in PyTorch's layout, and step hooks.  An algorithm
is a subclass that writes two things, on backend arrays under no-grad:

* ``_init_state(param, state, group)`` fills the empty ``state`` dict of a parameter
  the first time it has a gradient (tensors such as ``exp_avg``; ``step`` as a 0-dim
  float tensor, as in PyTorch);
* ``_update(param, grad, state, group)`` updates the arrays ``param`` (written in
  place) and the state, given the gradient array ``grad`` (never written).

The generic ``step`` loops over the groups, skips parameters whose ``grad`` is None,
calls the two methods and bumps each parameter's version counter, so that autograd
notices the in-place write.  Sparse gradients go through ``_sparse_update``: the one
place where a sparse gradient type plugs in.  Optimizers that need the whole model at
once (LBFGS) override ``step`` instead.

NOTE: the update rules call NumPy ufuncs with ``out=`` (``np.multiply(a, b, out=tmp)``,
``a *= b``): CuPy arrays take them over through ``__array_ufunc__``, so one code path
serves CPU and GPU, and the work arrays come from ``_scratch`` so that a step allocates
nothing.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

import numpy as np

from ..autograd._graph_leak import mark_optimizer_step
from .._core.grad_mode import enable_grad, no_grad
from .._core.tensor import HookDict, RemovableHandle, Tensor, _make
from .._core import dtype as dtypes
from ..ops._util import xp_of
from ..sparse import SparseTensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks an option that has no default: every param group must give it."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_GLOBAL_PRE_HOOKS: HookDict = HookDict()
_GLOBAL_POST_HOOKS: HookDict = HookDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before the step of every optimizer."""
    return RemovableHandle(_GLOBAL_PRE_HOOKS, hook)


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after the step of every optimizer."""
    return RemovableHandle(_GLOBAL_POST_HOOKS, hook)


def _with_step_hooks(step):
    """Wrap an optimizer's ``step`` so that the registered pre- and post-hooks run."""
    if getattr(step, "_hooked", False):
        return step

    def hooked_step(self, *args, **kwargs):
        for hook in chain(tuple(_GLOBAL_PRE_HOOKS.values()),
                          tuple(self._optimizer_step_pre_hooks.values())):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
                args, kwargs = result
        out = step(self, *args, **kwargs)
        mark_optimizer_step()  # for the `total_loss += loss` leak warning
        for hook in chain(tuple(self._optimizer_step_post_hooks.values()),
                          tuple(_GLOBAL_POST_HOOKS.values())):
            hook(self, args, kwargs)
        return out

    hooked_step.__name__ = step.__name__
    hooked_step.__qualname__ = step.__qualname__
    hooked_step.__doc__ = step.__doc__
    hooked_step._hooked = True
    return hooked_step


def _typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    kind = type(obj)
    return kind.__qualname__ if kind.__module__ == "builtins" else (
        f"{kind.__module__}.{kind.__qualname__}")


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts
            defining parameter groups (each with a ``"params"`` entry and any options
            that differ from `defaults`).
        defaults: the default value of every option of the algorithm.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_step_hooks(cls.__dict__["step"])

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks = HookDict()
        self._optimizer_step_post_hooks = HookDict()
        self._optimizer_state_dict_pre_hooks = HookDict()
        self._optimizer_state_dict_post_hooks = HookDict()
        self._optimizer_load_state_dict_pre_hooks = HookDict()
        self._optimizer_load_state_dict_post_hooks = HookDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors "
                "or dicts, but got " + _typename(params)
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        self._workspace: dict = {}
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------
    # pickling and printing

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks",
                     "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                     "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, HookDict())
        self.__dict__.setdefault("_workspace", {})

    def __repr__(self) -> str:
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # ------------------------------------------------------------------
    # parameter groups

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (with its own options) to ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params "
                                "is " + _typename(p))
            if not self.defaults.get("differentiable", None) and not (
                    p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = {id(p) for p in params}
        if len(ids) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for "
                "more information",
                stacklevel=3,
            )
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default), or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p._grad
                if grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                    continue
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad._data.fill(0)
                grad._version.value += 1

    # ------------------------------------------------------------------
    # the step

    def step(self, closure=None):
        """One optimization step; `closure` re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        states = self.state
        with no_grad():
            for group in self.param_groups:
                self._check_group(group)
                if self._step_group(group, states):
                    continue
                for p in group["params"]:
                    grad = p._grad
                    if grad is None:
                        continue
                    state = states.get(p)
                    fresh = not state
                    if fresh:
                        state = {} if state is None else state
                        self._init_state(p, state, group)
                    if grad.is_sparse:
                        self._sparse_update(p, grad, state, group)
                    elif p._data.dtype.kind == "c":
                        self._update_complex(p, grad, state, group)
                    else:
                        self._update(p._data, grad._data, state, group)
                    p._version.value += 1
                    # NOTE: a state is registered only once it holds something, so that
                    # state-free algorithms (plain SGD) keep PyTorch's empty state dict.
                    if fresh and state:
                        states[p] = state
        return loss

    def _check_group(self, group: dict) -> None:
        """Per-group checks before the update (e.g. options the algorithm lacks)."""
        if group.get("differentiable"):
            raise NotImplementedError(
                f"{type(self).__name__}: differentiable=True is not supported by ember (the "
                "update is computed on arrays, outside the autograd graph)"
            )

    def _step_group(self, group: dict, states: dict) -> bool:
        """A subclass's step of a whole group at once, where it has one for the group's
        parameters as they are; False, with nothing changed, to take the loop over
        parameters (`_init_state`, `_update`) instead."""
        return False

    def _init_state(self, param: Tensor, state: dict, group: dict) -> None:
        """Fill the empty state of `param` (subclasses)."""

    def _update(self, param, grad, state: dict, group: dict) -> None:
        """Update the array `param` in place from the array `grad` (subclasses)."""
        raise NotImplementedError

    def _update_complex(self, p: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        """Run the real update rule on complex numbers seen as (real, imag) pairs.

        As PyTorch's ``view_as_real``: parameter, gradient and state are viewed as real
        arrays of twice the length; state created by the update is viewed back.
        """
        real_state = {k: _make(_real(v._data)) if _is_complex_tensor(v) else v
                      for k, v in state.items()}
        before = {k: id(v) for k, v in real_state.items()}
        self._update(_real(p._data), _real(grad._data), real_state, group)
        for k, v in real_state.items():
            if before.get(k) != id(v):
                if isinstance(v, Tensor) and v._data.shape == _real(p._data).shape:
                    v = _make(v._data.view(p._data.dtype))
                state[k] = v

    def _sparse_update(self, param: Tensor, grad: Tensor, state: dict, group: dict) -> None:
        """The update for a sparse gradient; most algorithms refuse them."""
        raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")

    def _scratch(self, like, slot: int = 0):
        """A reusable work array with the shape and dtype of `like`.

        One flat buffer per (slot, dtype, device) serves all parameters, so a step
        allocates no temporaries; it grows to the largest parameter.
        """
        if type(like) is np.ndarray:
            key = (slot, like.dtype)
        else:  # a GPU array: one buffer per device
            key = (slot, like.dtype, type(like), like.device.id)
        buf = self._workspace.get(key)
        if buf is None or buf.size < like.size:
            buf = xp_of(like).empty(like.size, dtype=like.dtype)
            self._workspace[key] = buf
        return buf[:like.size].reshape(like.shape)

    # ------------------------------------------------------------------
    # hooks

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each step.

        The hook may return ``(new_args, new_kwargs)`` to replace the step's arguments.
        """
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each step."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` before ``state_dict`` builds its result."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` after; it may return a new state dict."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook,
                                          prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` first; it may return a new state dict."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook,
                                           prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` after ``load_state_dict`` has loaded the state."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ------------------------------------------------------------------
    # state dict

    def state_dict(self) -> dict:
        """The optimizer's state as ``{"state": ..., "param_groups": ...}``.

        Parameters are replaced by their index (counted over all groups in order):
        ``state`` maps an index to that parameter's state dict, and each group's
        ``params`` is a list of indices.  The state tensors are not copied.
        """
        for hook in tuple(self._optimizer_state_dict_pre_hooks.values()):
            hook(self)
        index: dict = {}
        start = 0
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        result = {"state": state, "param_groups": groups}
        for hook in tuple(self._optimizer_state_dict_post_hooks.values()):
            out = hook(self, result)
            if out is not None:
                result = out
        return result

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state produced by ``state_dict`` (of an optimizer with matching groups).

        Saved state tensors are cast to each parameter's dtype and device (kept as they
        are when those already match); ``step`` counters are kept as saved.
        """
        state_dict = state_dict.copy()
        for hook in tuple(self._optimizer_load_state_dict_pre_hooks.values()):
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't "
                             "match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast_state(param, v)
            else:
                state[k] = v
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in tuple(self._optimizer_load_state_dict_post_hooks.values()):
            hook(self)


Optimizer.step = _with_step_hooks(Optimizer.step)


def _register(hooks: HookDict, hook, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(hooks, hook)
    if prepend:
        items = list(hooks.items())
        hooks.clear()
        hooks[handle.id] = hook
        hooks.update((k, v) for k, v in items if k != handle.id)
    return handle


def _cast_state(param: Tensor, value, key=None):
    """A loaded state value with its tensors moved to `param`'s device (and float dtype)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point() or param.is_complex():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


# ----------------------------------------------------------------------
# helpers shared by the algorithm files

_REAL = {np.dtype(np.complex64): np.dtype(np.float32),
         np.dtype(np.complex128): np.dtype(np.float64)}


def _real(array):
    """A complex array as a real array of twice the length (real, imag interleaved).

    Elementwise update rules then treat the real and imaginary parts as separate
    numbers, as PyTorch's ``view_as_real`` does.
    """
    return array.view(_REAL[array.dtype])


def _is_complex_tensor(value) -> bool:
    return isinstance(value, Tensor) and value._data.dtype.kind == "c"


def scalar(value) -> float:
    """A hyperparameter given as a number or a one-element tensor, as a Python float."""
    if isinstance(value, Tensor):
        return float(value.item())
    return value


def step_tensor(value: float = 0.0) -> Tensor:
    """A 0-dim float step counter on the CPU (float64 when that is the default dtype)."""
    np_dtype = np.float64 if dtypes.get_default_dtype() is dtypes.float64 else np.float32
    return _make(np.array(value, dtype=np_dtype))


def zeros_state(param: Tensor) -> Tensor:
    """A zero tensor shaped like `param` (same dtype and device)."""
    data = param._data

    return _make(xp_of(data).zeros_like(data))


def start_state(param: Tensor, state: dict, *buffers: str) -> None:
    """The state most rules start with: ``step`` (see `step_tensor`) and, for each name in
    `buffers`, a zero tensor shaped like `param`."""
    state["step"] = step_tensor()
    for name in buffers:
        state[name] = zeros_state(param)


def check_hyper(name: str, value, low: float = 0.0, strict: bool = False) -> None:
    """ValueError with PyTorch's message when a hyperparameter is below its range."""
    number = scalar(value)
    if number < low or (strict and number == low):
        raise ValueError(f"Invalid {name}: {number}")


def check_lr(lr, strict: bool = False) -> None:
    """Validate a learning rate given as a float or a one-element tensor."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    check_hyper("learning rate", lr, strict=strict)


def check_betas(betas) -> None:
    """Both betas must lie in [0, 1)."""
    for i in (0, 1):
        b = scalar(betas[i])
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def sparse_grad_parts(grad: Tensor, optimizer: str):
    """The (indices, values) arrays of a coalesced sparse gradient.

    This is where the sparse tensor type (``ember/sparse.py``) plugs in: every optimizer
    that accepts sparse gradients asks this function for them.  `indices` is an integer
    array of shape (sparse_dim, nnz) without repeats, `values` has shape
    ``(nnz,) + grad.shape[sparse_dim:]``.
    """
    if not isinstance(grad, SparseTensor):
        raise NotImplementedError(f"{optimizer}: sparse gradients of type "
                                  f"{type(grad).__name__} are not supported (only ember's sparse "
                                  "COO tensors are)")
    data = grad.coalesce()._data
    return data.indices, data.values
