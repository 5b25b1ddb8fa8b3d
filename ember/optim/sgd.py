"""SGD: stochastic gradient descent with optional (Nesterov) momentum."""

from __future__ import annotations

import numpy as np

from .._core.tensor import _make
from ..ops import _native as native
from . import _fused
from .optimizer import Optimizer, check_hyper, check_lr, scalar, sparse_grad_parts

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum.

    With momentum ``mu`` and dampening ``tau``, each step computes
    ``g = grad + weight_decay * p`` (negated first when `maximize`), then
    ``b = g`` on the first step and ``b = mu * b + (1 - tau) * g`` afterwards, and
    moves ``p -= lr * b`` (or ``p -= lr * (g + mu * b)`` with `nesterov`).  The buffer
    is kept in ``state[p]["momentum_buffer"]``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (a float or a one-element tensor).
        momentum: momentum factor.
        dampening: dampening of the momentum.
        weight_decay: L2 penalty added to the gradient.
        nesterov: use Nesterov momentum (needs momentum > 0 and no dampening).
        maximize: ascend the objective instead of descending it.
        fused: None (the default) or True runs each parameter's step as one native
            (numba) pass when it can (CPU, float32/float64, contiguous arrays); False
            keeps the NumPy rule of one array operation at a time.  Same results up
            to float rounding.  `foreach` is accepted and changes nothing.

    >>> opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        check_lr(lr)
        check_hyper("momentum value", momentum)
        check_hyper("weight_decay value", weight_decay)
        _fused.check_flags(fused, foreach, differentiable)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _step_group(self, group: dict, states: dict) -> bool:
        """The usual group's step (dense gradients, momentum buffers made, every array a
        contiguous CPU float array of one dtype, the fused kernels on) as one loop over the
        fused kernel's calls, its numbers made once.  False, nothing done, otherwise.

        NOTE: the loop over parameters took ~8 us a parameter (its checks, three calls
        down to the kernel), ~3 times that inside a training step, where the products
        before it have pushed the interpreter's data out of the core's caches: the MLP
        benchmark's six parameters ~100 us of its ~600 us step."""
        if group["fused"] is False or not native.enabled():
            return False
        momentum = group["momentum"]
        work = []
        dtype = None
        for p in group["params"]:
            grad = p._grad
            if grad is None:
                continue
            param, g = p._data, grad._data
            if dtype is None:
                dtype = param.dtype
                if dtype != np.float32 and dtype != np.float64:
                    return False
            buf = None
            if momentum != 0:
                state = states.get(p)
                buf = state.get("momentum_buffer") if state else None
                if buf is None:  # (the first step makes it: the loop's work)
                    return False
                buf = buf._data
                if type(buf) is not np.ndarray or buf.dtype != dtype \
                        or not buf.flags.c_contiguous:
                    return False
            if (grad.is_sparse or type(param) is not np.ndarray or type(g) is not np.ndarray
                    or param.dtype != dtype or g.dtype != dtype
                    or not param.flags.c_contiguous or not g.flags.c_contiguous):
                return False
            work.append((p, param, g, buf))
        if not work:
            return True
        scalars = _fused.sgd_scalars(
            dtype, lr=scalar(group["lr"]), momentum=momentum, dampening=group["dampening"],
            weight_decay=scalar(group["weight_decay"]), nesterov=group["nesterov"],
            maximize=group["maximize"], first=False)
        for p, param, g, buf in work:
            _fused.sgd_run(param, g, buf, scalars)
            p._version.value += 1
        return True

    def _update(self, param, grad, state, group) -> None:
        buf = state.get("momentum_buffer") if group["momentum"] != 0 else None
        arrays = (param, grad) if buf is None else (param, grad, buf._data)
        if _fused.usable(group, *arrays):
            self._fused_update(param, grad, state, group)
            return
        lr = scalar(group["lr"])
        momentum = group["momentum"]
        weight_decay = scalar(group["weight_decay"])
        maximize = group["maximize"]
        d = grad
        if weight_decay != 0 or maximize:
            d = self._scratch(param, 1)
            if weight_decay != 0:
                np.multiply(param, weight_decay, out=d)
                (np.subtract if maximize else np.add)(d, grad, out=d)
            else:
                np.negative(grad, out=d)
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = d.copy()
                state["momentum_buffer"] = _make(buf)
            else:
                buf = buf._data
                buf *= momentum
                dampening = group["dampening"]
                if dampening == 0:
                    buf += d
                else:
                    tmp = self._scratch(param)
                    np.multiply(d, 1 - dampening, out=tmp)
                    buf += tmp
            if group["nesterov"]:
                tmp = self._scratch(param)
                np.multiply(buf, momentum, out=tmp)
                tmp += d
                d = tmp
            else:
                d = buf
        tmp = self._scratch(param)
        np.multiply(d, -lr, out=tmp)
        param += tmp

    def _fused_update(self, param, grad, state, group) -> None:
        """The same step as one native pass over the parameter (see ``_fused.sgd_step``)."""
        momentum = group["momentum"]
        buf = first = None
        if momentum != 0:
            buf = state.get("momentum_buffer")
            first = buf is None
            if first:
                buf = _make(np.empty_like(param))
                state["momentum_buffer"] = buf
            buf = buf._data
        _fused.sgd_step(param, grad, buf, lr=scalar(group["lr"]), momentum=momentum,
                        dampening=group["dampening"],
                        weight_decay=scalar(group["weight_decay"]),
                        nesterov=group["nesterov"], maximize=group["maximize"],
                        first=bool(first))

    def _sparse_update(self, param, grad, state, group) -> None:
        # Without momentum only the stored rows move; with momentum the (dense) buffer
        # makes every row move, as PyTorch's sparse buffer does, so the dense rule applies.
        if group["weight_decay"] != 0:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                               "instead.")
        indices, values = sparse_grad_parts(grad, "SGD")
        if group["momentum"] != 0:
            dense = np.zeros_like(param._data)
            dense[tuple(indices)] = values
            self._update(param._data, dense, state, group)
            return
        lr = scalar(group["lr"])
        param._data[tuple(indices)] += values * (lr if group["maximize"] else -lr)
