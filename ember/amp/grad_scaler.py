"""``GradScaler``: loss scaling for low-precision training.

The loss is multiplied by a large factor before backward, so that small float16
gradients do not underflow; ``step`` divides the gradients back (``unscale_``) and skips
the optimizer step when any of them is inf or nan, and ``update`` then halves the scale
(``backoff_factor``), or doubles it (``growth_factor``) after ``growth_interval`` clean
steps in a row.  With float32 training it changes nothing but the cost of a pass over the
gradients, so scripts may keep it on.
"""

from __future__ import annotations

import warnings

from .._core.backend import cuda_available, module_of
from .._core.grad_mode import no_grad
from .._core.tensor import Tensor

# the stages of one optimizer between two update() calls
_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps with inf/nan gradients.

    >>> scaler = ember.amp.GradScaler()
    >>> scaler.scale(loss).backward()
    >>> scaler.step(optimizer)
    >>> scaler.update()
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda":
            if not cuda_available():
                warnings.warn("ember.amp.GradScaler is enabled, but CUDA is not available. "
                              "Disabling.", UserWarning, stacklevel=2)
                self._enabled = False
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._stages: dict = {}  # id(optimizer) -> (stage, found_inf)

    def is_enabled(self) -> bool:
        """False when built with ``enabled=False`` (then every method passes through)."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale factor (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """`outputs` (a tensor, or a list/tuple of them, nested) times the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of `optimizer`'s parameters by the scale, in place (once per
        optimizer between two ``update`` calls), and note whether any is inf or nan."""
        if not self._enabled:
            return
        stage, _ = self._stages.get(id(optimizer), (_READY, False))
        if stage == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if stage == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inverse = 1.0 / self._scale
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = p.grad
                    if grad.is_sparse:
                        grad = grad.coalesce()
                        p.grad = grad
                    values = grad._data.values if grad.is_sparse else grad._data
                    values *= inverse
                    found_inf = found_inf or not _all_finite(values)
        self._stages[id(optimizer)] = (_UNSCALED, found_inf)

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, unless one of them is
        inf or nan (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        stage, _ = self._stages.get(id(optimizer), (_READY, False))
        if stage == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if stage == _READY:
            self.unscale_(optimizer)
        _, found_inf = self._stages[id(optimizer)]
        result = None if found_inf else optimizer.step(*args, **kwargs)
        self._stages[id(optimizer)] = (_STEPPED, found_inf)
        return result

    def update(self, new_scale=None) -> None:
        """Adjust the scale for the next iteration: back off after a step that found inf or
        nan, grow after `growth_interval` clean steps; or set `new_scale`."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor)
                                else new_scale)
        else:
            if not self._stages:
                raise RuntimeError("No inf checks were recorded prior to update.")
            if any(found for _, found in self._stages.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._stages = {}

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict:
        """The scale and its schedule (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict`` returned."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def _all_finite(values) -> bool:
    return bool(module_of(values).isfinite(values).all())
