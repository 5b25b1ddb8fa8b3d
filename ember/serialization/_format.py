"""The container: the safetensors layout, written and read by the ``safetensors`` library.

A file is ``[8-byte little-endian header length N][N bytes of JSON][data]``.  The JSON
maps each entry name to ``{"dtype", "shape", "data_offsets"}`` and holds a
``"__metadata__"`` map of strings.  The library writes it (``serialize_file`` for a path,
``serialize`` for a file object), choosing where each entry goes (by alignment, then
name), and reads it (``safe_open`` for a file on disk, ``deserialize`` for bytes), checking
on the way in what a hostile header could lie about: the header length, the JSON, dtypes,
shapes against byte counts, and that the entries tile the data section exactly.  Its
errors become :class:`FormatError`.

ember adds, in ``__metadata__`` (string values, per the spec), a format marker, the nested
structure of the saved object as JSON (see ``_structure.py``) and two checksums, so that
corruption is caught, not only malformed files:

- ``ember.header_checksum``: SHA-256 of the entry table and the structure;
- ``ember.checksum``: ``"<algorithm>:<hex digest>"`` over the data.

The algorithm ember writes, ``sha256-crc32-entries-1m``, does not depend on where the
library puts the entries: the header checksum covers ``[name, dtype, shape]`` of every
entry in name order, and the data checksum is SHA-256 over the header checksum and the
CRC-32 of every 1 MiB piece of every entry, in name order.  CRC-32 comes from ``zlib``
(standard library, several GB/s, releases the GIL: large files are hashed on a few
threads).  Files written by earlier embers use ``sha256-xxh3-128-1m`` or
``sha256-crc32-1m``: their header checksum also covers each entry's offsets, in the order
of the header, and the data checksum runs over 1 MiB chunks of the whole data section.
They are still verified (XXH3 through the optional ``xxhash`` package; without it the
data of such a file is not checked, with a warning).

None of these is cryptographic over the data: anyone who edits a file can recompute them.
They guard against accidents (bit flips, torn, zeroed or misplaced blocks), not tampering,
which is why loading never trusts a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import safetensors

from .._core import dtype as dtypes

CHUNK = 1 << 20  # bytes per checksummed piece
CHECKSUM_ALGO = "sha256-crc32-entries-1m"
XXH3_CHECKSUM_ALGO = "sha256-xxh3-128-1m"  # ember before the safetensors library
LEGACY_CHECKSUM_ALGO = "sha256-crc32-1m"  # ember before XXH3
_PARALLEL_BYTES = 16 * CHUNK  # below this, hashing on one thread is as fast
_MAX_THREADS = 4

# safetensors dtype code <-> NumPy dtype (the spec has no complex128: we store it as F64
# with a trailing dimension of 2, and the structure records the complex view).
_CODES = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "I16": np.dtype(np.int16), "U16": np.dtype(np.uint16), "I32": np.dtype(np.int32),
    "U32": np.dtype(np.uint32), "I64": np.dtype(np.int64), "U64": np.dtype(np.uint64),
    "F16": np.dtype(np.float16), "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
    "C64": np.dtype(np.complex64),
}
_CODE_OF = {dt: code for code, dt in _CODES.items()}

# Names used in the structure for the dtypes of views and NumPy arrays.  A fixed table:
# a dtype string from a file is never handed to np.dtype().
NAMED_DTYPES = {dt.name: dt for dt in _CODES.values()}
NAMED_DTYPES["complex128"] = np.dtype(np.complex128)

# The codes and names of ml_dtypes' types, added to the tables above by `with_ml_dtypes`
# once a file or an array needs them (importing ml_dtypes takes ~0.5 s).
_ML_CODES = {"BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
_ML_NAMES = frozenset(_ML_CODES.values())


def with_ml_dtypes(key) -> None:
    """Add ml_dtypes' types to the tables when `key` (a code, a dtype name or a NumPy
    dtype) is one of theirs and they are not there yet."""
    name = _ML_CODES.get(key, key) if isinstance(key, str) else getattr(key, "name", None)
    if name not in _ML_NAMES or "BF16" in _CODES:
        return
    import ml_dtypes

    dtypes.load_bfloat16()   # (ember's own dtype tables learn bfloat16 too)
    for code, attribute in _ML_CODES.items():
        dt = np.dtype(getattr(ml_dtypes, attribute))
        _CODES[code], _CODE_OF[dt], NAMED_DTYPES[dt.name] = dt, code, dt


class FormatError(pickle.UnpicklingError, ValueError):
    """A file that is not a well-formed ember, safetensors or PyTorch file (the message
    says what is wrong).  An ``UnpicklingError``, as PyTorch raises for a file it cannot
    read, and a ``ValueError``."""


def code_of(dtype: np.dtype) -> str:
    """The safetensors code of a NumPy dtype that can be stored directly."""
    with_ml_dtypes(dtype)
    try:
        return _CODE_OF[dtype]
    except KeyError:
        raise TypeError(f"ember.save: cannot store arrays of dtype {dtype}") from None


def storable(dtype: np.dtype) -> bool:
    """Whether arrays of this dtype can go into the container (complex128 as F64 pairs)."""
    with_ml_dtypes(dtype)
    return dtype in _CODE_OF or dtype == np.complex128


# ---------------------------------------------------------------------------
# checksums


def _byte_view(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array (works for ml_dtypes dtypes too)."""
    return memoryview(array.reshape(-1).view(np.uint8))


