"""Ready-made parametrizations: weight_norm and spectral_norm (see ``parametrize.py``).

* ``weight_norm``: ``weight = g * v / ||v||``, the norm taken over every dimension but
  `dim`; trains the magnitude g (``original0``) and the direction v (``original1``)
  separately (Salimans & Kingma, 2016).
* ``spectral_norm``: ``weight = W / sigma(W)``, sigma the largest singular value,
  estimated by power iteration with vectors kept in the buffers ``_u`` and ``_v``
  (Miyato et al., 2018).  In training mode each forward refines the estimate by
  `n_power_iterations` steps (in place, outside autograd); in eval mode the stored
  vectors are used as they are.
"""

from __future__ import annotations

from ..._core.grad_mode import no_grad
from ..._core.tensor import Tensor
from ...ops.linalg import mv, vdot
from ...ops.normalization import normalize
from ..modules.module import Module
from .parametrize import register_parametrization

__all__ = ["weight_norm", "spectral_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of `v` over every dimension but `dim`, shaped to broadcast against `v`
    (a 0-dim norm of everything when dim is -1)."""
    if dim == -1:
        return v.norm()
    others = tuple(d for d in range(v.dim()) if d != dim)
    return (v * v).sum(others, keepdim=True).sqrt()


class _WeightNorm(Module):
    """weight = g * v / ||v|| (norm over all dims but `dim`)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as magnitude times direction (``original0`` is g,
    ``original1`` is v).  ``dim=None`` uses one norm for the whole tensor.

    >>> layer = weight_norm(ember.nn.Linear(20, 40))
    >>> layer.parametrizations.weight.original0.shape
    ember.Size([40, 1])
    """
    if dim is not None and dim < -1:
        dim += getattr(module, name).dim()
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma(weight), sigma estimated by power iteration (buffers _u, _v)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = self._as_matrix(weight)
            rows, cols = matrix.shape
            with no_grad():
                u = matrix.new_empty(rows).normal_(0, 1)
                v = matrix.new_empty(cols).normal_(0, 1)
                self.register_buffer("_u", normalize(u, dim=0, eps=eps))
                self.register_buffer("_v", normalize(v, dim=0, eps=eps))
            # A good starting estimate, as PyTorch does.
            self._power_method(matrix, 15)

    def _as_matrix(self, weight: Tensor) -> Tensor:
        """`weight` with `dim` moved first and the rest flattened: (size(dim), -1)."""
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, matrix: Tensor, iterations: int) -> None:
        """Refine _u, _v in place: u <- normalize(W v), v <- normalize(W^T u)."""
        with no_grad():
            for _ in range(iterations):
                self._u.copy_(normalize(mv(matrix, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mv(matrix.t().conj() if matrix.is_complex()
                                           else matrix.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.dim() == 1:
            return normalize(weight, dim=0, eps=self.eps)
        matrix = self._as_matrix(weight)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        # Copies: the buffers change in place at the next training forward, while this
        # graph still needs the values it used.
        u, v = self._u.clone(), self._v.clone()
        sigma = vdot(u, mv(matrix, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm (largest singular value).

    `dim` is the output dimension the weight is viewed along (0 by default, 1 for
    transposed convolutions).  The power-iteration vectors are the buffers
    ``parametrizations.<name>.0._u`` and ``._v``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d",
                                               "ConvTranspose3d")
        dim = 1 if transposed else 0
    register_parametrization(module, name,
                             _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
