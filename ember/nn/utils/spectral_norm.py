"""The older, hook-based spectral normalization: ``nn.utils.spectral_norm`` (GAN code
uses it widely; ``nn.utils.parametrizations.spectral_norm`` is the newer form).

The layer's ``weight`` becomes the parameter ``weight_orig`` plus two buffers, ``weight_u``
and ``weight_v``, the power-iteration vectors.  A forward pre-hook sets ``module.weight``
to ``weight_orig / sigma`` before every call, where ``sigma = u . (W v)`` estimates the
largest singular value of ``W`` (``weight_orig`` viewed as a matrix along `dim`).  In
training mode each call first refines u and v by ``n_power_iterations`` steps of
``v <- normalize(W^T u)``, ``u <- normalize(W v)``.  The state_dict keys are PyTorch's.
"""

from __future__ import annotations

from ..._core.grad_mode import no_grad
from ...ops.linalg import mv
from ...ops.normalization import normalize
from ..modules.module import Module
from ..parameter import Parameter
from .weight_norm import remove_hook_reparametrization

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]

_TRANSPOSED = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` (see the module docstring)."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        """`weight` with `dim` first and the other dims flattened."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module: Module, do_power_iteration: bool):
        """``<name>_orig / sigma``, after refining u and v in place when asked."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        matrix = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(mv(matrix.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(mv(matrix, v), dim=0, eps=self.eps))
            # copies: the buffers change in place at the next call, while this graph still
            # needs the values it used
            u, v = u.clone(), v.clone()
        sigma = u.dot(mv(matrix, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module,
                                                       do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            rows, cols = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(weight.new_empty(rows).normal_(0, 1), dim=0, eps=eps)
            v = normalize(weight.new_empty(cols).normal_(0, 1), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        # a plain attribute until the first call recomputes it (not in state_dict)
        object.__setattr__(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Normalize ``module.<name>`` by its spectral norm before every call (see the module
    docstring); `dim` defaults to 1 for transposed convolutions, 0 otherwise.  Returns
    `module`."""
    if dim is None:
        dim = 1 if type(module).__name__ in _TRANSPOSED else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``spectral_norm``: ``module.<name>`` becomes one (normalized) parameter again."""
    return remove_hook_reparametrization(module, SpectralNorm, name, "spectral_norm")
