"""Statistics built from other ops: quantile, nanquantile, cov, corrcoef.  Their gradients
come from the ops they are written with (sort, gather, products)."""

from __future__ import annotations

import warnings

from .._core import dtype as dtypes
from .._core.tensor import Tensor
from ._util import wrap_dim
from .creation import tensor as make_tensor

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The `q`-th quantiles of `input` along `dim` (of all its values when None): a number
    q gives the reduced shape, a 1-D tensor of q's a leading dim of that length.  Between
    two sorted values, `interpolation` picks linear (default), lower, higher, midpoint or
    nearest.  A slice holding nan gives nan."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring nan values (nan only where a slice has nothing else)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(op: str, input: Tensor, q, dim, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    if not input.is_floating_point():
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    qs = (make_tensor([float(q)], dtype=input.dtype, device=input.device) if scalar_q
          else q.detach().to(input.dtype))
    if qs.dim() > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
    if bool(((qs < 0) | (qs > 1)).any()):
        bad = float(q) if scalar_q else "a value"
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {bad}")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    # the reduced values along the last dim
    if dim is None:
        values, kept_shape = input.reshape(-1), (1,) * input.dim() if keepdim else ()
    else:
        dim = wrap_dim(dim, input.dim())
        values = input.movedim(dim, -1)
        kept_shape = tuple(input.shape[:dim]) + ((1,) if keepdim else ()) + \
            tuple(input.shape[dim + 1:])
    ordered = values.sort(-1).values  # nan sorts last
    nan = values.isnan()
    n = values.shape[-1]
    lead = tuple(values.shape[:-1]) + (qs.shape[0],)
    if ignore_nan:  # rank among the values that are not nan; an all-nan slice picks a nan
        last = ((~nan).sum(-1, keepdim=True) - 1).clamp(min=0).to(input.dtype)
        pos = (qs * last).expand(lead)
    else:  # a slice holding nan picks its last sorted value, a nan (which gets the gradient)
        has_nan = nan.any(-1, keepdim=True).expand(lead)
        pos = (qs * (n - 1)).expand(lead).masked_fill(has_nan, n - 1)
    if interpolation == "nearest":
        pos = pos.round()
    lower, upper = pos.floor(), pos.ceil()
    low = ordered.gather(-1, lower.long())
    high = ordered.gather(-1, upper.long())
    if interpolation in ("lower", "nearest"):
        result = low
    elif interpolation == "higher":
        result = high
    elif interpolation == "midpoint":
        result = (low + high) / 2
    else:
        result = low + (high - low) * (pos - lower)
    result = result.movedim(-1, 0).reshape((qs.shape[0],) + kept_shape)
    return result[0] if scalar_q else result


def cov(input: Tensor, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """The covariance matrix of the variables in the rows of `input` (observations in
    columns; a 1-D input is one variable), with integer frequency weights `fweights`,
    observation weights `aweights`, and `correction` subtracted from the weight total
    (1: the unbiased estimate)."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(dtypes.get_default_dtype())
    observations = x.shape[1]
    weights = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations)
        if fweights.is_floating_point():
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        weights = fweights.to(x.dtype)
    if aweights is not None:
        _check_weights("aweights", aweights, observations)
        if not aweights.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        weights = aweights.to(x.dtype) if weights is None else weights * aweights.to(x.dtype)
    if weights is None:
        total = float(observations)
        mean = x.mean(1, keepdim=True)
        norm = total - correction
    else:
        total_t = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total_t
        total = float(total_t.item())
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * float((weights * aweights.to(x.dtype)).sum().item()) \
                / total
    if norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = 0.0
    centered = x - mean
    weighted = centered if weights is None else centered * weights
    c = weighted.matmul(centered.mT.conj() if centered.is_complex() else centered.mT)
    return (c / norm).squeeze()


def _check_weights(name: str, weights: Tensor, observations: int) -> None:
    if weights.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {weights.dim()} dimensions")
    if weights.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {weights.numel()} != "
                           f"{observations}")
    if bool((weights < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of `input`."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c if c.is_complex() else c.clamp(-1, 1)