def _crc(piece) -> bytes:
    return zlib.crc32(piece).to_bytes(4, "little")


def _hash_pieces(pieces: list) -> bytes:
    """CRC-32 of each piece, joined; on a few threads when there is much to hash."""
    total = sum(len(p) for p in pieces)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = min(_MAX_THREADS, cpus or 1)
    if total < _PARALLEL_BYTES or threads <= 1:
        return b"".join(map(_crc, pieces))
    # A pool per call, never a global one: a fork() cannot inherit dead workers.
    with ThreadPoolExecutor(threads) as pool:
        return b"".join(pool.map(_crc, pieces))


def _entry_pieces(arrays: dict) -> list:
    """The 1 MiB pieces of every entry, entries in name order."""
    pieces = []
    for name in sorted(arrays):
        data = _byte_view(arrays[name])
        pieces.extend(data[pos:pos + CHUNK] for pos in range(0, len(data), CHUNK))
    return pieces


def _header_checksum(rows: list, structure: str) -> str:
    """SHA-256 of the entry table rows and the structure."""
    h = hashlib.sha256(b"ember-header-v1\0")
    h.update(json.dumps(rows, separators=(",", ":")).encode())
    h.update(b"\0")
    h.update(structure.encode())
    return h.hexdigest()


_TAGS = {CHECKSUM_ALGO: b"ember-data-v3\0", XXH3_CHECKSUM_ALGO: b"ember-data-v2\0",
         LEGACY_CHECKSUM_ALGO: b"ember-data-v1\0"}


def _data_checksum(algo: str, header_digest: str, piece_digests: bytes) -> str:
    """SHA-256 of the header checksum and the digest of every piece of the data."""
    return hashlib.sha256(_TAGS[algo] + header_digest.encode() + piece_digests).hexdigest()


def _rows(table: dict, algo: str) -> list:
    """The entry table as the header checksum of `algo` covers it."""
    if algo == CHECKSUM_ALGO:
        return [[name, code, list(shape)] for name, (code, shape, _) in sorted(table.items())]
    return [[name, code, list(shape), list(offsets)]  # header order, with offsets
            for name, (code, shape, offsets) in table.items()]


def _section_digests(buffers: list, algo: str) -> bytes:
    """Legacy data checksums: a digest per 1 MiB chunk of the data section (`buffers`, in
    file order, tile it), chunks running across entry boundaries."""
    if algo == XXH3_CHECKSUM_ALGO:
        import xxhash

        start, update, finish = xxhash.xxh3_128, _update_hasher, lambda h: h.digest()
    else:
        start, finish = lambda: 0, lambda crc: crc.to_bytes(4, "little")
        update = lambda crc, piece: zlib.crc32(piece, crc)  # noqa: E731
    out, state, filled = [], start(), 0
    for buf in buffers:
        data, pos = memoryview(buf), 0
        while pos < len(data):
            take = min(CHUNK - filled, len(data) - pos)
            state = update(state, data[pos:pos + take])
            filled, pos = filled + take, pos + take
            if filled == CHUNK:
                out.append(finish(state))
                state, filled = start(), 0
    if filled:
        out.append(finish(state))
    return b"".join(out)


