"""``ember.func`` (``torch.func``): calling a module with other parameters, and gradients
as functions.

* ``functional_call(module, tensors, args)`` runs the module with some of its parameters
  and buffers swapped for the given tensors (meta-learning, ensembling, per-sample
  gradients by hand); gradients flow to the given tensors, and the module is left as it
  was.
* ``grad(f)`` / ``grad_and_value(f)`` are functions returning the gradient of a function
  with a scalar result, built on ember's autograd, so they nest (``grad(grad(f))``).
* ``vmap`` is not supported yet.
"""

from __future__ import annotations

import contextlib
import functools

from ._core.grad_mode import enable_grad, is_grad_enabled
from ._core.tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "vmap"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced by the
    given tensors (a dict, or a list of dicts).  With `strict`, the names must be exactly
    the module's.  With `tie_weights`, a tensor given for one of several tied names (the
    same tensor under two names) replaces all of them."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = dict(parameter_and_buffer_dicts)
    else:
        tensors = {}
        for d in parameter_and_buffer_dicts:
            overlap = set(tensors) & set(d)
            if overlap:
                raise ValueError(f"{sorted(overlap)[0]} appeared in multiple dictionaries; "
                                 "behavior of functional call is ambiguous")
            tensors.update(d)
    if tie_weights:
        tensors = _with_tied_names(module, tensors)
    if strict:
        _check_names(module, tensors)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, tensors):
        return module(*args, **(kwargs or {}))


def _with_tied_names(module, tensors: dict) -> dict:
    """Every other name of a tied tensor gets the tensor given for one of its names."""
    names = {}  # id(original tensor) -> its names
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        names.setdefault(id(t), []).append(name)
    out = dict(tensors)
    for group in names.values():
        given = [n for n in group if n in tensors]
        if len(given) > 1 and any(tensors[n] is not tensors[given[0]] for n in given):
            raise ValueError(f"functional_call got multiple values for keys {given}, which "
                             "are tied. Consider using tie_weights=False")
        if given:
            for n in group:
                out.setdefault(n, tensors[given[0]])
    return out


def _check_names(module, tensors: dict) -> None:
    known = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
        {n for n, _ in module.named_buffers(remove_duplicate=False)}
    unexpected = sorted(set(tensors) - known)
    missing = sorted(known - set(tensors))
    if unexpected or missing:
        lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
        if unexpected:
            lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
        if missing:
            lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
        raise RuntimeError("\n".join(lines))


@contextlib.contextmanager
def _swapped(module, tensors: dict):
    """Put the tensors in place of the named parameters/buffers/attributes; restore after."""
    saved = []
    try:
        for name, value in tensors.items():
            owner_path, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_path) if owner_path else module
            for store in (owner._parameters, owner._buffers):
                if attr in store:
                    saved.append((store, attr, store[attr]))
                    store[attr] = value
                    break
            else:
                saved.append((owner.__dict__, attr, owner.__dict__.get(attr, _ABSENT)))
                owner.__dict__[attr] = value
        yield
    finally:
        for store, attr, original in reversed(saved):
            if original is _ABSENT:
                del store[attr]
            else:
                store[attr] = original


_ABSENT = object()


def grad(func, argnums=0, has_aux: bool = False):
    """The function computing the gradient of `func` (which returns a scalar tensor, and an
    auxiliary value with `has_aux`) with respect to the argument(s) `argnums`."""
    value_and_grad = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def gradient(*args, **kwargs):
        grads, value = value_and_grad(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return gradient


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """Like `grad`, but the function returns ``(gradient, value)`` (value is ``(output,
    aux)`` with `has_aux`).  Each differentiated argument may be a tensor or a dict, list
    or tuple of them (a parameter dict, say); its gradient has the same structure."""
    @functools.wraps(func)
    def gradient_and_value(*args, **kwargs):
        from ._core.engine import grad as autograd_grad

        positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        args = list(args)
        trees = []  # per position: (leaves, rebuild)
        for p in positions:
            leaves, rebuild = _flatten(args[p])
            if not leaves:
                raise RuntimeError(f"grad(f)(*args): Expected argnums={argnums} to point to a "
                                   f"Tensor or a structure of Tensors, got "
                                   f"{type(args[p]).__name__}")
            trees.append((leaves, rebuild))
        # nested inside another differentiation: keep the graph so that it can go on
        nested = is_grad_enabled() and any(t.requires_grad for leaves, _ in trees
                                           for t in leaves)
        inputs = []
        for (leaves, rebuild), p in zip(trees, positions):
            leaves[:] = [t if t.requires_grad else t.detach().requires_grad_() for t in leaves]
            args[p] = rebuild(leaves)
            inputs += leaves
        with enable_grad():
            result = func(*args, **kwargs)
            output, aux = result if has_aux else (result, None)
            if not isinstance(output, Tensor) or output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   "scalar Tensor")
            flat = autograd_grad(output, inputs, create_graph=nested, allow_unused=True)
        flat = [g if g is not None else t.new_zeros(tuple(t.shape)) for g, t in zip(flat, inputs)]
        grads, start = [], 0
        for leaves, rebuild in trees:
            grads.append(rebuild(flat[start:start + len(leaves)]))
            start += len(leaves)
        if not nested:  # results of a top-level call carry no graph
            output = output.detach()
            aux = _detached(aux)
        gradient = grads[0] if isinstance(argnums, int) else tuple(grads)
        return gradient, ((output, aux) if has_aux else output)
    return gradient_and_value


def _flatten(tree):
    """(the tensors in `tree`, a function putting new tensors back in their places)."""
    if isinstance(tree, Tensor):
        return [tree], lambda leaves: leaves[0]
    if isinstance(tree, dict):
        parts = [(k, *_flatten(v)) for k, v in tree.items()]
    elif isinstance(tree, (list, tuple)):
        parts = [(i, *_flatten(v)) for i, v in enumerate(tree)]
    else:
        return [], lambda leaves: tree
    leaves = [t for _, sub, _ in parts for t in sub]

    def rebuild(new):
        values, start = [], 0
        for _, sub, put in parts:
            values.append(put(list(new[start:start + len(sub)])))
            start += len(sub)
        if isinstance(tree, dict):
            return {key: v for (key, _, _), v in zip(parts, values)}
        return type(tree)(values)
    return leaves, rebuild


def _detached(value):
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_detached(v) for v in value)
    if isinstance(value, dict):
        return {k: _detached(v) for k, v in value.items()}
    return value


def vmap(func, *args, **kwargs):
    """Not supported yet: ember has no batching transform (loop over the batch instead)."""
    raise NotImplementedError("ember.func.vmap is not supported yet; apply the function to "
                              "each element of the batch and stack the results")
