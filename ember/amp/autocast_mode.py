"""``autocast``: PyTorch runs chosen ops in a lower precision inside it.  ember does not
support that yet.  What runs: the disabled form (``enabled=False``, which scripts use to
switch mixed precision off), and CUDA autocast on a machine without CUDA, which PyTorch
disables with a warning (so ``autocast("cuda")`` scripts run on the CPU, in float32)."""

from __future__ import annotations

import functools
import warnings

_DEVICE_TYPES = ("cpu", "cuda")


class autocast:  # noqa: N801 - PyTorch's name
    """Mixed precision for the ops of a ``with`` block or a decorated function.

    Raises NotImplementedError when enabled: ember computes every op in the dtype of its
    inputs.  Cast the model and inputs with ``.to(dtype)`` for lower precision.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        if enabled and device_type == "cuda" and not _cuda_available():
            # as in PyTorch: CUDA autocast on a machine without CUDA does nothing
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                          "autocast.", UserWarning, stacklevel=2)
            enabled = False
        if enabled:
            raise NotImplementedError(
                "ember.autocast: automatic mixed precision is not supported yet; ember runs "
                "every op in the dtype of its inputs (cast with .to(dtype) instead). "
                "autocast(..., enabled=False) is accepted.")
        self.device, self.fast_dtype, self._enabled = device_type, dtype, False

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return run


def _cuda_available() -> bool:
    from .. import cuda

    return cuda.is_available()


def is_autocast_available(device_type: str) -> bool:
    """False: ember has no autocast (see `autocast`)."""
    return False


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """False: autocast is never active in ember."""
    return False
