"""A safe encoding for the object collectives (``broadcast_object_list``, ``all_gather_object``).

PyTorch pickles the objects, so a rank that receives them runs whatever code the sender's
bytes name.  ember encodes instead: a JSON description of plain data plus raw byte blobs for
arrays, and decoding only ever builds plain data.  What can be sent:

    None, bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset,
    NumPy arrays and scalars (numeric and bool dtypes), ember tensors, dtypes and devices

(nested freely; no cycles).  Anything else raises a TypeError that names its type, so a
user sees at once to convert e.g. a dataclass into a dict.

Layout: ``b"EMBROBJ1"`` + header length (8 bytes, little-endian) + UTF-8 JSON header +
blobs.  In the header every dict is ``{"$d": [[key, value], ...]}`` (keys of any encodable
type) and every non-JSON value is a one-key dict with a ``$`` tag, so nothing is ambiguous.
"""

from __future__ import annotations

import json

import numpy as np
from .._core.device import device as device_type
from .._core.dtype import _dtype_by_name, bfloat16, dtype as dtype_type
from .._core.tensor import Tensor
from .._core.tensor import _make
from ._collectives import _pg, _root, _run

MAGIC = b"EMBROBJ1"
_ARRAY_KINDS = "biufc"


def encode(obj) -> bytes:
    """The bytes of `obj` (see the module docstring for what it may contain)."""
    blobs: list = []
    tree = _encode(obj, blobs, set())
    header = json.dumps({"v": tree, "n": [len(b) for b in blobs]},
                        separators=(",", ":")).encode("utf-8")
    return b"".join([MAGIC, len(header).to_bytes(8, "little"), header, *blobs])


def decode(data) -> object:
    """The object `encode` made these bytes from.  Never runs code from the data."""
    data = bytes(data)
    if not data.startswith(MAGIC):
        raise ValueError("not an ember object encoding (bad magic bytes)")
    n = int.from_bytes(data[8:16], "little")
    head = json.loads(data[16: 16 + n].decode("utf-8"))
    blobs, pos = [], 16 + n
    for size in head["n"]:
        blobs.append(data[pos: pos + size])
        pos += size
    return _decode(head["v"], blobs)


def _blob(blobs: list, raw: bytes) -> int:
    blobs.append(raw)
    return len(blobs) - 1


def _array_meta(array: np.ndarray, blobs: list) -> dict:
    if array.dtype.kind not in _ARRAY_KINDS and array.dtype.name != "bfloat16":
        raise TypeError(f"cannot encode a NumPy array of dtype {array.dtype} safely "
                        "(only bool, integer, floating and complex arrays)")
    return {"dtype": array.dtype.name, "shape": list(array.shape),
            "blob": _blob(blobs, array.tobytes(order="C"))}


def _encode(obj, blobs: list, active: set):
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if type(obj) in (int, float):
        return obj
    if type(obj) is complex:
        return {"$c": [obj.real, obj.imag]}
    if isinstance(obj, (bytes, bytearray)):
        return {"$b": _blob(blobs, bytes(obj))}
    if isinstance(obj, Tensor):
        meta = _array_meta(obj.detach().cpu().numpy(), blobs)
        meta["dtype"] = obj.dtype.name
        meta["requires_grad"] = bool(obj.requires_grad)
        meta["device"] = str(obj.device)
        return {"$tensor": meta}
    if isinstance(obj, np.ndarray):
        return {"$nd": _array_meta(obj, blobs)}
    if isinstance(obj, np.generic):
        return {"$ns": _array_meta(np.asarray(obj), blobs)}
    if isinstance(obj, dtype_type):
        return {"$dtype": obj.name}
    if isinstance(obj, device_type):
        return {"$device": str(obj)}
    if isinstance(obj, (list, tuple, dict, set, frozenset)):
        if id(obj) in active:
            raise ValueError("cannot encode an object that contains itself (a cycle)")
        active.add(id(obj))
        try:
            if isinstance(obj, dict):
                return {"$d": [[_encode(k, blobs, active), _encode(v, blobs, active)]
                               for k, v in obj.items()]}
            items = [_encode(v, blobs, active) for v in obj]
        finally:
            active.discard(id(obj))
        if type(obj) is list:
            return items
        tag = {tuple: "$t", set: "$set", frozenset: "$fset", list: "$t"}.get(type(obj))
        if tag is None:  # a subclass (namedtuple...): sent as its base container
            tag = "$t" if isinstance(obj, tuple) else "$set" if isinstance(obj, set) else (
                "$fset" if isinstance(obj, frozenset) else None)
            if tag is None:
                return items
        return {tag: items}
    if isinstance(obj, (int, float)):  # int/float subclasses other than bool
        return _encode(int(obj) if isinstance(obj, int) else float(obj), blobs, active)
    raise TypeError(
        f"cannot send an object of type {type(obj).__module__}.{type(obj).__qualname__}: "
        "ember's object collectives encode plain data only (None, bool, int, float, complex, "
        "str, bytes, list, tuple, dict, set, NumPy arrays, tensors), never pickle; convert "
        "it to such containers first"
    )


