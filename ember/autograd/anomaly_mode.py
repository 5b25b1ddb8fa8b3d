"""Anomaly detection: find the forward call behind a failing or NaN-producing backward.

While it is on, every recorded node keeps the stack of the forward call that made
it (``node._anomaly_trace``).  When a node's backward raises, the engine warns with
that stack; with ``check_nan`` it also raises when a backward returns NaN values
("Function 'MulBackward0' returned nan values in its 0th output.").
"""

from __future__ import annotations

import warnings

from .._core.grad_mode import PROCESS

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "set_detect_anomaly"]


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on."""
    return PROCESS.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """True when anomaly detection also checks backward results for NaN."""
    return PROCESS.anomaly_check_nan


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Context manager: anomaly detection on inside the block (slow; for debugging)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = PROCESS.anomaly
        self.check_nan = check_nan
        self.prev_check_nan = PROCESS.anomaly_check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        PROCESS.anomaly = True
        PROCESS.anomaly_check_nan = self.check_nan

    def __exit__(self, *exc) -> None:
        PROCESS.anomaly = self.prev
        PROCESS.anomaly_check_nan = self.prev_check_nan


class set_detect_anomaly:  # noqa: N801 - PyTorch's name
    """Turn anomaly detection on or off at once; as a context manager, restore it on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = PROCESS.anomaly
        self.prev_check_nan = PROCESS.anomaly_check_nan
        PROCESS.anomaly = bool(mode)
        PROCESS.anomaly_check_nan = bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        PROCESS.anomaly = self.prev
        PROCESS.anomaly_check_nan = self.prev_check_nan
