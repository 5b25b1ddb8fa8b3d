"""``ember.autograd.forward_ad`` (``torch.autograd.forward_ad``): dual numbers.

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = f(x)
        value, jvp = forward_ad.unpack_dual(y)      # jvp = J_f(primal) @ tangent

How ember computes it: not by a forward rule per op, but by the double-vjp trick on the
graph that ember's reverse mode records anyway.  ``make_dual`` returns a tensor that
requires grad; the ops on it record their usual backward nodes; ``unpack_dual(y)``
computes ``g(u) = J^T u`` with ``create_graph=True`` (linear in a dummy ``u``) and then the
vjp of ``<g(u), tangent>`` with respect to ``u``, which is ``J tangent``.  Every op whose
backward is itself differentiable (every built-in op: the op table gradgradchecks them)
therefore has forward-mode support, and the results equal ``autograd.functional.jvp``.
An op whose backward is marked ``@once_differentiable`` has no forward derivative this
way: ``unpack_dual`` raises NotImplementedError naming it.

Differences from PyTorch that follow from this design:

* tangents are computed when ``unpack_dual`` is called (two reverse passes), not as the
  ops run;
* the ops must run with grad mode on: under ``no_grad``/``inference_mode`` nothing is
  recorded and the results carry no tangent (``unpack_dual`` gives ``tangent=None``);
* a dual tensor reports ``requires_grad=True`` and results have a ``grad_fn``; an
  in-place op on the dual tensor itself is refused as on any leaf that requires grad
  (in-place ops on results of ops are fine);
* with a primal that requires grad, results and tangents are differentiable but share
  one graph: the first ``backward``/``grad`` through them needs ``retain_graph=True``;
* complex dual tensors are not supported (NotImplementedError).
"""

from __future__ import annotations

from collections import namedtuple

from .._core.engine import grad as _grad
from .._core.grad_mode import enable_grad
from .._core.tensor import Tensor
from .function import once_differentiable
from ..ops.creation import zeros_like

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "What ``unpack_dual`` returns: ``(primal, tangent)``."


class _Level:
    """The dual tensors made at one level: id(dual) -> (dual, tangent, primal)."""

    def __init__(self, index: int):
        self.index = index
        self.duals: dict[int, tuple] = {}
        # a primal that requires grad keeps its graph: results then stay differentiable
        self.keeps_graph = False


_levels: list[_Level] = []


def enter_dual_level() -> int:
    """Open a forward-AD level and return its index (0: levels do not nest)."""
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append(_Level(0))
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the current forward-AD level; its tangents are dropped."""
    if level is not None and level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if not _levels or (level is not None and level != _levels[-1].index):
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _levels.pop()


class dual_level:  # noqa: N801 - PyTorch's name
    """Context manager: ``enter_dual_level()`` on entry (giving its index),
    ``exit_dual_level()`` on exit."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _current(level: int | None, action: str) -> _Level | None:
    if not _levels:
        return None
    if level is not None and level != _levels[-1].index:
        raise RuntimeError(f"Trying to {action} at level {level}, which is not the current "
                           f"forward AD level {_levels[-1].index}.")
    return _levels[-1]


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A dual tensor: `tensor`'s values carrying `tangent` (same shape) as the direction
    of a forward-mode derivative, at the current level."""
    current = _current(level, "create a dual Tensor")
    if current is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not isinstance(tangent, Tensor) or not (tangent.is_floating_point()
                                               or tangent.is_complex()):
        raise ValueError("Expected tangent to be floating point or complex, but got: "
                         f"{getattr(tangent, 'dtype', type(tangent).__name__)}")
    if tensor.is_complex() or tangent.is_complex():
        raise NotImplementedError("forward_ad.make_dual: ember's forward-mode AD does not "
                                  "support complex tensors")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is "
                           f"of size {list(tangent.shape)}.")
    if id(tensor) in current.duals:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {current.index} is not supported.")
    if tensor.requires_grad:
        with enable_grad():
            dual = tensor.view_as(tensor)  # differentiable with respect to `tensor` too
        current.keeps_graph = True
    else:
        dual = tensor.detach().requires_grad_()  # shares `tensor`'s memory
    current.duals[id(dual)] = (dual, tangent.detach(), tensor)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of `tensor`: its values, and the directional derivative of
    `tensor` along the tangents of the dual tensors it was computed from (None when it
    depends on none of them, or outside a level)."""
    current = _current(level, "unpack a dual Tensor")
    if current is None or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    if id(tensor) in current.duals:
        dual, tangent, primal = current.duals[id(tensor)]
        if dual is tensor:
            return UnpackedDualTensor(primal, tangent)
    primal = tensor if current.keeps_graph else tensor.detach()
    if not tensor.requires_grad or not current.duals:
        return UnpackedDualTensor(primal, None)
    return UnpackedDualTensor(primal, _tangent_of(tensor, current))


def _tangent_of(output: Tensor, current: _Level) -> Tensor | None:
    """J @ tangents by the double-vjp trick: u -> J^T u is linear; its vjp with the
    tangents is J @ tangents."""
    duals = [d for d, _, _ in current.duals.values()]
    tangents = [t for _, t, _ in current.duals.values()]
    try:
        with enable_grad():
            u = zeros_like(output, requires_grad=True)
            grads = _grad(output, duals, u, create_graph=True, allow_unused=True,
                          retain_graph=True)
            pairs = [(g, t) for g, t in zip(grads, tangents) if g is not None]
            if not pairs:
                return None
            total = sum((g * t).sum() for g, t in pairs)
            if not total.requires_grad:  # J^T u does not depend on u: J is zero
                return zeros_like(output).detach()
            (jvp,) = _grad(total, u, create_graph=current.keeps_graph, allow_unused=True)
    except RuntimeError as err:
        if "once_differentiable" not in str(err):
            raise
        names = _once_differentiable_nodes(output)
        raise NotImplementedError(
            f"forward-mode AD: {', '.join(names) or 'an op'} has no forward derivative in "
            "ember (its backward is @once_differentiable, and ember derives forward-mode "
            "results from differentiable backward formulas)") from err
    if jvp is None:
        return zeros_like(output).detach()
    return jvp if current.keeps_graph else jvp.detach()


# the code object every @once_differentiable wrapper shares
_ONCE_DIFFERENTIABLE_CODE = once_differentiable(lambda ctx: None).__code__


def _once_differentiable_nodes(output: Tensor) -> list:
    """Names of the graph nodes behind `output` whose backward is @once_differentiable."""
    names, seen = [], set()
    stack = [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        backward = getattr(type(node), "backward", None)
        while backward is not None:
            if getattr(backward, "__code__", None) is _ONCE_DIFFERENTIABLE_CODE:
                names.append(node.name())
                break
            backward = getattr(backward, "__wrapped__", None)
        stack.extend(fn for fn, _ in getattr(node, "next_functions", ()))
    return names