def _numpy_dtype(name: str):
    if name == "bfloat16":
        return bfloat16.np_dtype   # (loads ml_dtypes, and ember's tables learn it)
    dt = np.dtype(name)
    if dt.kind not in _ARRAY_KINDS:
        raise ValueError(f"refusing to decode an array of dtype {name}")
    return dt


def _array(meta: dict, blobs: list) -> np.ndarray:
    dt = _numpy_dtype(meta["dtype"])
    shape = tuple(int(d) for d in meta["shape"])
    return np.frombuffer(blobs[meta["blob"]], dtype=dt).reshape(shape).copy()


def _decode(tree, blobs: list):
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    if isinstance(tree, list):
        return [_decode(v, blobs) for v in tree]
    if not isinstance(tree, dict) or len(tree) != 1:
        raise ValueError("malformed ember object encoding")
    (tag, value), = tree.items()
    if tag == "$d":
        return {_hashable(_decode(k, blobs)): _decode(v, blobs) for k, v in value}
    if tag == "$t":
        return tuple(_decode(v, blobs) for v in value)
    if tag == "$set":
        return {_hashable(_decode(v, blobs)) for v in value}
    if tag == "$fset":
        return frozenset(_hashable(_decode(v, blobs)) for v in value)
    if tag == "$c":
        return complex(value[0], value[1])
    if tag == "$b":
        return bytes(blobs[value])
    if tag == "$nd":
        return _array(value, blobs)
    if tag == "$ns":
        return _array(value, blobs)[()]
    if tag == "$tensor":
        return _tensor(value, blobs)
    if tag == "$dtype":
        return _dtype_by_name(value)
    if tag == "$device":
        return device_type(value)
    raise ValueError(f"malformed ember object encoding (unknown tag {tag!r})")


def _hashable(value):
    if isinstance(value, list):  # a key that was a list cannot be one again: make it a tuple
        return tuple(_hashable(v) for v in value)
    return value


def _tensor(meta: dict, blobs: list):
    t = _make(_array(meta, blobs))
    device = meta.get("device", "cpu")
    if device != "cpu":
        t = t.to(device)
    if meta.get("requires_grad"):
        t.requires_grad_(True)
    return t


# ---- the object collectives -------------------------------------------------------------
# Each encodes its objects, exchanges the byte counts, then the bytes (padded to the
# largest count so that the collectives move equal parts).


def _bytes_of(obj) -> np.ndarray:
    return np.frombuffer(encode(obj), dtype=np.uint8)


def _padded(data: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=np.uint8)
    out[: data.size] = data
    return out


def _exchange_sizes(pg, op: str, n: int) -> np.ndarray:
    mine = np.array([n], dtype=np.int64)
    sizes = np.empty(pg.size(), dtype=np.int64)
    _run(pg, op, lambda: f"{op}(sizes)", lambda b: b.allgather(mine, sizes))
    return sizes


