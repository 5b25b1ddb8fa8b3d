"""The container: safetensors layout, written and read with NumPy alone.

A file is ``[8-byte little-endian header length N][N bytes of JSON][data]``.  The JSON
maps each entry name to ``{"dtype", "shape", "data_offsets"}`` (offsets relative to the
start of the data section) and may hold a ``"__metadata__"`` map of strings.  Entries
tile the data section exactly, without gaps or overlaps, as the safetensors spec asks,
so any safetensors reader can open our files and we can open theirs.

ember adds, in ``__metadata__`` (string values, per the spec), a format marker, the
nested structure of the saved object as JSON (see ``_structure.py``) and two checksums:
``ember.header_checksum``, SHA-256 of the entry table and the structure, and
``ember.checksum``, SHA-256 of that and of the CRC-32 of every 1 MiB chunk of the data.
CRC-32 (zlib, ~1.5 GB/s a core, computed on worker threads while the main thread reads
or writes) is several times cheaper than hashing all the data with SHA-256 and catches
the corruption a checksum is for (bit flips, torn or zeroed blocks).  It does not guard
against tampering: anyone can recompute it, which is why loading never trusts a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes is a declared dependency
    ml_dtypes = None

MAX_HEADER = 100_000_000  # the safetensors limit; a larger header is refused unread
CHUNK = 1 << 20  # bytes per CRC-32 chunk of the data section
IO_BLOCK = 16 << 20  # bytes per read/write call
CHECKSUM_ALGO = "sha256-crc32-1m"
_PLACEHOLDER = "0" * 64

# safetensors dtype code <-> NumPy dtype (the spec has no complex128: we store it as F64
# with a trailing dimension of 2, and the structure records the complex view).
_CODES = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "I16": np.dtype(np.int16), "U16": np.dtype(np.uint16), "I32": np.dtype(np.int32),
    "U32": np.dtype(np.uint32), "I64": np.dtype(np.int64), "U64": np.dtype(np.uint64),
    "F16": np.dtype(np.float16), "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
    "C64": np.dtype(np.complex64),
}
if ml_dtypes is not None:
    _CODES["BF16"] = np.dtype(ml_dtypes.bfloat16)
    _CODES["F8_E4M3"] = np.dtype(ml_dtypes.float8_e4m3fn)
    _CODES["F8_E5M2"] = np.dtype(ml_dtypes.float8_e5m2)
_CODE_OF = {dt: code for code, dt in _CODES.items()}

# Names used in the structure for the dtypes of views and NumPy arrays.  A fixed table:
# a dtype string from a file is never handed to np.dtype().
NAMED_DTYPES = {dt.name: dt for dt in _CODES.values()}
NAMED_DTYPES["complex128"] = np.dtype(np.complex128)


class FormatError(ValueError):
    """A file that is not a well-formed container (the message says what is wrong)."""


def code_of(dtype: np.dtype) -> str:
    """The safetensors code of a NumPy dtype that can be stored directly."""
    try:
        return _CODE_OF[dtype]
    except KeyError:
        raise TypeError(f"ember.save: cannot store arrays of dtype {dtype}") from None


def storable(dtype: np.dtype) -> bool:
    """Whether arrays of this dtype can go into the container (complex128 as F64 pairs)."""
    return dtype in _CODE_OF or dtype == np.complex128


def _chunks(buffers) -> list:
    """Split a byte stream, given as consecutive buffers, into CHUNK-sized piece lists."""
    out, current, filled = [], [], 0
    for buf in buffers:
        pos, n = 0, len(buf)
        while pos < n:
            take = min(CHUNK - filled, n - pos)
            current.append(buf[pos:pos + take])
            filled += take
            pos += take
            if filled == CHUNK:
                out.append(current)
                current, filled = [], 0
    if current:
        out.append(current)
    return out


def _crc_group(chunks: list) -> bytes:
    out = bytearray()
    for pieces in chunks:
        crc = 0
        for piece in pieces:
            crc = zlib.crc32(piece, crc)
        out += crc.to_bytes(4, "little")
    return bytes(out)


class _ChunkCRCs:
    """The CRC-32 of each chunk, computed on worker threads (zlib releases the GIL), so
    that checksumming overlaps the reads and writes of the main thread."""

    _GROUP = 8  # chunks per task

    def __init__(self, nbytes: int):
        workers = min(4, os.cpu_count() or 1) if nbytes >= 4 * self._GROUP * CHUNK else 1
        # A pool per call, never a global one: a fork() cannot inherit dead workers.
        self._pool = ThreadPoolExecutor(workers) if workers > 1 else None
        self._parts: list = []

    def submit(self, chunks: list) -> None:
        for i in range(0, len(chunks), self._GROUP):
            group = chunks[i:i + self._GROUP]
            if self._pool is None:
                self._parts.append(_crc_group(group))
            else:
                self._parts.append(self._pool.submit(_crc_group, group))

    def digest(self) -> bytes:
        try:
            return b"".join(p if isinstance(p, bytes) else p.result() for p in self._parts)
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _header_checksum(rows: list, structure: str) -> str:
    """SHA-256 of the entry table (name, dtype, shape, offsets) and the structure."""
    h = hashlib.sha256(b"ember-header-v1\0")
    h.update(json.dumps(rows, separators=(",", ":")).encode())
    h.update(b"\0")
    h.update(structure.encode())
    return h.hexdigest()


def _data_checksum(header_digest: str, crcs: bytes) -> str:
    """SHA-256 of the header checksum and the CRC-32 of every chunk of the data."""
    return hashlib.sha256(b"ember-data-v1\0" + header_digest.encode() + crcs).hexdigest()


def _byte_view(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array (works for ml_dtypes dtypes too)."""
    return memoryview(array.reshape(-1).view(np.uint8))


