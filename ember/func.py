"""``ember.func`` (``torch.func``): calling a module with other parameters, and gradients
as functions.

* ``functional_call(module, tensors, args)`` runs the module with some of its parameters
  and buffers swapped for the given tensors (meta-learning, ensembling, per-sample
  gradients by hand); gradients flow to the given tensors, and the module is left as it
  was.
* ``grad(f)`` / ``grad_and_value(f)`` are functions returning the gradient of a function
  with a scalar result, built on ember's autograd, so they nest (``grad(grad(f))``).
* ``vmap(f)`` maps `f` over a batch dimension.  ember has no batching transform: it calls
  `f` once per batch element and stacks the results, which gives PyTorch's values (and
  accepts more: data-dependent Python control flow, ``.item()``) at the speed of a loop.
* ``vjp(f, *primals)`` returns f's output and a function of cotangents giving the
  vector-Jacobian products; ``jvp(f, primals, tangents)`` the output and ``J @ tangents``
  (double-vjp trick).
* ``jacrev(f)`` / ``jacfwd(f)`` / ``hessian(f)`` are functions computing Jacobians and
  Hessians: jacrev row by row with reverse passes, jacfwd column by column with the
  double-vjp trick (one pass per input element), hessian = ``jacfwd(jacrev(f))``.  They
  nest with each other and with ``grad``.
"""

from __future__ import annotations

import contextlib
import functools

from ._core.grad_mode import enable_grad, is_grad_enabled
from ._core.tensor import Tensor
from . import random as ember_random
from ._core.engine import grad as autograd_grad
from .ops.creation import zeros_like
from .ops.joining import stack

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "vjp", "vmap"]


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
        nested = _is_nested(trees)
        inputs = _differentiable_inputs(trees, positions, args)
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


def _tensor_tree(arg) -> tuple:
    """`_flatten` of an argument the transforms differentiate, which must hold tensors."""
    leaves, rebuild = _flatten(arg)
    if not leaves or any(not isinstance(t, Tensor) for t in leaves):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(arg)}")
    return leaves, rebuild


def _is_nested(trees: list) -> bool:
    """Whether this runs inside another differentiation (an input already requires grad):
    then the results keep their graph, so that the outer one can go on."""
    return is_grad_enabled() and any(t.requires_grad for leaves, _ in trees for t in leaves)


def _differentiable_inputs(trees: list, positions: tuple, args: list) -> list:
    """Put a tensor that requires grad in each differentiated place of `args` (a detached
    alias of each one that does not) and return them all, in order."""
    inputs, arrays = [], set()
    for (leaves, rebuild), p in zip(trees, positions):
        for i, t in enumerate(leaves):
            if not t.requires_grad:
                # NOTE: a copy when another input holds the same array (the same tensor passed
                # twice): the engine tells saved tensors apart by their arrays.
                t = (t.detach().clone() if id(t._data) in arrays else t.detach())
                t.requires_grad_()
            arrays.add(id(t._data))
            leaves[i] = t
        args[p] = rebuild(leaves)
        inputs += leaves
    return inputs


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


# --- vjp and jvp -----------------------------------------------------------------------------


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)`` (and `func`'s auxiliary value with `has_aux`):
    ``vjp_fn(cotangents)`` gives, for each primal, the vector-Jacobian product of the
    cotangents (structured like the output) with func's Jacobian, as a tuple."""
    trees = [_tensor_tree(p) for p in primals]
    nested = _is_nested(trees)
    args = list(primals)
    inputs = _differentiable_inputs(trees, tuple(range(len(args))), args)
    with enable_grad():
        result = func(*args)
    output, aux = result if has_aux else (result, None)
    out_leaves, _ = _flatten(output)

    def vjp_fn(cotangents):
        """The vector-Jacobian products of `cotangents` (one per primal, as a tuple)."""
        cot_leaves, _ = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function: "
                               f"{len(cot_leaves)} tensors for {len(out_leaves)} outputs")
        pairs = [(o, c) for o, c in zip(out_leaves, cot_leaves) if o.requires_grad]
        grads = [None] * len(inputs)
        if pairs:
            with enable_grad():
                grads = autograd_grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                                      retain_graph=True, create_graph=nested,
                                      allow_unused=True)
        grads = [zeros_like(x) if g is None else g if nested else g.detach()
                 for g, x in zip(grads, inputs)]
        per_primal, start = [], 0
        for leaves, rebuild in trees:
            per_primal.append(rebuild(grads[start:start + len(leaves)]))
            start += len(leaves)
        return tuple(per_primal)

    shown = output if nested else _detached(output)
    return (shown, vjp_fn, aux if nested else _detached(aux)) if has_aux else (shown, vjp_fn)


