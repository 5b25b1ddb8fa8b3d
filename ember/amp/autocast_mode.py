"""``autocast``: inside it, chosen ops run in a lower precision (PyTorch's mixed precision).

On the CPU the autocast dtype is bfloat16 (or float16); on CUDA float16 (or bfloat16).
Matrix products, convolutions and recurrent layers run in it; losses (and on CUDA a few
numerically touchy ops) run in float32; every other op runs in the dtype of its inputs.
The op lists are below; the casting rules and the autocast state are in
``ember/ops/_autocast.py``.

An `_AutocastObserver` (the hook the profiler and the tracers use, see
``ember/ops/_observer.py``) sees every op call while any autocast region is open and
casts the inputs of the listed ops; outside autocast nothing is installed, so ops pay
nothing.  Casting goes through ``Tensor.to``, so gradients flow back to the float32
parameters in float32.  (PyTorch also caches the cast copies of weights within a region;
ember casts them at each use, which gives the same values.)

CUDA autocast on a machine without CUDA is disabled with a warning, as in PyTorch, so
``autocast("cuda")`` scripts run on the CPU in float32.
"""

from __future__ import annotations

import functools
import warnings

from .._core import dtype as dtypes
from .._core.backend import cuda_available
from ..ops import _autocast, activation, conv, einsum, elementwise, linalg, loss, rnn
from ..ops._observer import Observer, run_op

_DEVICE_TYPES = ("cpu", "cuda")
_DEFAULT_DTYPE = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}
_SUPPORTED = (dtypes.bfloat16, dtypes.float16)

# The Function classes whose float32 inputs are cast down to the autocast dtype, and those
# whose lower-precision inputs are cast up to float32, per device type (PyTorch's policies).
_LOWER_OPS = {linalg.MatMul, linalg.AddProduct, conv.Convolution, einsum.Einsum,
              rnn.LSTMSequence, rnn.GRUSequence, rnn.RNNSequence}
_LOSSES = {loss.CrossEntropy, loss.NllLoss, loss.BinaryCrossEntropy,
           loss.BinaryCrossEntropyWithLogits}
_LOWER_PRECISION = {"cpu": _LOWER_OPS, "cuda": _LOWER_OPS}
_FLOAT32 = {"cpu": _LOSSES,
           "cuda": _LOSSES | {activation.Softmax, activation.LogSoftmax, activation.Softplus,
                              elementwise.Exp, elementwise.Log, elementwise.Expm1,
                              elementwise.Log1p, elementwise.Rsqrt}}


class _AutocastObserver(Observer):
    """Casts the inputs of the ops that autocast lists (see the module docstring)."""

    def __init__(self):
        self.users = 0

    def op(self, cls, args, params):
        for device, active in _autocast.ACTIVE.items():
            if active is None:
                continue
            if cls in _LOWER_PRECISION[device]:
                args = tuple(_autocast.to_lower(a) for a in args)
                break
            if cls in _FLOAT32[device]:
                args = tuple(_autocast.to_float32(a) for a in args)
                break
        return run_op(self.prev, cls, args, params)


_OBSERVER: list = []  # the installed observer, while any autocast region is open


class autocast:  # noqa: N801 - PyTorch's name
    """Mixed precision for the ops of a ``with`` block or a decorated function, on
    `device_type` ("cpu" or "cuda"), in `dtype` (default bfloat16 on the CPU, float16 on
    CUDA).  ``enabled=False`` switches autocast off inside an enclosing region."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        dtype = _DEFAULT_DTYPE[device_type] if dtype is None else dtypes.to_dtype(dtype)
        if enabled and device_type == "cuda" and not cuda_available():
            # as in PyTorch: CUDA autocast on a machine without CUDA does nothing
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                          "autocast.", UserWarning, stacklevel=2)
            enabled = False
        if enabled and dtype not in _SUPPORTED:
            name = "CPU" if device_type == "cpu" else "CUDA"
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                          "torch.bfloat16, torch.float16 currently.", UserWarning,
                          stacklevel=2)
            enabled = False
        self.device, self.fast_dtype, self._enabled = device_type, dtype, enabled
        self._saved = []

    def __enter__(self) -> autocast:
        self._saved.append(_autocast.ACTIVE[self.device])
        _autocast.ACTIVE[self.device] = self.fast_dtype if self._enabled else None
        if not _OBSERVER:
            _OBSERVER.append(_AutocastObserver())
            _OBSERVER[0].install()
        _OBSERVER[0].users += 1
        return self

    def __exit__(self, *exc) -> bool:
        _autocast.ACTIVE[self.device] = self._saved.pop()
        observer = _OBSERVER[0]
        observer.users -= 1
        if observer.users == 0:
            observer.uninstall()
            _OBSERVER.clear()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return run


def is_autocast_available(device_type: str) -> bool:
    """True for the device types ember's autocast handles ("cpu" and "cuda")."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for `device_type` (CUDA when None, as in PyTorch)."""
    return _autocast.ACTIVE["cuda" if device_type is None else device_type] is not None


def get_autocast_dtype(device_type: str):
    """The dtype autocast uses on `device_type` (its default when no region is open)."""
    return _autocast.ACTIVE.get(device_type) or _DEFAULT_DTYPE[device_type]