# ---------------------------------------------------------------------------
# writing


def write(f, entries: list, metadata: dict, structure: str | None) -> None:
    """Write a container to the binary file object `f`.

    `entries` is a list of ``(name, array)`` with C-contiguous arrays of storable dtypes,
    already in file order; `metadata` the string map for ``__metadata__``.  With a
    `structure` (an ember file), the structure and the two checksums are added to it.
    """
    rows = []
    offset = 0
    for name, array in entries:
        code, shape = _code_and_shape(array)
        rows.append([name, code, shape, [offset, offset + array.nbytes]])
        offset += array.nbytes
    header = {}
    if metadata or structure is not None:
        meta = dict(metadata)
        if structure is not None:
            meta["ember.structure"] = structure
            meta["ember.header_checksum"] = _header_checksum(rows, structure)
            meta["ember.checksum"] = f"{CHECKSUM_ALGO}:{_PLACEHOLDER}"
        header["__metadata__"] = meta
    for name, code, shape, offsets in rows:
        header[name] = {"dtype": code, "shape": shape, "data_offsets": offsets}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data section starts 8-byte aligned
    seekable = structure is not None and _seekable(f)
    buffers = [_byte_view(array) for _, array in entries]
    crcs = _ChunkCRCs(offset if structure is not None else 0)
    try:
        if structure is not None:
            crcs.submit(_chunks(buffers))  # workers checksum while we write
        if structure is not None and not seekable:
            # A stream: the checksum must be known before the header goes out.
            digest = _data_checksum(meta["ember.header_checksum"], crcs.digest())
            text = text.replace(f"{CHECKSUM_ALGO}:{_PLACEHOLDER}".encode(),
                                f"{CHECKSUM_ALGO}:{digest}".encode(), 1)
        start = f.tell() if seekable else 0
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for data in buffers:
            for pos in range(0, len(data), IO_BLOCK):
                f.write(data[pos:pos + IO_BLOCK])
        if seekable:  # fill in the data checksum, now known
            digest = _data_checksum(meta["ember.header_checksum"], crcs.digest())
            end = f.tell()
            where = text.index(f'"ember.checksum":"{CHECKSUM_ALGO}:'.encode())
            where += len(f'"ember.checksum":"{CHECKSUM_ALGO}:')
            f.seek(start + 8 + where)
            f.write(digest.encode())
            f.seek(end)
    finally:
        crcs.close()


def _seekable(f) -> bool:
    try:
        return f.seekable()
    except (AttributeError, OSError, ValueError):
        return False


