"""The saved object as JSON plus a list of arrays, and back.

Containers and plain values become tagged JSON (``{"tuple": [...]}``, ``{"dict": ...}``);
tensors and NumPy arrays become references to entries of the container.  Arrays that
share memory (views, the same tensor twice, tied weights) are grouped: each group is
stored once, and its members are recorded as views of that entry, so they come back
sharing memory.  Anything else (a whole Module, a user's class) is pickled into an entry
of its own, its tensors still going to the container through persistent ids.

The tags, one key per JSON object (lists are plain JSON arrays)::

    {"tensor": {"data": entry, "view": [dtype, shape, byte strides, byte offset],
                "requires_grad": bool, "param": bool, "device": str, "id": int}}
    {"ndarray": {"data": entry, "view": [...], "id": int}}
    {"tuple": [...]}  {"set": [...]}  {"frozenset": [...]}  {"size": [...]}
    {"dict": {str: value}} or {"dict": [[key, value], ...]}    ("odict" for OrderedDict,
                                                                 with "attrs" for _metadata)
    {"float": "nan" | "inf" | "-inf"}  {"complex": [re, im]}  {"bytes": entry}
    {"np_scalar": [dtype, value]}  {"dtype": name}  {"device": str}
    {"pickle": {"data": entry, "refs": [tensor or ndarray references]}}
"""

from __future__ import annotations

import io
import math
import pickle
from collections import OrderedDict

import numpy as np

from .._core import dtype as dtypes
from .._core.device import device as Device
from .._core.tensor import Size, Tensor, _make
from . import _format
from ._format import FormatError
from ..nn.parameter import Parameter


class _CyclicError(Exception):
    """A container contains itself: the whole object goes through pickle instead."""


class _Item:
    __slots__ = ("ref", "array", "path", "lo", "hi")

    def __init__(self, ref: dict, array: np.ndarray, path: str):
        self.ref = ref
        self.array = array
        self.path = path
        ptr = array.__array_interface__["data"][0] if array.size else 0
        lo = hi = ptr
        for n, s in zip(array.shape, array.strides):
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
        self.lo, self.hi = lo, hi + array.itemsize


def _parameter_class():
    return Parameter


# ---------------------------------------------------------------------------
# encoding