def _update_hasher(h, piece):
    h.update(piece)
    return h


def _has_xxhash() -> bool:
    try:
        import xxhash  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------
# writing


def write(target, entries: list, metadata: dict, structure: str) -> None:
    """Write an ember container to `target`, a path or a writable binary file object.

    `entries` is a list of ``(name, array)`` with C-contiguous arrays of storable dtypes;
    `metadata` the string map for ``__metadata__``, to which the structure and the two
    checksums are added.
    """
    arrays = {}
    for name, array in entries:
        if array.dtype == np.complex128:
            array = array.view(np.float64).reshape(array.shape + (2,))
        code_of(array.dtype)  # TypeError for what the format cannot hold
        arrays[name] = array
    table = {name: (code_of(a.dtype), a.shape, None) for name, a in arrays.items()}
    meta = dict(metadata)
    meta["ember.structure"] = structure
    meta["ember.header_checksum"] = _header_checksum(_rows(table, CHECKSUM_ALGO), structure)
    digest = _data_checksum(CHECKSUM_ALGO, meta["ember.header_checksum"],
                            _hash_pieces(_entry_pieces(arrays)))
    meta["ember.checksum"] = f"{CHECKSUM_ALGO}:{digest}"
    # The library reads each array through its address: `arrays` keeps them alive.
    specs = {name: safetensors.TensorSpec(dtype=a.dtype.name, shape=list(a.shape),
                                          data_ptr=a.ctypes.data, data_len=a.nbytes)
             for name, a in arrays.items()}
    if isinstance(target, (str, os.PathLike)):
        safetensors.serialize_file(specs, target, metadata=meta)
    else:
        target.write(safetensors.serialize(specs, metadata=meta))


# ---------------------------------------------------------------------------
# reading


class Container:
    """A parsed container: its entry table, metadata and the bytes of each entry.

    `table` maps each entry name, in the order of the header, to ``(code, shape,
    offsets)``; `buffers` maps it to a uint8 array of its bytes: one allocation per entry
    when the file was read (so dropping some tensors frees their memory), views of the
    mapping with mmap (``verified_data`` False: the data is then not checksummed).
    """

    def __init__(self, table: dict, metadata: dict, buffers: dict, verified_data: bool):
        self.table = table
        self.metadata = metadata
        self.buffers = buffers
        self._verify_data = verified_data

    @property
    def is_ember(self) -> bool:
        return "ember.format" in self.metadata

    def verify(self) -> None:
        """Check the ember checksums (FormatError on mismatch).

        The header checksum (entry table and structure) is always checked; the data
        checksum only when the data was read (not with mmap).
        """
        structure = self.metadata.get("ember.structure")
        algo, _, digest = self.metadata.get("ember.checksum", "").partition(":")
        header_digest = self.metadata.get("ember.header_checksum")
        if not isinstance(structure, str) or header_digest is None:
            raise FormatError("ember file without its structure or checksum (corrupt?)")
        if algo not in _TAGS:
            raise FormatError(f"unknown or missing checksum algorithm {algo!r:.60}")
        if header_digest != _header_checksum(_rows(self.table, algo), structure):
            raise FormatError("header checksum mismatch: the file is corrupt or was modified")
        if not self._verify_data:
            return
        if algo == CHECKSUM_ALGO:
            pieces = _hash_pieces(_entry_pieces(self.buffers))
        elif algo == XXH3_CHECKSUM_ALGO and not _has_xxhash():
            warnings.warn("this file was written by an older ember with XXH3 checksums; "
                          "install `xxhash` to verify its data (only its header was "
                          "checked)", stacklevel=4)
            return
        else:
            order = sorted(self.table, key=lambda name: self.table[name][2][0])
            pieces = _section_digests([self.buffers[name] for name in order], algo)
        if _data_checksum(algo, header_digest, pieces) != digest:
            raise FormatError("data checksum mismatch: the file is corrupt or was modified")

    def entry(self, name: str) -> np.ndarray:
        """The array of one entry (a view of its bytes, no copy)."""
        raw = self.raw(name)
        code, shape, _ = self.table[name]
        with_ml_dtypes(code)
        dtype = _CODES[code]
        if not raw.flags.aligned or raw.__array_interface__["data"][0] % dtype.alignment:
            raw = raw.copy()  # a foreign file with unaligned data: copy to align
        return raw.view(dtype).reshape(shape)

    def raw(self, name: str) -> np.ndarray:
        """The bytes of one entry as a uint8 array."""
        if name not in self.table:
            raise FormatError(f"the file has no entry named {name!r}")
        return self.buffers[name]