def jvp(func, primals: tuple, tangents: tuple, *, strict: bool = False,
        has_aux: bool = False):
    """``(func(*primals), J @ tangents)`` (and the auxiliary value with `has_aux`): the
    Jacobian-vector product, structured like the output, by the double-vjp trick.  With
    `strict`, an output that does not depend on the primals raises."""
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, tuple):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected {name} to be a tuple. "
                               "E.g. it should be valid to call f(*primals).")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           f"the same python structure: {len(primals)} primals and "
                           f"{len(tangents)} tangents")
    trees = [_flatten(p) for p in primals]
    nested = _is_nested(trees)
    args = list(primals)
    inputs = _differentiable_inputs(trees, tuple(range(len(args))), args)
    directions = [t for tangent in tangents for t in _flatten(tangent)[0]]
    with enable_grad():
        result = func(*args)
        output, aux = result if has_aux else (result, None)
        out_leaves, out_rebuild = _flatten(output)
        if strict and any(not o.requires_grad for o in out_leaves):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is "
                               "independent of the inputs. This is not allowed with "
                               "strict=True.")
        products = [_output_jvp(o, inputs, directions, nested) for o in out_leaves]
    shown = output if nested else _detached(output)
    products = out_rebuild(products)
    if has_aux:
        return shown, products, (aux if nested else _detached(aux))
    return shown, products


def _output_jvp(output: Tensor, inputs: list, directions: list, nested: bool) -> Tensor:
    """J @ directions for one output: u -> J^T u is linear; its vjp with the directions."""
    if output.requires_grad:
        u = zeros_like(output, requires_grad=True)
        transposed = autograd_grad(output, inputs, u, create_graph=True, allow_unused=True)
        terms = [(g * d).sum() for g, d in zip(transposed, directions) if g is not None]
        total = sum(terms) if terms else None
        if total is not None and total.requires_grad:
            (product,) = autograd_grad(total, u, create_graph=nested, allow_unused=True)
            if product is not None:
                return product if nested else product.detach()
    return output.new_zeros(tuple(output.shape))


