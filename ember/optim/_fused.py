"""Fused optimizer steps: one numba pass per parameter instead of ten NumPy passes.

Each kernel reads the gradient once and updates the parameter and its state in place,
element by element, with the arithmetic of the NumPy rule in ``adam.py`` / ``sgd.py``
written out in the same order (the scalars arrive already in the parameter's dtype, so a
float32 step rounds where the NumPy one does).  Large parameters are cut into blocks
shared by the threads; small ones take the serial loop, which starts faster.

`usable` says whether a step can take a kernel: numba on, CPU arrays of one float dtype,
every array contiguous, and the group not asking for the unfused path (``fused=False``).
"""

from __future__ import annotations

import numpy as np

from ..ops import _native as native

# Below this many elements a parameter is updated by the serial loop: a vectorized step
# takes ~0.3 ns an element, and on this shared 2-core machine a parallel launch measured
# no faster than the serial loop at 200k elements (and far slower when the cores were busy).
# (Never below `native.PARALLEL_MIN` either, which is far higher on two threads.)
PARALLEL_MIN = 1 << 18
BLOCK = 1 << 14


def _threaded(size: int) -> bool:
    """Whether a parameter of `size` elements takes the threaded blocks."""
    return size >= max(PARALLEL_MIN, native.PARALLEL_MIN)


def _update(step: str, range_kernel, blocks_kernel, arrays: list, state: int,
            scalars: tuple) -> None:
    """Update a parameter by `step` ('sgd', 'adam', 'adadelta'): on two threads, from
    `native.SPLIT_MIN` elements, the second half on a worker as a native part
    (ops/_native_cuts.py: it starts at once, without waiting for the GIL); else numba's
    threaded blocks for the largest parameters, or the serial loop.  `arrays` are the
    kernel's (parameter, gradient, state...), the first `state` of them real, the rest
    `unused` stand-ins (passed whole).

    NOTE: measured on the 2-core test VM (2026-12-04), the MLP step's `opt.step` (two
    weights split so), alternating with the serial loop step by step over 1100 steps:
    10th/50th/90th percentiles 200/274/414 against 212/275/440 us in one run,
    210/230/302 against 234/256/324 in another; in one of the host's slow phases, when
    the arrays come from a contended memory, 456 against 944-1218 us.  Posted as a
    Python part instead, the half waits ~40 us for the GIL: 229-254 against 171-207 us.
    """
    size = arrays[0].size
    if native.cuts(size):
        from ..ops import _native_cuts  # (imports numba's extension API)

        if _native_cuts.run_cut(range_kernel, step, (*arrays, 0, size, *scalars),
                                tuple(range(state))):
            return
    if _threaded(size):
        blocks_kernel(*arrays, *scalars)
    else:
        range_kernel(*arrays, 0, size, *scalars)


def usable(group: dict, *arrays) -> bool:
    """True when the fused kernel may update `arrays` (parameter, gradient, state)."""
    if group.get("fused") is False or not native.enabled() or not native.is_cpu_array(*arrays):
        return False
    dtype = arrays[0].dtype
    if dtype != np.float32 and dtype != np.float64:
        return False
    return all(a.dtype == dtype and a.flags.c_contiguous for a in arrays)


def check_flags(fused, foreach, differentiable) -> None:
    """PyTorch's RuntimeErrors for ``fused=True`` with ``foreach`` or ``differentiable``."""
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")


def flat(array):
    """A 1-D view of a contiguous array."""
    return array.reshape(-1)


_UNUSED = {np.dtype(np.float32): np.zeros(1, np.float32),
           np.dtype(np.float64): np.zeros(1, np.float64)}


def unused(dtype):
    """A stand-in for a state array the step does not have (never read nor written).

    NOTE: it must not be one of the other arguments: LLVM checks at run time whether the
    arrays overlap, and takes the scalar (unvectorized, ~7x slower) loop when they do.
    """
    return _UNUSED[np.dtype(dtype)]


# ----------------------------------------------------------------------
# Adam and AdamW


@native.kernel
def _adam_range(p, g, m, v, vmax, start, stop, sign, weight_decay, w1, beta2, one_minus_b2,
                eps, step_size, amsgrad):
    # NOTE: a loop over range(start, stop) is not vectorized (numba cannot rule out
    # negative indices); one over the length of views is, ~10x faster.
    p, g, m, v, vmax = p[start:stop], g[start:stop], m[start:stop], v[start:stop], \
        vmax[start:stop]
    for i in range(p.shape[0]):
        d = g[i] * sign
        if weight_decay != 0:
            d = p[i] * weight_decay + d
        # m is an exponential average written as a lerp, as in adam.lerp_
        if w1 < 0.5:
            m[i] = m[i] + (d - m[i]) * w1
        else:
            m[i] = d + (d - m[i]) * (w1 - 1)
        vi = v[i] * beta2 + d * d * one_minus_b2
        v[i] = vi
        if amsgrad:
            vi = max(vmax[i], vi)
            vmax[i] = vi
        p[i] = p[i] + m[i] / (np.sqrt(vi) + eps) * step_size


