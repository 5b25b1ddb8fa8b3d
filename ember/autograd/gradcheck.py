"""gradcheck / gradgradcheck: compare autograd's gradients with finite differences.

Analytical Jacobian: one ``autograd.grad`` per output element (a row of the
Jacobian).  Numerical Jacobian: central differences, one pair of forward calls
per input element.  Run both in float64.
"""

from __future__ import annotations

import numpy as np

from .._core.engine import grad as autograd_grad
from .._core.tensor import Tensor, _make


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,) if not isinstance(x, list) else tuple(x)


def _differentiable_outputs(outputs):
    return [o for o in outputs if isinstance(o, Tensor) and o.requires_grad]


def _numerical_jacobian(func, inputs, wrt, outputs, eps):
    """J[k][i] = d out_k / d input_i as a (out_k.numel, input_i.numel) array."""
    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in wrt] for o in outputs]
    for col, i in enumerate(wrt):
        data = inputs[i]._data
        flat = data.reshape(-1)  # a view: inputs are contiguous in gradcheck
        for j in range(flat.size):
            orig = flat[j].item()
            # func runs with recording on: it may itself call autograd (gradgradcheck)
            flat[j] = orig + eps
            plus = _evaluate(func, inputs)
            flat[j] = orig - eps
            minus = _evaluate(func, inputs)
            flat[j] = orig
            for k in range(len(outputs)):
                diff = (plus[k].astype(np.float64) - minus[k].astype(np.float64)) / (2 * eps)
                jac[k][col][:, j] = diff.reshape(-1)
    return jac


def _evaluate(func, inputs):
    outs = _differentiable_outputs(_as_tuple(func(*inputs)))
    return [o._data.copy() for o in outs]


def _analytical_jacobian(inputs, wrt, outputs):
    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in wrt] for o in outputs]
    targets = [inputs[i] for i in wrt]
    for k, out in enumerate(outputs):
        for j in range(out.numel()):
            seed = np.zeros(out._data.size, dtype=out._data.dtype)
            seed[j] = 1
            grads = autograd_grad(out, targets, _make(seed.reshape(out._data.shape)),
                                  retain_graph=True, allow_unused=True)
            for col, g in enumerate(grads):
                if g is not None:
                    jac[k][col][j, :] = np.asarray(g._data, dtype=np.float64).reshape(-1)
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked=None) -> bool:
    """True when `func`'s gradients w.r.t. its inputs that require grad match finite
    differences; otherwise raise GradcheckError (or return False)."""
    inputs = _as_tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in wrt:
        t = inputs[i]
        if t.dtype.name not in ("float64", "complex128"):
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          "floating point. This check will likely fail.", stacklevel=2)
        if not t._data.flags.c_contiguous:
            raise ValueError(f"gradcheck: input #{i} must be contiguous")
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if not outputs:
        raise GradcheckError("gradcheck: no output of the function requires grad")
    analytical = _analytical_jacobian(inputs, wrt, outputs)
    numerical = _numerical_jacobian(func, inputs, wrt, outputs, eps)
    for k in range(len(outputs)):
        for col, i in enumerate(wrt):
            a, n = analytical[k][col], numerical[k][col]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """gradcheck of the gradient: second derivatives of `func` against finite differences."""
    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _make(rng.standard_normal(o._data.shape).astype(o._data.dtype)).requires_grad_()
            for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_derivative(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _differentiable_outputs(_as_tuple(func(*ins)))
        grads = autograd_grad(outs, [ins[i] for i in wrt], gos, create_graph=True,
                              allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