def all_gather_object(object_list: list, obj, group=None) -> None:
    """``object_list[i]`` gets rank i's `obj` (encoded safely, see the module docstring)."""
    pg = _pg(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have one entry per rank "
                         f"({pg.size()}), got {len(object_list)}")
    data = _bytes_of(obj)
    sizes = _exchange_sizes(pg, "all_gather_object", data.size)
    width = int(sizes.max())
    recv = np.empty(width * pg.size(), dtype=np.uint8)
    _run(pg, "all_gather_object", lambda: f"all_gather_object(bytes[{width}])",
         lambda b: b.allgather(_padded(data, width), recv))
    for i in range(pg.size()):
        object_list[i] = decode(recv[i * width: i * width + int(sizes[i])])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """Rank `dst` gets every rank's `obj` in ``object_gather_list`` (None elsewhere)."""
    pg = _pg(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather_object")
    is_root = pg.rank() == root
    if is_root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must have one entry per rank "
                         f"({pg.size()}) on the destination rank")
    data = _bytes_of(obj)
    sizes = _exchange_sizes(pg, "gather_object", data.size)
    width = int(sizes.max())
    recv = np.empty(width * pg.size(), dtype=np.uint8) if is_root else None
    _run(pg, "gather_object", lambda: f"gather_object(bytes[{width}], dst={pg._ranks[root]})",
         lambda b: b.gather(_padded(data, width), recv, root))
    if is_root:
        for i in range(pg.size()):
            object_gather_list[i] = decode(recv[i * width: i * width + int(sizes[i])])


def broadcast_object_list(object_list: list, src=None, group=None, device=None,
                          group_src=None) -> None:
    """Fill `object_list` on every rank with the objects of rank `src`'s list (same length)."""
    pg = _pg(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "broadcast_object_list")
    is_root = pg.rank() == root
    data = _bytes_of(list(object_list)) if is_root else None
    size = np.array([0 if data is None else data.size], dtype=np.int64)
    _run(pg, "broadcast_object_list", lambda: "broadcast_object_list(size)",
         lambda b: b.broadcast(size, root))
    buf = data.copy() if is_root else np.empty(int(size[0]), dtype=np.uint8)
    _run(pg, "broadcast_object_list", lambda: f"broadcast_object_list(bytes[{buf.size}])",
         lambda b: b.broadcast(buf, root))
    if is_root:
        return
    values = decode(buf)
    if len(values) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {pg._ranks[root]} sent {len(values)} "
                         f"objects but this rank's object_list has {len(object_list)} entries")
    object_list[:] = values


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list=None,
                        src=None, group=None, group_src=None) -> None:
    """Rank i gets ``scatter_object_input_list[i]`` of rank `src` as
    ``scatter_object_output_list[0]``."""
    pg = _pg(group)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    root = _root(pg, src, group_src, "scatter_object_list")
    is_root = pg.rank() == root
    width = np.zeros(1, dtype=np.int64)
    parts = None
    if is_root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError("scatter_object_list: scatter_object_input_list must have one "
                             f"entry per rank ({pg.size()}) on the source rank")
        parts = [_bytes_of(o) for o in scatter_object_input_list]
        width[0] = 8 + max(p.size for p in parts)
    _run(pg, "scatter_object_list", lambda: "scatter_object_list(size)",
         lambda b: b.broadcast(width, root))
    w = int(width[0])
    send = None
    if is_root:
        send = np.concatenate([_padded(np.concatenate(
            [np.frombuffer(p.size.to_bytes(8, "little"), np.uint8), p]), w) for p in parts])
    recv = np.empty(w, dtype=np.uint8)
    _run(pg, "scatter_object_list", lambda: f"scatter_object_list(bytes[{w}])",
         lambda b: b.scatter(send, recv, root))
    n = int.from_bytes(recv[:8].tobytes(), "little")
    scatter_object_output_list[0] = decode(recv[8: 8 + n])
