"""Recorded backwards that recompute their forward with ember ops and differentiate that
(``create_graph=True``): the fused nodes whose first-order backward runs on arrays
(recurrent sequences, group norm, rms norm, normalize) give gradients of every order
this way.
"""

from __future__ import annotations

from .._core.engine import run_backward
from .._core.grad_mode import enable_grad
from .._core.tensor import Tensor
from .shape import view


def stand_ins(tensors) -> list:
    """Recorded aliases (same-shape views) of those of `tensors` that require grad; the
    others, and None, as they are.  A gradient w.r.t. a stand-in counts only the uses at
    its own position, while one w.r.t. the tensor itself also counts the paths through
    the other inputs (one tensor passed twice, as in ``lstm_cell(x, (h, h))``, or an input
    computed from another, as ``l(x)`` and ``x`` in a compiled ``l(x).tanh() * x``), which
    the engine then follows a second time.  Call it with recording on."""
    return [view(t, tuple(t.shape)) if isinstance(t, Tensor) and t.requires_grad else t
            for t in tensors]


def recomputed_grads(compute, inputs, needs, grads, **params) -> tuple:
    """The gradients, one per position of `inputs` (None where `needs` says no), of
    ``compute(*inputs, **params)`` recomputed on `stand_ins` with recording, given the
    gradients `grads` of its outputs (a tensor or a sequence; None for an output without
    one).  The gradients are recorded in turn: they can be differentiated again."""
    with enable_grad():
        inputs = stand_ins(inputs)
        outputs = compute(*inputs, **params)
    if isinstance(outputs, Tensor):
        outputs, grads = (outputs,), (grads,)
    pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
    wanted = [k for k, (t, need) in enumerate(zip(inputs, needs)) if need and t is not None]
    got = run_backward([o for o, _ in pairs], [g for _, g in pairs], True, True,
                       inputs=[inputs[k] for k in wanted], accumulate=False,
                       allow_unused=True)
    result = [None] * len(inputs)
    for k, g in zip(wanted, got):
        result[k] = g
    return tuple(result)
