"""The graph-leak warning: ``total_loss += loss`` across optimizer steps.

Adding up losses that still carry their graphs keeps every step's graph alive, and
memory grows step after step.  ``add``/``add_`` hand each 0-dim result that has a graph
to the core's `check_graph_leak` hook; this module installs the check behind it, and
optimizers call `mark_optimizer_step` after each step.
"""

from __future__ import annotations

import os
import sys
import warnings

from .._core.function import set_graph_leak_check
from .._core.node import next_sequence_nr

_last_step = -1  # the node sequence number at the last optimizer step (-1: none yet)
_reported: set = set()  # (file, line) of the sites warned about
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def mark_optimizer_step() -> None:
    """Called after each optimizer step: nodes recorded before now belong to past steps."""
    global _last_step
    _last_step = next_sequence_nr()


def _check(out, accumulator: type) -> None:
    """Warn (once per line) when 0-dim sum `out` adds to an earlier 0-dim sum (an
    `accumulator` node) recorded before the last optimizer step.

    NOTE: only a sum of sums counts.  Adding up losses recorded before the step, as in
    ``print((loss_d + loss_g).item())`` after two optimizers stepped, keeps no graph past
    the line and is not reported.
    """
    step = _last_step
    fn = out._grad_fn
    if step < 0 or fn is None:
        return
    if not any(isinstance(child, accumulator) and child._sequence_nr < step
               and child._out_meta[0][0] == () for child, _ in fn._edges):
        return
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _EMBER_DIR):
        frame = frame.f_back
    if frame is None:
        return
    site = (frame.f_code.co_filename, frame.f_lineno)
    if site in _reported:
        return
    _reported.add(site)
    warnings.warn_explicit(
        f"{site[0]}:{site[1]}: a tensor that still carries its autograd graph is accumulated "
        "across optimizer steps (e.g. `total_loss += loss`): the graph of every step stays "
        "alive and memory grows. Accumulate `loss.item()` or `loss.detach()` instead.",
        UserWarning, site[0], site[1], module=frame.f_globals.get("__name__", "__main__"))


set_graph_leak_check(_check)