@native.kernel(parallel=True)
def _adam_blocks(p, g, m, v, vmax, sign, weight_decay, w1, beta2, one_minus_b2, eps,
                 step_size, amsgrad):
    n = p.shape[0]
    for b in native.prange((n + BLOCK - 1) // BLOCK):
        _adam_range(p, g, m, v, vmax, b * BLOCK, min(n, (b + 1) * BLOCK), sign, weight_decay,
                    w1, beta2, one_minus_b2, eps, step_size, amsgrad)


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, lr: float, beta1: float,
              beta2: float, eps: float, weight_decay: float, maximize: bool,
              bias_correction1: float, bias_correction2_sqrt: float) -> None:
    """One Adam step in place (decoupled decay already applied to `param` by the caller).

    `max_exp_avg_sq` is None without AMSGrad.  The update is the one of ``Adam._update``:
    ``p += m / (sqrt(v) + eps * sqrt(bc2)) * (-lr / bc1 * sqrt(bc2))``.
    """
    real = param.dtype.type
    amsgrad = max_exp_avg_sq is not None
    arrays = [flat(a) for a in (param, grad, exp_avg, exp_avg_sq,
                                max_exp_avg_sq if amsgrad else unused(param.dtype))]
    scalars = (real(-1.0 if maximize else 1.0), real(weight_decay), real(1 - beta1),
               real(beta2), real(1 - beta2), real(eps * bias_correction2_sqrt),
               real(-lr / bias_correction1 * bias_correction2_sqrt), amsgrad)
    _update("adam", _adam_range, _adam_blocks, arrays, 5 if amsgrad else 4, scalars)


# ----------------------------------------------------------------------
# Adadelta


@native.kernel
def _adadelta_range(p, g, v, u, start, stop, sign, weight_decay, rho, one_minus_rho, eps,
                    neg_lr):
    p, g, v, u = p[start:stop], g[start:stop], v[start:stop], u[start:stop]
    for i in range(p.shape[0]):
        d = g[i] * sign
        if weight_decay != 0:
            d = p[i] * weight_decay + d
        vi = v[i] * rho + d * d * one_minus_rho
        v[i] = vi
        delta = np.sqrt(u[i] + eps) / np.sqrt(vi + eps) * d
        u[i] = u[i] * rho + delta * delta * one_minus_rho
        p[i] = p[i] + delta * neg_lr


@native.kernel(parallel=True)
def _adadelta_blocks(p, g, v, u, sign, weight_decay, rho, one_minus_rho, eps, neg_lr):
    n = p.shape[0]
    for b in native.prange((n + BLOCK - 1) // BLOCK):
        _adadelta_range(p, g, v, u, b * BLOCK, min(n, (b + 1) * BLOCK), sign, weight_decay,
                        rho, one_minus_rho, eps, neg_lr)


def adadelta_step(param, grad, square_avg, acc_delta, *, lr: float, rho: float, eps: float,
                  weight_decay: float, maximize: bool) -> None:
    """One Adadelta step in place, the rule of ``Adadelta._update`` in one pass."""
    real = param.dtype.type
    arrays = [flat(a) for a in (param, grad, square_avg, acc_delta)]
    scalars = (real(-1.0 if maximize else 1.0), real(weight_decay), real(rho), real(1 - rho),
               real(eps), real(-lr))
    _update("adadelta", _adadelta_range, _adadelta_blocks, arrays, 4, scalars)


# ----------------------------------------------------------------------
# SGD


@native.kernel
def _sgd_range(p, g, buf, start, stop, sign, weight_decay, neg_lr, momentum, keep,
               first, nesterov):
    p, g, buf = p[start:stop], g[start:stop], buf[start:stop]
    for i in range(p.shape[0]):
        d = g[i] * sign
        if weight_decay != 0:
            d = p[i] * weight_decay + d
        if momentum != 0:
            if first:
                b = d
            elif keep == 1:
                b = buf[i] * momentum + d
            else:
                b = buf[i] * momentum + d * keep
            buf[i] = b
            d = b * momentum + d if nesterov else b
        p[i] = p[i] + d * neg_lr


@native.kernel(parallel=True)
def _sgd_blocks(p, g, buf, sign, weight_decay, neg_lr, momentum, keep, first, nesterov):
    n = p.shape[0]
    for b in native.prange((n + BLOCK - 1) // BLOCK):
        _sgd_range(p, g, buf, b * BLOCK, min(n, (b + 1) * BLOCK), sign, weight_decay, neg_lr,
                   momentum, keep, first, nesterov)


def sgd_step(param, grad, buf, *, lr: float, momentum: float, dampening: float,
             weight_decay: float, nesterov: bool, maximize: bool, first: bool) -> None:
    """One SGD step in place; `buf` is the momentum buffer (None without momentum).

    On the `first` step the buffer is overwritten with the gradient (PyTorch's start).
    """
    scalars = sgd_scalars(param.dtype, lr=lr, momentum=momentum, dampening=dampening,
                          weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                          first=first)
    sgd_run(param, grad, buf, scalars)


def sgd_scalars(dtype, *, lr: float, momentum: float, dampening: float, weight_decay: float,
                nesterov: bool, maximize: bool, first: bool) -> tuple:
    """The SGD kernels' numbers for parameters of `dtype` (see `sgd_step`): made once for
    a group's parameters of one dtype (`SGD._step_group`)."""
    real = dtype.type
    return (real(-1.0 if maximize else 1.0), real(weight_decay), real(-lr), real(momentum),
            real(1 - dampening), first, nesterov)


def sgd_run(param, grad, buf, scalars: tuple) -> None:
    """`sgd_step` with its numbers made (`sgd_scalars`): contiguous arrays of one dtype."""
    if buf is None:
        arrays, state = [param.reshape(-1), grad.reshape(-1), unused(param.dtype)], 2
    else:
        arrays, state = [param.reshape(-1), grad.reshape(-1), buf.reshape(-1)], 3
    _update("sgd", _sgd_range, _sgd_blocks, arrays, state, scalars)
