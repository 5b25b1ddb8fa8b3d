"""Tensor repr in PyTorch's format, and ``set_printoptions``.

``tensor([1., 2.], requires_grad=True)``, ``tensor(3., grad_fn=<AddBackward0>)``:
floats whose values are all whole print as ``1.``; otherwise 4 decimals, or
scientific notation when the magnitudes span more than 1000x (or exceed 1e8, or
go below 1e-4).  Large tensors are summarized with ``...``.
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


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """Set how tensors print: decimals, summarization threshold, edge items, line width."""
    if profile == "default":
        OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems, OPTIONS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems, OPTIONS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        OPTIONS.precision, OPTIONS.threshold, OPTIONS.edgeitems, OPTIONS.linewidth = (
            4, math.inf, 3, 80)
    if precision is not None:
        OPTIONS.precision = precision
    if threshold is not None:
        OPTIONS.threshold = threshold
    if edgeitems is not None:
        OPTIONS.edgeitems = edgeitems
    if linewidth is not None:
        OPTIONS.linewidth = linewidth
    OPTIONS.sci_mode = sci_mode


class _Formatter:
    """Chooses one number format for all values of a tensor, and its width."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            strs = [str(v) for v in values.ravel().tolist()]
            self.width = max((len(s) for s in strs), default=1)
            return
        finite = values[np.isfinite(values)]
        nonzero = np.abs(finite[finite != 0])
        if nonzero.size == 0:
            self.width = max((len(self._fmt_special(v)) for v in values.ravel()), default=1)
            if finite.size:
                self.width = max(self.width, 2)
            return
        lo, hi = float(nonzero.min()), float(nonzero.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        if OPTIONS.sci_mode is not None:
            self.sci_mode = OPTIONS.sci_mode
        # PyTorch measures the width on the finite values only
        self.width = max(len(self.format(float(v))) for v in finite.ravel())

    @staticmethod
    def _fmt_special(v) -> str:
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return "0."

    def format(self, value) -> str:
        if not self.floating:
            return str(value)
        if not math.isfinite(value):
            return self._fmt_special(value)
        p = OPTIONS.precision
        if self.sci_mode:
            return f"{value:.{p}e}"
        if self.int_mode:
            return f"{value:.0f}."
        return f"{value:.{p}f}"

    def cell(self, value) -> str:
        return self.format(value).rjust(self.width)


def _to_printable(array) -> np.ndarray:
    data = np.asarray(array if isinstance(array, np.ndarray) else array.get())
    if data.dtype.kind == "V" or data.dtype == np.float16:  # bfloat16 / half
        data = data.astype(np.float32)
    return data


def _summarize(data: np.ndarray) -> np.ndarray:
    """The values that will be shown (edge items of each dimension)."""
    e = OPTIONS.edgeitems
    if data.ndim == 0:
        return data
    if data.shape[0] > 2 * e:
        parts = [data[:e], data[-e:]]
    else:
        parts = [data]
    return np.concatenate([_summarize_rows(p) for p in parts]) if data.ndim > 1 else \
        np.concatenate(parts)


def _summarize_rows(data: np.ndarray) -> np.ndarray:
    return np.stack([_summarize(row) for row in data]) if len(data) else data


def _format_nd(data, fmt: _Formatter, indent: int, summarize: bool) -> str:
    e = OPTIONS.edgeitems
    if data.ndim == 1:
        values = data.tolist()
        if summarize and len(values) > 2 * e:
            cells = [fmt.cell(v) for v in values[:e]] + ["..."] + [
                fmt.cell(v) for v in values[-e:]]
        else:
            cells = [fmt.cell(v) for v in values]
        per_line = max(1, (OPTIONS.linewidth - indent) // (fmt.width + 2))
        lines = [", ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = data.shape[0]
    if summarize and n > 2 * e:
        rows = [_format_nd(data[i], fmt, indent + 1, summarize) for i in range(e)] + ["..."] + [
            _format_nd(data[i], fmt, indent + 1, summarize) for i in range(n - e, n)]
    else:
        rows = [_format_nd(data[i], fmt, indent + 1, summarize) for i in range(n)]
    sep = "," + "\n" * (data.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def format_values(array, indent: int) -> str:
    """The bracketed values of an array, laid out as PyTorch does."""
    data = _to_printable(array)
    if data.dtype.kind == "c":
        return np.array2string(data, separator=", ", precision=OPTIONS.precision)
    summarize = data.size > OPTIONS.threshold
    fmt = _Formatter(_summarize(data) if summarize else data)
    if data.ndim == 0:
        return fmt.format(data.item())
    return _format_nd(data, fmt, indent, summarize)


def tensor_repr(t, prefix: str = "tensor(") -> str:
    """The repr of a tensor: values, then dtype/device/grad suffixes when they apply."""
    data = t._data
    d = t.dtype
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    if data.size == 0 and data.ndim != 1:
        body = "[]"
        suffixes.append(f"size={tuple(data.shape)}")
    elif data.size == 0:
        body = "[]"
    else:
        body = format_values(data, len(prefix))
    if data.size == 0:
        show_dtype = d is not dtypes.get_default_dtype()
    else:
        show_dtype = d not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool)
    if show_dtype:
        suffixes.append(f"dtype={d}")
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    for s in suffixes:
        text += ", " + s
    return text + ")"