def _code_and_shape(array: np.ndarray):
    if array.dtype == np.complex128:
        return "F64", list(array.shape) + [2]
    return code_of(array.dtype), list(array.shape)


# ---------------------------------------------------------------------------
# reading


class Container:
    """A parsed container: its entry table, metadata and the bytes of each entry.

    `buffers` maps each entry name to a uint8 array of its bytes: one allocation per
    entry when the file was read (so dropping some tensors frees their memory), views
    of the mapping with mmap.
    """

    def __init__(self, table: dict, metadata: dict, buffers: dict, crcs: bytes | None):
        self.table = table
        self.metadata = metadata
        self.buffers = buffers
        self._crcs = crcs

    @property
    def is_ember(self) -> bool:
        return "ember.format" in self.metadata

    def verify(self) -> None:
        """Check the ember checksums (FormatError on mismatch).

        The header checksum (entry table and structure) is always checked; the data
        checksum only when the data was read (not with mmap).
        """
        structure = self.metadata.get("ember.structure")
        declared = self.metadata.get("ember.checksum", "")
        algo, _, digest = declared.partition(":")
        if not isinstance(structure, str) or "ember.header_checksum" not in self.metadata:
            raise FormatError("ember file without its structure or checksum (corrupt?)")
        if algo != CHECKSUM_ALGO:
            raise FormatError(f"unknown or missing checksum algorithm {algo!r}")
        rows = [[name, _CODE_OF[dtype], list(shape), list(offsets)]
                for name, (dtype, shape, offsets) in self.table.items()]
        if self.metadata["ember.header_checksum"] != _header_checksum(rows, structure):
            raise FormatError("header checksum mismatch: the file is corrupt or was modified")
        if self._crcs is not None:
            if _data_checksum(self.metadata["ember.header_checksum"], self._crcs) != digest:
                raise FormatError("data checksum mismatch: the file is corrupt or was "
                                  "modified")

    def entry(self, name: str) -> np.ndarray:
        """The array of one entry (a view of its bytes, no copy)."""
        raw = self.raw(name)
        dtype, shape, _ = self.table[name]
        if not raw.flags.aligned or raw.__array_interface__["data"][0] % dtype.alignment:
            raw = raw.copy()  # a foreign file with unaligned data: copy to align
        return raw.view(dtype).reshape(shape)

    def raw(self, name: str) -> np.ndarray:
        """The bytes of one entry as a uint8 array."""
        if name not in self.table:
            raise FormatError(f"the file has no entry named {name!r}")
        return self.buffers[name]


def _slices(table: dict, data: np.ndarray) -> dict:
    return {name: data[start:end] for name, (_, _, (start, end)) in table.items()}


def read_header(head: bytes, total: int | None):
    """Check the 8-byte length prefix against the limits and the file size; the length."""
    if len(head) < 8:
        raise FormatError("file too short to be a safetensors/ember file (truncated?)")
    n = int.from_bytes(head[:8], "little")
    if n > MAX_HEADER:
        raise FormatError(f"header length {n} is larger than the {MAX_HEADER}-byte limit: "
                          "not a safetensors/ember file, or corrupt")
    if total is not None and 8 + n > total:
        raise FormatError(f"header length {n} runs past the end of the {total}-byte file "
                          "(truncated?)")
    return n