def _library_errors(action):
    """Run `action`; the library's complaints about a malformed file as FormatError."""
    try:
        return action()
    except safetensors.SafetensorError as exc:
        raise FormatError(f"not a valid safetensors/ember file: {exc}") from None


def _header_of(head: bytes) -> tuple:
    """The table and metadata of a header the library has already validated."""
    n = int.from_bytes(head[:8], "little")
    header = json.loads(head[8:8 + n])
    metadata = header.pop("__metadata__", None) or {}
    table = {}
    for name, e in header.items():
        with_ml_dtypes(e["dtype"])
        if e["dtype"] not in _CODES:
            raise FormatError(f"entry {name!r} has dtype {e['dtype']}, which ember does not "
                              "have")
        table[name] = (e["dtype"], tuple(e["shape"]), tuple(e["data_offsets"]))
    return table, metadata


def _read_head(f) -> bytes:
    """The length prefix and header of a file the library has validated, from its start."""
    f.seek(0)
    prefix = f.read(8)
    return prefix + f.read(int.from_bytes(prefix, "little"))


def read_path(path) -> Container:
    """Read the container that fills the file at `path`."""
    with _library_errors(lambda: safetensors.safe_open(path, framework="numpy")) as st:
        with open(path, "rb") as f:
            table, metadata = _header_of(_read_head(f))
        buffers = {name: _library_errors(lambda n=name: st.get_tensor(n)) for name in table}
    return Container(table, metadata, _as_bytes(buffers, table), True)


def read_bytes(data: bytes) -> Container:
    """Read the container that fills `data`."""
    entries = _library_errors(lambda: safetensors.deserialize(data))
    table, metadata = _header_of(data[:8 + int.from_bytes(data[:8], "little")])
    buffers = {name: np.frombuffer(e["data"], dtype=np.uint8) for name, e in entries}
    return Container(table, metadata, _as_bytes(buffers, table), True)


def map_container(mapped: np.ndarray, path) -> Container:
    """A container over a memory map of it: entries are views of the mapping.

    With `path` (the file holds the container alone), the library validates the header
    without touching the data; otherwise it must read the mapped bytes once to do so.
    """
    if path is not None:
        _library_errors(lambda: safetensors.safe_open(path, framework="numpy").keys())
    else:
        _library_errors(lambda: safetensors.deserialize(mapped.tobytes()))
    n = int.from_bytes(bytes(mapped[:8]), "little")
    table, metadata = _header_of(bytes(mapped[:8 + n]))
    data = mapped[8 + n:].view(np.ndarray)  # plain arrays over the mapping, as elsewhere
    buffers = {name: data[lo:hi] for name, (_, _, (lo, hi)) in table.items()}
    return Container(table, metadata, buffers, False)


def _as_bytes(arrays: dict, table: dict) -> dict:
    """Each entry's array as a flat uint8 array of its bytes, checked against the table."""
    out = {}
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        raw = array.reshape(-1).view(np.uint8)
        _, _, (lo, hi) = table[name]
        if raw.size != hi - lo:
            raise FormatError(f"entry {name!r}: read {raw.size} bytes, the header says "
                              f"{hi - lo} (the file changed while being read?)")
        out[name] = raw
    return out
