"""Lazy modules: layers whose input size comes from their first input.

``LazyLinear(30)`` is a ``Linear`` whose ``in_features`` is not known yet: its weight is an
``UninitializedParameter``.  The first call reads the size off the input
(``initialize_parameters``), gives the parameters their shapes, initializes them as the
ordinary layer would, and turns the module into that layer (``cls_to_become``), so that
later calls cost nothing extra.  Build the optimizer after that first call (or pass the
parameters again): before it, the parameters have no values.

One mechanism serves every lazy layer: :class:`LazyModuleMixin` does the inference, the
materializing and the initialization; a family (linear, convolutions, norms) only says
which attribute the input decides and the shape of each parameter; each public class is
the family's mixin on the ordinary layer, built by ``_lazy``.
"""

from __future__ import annotations

from ..._core.grad_mode import no_grad
from ...ops.creation import tensor
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Shape inference on the first call (see the module docstring).

    A family names ``size_attr`` (the attribute the first input decides, 0 until then) and
    defines ``_size_of(input)`` and ``_shapes()`` (the shape of each parameter and buffer
    once the size is known); ``cls_to_become`` is the ordinary layer.  Users' own lazy
    modules may instead override ``initialize_parameters(*inputs)``, as in PyTorch.
    """

    cls_to_become = None
    size_attr = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lazy_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """True while a parameter or buffer still waits for its shape."""
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(is_lazy(t) for t in tensors)

    def initialize_parameters(self, input, *args) -> None:
        """Read the size off `input`, give every lazy tensor its shape, initialize them."""
        if self.size_attr is None:
            raise NotImplementedError(f"initialize_parameters is not implemented for "
                                      f"{type(self).__name__}")
        if not self.has_uninitialized_params():
            return
        setattr(self, self.size_attr, self._size_of(input))
        shapes = self._shapes()
        with no_grad():
            for name, t in list(self._parameters.items()) + list(self._buffers.items()):
                if is_lazy(t):
                    t.materialize(shapes[name])
            self.reset_parameters()

    def reset_parameters(self) -> None:
        # The ordinary layer's __init__ calls this before the shapes are known: skip then.
        size = getattr(self, self.size_attr) if self.size_attr is not None else None
        if not self.has_uninitialized_params() and size != 0:
            super().reset_parameters()

    def _make_lazy(self, parameters: tuple, buffers: tuple = (), device=None,
                   dtype=None) -> None:
        """Replace the named parameters and buffers with uninitialized ones."""
        for name in parameters:
            setattr(self, name, UninitializedParameter(device=device, dtype=dtype))
        for name in buffers:
            setattr(self, name, UninitializedBuffer(device=device, dtype=dtype))


def _infer_parameters(module, args) -> None:
    """The forward pre-hook: shapes from the first input, then the ordinary class."""
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
    module._lazy_hook.remove()
    del module._lazy_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


def _lazy(family: type, layer: type) -> type:
    """The public lazy class of `layer`: the `family` mixin first, then `layer` itself."""
    name = f"Lazy{layer.__name__}"
    doc = (f"A ``{layer.__name__}`` whose ``{family.size_attr}`` comes from its first "
           "input.")
    return type(name, (family, layer), {"cls_to_become": layer, "__doc__": doc,
                                        "__module__": __name__, "__qualname__": name})


# --- the families -------------------------------------------------------------------------


class _LazyLinearMixin(LazyModuleMixin):
    """``in_features`` is the last dim of the first input."""

    size_attr = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False, device=device, dtype=dtype)
        self.out_features = out_features
        self._make_lazy(("weight", "bias") if bias else ("weight",), device=device,
                        dtype=dtype)

    def _size_of(self, input) -> int:
        return input.shape[-1]

    def _shapes(self) -> dict:
        return {"weight": (self.out_features, self.in_features), "bias": (self.out_features,)}


class _LazyConvMixin(LazyModuleMixin):
    """``in_channels`` is the channel dim of the first input (batched or not)."""

    size_attr = "in_channels"

    def _lazy_parameters(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.out_channels = out_channels
        self._make_lazy(("weight", "bias") if bias else ("weight",), device=device,
                        dtype=dtype)

    def _size_of(self, input) -> int:
        channels = input.shape[1 if input.dim() == self._dims + 2 else 0]
        if channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        return channels

    def _shapes(self) -> dict:
        channels = ((self.in_channels, self.out_channels // self.groups) if self.transposed
                    else (self.out_channels, self.in_channels // self.groups))
        return {"weight": channels + tuple(self.kernel_size), "bias": (self.out_channels,)}


class _LazyConv(_LazyConvMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_parameters(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvMixin):
    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device=device, dtype=dtype)
        self._lazy_parameters(out_channels, bias, device, dtype)


class _LazyNormMixin(LazyModuleMixin):
    """Batch norms: ``num_features`` is dim 1 of the first input (dim 0 of a 1-D one)."""

    size_attr = "num_features"

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        self._make_lazy(("weight", "bias") if affine else (),
                        ("running_mean", "running_var") if track_running_stats else (),
                        device=device, dtype=dtype)
        if track_running_stats:
            self.num_batches_tracked = tensor(0, dtype="int64", device=device)

    def _size_of(self, input) -> int:
        return input.shape[1] if input.dim() > 1 else input.shape[0]

    def _shapes(self) -> dict:
        n = (self.num_features,)
        return {"weight": n, "bias": n, "running_mean": n, "running_var": n}


class _LazyInstanceNormMixin(_LazyNormMixin):
    """Instance norms (with the lazy batch norms' defaults, affine and tracking running
    statistics, as in PyTorch); ``num_features`` is dim 0 of an unbatched input, else 1."""

    def _size_of(self, input) -> int:
        unbatched = self._expected[0]
        return input.shape[0] if input.dim() == unbatched else input.shape[1]


# --- the public classes -------------------------------------------------------------------

LazyLinear = _lazy(_LazyLinearMixin, Linear)
LazyConv1d = _lazy(_LazyConv, Conv1d)
LazyConv2d = _lazy(_LazyConv, Conv2d)
LazyConv3d = _lazy(_LazyConv, Conv3d)
LazyConvTranspose1d = _lazy(_LazyConvTranspose, ConvTranspose1d)
LazyConvTranspose2d = _lazy(_LazyConvTranspose, ConvTranspose2d)
LazyConvTranspose3d = _lazy(_LazyConvTranspose, ConvTranspose3d)
LazyBatchNorm1d = _lazy(_LazyNormMixin, BatchNorm1d)
LazyBatchNorm2d = _lazy(_LazyNormMixin, BatchNorm2d)
LazyBatchNorm3d = _lazy(_LazyNormMixin, BatchNorm3d)
LazyInstanceNorm1d = _lazy(_LazyInstanceNormMixin, InstanceNorm1d)
LazyInstanceNorm2d = _lazy(_LazyInstanceNormMixin, InstanceNorm2d)
LazyInstanceNorm3d = _lazy(_LazyInstanceNormMixin, InstanceNorm3d)