class Encoder:
    """Walks the object once; ``finish()`` then lays out the entries."""

    def __init__(self, pickle_module=pickle, pickle_protocol: int = 4):
        self.items: list[_Item] = []
        self.raw_entries: list = []  # (name, uint8 array) for pickles and bytes
        self._memo: dict = {}
        self._active: set = set()
        self._names: set = {"__metadata__"}
        self._pickle_module = pickle_module
        self._protocol = pickle_protocol
        self._keep: list = []  # keeps ids stable while walking

    def encode(self, obj, path: str = ""):
        kind = type(obj)
        if obj is None or kind in (bool, int, str):
            return obj
        if kind is float:
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if kind is Tensor or (isinstance(obj, Tensor) and kind is _parameter_class()):
            return {"tensor": self._tensor_ref(obj, path)}
        if kind is np.ndarray and _format.storable(obj.dtype.newbyteorder("=")):
            return {"ndarray": self._array_ref(obj, path)}
        if isinstance(obj, np.generic) and _format.storable(obj.dtype.newbyteorder("=")):
            return {"np_scalar": [obj.dtype.newbyteorder("=").name, self.encode(obj.item())]}
        if kind is complex:
            return {"complex": [_float(obj.real), _float(obj.imag)]}
        if kind is bytes:
            return {"bytes": self._raw_entry("bytes", np.frombuffer(obj, dtype=np.uint8))}
        if kind is dtypes.dtype:
            return {"dtype": obj.name}
        if kind is Device:
            return {"device": str(obj)}
        if kind is Size:
            return {"size": list(obj)}
        if kind in (list, tuple, set, frozenset, dict, OrderedDict):
            return self._container(obj, kind, path)
        return self._pickle(obj, path)

    def _container(self, obj, kind, path: str):
        if id(obj) in self._active:
            raise _CyclicError
        self._active.add(id(obj))
        try:
            if kind is list:
                return [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]
            if kind is tuple:
                return {"tuple": [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]}
            if kind in (set, frozenset):
                return {kind.__name__: [self.encode(v, _join(path, i))
                                        for i, v in enumerate(obj)]}
            tag = "dict" if kind is dict else "odict"
            attrs = getattr(obj, "__dict__", None) or {}
            if set(attrs) - {"_metadata"}:
                return self._pickle(obj, path)  # an OrderedDict carrying other attributes
            if all(type(k) is str for k in obj):
                body = {k: self.encode(v, _join(path, k)) for k, v in obj.items()}
            else:
                body = [[self.encode(k, path), self.encode(v, _join(path, k))]
                        for k, v in obj.items()]
            out = {tag: body}
            if attrs:
                out["attrs"] = {"_metadata": self.encode(attrs["_metadata"], path + "#meta")}
            return out
        finally:
            self._active.discard(id(obj))

    def _tensor_ref(self, t: Tensor, path: str) -> dict:
        if id(t) in self._memo:
            return {"id": self._memo[id(t)]}
        ref = {"id": len(self._memo)}
        self._memo[id(t)] = ref["id"]
        self._keep.append(t)
        if t.requires_grad:
            ref["requires_grad"] = True
        if type(t) is not Tensor:
            ref["param"] = True
        if t.device.type != "cpu":
            ref["device"] = str(t.device)
        self.items.append(_Item(ref, t.detach().cpu_array(), path))
        return ref

    def _array_ref(self, a: np.ndarray, path: str) -> dict:
        if id(a) in self._memo:
            return {"id": self._memo[id(a)]}
        ref = {"id": len(self._memo)}
        self._memo[id(a)] = ref["id"]
        self._keep.append(a)
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        self.items.append(_Item(ref, a, path))
        return ref

    def _raw_entry(self, kind: str, data: np.ndarray) -> str:
        name = self._unique(f"__ember__.{kind}.{len(self.raw_entries)}")
        self.raw_entries.append((name, data))
        return name

    def _pickle(self, obj, path: str) -> dict:
        refs: list = []
        encoder = self

        class _Pickler(self._pickle_module.Pickler):
            def persistent_id(self, value):
                kind = type(value)
                if kind is Tensor or (isinstance(value, Tensor)
                                      and kind is _parameter_class()):
                    refs.append({"tensor": encoder._tensor_ref(value, f"{path}#{len(refs)}")})
                elif kind is np.ndarray and _format.storable(value.dtype.newbyteorder("=")):
                    refs.append({"ndarray": encoder._array_ref(value, f"{path}#{len(refs)}")})
                else:
                    return None
                return ("ember", len(refs) - 1)

        buf = io.BytesIO()
        _Pickler(buf, protocol=self._protocol).dump(obj)
        data = np.frombuffer(buf.getbuffer(), dtype=np.uint8)
        return {"pickle": {"data": self._raw_entry("pickle", data), "refs": refs}}

    def _unique(self, name: str) -> str:
        base, n = name or "tensor", 1
        name = base
        while name in self._names:
            name = f"{base}#{n}"
            n += 1
        self._names.add(name)
        return name

    def finish(self) -> list:
        """Group the arrays by shared memory, fill in the references; the entries in order."""
        entries = []
        for group in _groups(self.items):
            entries.extend(self._lay_out(group))
        # Larger items first keeps every entry aligned to its itemsize (as safetensors does).
        entries.sort(key=lambda e: -e[1].dtype.itemsize)
        return entries + self.raw_entries

    def _lay_out(self, group: list) -> list:
        if len(group) == 1 and group[0].array.dtype != np.complex128:
            item = group[0]
            item.ref["data"] = self._unique(item.path)
            a = item.array
            return [(item.ref["data"], a if a.flags.c_contiguous else a.copy(order="C"))]
        lo, hi = min(i.lo for i in group), max(i.hi for i in group)
        primary = next((i for i in group if i.lo == lo and i.hi == hi
                        and i.array.flags.c_contiguous), None)
        if primary is not None:
            entry = primary.array
        else:
            entry = _span(group, lo, hi)
            if entry is None:  # no contiguous buffer under them: store each on its own
                return [e for item in group for e in self._lay_out([item])]
        name = self._unique((primary or group[0]).path)
        for item in group:
            item.ref["data"] = name
            a = item.array
            if (a.dtype == entry.dtype and a.shape == entry.shape and a.strides == entry.strides
                    and item.lo == lo and entry.dtype != np.complex128):
                continue  # the entry itself
            offset = a.__array_interface__["data"][0] - lo if a.size else 0
            item.ref["view"] = [a.dtype.name, list(a.shape), list(a.strides), offset]
        return [(name, entry)]


def _groups(items: list) -> list:
    """Items grouped by overlapping memory (sorted sweep over byte extents)."""
    groups: list = []
    hi = None
    for item in sorted(items, key=lambda i: i.lo):
        if item.array.size == 0 or hi is None or item.lo >= hi:
            groups.append([item])
            hi = item.hi if item.array.size else None
        else:
            groups[-1].append(item)
            hi = max(hi, item.hi)
    return groups


