"""Tensor repr in PyTorch's format, and ``set_printoptions``.

``tensor([1., 2.], requires_grad=True)``, ``tensor(3., grad_fn=<AddBackward0>)``.  One
number format serves all values of a tensor, chosen from its finite non-zero values:

* integers and bools print as Python prints them, right-aligned to the longest;
* floats whose values are all whole print as ``1.``; otherwise with `precision` decimals;
  scientific notation when the magnitudes span more than 1000x, exceed 1e8 or go below
  1e-4 (``sci_mode`` forces it on or off, except for tensors of only zeros, nan and inf);
* the column width is that of the longest finite non-zero value, so ``-0.``, ``nan`` and
  ``inf`` may stick out, as in PyTorch;
* complex numbers format their real and imaginary parts each with its own format.

Tensors with more than `threshold` elements are summarized: `edgeitems` rows at each end
of every dimension, ``...`` between.  Lines wrap at `linewidth`, and so do the suffixes
(``dtype=``, ``grad_fn=``, ...) that would pass it.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtype as dtypes


class _Options:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


OPTIONS = _Options()

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Set how tensors print: decimals, summarization threshold, edge items, line width;
    `profile` ("default", "short", "full") sets the first four at once; `sci_mode`
    True/False forces scientific notation on/off (None: chosen per tensor)."""
    if profile is not None:
        (OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems,
         OPTIONS.linewidth) = _PROFILES[profile]
    if precision is not None:
        OPTIONS.precision = precision
    if threshold is not None:
        OPTIONS.threshold = threshold
    if edgeitems is not None:
        OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        OPTIONS.linewidth = linewidth
    OPTIONS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options, as keyword arguments of ``set_printoptions``."""
    return {name: getattr(OPTIONS, name)
            for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


class _Formatter:
    """One number format for all the values of a (real) array, and its width."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            self.width = max((len(str(v)) for v in values.ravel().tolist()), default=1)
            return
        flat = values.ravel().astype(np.float64)
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if not shown.size:  # only zeros, nan and inf: whole-number format, width 1
            return
        magnitudes = np.abs(shown)
        low, high = float(magnitudes.min()), float(magnitudes.max())
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
        if OPTIONS.sci_mode is not None:
            self.sci_mode = OPTIONS.sci_mode
        p = OPTIONS.precision
        if self.sci_mode:
            self.width = max(len(f"{v:.{p}e}") for v in shown.tolist())
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") + 1 for v in shown.tolist())
        else:
            self.width = max(len(f"{v:.{p}f}") for v in shown.tolist())

    def format(self, value) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{OPTIONS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("." if math.isfinite(value) else "")
        else:
            text = f"{value:.{OPTIONS.precision}f}"
        return text.rjust(self.width)


class _ComplexFormatter:
    """Real and imaginary parts, each with its own format: ``1.0000+2.5000j``."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)
        self.width = self.real.width + self.imag.width + 1  # (the 1: "j")

    def format(self, value) -> str:
        real = self.real.format(value.real)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _printable(array) -> np.ndarray:
    data = np.asarray(array if isinstance(array, np.ndarray) else array.get())
    if data.dtype.kind == "V" or data.dtype == np.float16:  # bfloat16 / half print as float
        data = data.astype(np.float32)
    return data


def _summarized(data: np.ndarray) -> np.ndarray:
    """The values a summarized print shows: `edgeitems` at both ends of each dimension."""
    e = OPTIONS.edgeitems
    if data.ndim == 0:
        return data
    if data.ndim == 1:
        # NOTE: data[-0:] is all of it, so edgeitems=0 measures every value, as PyTorch does
        return np.concatenate([data[:e], data[-e:]]) if data.shape[0] > 2 * e else data
    if not e:
        return data[(slice(0, 0),) * data.ndim]
    rows = list(range(e)) + list(range(len(data) - e, len(data))) \
        if data.shape[0] > 2 * e else range(len(data))
    return np.stack([_summarized(data[i]) for i in rows])


def _vector(data: np.ndarray, fmt, indent: int, summarize: bool) -> str:
    e = OPTIONS.edgeitems
    element = fmt.width + 2
    per_line = max(1, int(math.floor((OPTIONS.linewidth - indent) / element)))
    if summarize and not e:
        cells = ["..."]
    elif summarize and data.shape[0] > 2 * e:
        cells = ([fmt.format(v) for v in data[:e].tolist()] + [" ..."]
                 + [fmt.format(v) for v in data[-e:].tolist()])
    else:
        cells = [fmt.format(v) for v in data.tolist()]
    lines = [", ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(data: np.ndarray, fmt, indent: int, summarize: bool) -> str:
    if data.ndim == 0:
        return fmt.format(data.item())
    if data.ndim == 1:
        return _vector(data, fmt, indent, summarize)
    e = OPTIONS.edgeitems
    if summarize and data.shape[0] > 2 * e:
        slices = ([_nested(data[i], fmt, indent + 1, summarize) for i in range(e)] + ["..."]
                  + [_nested(data[i], fmt, indent + 1, summarize)
                     for i in range(len(data) - e, len(data))])
    else:
        slices = [_nested(row, fmt, indent + 1, summarize) for row in data]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def format_values(array, indent: int) -> str:
    """The bracketed values of a non-empty array, laid out as PyTorch does."""
    data = _printable(array)
    summarize = data.size > OPTIONS.threshold
    shown = _summarized(data) if summarize else data
    fmt = _ComplexFormatter(shown) if data.dtype.kind == "c" else _Formatter(shown)
    return _nested(data, fmt, indent, summarize)


def _with_suffixes(text: str, suffixes: list, indent: int) -> str:
    """``text, suffix, ...)``: a suffix that would pass the line width starts a new line."""
    parts = [text]
    line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(t, prefix: str = "tensor(") -> str:
    """The repr of a tensor: values, then device/size/dtype/grad suffixes when they apply."""
    from .device import get_default_device

    data = t._data
    d = t.dtype
    suffixes = []
    if t.device.type != get_default_device().type:
        suffixes.append(f"device='{t.device}'")
    default = dtypes.get_default_dtype()
    default_complex = dtypes.complex128 if default is dtypes.float64 else dtypes.complex64
    if data.size == 0:
        body = "[]"
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if d is not default:
            suffixes.append(f"dtype={d}")
    else:
        body = format_values(data, len(prefix))
        if not OPTIONS.edgeitems:
            suffixes.append(f"size={tuple(data.shape)}")
        if d not in (default, default_complex, dtypes.int64, dtypes.bool):
            suffixes.append(f"dtype={d}")
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, len(prefix))
