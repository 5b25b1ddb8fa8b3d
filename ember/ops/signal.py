"""Window functions (hann, hamming, blackman, bartlett, kaiser), trapezoid integration and
histogram."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .._core import dtype as dtypes
from .._core.tensor import Tensor, _make
from ._util import check_layout, wrap_dim
from .creation import tensor as make_tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "trapezoid", "trapz", "cumulative_trapezoid", "histogram"]


def _window(name: str, length: int, periodic: bool, dtype, layout, device,
            requires_grad: bool, values) -> Tensor:
    """A window of `length` points from `values(n)`, the symmetric window of n points;
    periodic windows are the symmetric one of length + 1 without its last point."""
    check_layout(name, layout)
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={length}")
    d = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if length <= 1:
        array = np.ones(length)
    else:
        array = values(length + 1)[:-1] if periodic else values(length)
    return make_tensor(array.astype(d.np_dtype), device=device, requires_grad=requires_grad)


def _cosine_sum(*weights):
    """Symmetric windows ``sum_k (-1)^k w_k cos(2 pi k i / (n - 1))``."""
    def values(n):
        i = np.arange(n) * (2 * math.pi / (n - 1))
        return sum((-1) ** k * w * np.cos(k * i) for k, w in enumerate(weights))
    return values


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                device=None, requires_grad: bool = False) -> Tensor:
    """The Hann window, ``0.5 - 0.5 cos(2 pi i / N)``."""
    return _window("hann_window", window_length, periodic, dtype, layout, device,
                   requires_grad, _cosine_sum(0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False) -> Tensor:
    """The Hamming window, ``alpha - beta cos(2 pi i / N)``."""
    return _window("hamming_window", window_length, periodic, dtype, layout, device,
                   requires_grad, _cosine_sum(alpha, beta))


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """The Blackman window, ``0.42 - 0.5 cos(2 pi i / N) + 0.08 cos(4 pi i / N)``."""
    return _window("blackman_window", window_length, periodic, dtype, layout, device,
                   requires_grad, _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window."""
    return _window("bartlett_window", window_length, periodic, dtype, layout, device,
                   requires_grad, np.bartlett)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window with shape parameter `beta`."""
    return _window("kaiser_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda n: np.kaiser(n, beta))


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of `y` along `dim` by the trapezoidal rule, with sample points `x` (a
    tensor) or spacing `dx` (default 1)."""
    return _trapezoid_terms(y, x, dx, dim).sum(wrap_dim(dim, y.dim()))


def trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """``trapezoid`` under its older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral of `y` along `dim` (one element fewer)."""
    return _trapezoid_terms(y, x, dx, dim).cumsum(wrap_dim(dim, y.dim()))


def _trapezoid_terms(y: Tensor, x, dx, dim: int) -> Tensor:
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received both x and dx")
    dim = wrap_dim(dim, y.dim())
    n = y.shape[dim]
    if n == 0:
        return y.narrow(dim, 0, 0)
    mids = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    if isinstance(x, Tensor):
        if x.dim() == 1:
            shape = [1] * y.dim()
            shape[dim] = x.shape[0]
            x = x.reshape(shape)
        steps = x.narrow(-1 if x.dim() == 1 else dim, 1, n - 1) - \
            x.narrow(-1 if x.dim() == 1 else dim, 0, n - 1)
        return mids * steps
    spacing = 1.0 if x is None and dx is None else (dx if dx is not None else x)
    return mids * spacing


_HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])


def histogram(input: Tensor, bins=100, *, range=None, weight=None,  # noqa: A002
              density: bool = False):
    """Counts of `input`'s values in `bins` equal bins over `range` (default: min to max) or
    between the edges of a 1-D tensor `bins`: (hist, bin_edges), in `input`'s dtype."""
    if not input.is_floating_point():
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the "
                           f"same dtype, but got input {input.dtype} and bins {input.dtype}")
    data = input.detach().cpu_array().reshape(-1)
    edges = bins.detach().cpu_array() if isinstance(bins, Tensor) else int(bins)
    weights = None if weight is None else weight.detach().cpu_array().reshape(-1)
    hist, bin_edges = np.histogram(data, edges, range=range, weights=weights, density=density)
    np_dtype = input._data.dtype
    return _HistogramResult(_make(hist.astype(np_dtype)), _make(bin_edges.astype(np_dtype)))