def _span(group: list, lo: int, hi: int):
    """Bytes [lo, hi) of the contiguous buffer under a group, typed when all agree."""
    for item in group:
        root = item.array
        while isinstance(root.base, np.ndarray):
            root = root.base
        if not root.flags.c_contiguous or not root.size:
            continue
        start = root.__array_interface__["data"][0]
        if start <= lo and hi <= start + root.nbytes:
            span = root.reshape(-1).view(np.uint8)[lo - start:hi - start]
            kinds = {i.array.dtype for i in group}
            if len(kinds) == 1:
                dt = kinds.pop()
                if (_format.storable(dt) and (hi - lo) % dt.itemsize == 0
                        and all((i.lo - lo) % dt.itemsize == 0 for i in group)):
                    return span.view(dt)
            return span
    return None


def _join(path: str, key) -> str:
    key = str(key)
    return f"{path}.{key}" if path else key


def _float(x: float):
    return x if math.isfinite(x) else repr(x)


# ---------------------------------------------------------------------------
# decoding


class Decoder:
    """Rebuilds the object from the structure JSON and the container's entries.

    `place(tensor, saved_device)` decides each tensor's device (map_location);
    `unpickle(data, persistent_load)` loads a pickled part (restricted or not).
    """

    _MAX_DIMS = 64

    def __init__(self, container, place, unpickle):
        self.container = container
        self.place = place
        self.unpickle = unpickle
        self._memo: dict = {}
        self._entries: dict = {}

    def decode(self, node):
        if node is None or type(node) in (bool, int, str, float):
            return node
        if type(node) is list:
            return [self.decode(v) for v in node]
        if type(node) is not dict or not node:
            raise FormatError(f"unexpected structure node {_short(node)}")
        tag = next(iter(node))
        body = node[tag]
        handler = getattr(self, "_" + tag, None) if tag.isidentifier() else None
        if handler is None or (len(node) != 1 and tag != "odict"):
            raise FormatError(f"unknown structure tag in {_short(node)}")
        return handler(body) if tag != "odict" else self._odict(body, node.get("attrs"))

    def _tensor(self, ref):
        return self._array(ref, tensor=True)

    def _ndarray(self, ref):
        return self._array(ref, tensor=False)

    def _tuple(self, body):
        return tuple(self.decode(v) for v in _expect(body, list, "tuple"))

    def _set(self, body):
        return {self.decode(v) for v in _expect(body, list, "set")}

    def _frozenset(self, body):
        return frozenset(self.decode(v) for v in _expect(body, list, "frozenset"))

    def _size(self, body):
        dims = _expect(body, list, "size")
        if not all(type(d) is int for d in dims):
            raise FormatError("size: dimensions must be ints")
        return Size(dims)

    def _dict(self, body, cls=dict):
        if isinstance(body, dict):
            return cls((k, self.decode(v)) for k, v in body.items())
        out = cls()
        for pair in _expect(body, list, "dict"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise FormatError("dict: items must be [key, value] pairs")
            key = self.decode(pair[0])
            try:
                out[key] = self.decode(pair[1])
            except TypeError:
                raise FormatError("dict: unhashable key") from None
        return out

    def _odict(self, body, attrs):
        out = self._dict(body, OrderedDict)
        if attrs is not None:
            attrs = _expect(attrs, dict, "odict attrs")
            if set(attrs) != {"_metadata"}:
                raise FormatError("odict: only _metadata may be attached")
            out._metadata = self.decode(attrs["_metadata"])
        return out

    def _float(self, body):
        if body not in ("nan", "inf", "-inf"):
            raise FormatError(f"float: {_short(body)} is not nan, inf or -inf")
        return float(body)

    def _complex(self, body):
        parts = _expect(body, list, "complex")
        if len(parts) != 2 or not all(type(p) in (int, float, str) for p in parts):
            raise FormatError("complex: expected [real, imag]")
        try:
            return complex(float(parts[0]), float(parts[1]))
        except ValueError:
            raise FormatError("complex: bad number") from None

    def _bytes(self, body):
        return self.container.raw(_expect(body, str, "bytes")).tobytes()

    def _np_scalar(self, body):
        if isinstance(body, list) and body and isinstance(body[0], str):
            _format.with_ml_dtypes(body[0])
        if not (isinstance(body, list) and len(body) == 2 and body[0] in _format.NAMED_DTYPES):
            raise FormatError("np_scalar: expected [dtype, value]")
        value = self.decode(body[1])
        if type(value) not in (bool, int, float, complex):
            raise FormatError("np_scalar: the value must be a number")
        try:
            return np.array(value, dtype=_format.NAMED_DTYPES[body[0]])[()]
        except (OverflowError, ValueError, TypeError):
            raise FormatError("np_scalar: the value does not fit its dtype") from None

    def _dtype(self, body):
        if body not in dtypes._BY_NAME:
            raise FormatError(f"dtype: unknown dtype {_short(body)}")
        return dtypes._BY_NAME[body]

    def _device(self, body):
        try:
            return Device(_expect(body, str, "device"))
        except (RuntimeError, ValueError):
            raise FormatError(f"device: bad device {_short(body)}") from None

    def _pickle(self, body):
        body = _expect(body, dict, "pickle")
        refs = _expect(body.get("refs"), list, "pickle refs")
        data = self.container.raw(_expect(body.get("data"), str, "pickle data")).tobytes()

        def persistent_load(pid):
            if not (isinstance(pid, tuple) and len(pid) == 2 and pid[0] == "ember"
                    and type(pid[1]) is int and 0 <= pid[1] < len(refs)):
                raise pickle.UnpicklingError(f"unknown persistent id {_short(pid)}")
            return self.decode(refs[pid[1]])

        return self.unpickle(data, persistent_load)

    # -- arrays -------------------------------------------------------------

    def _array(self, ref, tensor: bool):
        ref = _expect(ref, dict, "tensor" if tensor else "ndarray")
        key = ref.get("id")
        if type(key) is not int:
            raise FormatError("tensor: missing id")
        if key in self._memo:
            out = self._memo[key]
            if isinstance(out, Tensor) != tensor:
                raise FormatError(f"id {key} refers to both a tensor and an array")
            return out
        if "data" not in ref:
            raise FormatError(f"reference to id {key} before its definition")
        array = self._view(ref)
        if not tensor:
            self._memo[key] = array
            return array
        if not dtypes.is_known_numpy(array.dtype):
            raise FormatError(f"tensor of dtype {array.dtype}, which ember does not have")
        t = _make(array)
        saved = ref.get("device", "cpu")
        if not isinstance(saved, str):
            raise FormatError("tensor: device must be a string")
        t = self.place(t, saved)
        requires_grad = ref.get("requires_grad", False) is True
        if ref.get("param", False) is True:
            t = _parameter_class()(t, requires_grad=requires_grad)
        elif requires_grad:
            t.requires_grad_(True)
        self._memo[key] = t
        return t

    def _view(self, ref) -> np.ndarray:
        name = _expect(ref["data"], str, "tensor data")
        view = ref.get("view")
        if view is None:
            if name not in self._entries:
                self._entries[name] = self.container.entry(name)
            return self._entries[name]
        if not (isinstance(view, list) and len(view) == 4):
            raise FormatError("tensor view: expected [dtype, shape, strides, offset]")
        dtname, shape, strides, offset = view
        if isinstance(dtname, str):
            _format.with_ml_dtypes(dtname)
        dtype = _format.NAMED_DTYPES.get(dtname) if isinstance(dtname, str) else None
        if dtype is None:
            raise FormatError(f"tensor view: unknown dtype {_short(dtname)}")
        if not (isinstance(shape, list) and isinstance(strides, list)
                and len(shape) == len(strides) <= self._MAX_DIMS
                and all(type(d) is int and d >= 0 for d in shape)
                and all(type(s) is int for s in strides) and type(offset) is int):
            raise FormatError("tensor view: bad shape, strides or offset")
        raw = self.container.raw(name)
        numel = math.prod(shape)
        lo = hi = offset
        for n, s in zip(shape, strides):
            lo, hi = (lo + (n - 1) * s, hi) if s < 0 else (lo, hi + (n - 1) * s)
        if numel and (lo < 0 or hi + dtype.itemsize > len(raw)):
            raise FormatError(f"tensor view of shape {shape} and strides {strides} at byte "
                              f"{offset} reaches outside entry {name!r} ({len(raw)} bytes)")
        if numel == 0:
            return np.empty(shape, dtype=dtype)
        return np.ndarray(tuple(shape), dtype=dtype, buffer=raw, offset=offset,
                          strides=tuple(strides))


def _expect(value, kind, what: str):
    if not isinstance(value, kind) or isinstance(value, bool):
        raise FormatError(f"{what}: expected a {kind.__name__}, got {_short(value)}")
    return value


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