# --- vmap -------------------------------------------------------------------------------------


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs: ``vmap(f)(x)[i] == f(x[i])``.

    `in_dims` gives, per positional argument (or once for all), the dimension to map over
    (None: pass the argument whole); an entry may be a structure matching a tuple, list or
    dict argument.  `out_dims` places the mapped dimension in each output (None: the
    output is the same for every element and is returned once).  `randomness`: "error"
    raises if `func` draws random numbers, "different" draws anew for each element, "same"
    gives every element the same draws.  Computed by calling `func` on each element and
    stacking the results (see the module docstring).
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    name = getattr(func, "__name__", type(func).__name__)

    @functools.wraps(func)
    def batched(*args, **kwargs):
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"{where}: in_dims is not compatible with the structure of "
                             f"`inputs`. in_dims has {len(dims)} entries but there are "
                             f"{len(args)} inputs.")
        mapped = []  # (tensor, dim) of every mapped tensor, in order
        specs = [_mapped_leaves(a, d, where, mapped) for a, d in zip(args, dims)]
        if not mapped:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        sizes = [t.shape[d] for t, d in mapped]
        if len(set(sizes)) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        if sizes[0] == 0:
            raise NotImplementedError("ember.func.vmap over a batch of size 0 (ember maps by "
                                      "calling the function once per element)")
        state = ember_random.get_rng_state()
        results = []
        for i in range(sizes[0]):
            if randomness == "same":
                ember_random.set_rng_state(state)
            sample = [_select(a, spec, i) for a, spec in zip(args, specs)]
            results.append(func(*sample, **kwargs))
            if randomness == "error" and not _same_state(state, ember_random.get_rng_state()):
                raise RuntimeError("vmap: called random operation while in randomness error "
                                   "mode. Please either use the 'same' or 'different' "
                                   "randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
        return _stack_outputs(results, out_dims, name, stack)
    return batched


def _mapped_leaves(arg, dim, where: str, mapped: list):
    """`arg`'s structure with each tensor's mapped dimension (normalized) or None."""
    if isinstance(dim, (tuple, list, dict)):
        keys = list(dim) if isinstance(dim, dict) else range(len(dim))
        if type(arg) is not type(dim) or len(arg) != len(dim):
            raise ValueError(f"{where}: in_dims is not compatible with the structure of "
                             "`inputs`.")
        parts = {k: _mapped_leaves(arg[k], dim[k], where, mapped) for k in keys}
        return parts if isinstance(dim, dict) else type(dim)(parts[k] for k in keys)
    if isinstance(arg, (tuple, list, dict)) and dim is not None:
        keys = list(arg) if isinstance(arg, dict) else range(len(arg))
        parts = {k: _mapped_leaves(arg[k], dim, where, mapped) for k in keys}
        return parts if isinstance(arg, dict) else type(arg)(parts[k] for k in keys)
    if dim is None:
        return None
    if not isinstance(dim, int):
        raise ValueError(f"{where}: expected in_dims to be int or a (potentially nested) "
                         f"tuple matching the structure of inputs, got: {type(dim)}.")
    if not isinstance(arg, Tensor):
        raise ValueError(f"{where}: Got in_dim={dim} for an input but the input is of type "
                         f"{type(arg)}. We cannot vmap over non-Tensor arguments, please use "
                         "None as the respective in_dim")
    if not -arg.dim() <= dim < arg.dim():
        raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a "
                         f"Tensor of dimensionality {arg.dim()} so expected in_dim to satisfy "
                         f"-{arg.dim()} <= in_dim < {arg.dim()}.")
    dim %= arg.dim()
    mapped.append((arg, dim))
    return dim


def _select(arg, spec, i: int):
    if spec is None:
        return arg
    if isinstance(spec, dict):
        return {k: _select(arg[k], v, i) for k, v in spec.items()}
    if isinstance(spec, (tuple, list)):
        return type(arg)(_select(a, s, i) for a, s in zip(arg, spec))
    return arg.select(spec, i)


def _same_state(a: Tensor, b: Tensor) -> bool:
    return a.shape == b.shape and bool((a == b).all())


def _stack_outputs(results: list, out_dims, name: str, stack):
    first = results[0]
    if isinstance(first, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
        if len(dims) != len(first):
            raise ValueError(f"vmap({name}, ...): out_dims is not compatible with the "
                             f"structure of `outputs`: {len(dims)} out_dims for "
                             f"{len(first)} outputs.")
        return type(first)(_stack_outputs([r[k] for r in results], dims[k], name, stack)
                           for k in range(len(first)))
    if isinstance(first, dict):
        dims = out_dims if isinstance(out_dims, dict) else dict.fromkeys(first, out_dims)
        return {k: _stack_outputs([r[k] for r in results], dims[k], name, stack)
                for k in first}
    if not isinstance(first, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(first)}. Did you mean to set out_dims= to None for output?")
    if out_dims is None:
        if any(not _same_values(first, r) for r in results[1:]):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                             "when out_dim is None")
        return first
    return stack(results, dim=out_dims)


def _same_values(a: Tensor, b: Tensor) -> bool:
    return a is b or (a.shape == b.shape and bool((a == b).all()))


