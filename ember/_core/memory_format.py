"""Memory formats: the order in which a tensor's elements sit in memory.

A tensor's data is a NumPy (or CuPy) array, and arrays may have any strides, so a
channels-last tensor is simply an array of shape (N, C, H, W) whose channel dimension
varies fastest in memory: the transpose of a C-contiguous (N, H, W, C) array.

``contiguous``, ``clone``, ``to``, the ``*_like`` factories, ``Module.to`` and
``is_contiguous`` follow the format they are asked for.  Other ops keep NumPy's rules for
their results: elementwise ops keep their input's layout (as PyTorch's do), while
convolutions, products and reductions return row-major arrays, where PyTorch may keep
channels-last.  Values never depend on the layout; only ``stride()`` shows it.
"""

from __future__ import annotations


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory layout (``ember.contiguous_format``, ``ember.channels_last``...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the rank each channels-last format applies to, and its dims in memory order
_CHANNELS_LAST = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def _memory_order(fmt: memory_format, ndim: int) -> tuple:
    rank, order = _CHANNELS_LAST[fmt]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    return order


def check_format(fmt) -> memory_format:
    """`fmt` as a memory format (None is contiguous_format); TypeError for anything else."""
    if fmt is None:
        return contiguous_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be an ember.memory_format, not "
                        f"{type(fmt).__name__}")
    return fmt


def is_in_format(array, fmt) -> bool:
    """True when `array` is laid out densely in format `fmt` (None: row-major)."""
    fmt = check_format(fmt)
    if fmt is contiguous_format:
        return bool(array.flags.c_contiguous)
    if fmt is preserve_format:
        raise RuntimeError("is_contiguous does not support preserve_format")
    rank, order = _CHANNELS_LAST[fmt]
    return array.ndim == rank and bool(array.transpose(order).flags.c_contiguous)


def format_of(array) -> memory_format:
    """The format a dense array is in: channels-last when it is so and not row-major."""
    if array.flags.c_contiguous:
        return contiguous_format
    for fmt, (rank, _) in _CHANNELS_LAST.items():
        if array.ndim == rank and is_in_format(array, fmt):
            return fmt
    return contiguous_format


def _dense(array) -> bool:
    """True when the elements fill their memory without gaps or overlaps (some order of
    the dims is row-major), as a transpose or a channels-last tensor does."""
    by_stride = sorted(range(array.ndim), key=lambda d: -abs(array.strides[d]))
    return bool(array.transpose(by_stride).flags.c_contiguous)


def copy_in_format(xp, array, fmt):
    """A copy of `array` laid out in `fmt`.  preserve_format keeps the strides of a dense
    array (channels-last, a transpose); others, such as an expanded array whose rows share
    memory, are copied row-major, as in PyTorch."""
    fmt = check_format(fmt)
    if fmt is preserve_format:
        return array.copy(order="K" if _dense(array) else "C")
    if fmt is contiguous_format:
        return array.copy(order="C")
    order = _memory_order(fmt, array.ndim)
    inverse = tuple(order.index(d) for d in range(len(order)))
    return xp.ascontiguousarray(array.transpose(order)).transpose(inverse)


def like_format(result, template, fmt):
    """A ``*_like`` factory's `result` (a fresh tensor) laid out as `fmt` asks:
    preserve_format (the default, None) copies the layout of `template`."""
    fmt = preserve_format if fmt is None else check_format(fmt)
    if fmt is preserve_format:
        fmt = format_of(template._data)
    if fmt is not contiguous_format:
        from .backend import module_of

        result._data = copy_in_format(module_of(result._data), result._data, fmt)
    return result
