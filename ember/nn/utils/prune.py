"""Pruning: zero out entries of a parameter through a mask, as ``torch.nn.utils.prune``.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, adds a buffer
``<name>_mask`` (ones where entries are kept, zeros where pruned) and a forward pre-hook
that sets the plain attribute ``module.<name> = <name>_orig * <name>_mask`` before every
call, so gradients reach ``<name>_orig`` only through the kept entries.  Pruning the same
parameter again combines the masks in a ``PruningContainer``: the new method only sees
the entries (or, for structured methods, the channels) still alive, and a fractional
`amount` is a fraction of those.  ``remove`` makes the pruning permanent: ``<name>``
becomes one parameter holding the masked values again.

>>> import ember
>>> from ember import nn
>>> from ember.nn.utils import prune
>>> layer = prune.l1_unstructured(nn.Linear(4, 2), "weight", amount=0.5)
>>> int((layer.weight == 0).sum())
4
>>> sorted(name for name, _ in layer.named_buffers())
['weight_mask']
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ..._core.grad_mode import no_grad
from ..._core.memory_format import contiguous_format
from ..._core.tensor import Tensor
from ...ops.sampling import rand, rand_like
from ...ops.creation import ones_like, zeros_like
from ...ops.linalg_norms import legacy_norm
from ...ops.sorting import kthvalue, topk
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
    "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
    "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
    "global_unstructured", "custom_from_mask", "remove", "is_pruned",
]


def _scores_or(importance_scores: Tensor | None, t: Tensor, what: str) -> Tensor:
    """`importance_scores` (checked to have `t`'s shape; `what` names `t` in the error),
    or `t` itself when none are given."""
    if importance_scores is None:
        return t
    if importance_scores.shape != t.shape:
        raise AssertionError(f"importance_scores should have the same shape as {what}, got "
                             f"{importance_scores.shape} vs {t.shape}")
    return importance_scores


class BasePruningMethod(ABC):
    """A way of choosing a mask; subclasses write ``compute_mask``.

    An instance, once applied, is the forward pre-hook that keeps ``module.<name>`` equal
    to ``<name>_orig * <name>_mask``.
    """

    _tensor_name: str | None = None

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for `t` (same shape), given the mask already in place."""

    def apply_mask(self, module) -> Tensor:
        """``<name>_orig * <name>_mask`` of `module` (differentiable in ``_orig``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores: Tensor | None = None,
              **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` and return the hook.

        The mask is chosen from `importance_scores` (same shape as the parameter) when
        given, else from the parameter's values.  A parameter pruned before gets a
        ``PruningContainer`` holding all its methods.
        """
        old_keys, method = _chain_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        importance_scores = _scores_or(importance_scores, orig,
                                       f"parameter {name} of {module}")
        first_time = not isinstance(method, PruningContainer)
        if first_time:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            mask = getattr(module, name + "_mask")
            default_mask = mask.detach().clone(memory_format=contiguous_format)
        try:
            with no_grad():
                mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
        except Exception:
            # leave the module as it was: no new parameter names, the old hook unchanged
            if first_time:
                module.__dict__.pop(name, None)
                module._buffers.pop(name + "_mask", None)
                module._parameters[name] = module._parameters.pop(name + "_orig")
            elif old_keys and module._forward_pre_hooks[old_keys[0]] is method:
                method._pruning_methods = method._pruning_methods[:-1]
            raise
        for key in old_keys:
            del module._forward_pre_hooks[key]
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """`t` times the mask this method computes for it (no module involved)."""
        importance_scores = _scores_or(importance_scores, t, "tensor t")
        if default_mask is None:
            default_mask = ones_like(t)
        with no_grad():
            mask = self.compute_mask(importance_scores, default_mask=default_mask)
        return t * mask

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the masked
        values; ``<name>_orig`` and ``<name>_mask`` go away.  (The hook itself is taken
        off by the module-level ``remove``.)"""
        name = self._tensor_name
        if name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 "removed")
        weight = self.apply_mask(module)
        if hasattr(module, name):
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        orig.data = weight.data
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _chain_method(cls, module, name: str, *args, **kwargs):
    """The keys of the pruning hook already on parameter `name` (none or one), and
    ``cls(*args, **kwargs)`` for `name`, combined with that hook's method if any (the
    caller swaps the hooks once the new mask is in place)."""
    keys = [key for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} "
                             f"of module {module}. Use a PruningContainer.")
    old = module._forward_pre_hooks[keys[0]] if keys else None
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        return keys, old
    if old is not None:
        return keys, PruningContainer(old, method)
    return keys, method


class PruningContainer(BasePruningMethod):
    """The pruning methods applied, in order, to one parameter.

    Its mask is the last method's mask computed on what the earlier ones left: the kept
    entries (unstructured methods), the kept channels along ``dim`` (structured methods)
    or the whole tensor (``"global"`` methods such as ``CustomFromMask``).
    """

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple = ()
        if methods:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append `method`; it must prune the same parameter."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                f"Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer {self}. Found "
                f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """`default_mask` with the last method applied to the part still unpruned."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = getattr(method, "PRUNING_TYPE", None)
        if kind == "unstructured":
            where = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to '
                                     "have the attribute `dim` defined.")
            ndim = t.dim()
            dim = method.dim + ndim if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {ndim}")
            others = [d for d in range(ndim) if d != dim]
            alive = default_mask.sum(dim=others) != 0
            where = tuple(alive if d == dim else slice(None) for d in range(ndim))
        elif kind == "global":
            where = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        part = method.compute_mask(t[where], default_mask=default_mask[where])
        new_mask[where] = part.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask stays all ones (useful to add the reparametrization)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module, name: str):
        """Add an all-ones mask to ``module.<name>``."""
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes the `amount` entries (a count, or a fraction in [0, 1]) of lowest score."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_amount(amount)
        self.amount = amount

    def _scores(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.nelement()
        count = _count(self.amount, size)
        _validate_count(count, size)
        mask = default_mask.clone(memory_format=contiguous_format)
        if count:
            mask.view(-1)[_topk(self._scores(t).reshape(-1), count, largest=False)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes `amount` entries chosen at random (a count, or a fraction in [0, 1])."""

    def _scores(self, t: Tensor) -> Tensor:
        return rand_like(t)

    @classmethod
    def apply(cls, module, name: str, amount):
        """Prune `amount` random entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the `amount` entries of smallest absolute value (a count, or a fraction in
    [0, 1]).  Among equal magnitudes the lowest indices are pruned first."""

    def _scores(self, t: Tensor) -> Tensor:
        return t.abs()

    @classmethod
    def apply(cls, module, name: str, amount, importance_scores: Tensor | None = None):
        """Prune the `amount` smallest-magnitude entries of ``module.<name>``."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim` (a count, or a fraction in [0, 1]);
    subclasses choose which channels to keep."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _validate_amount(amount)
        self.amount = amount
        self.dim = dim

    def _keep(self, t: Tensor, size: int, count: int) -> Tensor:
        """The channels to keep along `dim` (a bool mask or indices); `count` >= 1 pruned."""
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        count = _count(self.amount, size)
        _validate_count(count, size)
        if count == 0:
            return default_mask
        keep = self._keep(t, size, count)
        return _channel_mask(t, self.dim, keep) * default_mask.to(dtype=t.dtype)


class RandomStructured(_Structured):
    """Prunes `amount` whole channels along `dim`, chosen at random."""

    def _keep(self, t: Tensor, size: int, count: int) -> Tensor:
        prob = rand(size, device=t.device)
        # NOTE: kthvalue needs k >= 1, hence compute_mask's early return for count 0
        return prob > kthvalue(prob, k=count).values

    @classmethod
    def apply(cls, module, name: str, amount, dim: int = -1):
        """Prune `amount` random channels of ``module.<name>`` along `dim`."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the `amount` channels along `dim` of smallest `n`-norm (`n` as in
    ``ember.norm``: a number, ``inf``, ``-inf``, ``"fro"``, ``"nuc"``)."""

    def __init__(self, amount, n, dim: int = -1) -> None:
        super().__init__(amount, dim)
        self.n = n

    def _keep(self, t: Tensor, size: int, count: int) -> Tensor:
        dim = self.dim % t.dim()
        norms = legacy_norm(t, p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        return _topk(norms, size - count, largest=True)

    @classmethod
    def apply(cls, module, name: str, amount, n, dim: int,
              importance_scores: Tensor | None = None):
        """Prune the `amount` channels of ``module.<name>`` of smallest `n`-norm."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given `mask` is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name: str, mask: Tensor):
        """Prune ``module.<name>`` where `mask` is zero."""
        return super().apply(module, name, mask=mask)


# ---- the functional interface ----

def identity(module, name: str):
    """Add the pruning reparametrization to ``module.<name>`` with an all-ones mask.
    Returns `module`."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    """Prune `amount` random entries of ``module.<name>`` (an int count, or a float
    fraction of the entries still unpruned).  Returns `module`."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores: Tensor | None = None):
    """Prune the `amount` entries of ``module.<name>`` of smallest magnitude (or smallest
    `importance_scores`).  Returns `module`."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    """Prune `amount` random channels of ``module.<name>`` along `dim`.  Returns
    `module`."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int,
                  importance_scores: Tensor | None = None):
    """Prune the `amount` channels of ``module.<name>`` along `dim` with the smallest
    `n`-norm (of `importance_scores` when given).  Returns `module`.

    >>> import ember
    >>> from ember import nn
    >>> conv = ln_structured(nn.Conv2d(3, 4, 3), "weight", amount=2, n=2, dim=0)
    >>> int((conv.weight.abs().sum(dim=(1, 2, 3)) == 0).sum())
    2
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores: dict | None = None,
                        **kwargs) -> None:
    """Prune the (module, name) pairs in `parameters` together, as one vector: e.g. with
    ``pruning_method=L1Unstructured, amount=20`` the 20 smallest entries across all of
    them.  `importance_scores` maps a (module, name) pair to scores used in its place;
    `kwargs` go to `pruning_method`, which must be unstructured."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    old_masks = parameters_to_vector([_mask_or_ones(module, name) for module, name in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer(method)
    with no_grad():
        mask = container.compute_mask(scores.detach(), old_masks)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        stop = start + param.numel()
        custom_from_mask(module, name, mask=mask[start:stop].view_as(param))
        start = stop


def custom_from_mask(module, name: str, mask: Tensor):
    """Prune ``module.<name>`` where `mask` is zero.  Returns `module`."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name: str):
    """Make the pruning of ``module.<name>`` permanent and take its hook off: ``<name>``
    is one parameter again (holding the pruned values).  Returns `module`."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module) -> bool:
    """True when `module` or any submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for sub in module.modules() for hook in sub._forward_pre_hooks.values())


# ---- helpers ----

def _mask_or_ones(module, name: str) -> Tensor:
    mask = getattr(module, name + "_mask", None)
    return ones_like(getattr(module, name)) if mask is None else mask


def _topk(scores: Tensor, k: int, largest: bool) -> Tensor:
    """Indices of the `k` top `scores` (1-D).

    NOTE: among equal scores at the cut, ``ember.topk`` takes the lowest indices; PyTorch's
    choice follows its C++ library's selection algorithm, so masks of weights with tied
    magnitudes may differ from PyTorch's (any of them is a correct pruning)."""
    return topk(scores.detach(), k, largest=largest).indices


def _channel_mask(t: Tensor, dim: int, keep: Tensor) -> Tensor:
    """Zeros shaped like `t`, with ones on the channels `keep` (indices or a boolean mask)
    along `dim`."""
    mask = zeros_like(t)
    where = [slice(None)] * t.dim()
    where[dim] = keep
    mask[tuple(where)] = 1
    return mask


def _validate_amount(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if isinstance(amount, numbers.Integral):
        bad = amount < 0
    else:
        bad = not 0.0 <= float(amount) <= 1.0
    if bad:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_count(count: int, size: int) -> None:
    if count > size:
        raise ValueError(f"amount={count} should be smaller than the number of parameters to "
                         f"prune={size}")


def _count(amount, size: int) -> int:
    """Entries to prune: an int `amount` as is, a float one as a fraction (rounded half to
    even, as Python's round)."""
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * size)


def _validate_structured(t: Tensor) -> None:
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {t.shape} with {t.dim()} dims")


def _validate_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")