# --- Jacobians and Hessians --------------------------------------------------------------------


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None,
           _preallocate_and_copy: bool = False):
    """The function computing the Jacobian of `func` with respect to argument(s) `argnums`,
    by reverse mode (one backward pass per output element).  Each output's Jacobian has
    shape ``output.shape + input.shape``; with a tuple of argnums, a tuple over them; with
    `has_aux`, ``(jacobian, aux)``."""
    return _jacobian_function(func, argnums, has_aux, _jacobian_rows, "jacrev")


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """Like `jacrev`, computed column by column: one Jacobian-vector product (double-vjp
    trick) per input element, which suits functions with few inputs and many outputs."""
    return _jacobian_function(func, argnums, has_aux, _jacobian_columns, "jacfwd")


def hessian(func, argnums=0):
    """The function computing the Hessian of `func` (a scalar function): the Jacobian of
    its gradient, ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


def _jacobian_function(func, argnums, has_aux: bool, blocks, api: str):
    @functools.wraps(func)
    def jacobian(*args):
        positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        args = list(args)
        for p in positions:
            if not -len(args) <= p < len(args):
                raise RuntimeError(f"Got argnum={p}, but only {len(args)} positional inputs")
        trees = [_tensor_tree(args[p]) for p in positions]
        nested = _is_nested(trees)
        inputs = _differentiable_inputs(trees, positions, args)
        with enable_grad():
            result = func(*args)
            output, aux = result if has_aux else (result, None)
            out_leaves, out_rebuild = _flatten(output)
            if not out_leaves or any(not isinstance(o, Tensor) for o in out_leaves):
                raise RuntimeError(f"{api}: Expected f(*args) to return Tensors, got "
                                   f"{type(output).__name__}")
            per_output = [blocks(o, inputs, nested) for o in out_leaves]
        results = []
        for jac in per_output:
            grouped, start = [], 0
            for leaves, rebuild in trees:
                grouped.append(rebuild(jac[start:start + len(leaves)]))
                start += len(leaves)
            results.append(grouped[0] if isinstance(argnums, int) else tuple(grouped))
        jac = out_rebuild(results)
        if has_aux:
            return jac, (aux if nested else _detached(aux))
        return jac
    return jacobian


def _jacobian_rows(output: Tensor, inputs: list, nested: bool) -> list:
    """d output / d input for each input, one reverse pass per output element."""
    flat = output.reshape(-1)
    rows = []  # per output element: a gradient per input
    for k in range(flat.numel()):
        if not output.requires_grad:
            rows.append([None] * len(inputs))
            continue
        rows.append(autograd_grad(flat[k], inputs, retain_graph=True, create_graph=nested,
                                  allow_unused=True))
    blocks = []
    for j, x in enumerate(inputs):
        parts = [r[j] if r[j] is not None else zeros_like(x) for r in rows]
        block = stack(parts) if parts else x.new_zeros((0,) + tuple(x.shape))
        blocks.append(_finish(block.reshape(tuple(output.shape) + tuple(x.shape)), nested))
    return blocks


def _jacobian_columns(output: Tensor, inputs: list, nested: bool) -> list:
    """d output / d input for each input, one Jacobian-vector product per input element:
    with g(u) = J^T u (linear in u), the vjp of g's j-th entry with respect to u is
    column j of J."""
    shape = tuple(output.shape)
    u = zeros_like(output, requires_grad=True)
    if output.requires_grad:
        transposed = autograd_grad(output, inputs, u, create_graph=True, allow_unused=True)
    else:
        transposed = [None] * len(inputs)
    blocks = []
    for x, g in zip(inputs, transposed):
        columns = []
        for j in range(x.numel()):
            entry = None if g is None else g.reshape(-1)[j]
            if entry is None or not entry.requires_grad:
                columns.append(output.new_zeros(shape))
                continue
            (col,) = autograd_grad(entry, u, retain_graph=True, create_graph=nested,
                                   allow_unused=True)
            columns.append(col if col is not None else output.new_zeros(shape))
        block = stack(columns, dim=-1) if columns else output.new_zeros(shape + (0,))
        blocks.append(_finish(block.reshape(shape + tuple(x.shape)), nested))
    return blocks


def _finish(t: Tensor, nested: bool) -> Tensor:
    return t if nested else t.detach()
