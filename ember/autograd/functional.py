"""Functional higher-order autograd: jacobian, hessian, vjp, jvp, hvp, vhp.

Each takes a function of tensors and the point to differentiate at, and returns
plain tensors, with PyTorch's structure: a function of one tensor gets tensors
back, a function of a tuple of tensors gets tuples.  Everything is built from
reverse mode (``autograd.grad``): a forward-mode product ``J v`` comes from the
"double-vjp" trick, differentiating the linear map ``u -> J^T u`` with respect
to ``u``.  Results are detached unless ``create_graph=True``.
"""

from __future__ import annotations

from .._core.engine import grad as _grad
from .._core.grad_mode import enable_grad, set_grad_enabled, is_grad_enabled
from .._core.tensor import Tensor, size_str
from ..ops.creation import ones_like, zeros, zeros_like
from ..ops.joining import stack

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# --- argument handling --------------------------------------------------------------------


def _as_tuple(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(was it a tuple?, the tensors as a tuple), checking every item is a Tensor."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = (f"value at index {i} has type {type(item)}" if is_tuple
                     else f"given {arg_name} has type {type(item)}")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where}.")
    return is_tuple, items


def _prepare(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh leaves to differentiate at; with create_graph, stay connected to the caller's graph."""
    out = []
    for t in tensors:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(value, create_graph: bool):
    """Detach results (recursively through tuples) unless the caller wants a graph."""
    if isinstance(value, tuple):
        return tuple(_finish(v, create_graph) for v in value)
    if value is None or create_graph:
        return value
    return value.detach()


def _unpack(value: tuple, is_tuple: bool):
    return value if is_tuple else value[0]


def _unpack2(value: tuple, outer_tuple: bool, inner_tuple: bool):
    if not inner_tuple:
        value = tuple(v[0] for v in value)
    return value if outer_tuple else value[0]


def _check_v(v: tuple, refs: tuple, refs_is_tuple: bool) -> None:
    if len(v) != len(refs):
        if refs_is_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(refs)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, refs)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if refs_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {size_str(b.shape)} but "
                               f"got {size_str(a.shape)}.")




def _vector(v, refs: tuple, refs_is_tuple: bool, create_graph: bool, api: str,
            refs_are: str):
    """`v` prepared as a tuple shaped like `refs`.  It may be None only when `refs` is one
    one-element tensor; `refs_are` says what they are in that error's message."""
    if v is not None:
        _, v = _as_tuple(v, "v", api)
        v = _prepare(v, create_graph, need_graph=False)
        _check_v(v, refs, refs_is_tuple)
    elif len(refs) != 1 or refs[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {refs_are} a single Tensor with "
                           "a single element.")
    return v


def _check_outputs_differentiable(outputs: tuple, strict: bool) -> None:
    if not strict:
        return
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(
                f"Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode.")


def _check_depends(tensors: tuple, strict: bool, what: str) -> None:
    """Strict mode: each first derivative must itself depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if not t.requires_grad:
            if what == "hessian":
                raise RuntimeError(
                    f"The hessian of the user-provided function with respect to input {i} is "
                    "independent of the input. This is not allowed in strict mode. You should "
                    "ensure that your function is thrice differentiable and that the hessian "
                    "depends on the inputs.")
            if what == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the user-provided "
                    f"function with respect to input {i} is independent of the input. This is "
                    "not allowed in strict mode. You should ensure that your function is twice "
                    "differentiable and that the jacobian depends on the inputs (this would be "
                    "violated by a linear function for example).")
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode.")


def _vjp_of(outputs: tuple, inputs: tuple, grad_outputs=None, create_graph: bool = False,
            retain_graph=None) -> tuple:
    """autograd.grad over the outputs that require grad; None for inputs they don't reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gouts = zip(*pairs)
    return _grad(outs, inputs, gouts, retain_graph=retain_graph, create_graph=create_graph,
                 allow_unused=True)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _zeros_for_missing(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                       stage: str) -> tuple:
    """Replace the None gradients by zeros shaped like `refs` (an error in strict mode)."""
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = _zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "jacobian" if stage in ("back", "back_trick") else "hessian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        out.append(g)
    return tuple(out)


def _zeros_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    return zeros_like(t, requires_grad=requires_grad)


def _ones_like(t: Tensor) -> Tensor:
    return ones_like(t)


def _stack(tensors: list) -> Tensor:
    return stack(tensors, 0)


