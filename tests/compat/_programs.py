"""Helpers for the program tests: run one program on ember and on PyTorch from the same
initial weights and data (tests/compat/test_programs_*.py)."""

from __future__ import annotations

import numpy as np
import pytest


def state_of(model) -> dict:
    """The model's state dict as NumPy arrays (copies)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def load_state(torch, model, state) -> None:
    """Load a NumPy state (from `state_of`) into `model` of library `torch`."""
    if state is not None:
        model.load_state_dict({k: torch.tensor(v) for k, v in state.items()})


def pytorch():
    """PyTorch, or a skip when it is not installed."""
    return pytest.importorskip("torch")


def run_both(program, **kwargs) -> tuple:
    """``program`` run on ember, then on PyTorch from ember's initial state (skips without
    PyTorch)."""
    import ember

    torch = pytorch()
    ours = program(ember, **kwargs)
    return ours, program(torch, ours["state"], **kwargs)


def assert_same_run(ours: dict, theirs: dict, rtol: float = 1e-4, atol: float = 1e-6) -> None:
    """Two runs' losses (and any other recorded arrays) agree."""
    assert ours.keys() == theirs.keys()
    for key in ours:
        if key == "state":
            continue
        np.testing.assert_allclose(np.asarray(ours[key], dtype=np.float64),
                                   np.asarray(theirs[key], dtype=np.float64),
                                   rtol=rtol, atol=atol, err_msg=key)


def decreased(losses, factor: float = 1.0) -> bool:
    """The last loss is below the first (times `factor`)."""
    return losses[-1] < losses[0] * factor
