"""gradcheck / gradgradcheck: compare autograd's gradients with finite differences.

Analytical Jacobian: one ``autograd.grad`` per output element (a row of the
Jacobian), computed twice to check that backward is deterministic (``nondet_tol``).
Numerical Jacobian: central differences, one pair of forward calls per input
element.  Run both in float64.  Besides the Jacobians, gradcheck checks that
backward scales with its incoming gradient (a zero ``grad_output`` must give zero
gradients) and, when no output is differentiable, that the function really is
locally constant.

``fast_mode=True`` is accepted and runs the full check (PyTorch's fast mode checks
random projections of the Jacobian instead; the full check is stricter, only slower).
Forward-mode AD and batched (vmap) checks are not available in ember: asking for
them raises NotImplementedError rather than passing unchecked.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._core.backend import module_of
from .._core.engine import grad as autograd_grad
from .._core.tensor import Tensor, _make

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails."""


def _as_tuple(x) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _to_host(array) -> np.ndarray:
    return array if isinstance(array, np.ndarray) else array.get()


def _tensor_outputs(out) -> list:
    return [o for o in _as_tuple(out) if isinstance(o, Tensor)]


def _perturbable_values(func, inputs, picks):
    """Copies (float64, on the host) of the outputs at positions `picks`."""
    outs = _tensor_outputs(func(*inputs))
    return [_to_host(outs[k]._data).astype(np.float64) for k in picks]


def _numerical_jacobian(func, inputs, wrt, picks, out_sizes, eps):
    """J[k][c]: d out_picks[k] / d inputs[wrt[c]] as a (numel_out, numel_in) array."""
    jac = [[np.zeros((n, inputs[i].numel())) for i in wrt] for n in out_sizes]
    for c, i in enumerate(wrt):
        data = inputs[i]._data
        for j in range(data.size):
            idx = np.unravel_index(j, data.shape)
            orig = data[idx].item()
            # func runs with recording on: it may itself call autograd (gradgradcheck).
            data[idx] = orig + eps
            plus = _perturbable_values(func, inputs, picks)
            data[idx] = orig - eps
            minus = _perturbable_values(func, inputs, picks)
            data[idx] = orig
            for k in range(len(picks)):
                jac[k][c][:, j] = ((plus[k] - minus[k]) / (2 * eps)).reshape(-1)
    return jac


def _analytical_jacobian(inputs, wrt, outputs, check_grad_dtypes):
    """Rows of each Jacobian from one backward pass per output element."""
    targets = [inputs[i] for i in wrt]
    jac = [[np.zeros((o.numel(), t.numel())) for t in targets] for o in outputs]
    for k, out in enumerate(outputs):
        xp = module_of(out._data)
        for j in range(out.numel()):
            seed = xp.zeros(out._data.size, dtype=out._data.dtype)
            seed[j] = 1
            grads = autograd_grad(out, targets, _make(seed.reshape(out._data.shape)),
                                  retain_graph=True, allow_unused=True)
            for c, (g, t) in enumerate(zip(grads, targets)):
                if g is None:
                    continue
                if check_grad_dtypes and g.dtype != t.dtype:
                    raise GradcheckError("Gradient has dtype mismatch")
                if tuple(g.shape) != tuple(t.shape):
                    raise GradcheckError("Analytical gradient has incorrect size")
                jac[k][c][j, :] = _to_host(g._data).astype(np.float64).reshape(-1)
    return jac


def _check_scales_with_grad_output(inputs, wrt, outputs) -> None:
    """A zero incoming gradient must give zero gradients."""
    zeros = [_make(module_of(o._data).zeros_like(o._data)) for o in outputs]
    grads = autograd_grad(outputs, [inputs[i] for i in wrt], zeros, retain_graph=True,
                          allow_unused=True)
    for g in grads:
        if g is not None and bool((g._data != 0).any()):
            raise GradcheckError("backward not multiplied by grad_output")


def _unsupported(**flags) -> None:
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"gradcheck: {name}=True is not supported by ember")


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check `func`'s gradients w.r.t. its inputs that require grad against finite differences.

    Returns True when they match (``|analytical - numerical| <= atol + rtol * |numerical|``
    elementwise); otherwise raises GradcheckError, or returns False when
    ``raise_exception=False``.  Use float64 inputs.  ``check_undefined_grad`` is accepted
    and always holds in ember: the engine never calls a backward with only undefined
    gradients (it skips the node) and passes zeros for the undefined ones otherwise.
    """
    _unsupported(check_batched_grad=check_batched_grad,
                 check_batched_forward_grad=check_batched_forward_grad,
                 check_forward_ad=check_forward_ad, masked=masked)
    try:
        return _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol,
                          check_grad_dtypes, check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes,
               check_backward_ad) -> bool:
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")
    for n, i in enumerate(wrt):
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{n} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=3)
    all_outputs = _tensor_outputs(func(*inputs))
    picks = [k for k, o in enumerate(all_outputs) if o.requires_grad]
    if not picks:
        # Nothing to differentiate: the function must then be locally constant.
        floats = [k for k, o in enumerate(all_outputs) if o.is_floating_point()]
        sizes = [all_outputs[k].numel() for k in floats]
        for per_output in _numerical_jacobian(func, inputs, wrt, floats, sizes, eps):
            for jac in per_output:
                if np.any(jac != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    if not check_backward_ad:
        return True
    outputs = [all_outputs[k] for k in picks]
    analytical = _analytical_jacobian(inputs, wrt, outputs, check_grad_dtypes)
    again = _analytical_jacobian(inputs, wrt, outputs, check_grad_dtypes)
    numerical = _numerical_jacobian(func, inputs, wrt, picks, [o.numel() for o in outputs], eps)
    for k in range(len(outputs)):
        for c in range(len(wrt)):
            a, n = analytical[k][c], numerical[k][c]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {c},\n"
                    f"numerical:{_as_tensor(n)}\nanalytical:{_as_tensor(a)}\n")
    for k in range(len(outputs)):
        for c in range(len(wrt)):
            diff = np.abs(analytical[k][c] - again[k][c])
            if diff.size and diff.max() > nondet_tol:
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient.The tolerance for nondeterminism was "
                    f"{nondet_tol}.")
    _check_scales_with_grad_output(inputs, wrt, outputs)
    return True


def _as_tensor(array: np.ndarray) -> Tensor:
    return _make(array)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """gradcheck of the gradient: second derivatives of `func` against finite differences.

    The function checked is ``(inputs, grad_outputs) -> vjp of func``; random
    `grad_outputs` (requiring grad, fixed seed) are made when none are given.
    """
    _unsupported(check_fwd_over_rev=check_fwd_over_rev, check_batched_grad=check_batched_grad,
                 masked=masked)
    inputs = _as_tuple(inputs)
    if not check_rev_over_rev:
        return True
    outputs = [o for o in _tensor_outputs(func(*inputs)) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outputs:
            values = rng.uniform(-1, 1, size=o._data.shape).astype(o._data.dtype)
            xp = module_of(o._data)
            grad_outputs.append(_make(xp.asarray(values), requires_grad=True))
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_derivative(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _tensor_outputs(func(*ins)) if o.requires_grad]
        grads = autograd_grad(outs, [ins[i] for i in wrt], gos, create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode)
