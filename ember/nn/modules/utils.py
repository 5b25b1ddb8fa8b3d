"""Argument helpers at PyTorch's path ``nn.modules.utils`` (user layers import ``_pair``)."""

from __future__ import annotations

import collections.abc
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse"):
    """A function that turns a scalar into an n-tuple and passes iterables through."""

    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _repeat_to(value, n: int) -> tuple:
    """A tuple or list as a tuple; anything else repeated `n` times (the layers' own
    argument form: unlike ``_ntuple``, other iterables are single values)."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * n


def _changed_options(module, defaults: dict) -> str:
    """``", name=value"`` for each option of `module` that is not at its default in
    `defaults`, for ``extra_repr``.  As PyTorch's reprs do, a bool or None default is
    compared by identity (``bias=1`` is shown) and a number by value (``dropout=0.0`` is not).
    """
    s = ""
    for name, default in defaults.items():
        value = getattr(module, name)
        if default is None or isinstance(default, bool):
            changed = value is not default
        else:
            changed = value != default
        if changed:
            s += f", {name}={value}"
    return s


def _reverse_repeat_tuple(t, n: int) -> tuple:
    """Reverse ``t`` and repeat each element ``n`` times: (1, 2), 2 -> (2, 2, 1, 1)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults) -> list:
    """``out_size`` with each ``None`` replaced by the matching trailing entry of defaults."""
    if isinstance(out_size, int):
        return [out_size]
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d
            for v, d in zip(out_size, defaults[-len(out_size):], strict=False)]


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it, in place.

    Useful to load a checkpoint saved from a wrapped model (``"module."`` of DataParallel
    and DistributedDataParallel) into the bare model.  The ``_metadata`` entries follow.
    """
    for key in sorted(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)