# --- vector products ------------------------------------------------------------------------


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The vector-Jacobian product ``v^T J`` of `func` at `inputs`.

    Returns ``(func_output, vjp)``; `vjp` has the structure of `inputs`.  `v` has the
    structure of func's output and may be omitted when that output is one element.
    """
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_outputs_differentiable(outputs, strict)
        v = _vector(v, outputs, out_tuple, create_graph, "vjp",
                    "the user-provided function returns")
        grads = _vjp_of(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_missing(grads, inputs, strict, create_graph, "back")
    outputs = _finish(outputs, create_graph)
    result = _finish(result, create_graph)
    return _unpack(outputs, out_tuple), _unpack(result, in_tuple)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The Jacobian-vector product ``J v`` of `func` at `inputs`.

    Returns ``(func_output, jvp)``; `jvp` has the structure of func's output.  `v` has
    the structure of `inputs` and may be omitted when the input is one element.
    Computed with the double-vjp trick (two reverse passes), as PyTorch does.
    """
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _vector(v, inputs, in_tuple, create_graph, "jvp",
                    "the input to the user-provided function is")
        outputs = func(*inputs)
        out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_outputs_differentiable(outputs, strict)
        # u -> J^T u is linear in u; its vjp with v is J v.
        dummies = tuple(_zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _vjp_of(outputs, inputs, dummies, create_graph=True)
        _check_depends(grad_inputs, strict, "grad_inputs")
        if v is None:
            v = (_ones_like(inputs[0]),)
        grads = _vjp_of(grad_inputs, dummies, v, create_graph=create_graph)
        result = _zeros_for_missing(grads, outputs, strict, create_graph, "back_trick")
    outputs = _finish(outputs, create_graph)
    result = _finish(result, create_graph)
    return _unpack(outputs, out_tuple), _unpack(result, out_tuple)


# --- full matrices --------------------------------------------------------------------------


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode"):
    """The Jacobian of `func` at `inputs`, one reverse pass per output element.

    For one input and one output: a tensor of shape ``output.shape + input.shape``.
    A tuple of inputs (or outputs) gives a tuple; both give a tuple of tuples,
    ``J[i][j]`` for output i and input j.  ``vectorize=True`` is accepted and gives
    the same result (ember computes the rows one by one either way); only
    ``strategy='reverse-mode'`` is supported.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        raise NotImplementedError("jacobian: strategy='forward-mode' is not supported by ember "
                                  "(no forward-mode AD); use strategy='reverse-mode'")
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                       "jacobian")
        _check_outputs_differentiable(outputs, strict)
        jac = tuple(_jacobian_of_output(i, out, inputs, create_graph, strict)
                    for i, out in enumerate(outputs))
    jac = _finish(jac, create_graph)
    return _unpack2(jac, out_tuple, in_tuple)


def _jacobian_of_output(i: int, out: Tensor, inputs: tuple, create_graph: bool,
                        strict: bool) -> tuple:
    """Rows of d out / d input for every input: one reverse pass per element of `out`."""
    rows = [[] for _ in inputs]
    for k in range(out.numel()):
        seed = _zeros_like(out)
        seed._data.reshape(-1)[k] = 1  # row k of the Jacobian is e_k^T J
        grads = _vjp_of((out,), inputs, (seed,), retain_graph=True, create_graph=create_graph)
        for j, (g, inp) in enumerate(zip(grads, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is "
                                       f"independent of input {j}. This is not allowed in "
                                       "strict mode.")
                g = _zeros_like(inp)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode when "
                                   "create_graph=True.")
            rows[j].append(g)
    result = []
    for j, inp in enumerate(inputs):
        shape = tuple(out.shape) + tuple(inp.shape)
        if rows[j]:
            result.append(_stack(rows[j]).reshape(shape))
        else:  # an output with no elements
            result.append(zeros(shape, dtype=inp.dtype, device=inp.device))
    return tuple(result)


def hessian(func, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of a scalar-valued `func` at `inputs`.

    For one input: a tensor of shape ``input.shape + input.shape``; for a tuple of
    inputs: a tuple of tuples, ``H[i][j]`` for inputs i and j.
    """
    is_tuple, tensors = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*xs):
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_outputs_differentiable(outs, strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.reshape(())

    def gradient(*xs):
        grads = jacobian(scalar_func, xs, create_graph=True)
        _check_depends(grads, strict, "jacobian")
        return grads

    # Both levels see tuples; the caller's structure is restored at the end.
    hess = jacobian(gradient, tensors, create_graph=create_graph, strict=strict,
                    vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack2(hess, is_tuple, is_tuple)


def _scalar_output(func, inputs, name: str, strict: bool):
    outputs = func(*inputs)
    out_tuple, outs = _as_tuple(outputs, "outputs of the user-provided function", name)
    _check_outputs_differentiable(outs, strict)
    if out_tuple or not isinstance(outs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should "
                           "contain a single element")
    return outs


def _hessian_product(name: str, func, inputs, v, create_graph: bool, strict: bool):
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", name)
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _vector(v, inputs, in_tuple, create_graph, name,
                    "the input to the user-provided function is")
        outputs = _scalar_output(func, inputs, name, strict)
        if v is None:
            v = (_ones_like(inputs[0]),)
        jac = _vjp_of(outputs, inputs, create_graph=True)
        _check_depends(jac, strict, "jacobian")
        if name == "vhp":
            with set_grad_enabled(True if create_graph else is_grad_enabled()):
                grads = _vjp_of(jac, inputs, v, create_graph=create_graph)
                result = _zeros_for_missing(grads, inputs, strict, create_graph, "double_back")
        else:
            # H v by the double-vjp trick: u -> H^T u is linear in u, its vjp with v is H v.
            dummies = tuple(_zeros_like(x, requires_grad=True) for x in inputs)
            double_back = _vjp_of(jac, inputs, dummies, create_graph=True)
            _check_depends(jac, strict, "hessian")
            with set_grad_enabled(True if create_graph else is_grad_enabled()):
                grads = _vjp_of(double_back, dummies, v, create_graph=create_graph)
                result = _zeros_for_missing(grads, inputs, strict, create_graph,
                                            "double_back_trick")
    outputs = _finish(outputs, create_graph)
    result = _finish(result, create_graph)
    return outputs[0], _unpack(result, in_tuple)


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The vector-Hessian product ``v^T H`` of a scalar-valued `func` at `inputs`.

    Returns ``(func_output, vhp)``; `vhp` has the structure of `inputs`.
    """
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """The Hessian-vector product ``H v`` of a scalar-valued `func` at `inputs`.

    Returns ``(func_output, hvp)``; `hvp` has the structure of `inputs`.  Computed
    with the double-vjp trick, as PyTorch does.
    """
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)