def parse_header(text: bytes, data_len: int):
    """Validate the JSON header against the data length; returns (table, metadata)."""
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FormatError(f"the header is not valid JSON: {exc}") from None
    if not isinstance(header, dict):
        raise FormatError("the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise FormatError("__metadata__ must map strings to strings")
    table = {}
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"entry {name!r}: expected dtype, shape and data_offsets")
        code, shape, offsets = e["dtype"], e["shape"], e["data_offsets"]
        if code not in _CODES:
            raise FormatError(f"entry {name!r}: unknown dtype {code!r}")
        if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
            raise FormatError(f"entry {name!r}: shape must be a list of non-negative ints")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(_is_int(o) for o in offsets) and 0 <= offsets[0] <= offsets[1]):
            raise FormatError(f"entry {name!r}: bad data_offsets {offsets!r}")
        if offsets[1] > data_len:
            raise FormatError(f"entry {name!r}: data_offsets {offsets} run past the end of the "
                              f"{data_len}-byte data section (truncated?)")
        dtype = _CODES[code]
        numel = 1
        for d in shape:
            numel *= d
        if numel * dtype.itemsize != offsets[1] - offsets[0]:
            raise FormatError(f"entry {name!r}: shape {shape} of {code} needs "
                              f"{numel * dtype.itemsize} bytes, but data_offsets {offsets} "
                              f"hold {offsets[1] - offsets[0]}")
        table[name] = (dtype, tuple(shape), tuple(offsets))
        spans.append((offsets[0], offsets[1], name))
    spans.sort()
    pos = 0
    for start, end, name in spans:
        if start != pos:
            what = "overlaps the previous one" if start < pos else "leaves a gap before it"
            raise FormatError(f"entry {name!r}: data_offsets [{start}, {end}] {what}")
        pos = end
    if pos != data_len:
        raise FormatError(f"the entries cover {pos} bytes but the data section holds "
                          f"{data_len}")
    return table, metadata


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def read_stream(f, total: int | None, mmap_array: np.ndarray | None = None) -> Container:
    """Read a container from `f` (positioned at its start) or from a memory map of it."""
    if mmap_array is not None:
        total = len(mmap_array)
        head = bytes(mmap_array[:8])
        n = read_header(head, total)
        header_text = bytes(mmap_array[8:8 + n])
        data = mmap_array[8 + n:]
        table, metadata = parse_header(header_text, len(data))
        return Container(table, metadata, _slices(table, data), None)
    head = _read_exact(f, 8)
    n = read_header(head, total)
    header_text = _read_exact(f, n)
    if len(header_text) != n:
        raise FormatError(f"the file ends inside its {n}-byte header (truncated?)")
    if total is None:  # a stream of unknown length: read it whole
        data = np.frombuffer(bytearray(f.read()), dtype=np.uint8)
        table, metadata = parse_header(header_text, len(data))
        crcs = _ChunkCRCs(len(data))
        crcs.submit(_chunks([memoryview(data)]))
        return Container(table, metadata, _slices(table, data), crcs.digest())
    data_len = total - 8 - n
    table, metadata = parse_header(header_text, data_len)
    order = sorted(table, key=lambda name: table[name][2][0])  # the entries tile the data
    buffers = {}
    crcs = _ChunkCRCs(data_len)
    chunker = _Chunker(crcs)
    try:
        for name in order:
            start, end = table[name][2]
            buf = np.empty(end - start, dtype=np.uint8)
            view = memoryview(buf)
            pos = 0
            while pos < len(buf):
                got = f.readinto(view[pos:pos + IO_BLOCK])
                if not got:
                    raise FormatError(f"the file ended after {start + pos} of {data_len} data "
                                      "bytes (truncated?)")
                chunker.feed(view[pos:pos + got])  # workers checksum while we read on
                pos += got
            buffers[name] = buf
        chunker.finish()
        return Container(table, metadata, buffers, crcs.digest())
    finally:
        crcs.close()


class _Chunker:
    """Cuts a byte stream fed piece by piece into chunks and hands them to the workers."""

    def __init__(self, crcs: _ChunkCRCs):
        self._crcs = crcs
        self._current: list = []
        self._filled = 0
        self._ready: list = []

    def feed(self, piece: memoryview) -> None:
        pos, n = 0, len(piece)
        while pos < n:
            take = min(CHUNK - self._filled, n - pos)
            self._current.append(piece[pos:pos + take])
            self._filled += take
            pos += take
            if self._filled == CHUNK:
                self._ready.append(self._current)
                self._current, self._filled = [], 0
        if len(self._ready) >= _ChunkCRCs._GROUP:
            self._crcs.submit(self._ready)
            self._ready = []

    def finish(self) -> None:
        if self._current:
            self._ready.append(self._current)
        self._crcs.submit(self._ready)
        self._current, self._filled, self._ready = [], 0, []


def _read_exact(f, n: int) -> bytes:
    out = b""
    while len(out) < n:
        piece = f.read(n - len(out))
        if not piece:
            break
        out += piece
    return out
