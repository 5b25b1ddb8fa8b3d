"""Pickle through an allow-list: the globals a file may name, and the unpicklers.

:class:`AllowListUnpickler` is the one mechanism: every class or function a pickle refers
to (``GLOBAL``, ``STACK_GLOBAL``, extension codes) is resolved by its ``find_class``, which
answers only from the allow-list it is given, so a pickle cannot reach ``os.system`` or
the ``__reduce__`` of an arbitrary type.  Its users pass their own lists:

- ``ember.load(weights_only=True)``: a few harmless built-ins, ``collections.OrderedDict``,
  ember's Size/device/dtype, the replacements for PyTorch's rebuild functions when reading
  a ``.pt`` file, and what the user allow-listed with :func:`add_safe_globals`; tensors
  come in through ``persistent_load``;
- the CIFAR loader (``ember.vision.datasets.cifar``): NumPy's array rebuild functions.
"""

from __future__ import annotations

import builtins
import collections
import io
import pickle

from .._core import dtype as dtypes
from .._core.device import device as Device
from .._core.tensor import HookDict, Size

UnpicklingError = pickle.UnpicklingError

_user_globals: dict = {}  # "module.qualname" -> object


def _name_of(obj) -> str:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not module or not qualname:
        raise TypeError(f"cannot allow-list {obj!r}: it has no module and name; pass a "
                        "(object, 'module.name') tuple instead")
    return f"{module}.{qualname}"


def add_safe_globals(safe_globals: list) -> None:
    """Allow ``ember.load(weights_only=True)`` to rebuild these classes and functions.

    Each item is a class or function, or an ``(object, "module.name")`` tuple for an
    object pickled under another name.  Only allow-list what you trust: unpickling calls
    its constructor, ``__setstate__`` and the like with arguments taken from the file.

    >>> ember.serialization.add_safe_globals([MyConfig])
    """
    for item in safe_globals:
        if isinstance(item, tuple):
            if len(item) != 2 or not isinstance(item[1], str):
                raise TypeError("expected an (object, 'module.name') tuple, got "
                                f"{item!r}")
            _user_globals[item[1]] = item
        else:
            _user_globals[_name_of(item)] = item


def get_safe_globals() -> list:
    """The user's allow-list, as given to :func:`add_safe_globals`."""
    return list(_user_globals.values())


def clear_safe_globals() -> None:
    """Empty the user's allow-list (the built-in one stays)."""
    _user_globals.clear()


class safe_globals:  # noqa: N801 - PyTorch's name
    """Context manager: allow-list `safe_globals` only inside the ``with`` block.

    >>> with ember.serialization.safe_globals([MyConfig]):
    ...     ckpt = ember.load("ckpt.pt")
    """

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals
        self._saved = None

    def __enter__(self):
        self._saved = dict(_user_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _user_globals.clear()
        _user_globals.update(self._saved)
        return False


def _user_global(full: str):
    item = _user_globals.get(full)
    if item is None:
        return None
    return item[0] if isinstance(item, tuple) else item


def latin1_encode(text, encoding="utf-8"):
    """The only use of ``_codecs.encode`` we admit: how protocol-2 pickles written by
    Python 3 store bytes (as latin1 text)."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise UnpicklingError("_codecs.encode is only allowed for latin1 text (pickled bytes)")
    return text.encode("latin1")


_BUILTIN_GLOBALS = {
    "collections.OrderedDict": collections.OrderedDict,
    "builtins.set": builtins.set,
    "builtins.frozenset": builtins.frozenset,
    "builtins.complex": builtins.complex,
    "builtins.slice": builtins.slice,
    "_codecs.encode": latin1_encode,
    "ember._core.tensor.Size": Size,
    "ember._core.tensor.HookDict": HookDict,  # a plain dict (modules keep hooks in them)
    "ember._core.device.device": Device,
    "ember._core.dtype._dtype_by_name": dtypes._dtype_by_name,
}


def _not_allowed(full: str) -> UnpicklingError:
    return UnpicklingError(
        f"Weights only load failed: the file refers to the global {full}, which is not "
        "allowed. ember.load(..., weights_only=True) rebuilds only tensors, plain "
        "containers and allow-listed classes, so that no code from the file can run. If "
        f"you trust where the file comes from, allow-list it with "
        f"ember.serialization.add_safe_globals([{full}]) or inside a "
        f"`with ember.serialization.safe_globals([{full}]):` block, or load with "
        "weights_only=False (which lets the file run arbitrary code)."
    )


class AllowListUnpickler(pickle.Unpickler):
    """An Unpickler that resolves globals only through an allow-list.

    `allowed(full_name)` returns the object that ``"module.name"`` stands for, or None to
    refuse it, and `refuse(full_name)` builds the error then.  `persistent_load(pid)`
    supplies the objects stored beside the pickle (tensors); without it a pickle naming
    one is refused.  Other keyword arguments (``encoding``) go to ``pickle.Unpickler``.
    """

    # names that protocol-2 pickles written by Python 2 (or PyTorch) use
    _PYTHON2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}

    def __init__(self, file, allowed, refuse=None, persistent_load=None, **kwargs):
        super().__init__(file, **kwargs)
        self._allowed = allowed
        self._refuse = refuse or _not_allowed
        self._persistent = persistent_load

    def find_class(self, module: str, name: str):
        full = f"{self._PYTHON2_MODULES.get(module, module)}.{name}"
        found = self._allowed(full)
        if found is None:
            raise self._refuse(full)
        return found

    def persistent_load(self, pid):
        if self._persistent is None:
            raise UnpicklingError("persistent ids are not allowed in this pickle")
        return self._persistent(pid)


class _AnyGlobalUnpickler(AllowListUnpickler):
    """``weights_only=False``: any global; the names `allowed` knows are mapped to ember's."""

    def find_class(self, module: str, name: str):
        mapped = self._allowed(f"{module}.{name}")
        return mapped if mapped is not None else pickle.Unpickler.find_class(self, module, name)


def _weights_only_globals(extra: dict):
    """The allow-list of ``weights_only=True``: `extra`, the built-in one, the user's."""

    def allowed(full: str):
        for table in (extra, _BUILTIN_GLOBALS):
            if full in table:
                return table[full]
        return _user_global(full)

    return allowed


def unpickle(data: bytes, persistent_load, weights_only: bool, extra: dict | None = None):
    """Unpickle `data`; with `weights_only` every failure is an UnpicklingError.

    `extra` maps further ``module.name`` strings to safe replacements (PyTorch's names
    when reading a ``.pt`` file); `persistent_load` supplies the tensors.
    """
    extra = extra or {}
    if not weights_only:
        return _AnyGlobalUnpickler(io.BytesIO(data), extra.get,
                                   persistent_load=persistent_load).load()
    unpickler = AllowListUnpickler(io.BytesIO(data), _weights_only_globals(extra),
                                   persistent_load=persistent_load)
    try:
        return unpickler.load()
    except UnpicklingError:
        raise
    except Exception as exc:  # a broken or hostile stream: say so, whatever broke
        raise UnpicklingError(
            f"Weights only load failed: the pickled data is invalid ({type(exc).__name__}: "
            f"{exc})") from exc
