"""The container: safetensors layout, written and read with NumPy alone.

A file is ``[8-byte little-endian header length N][N bytes of JSON][data]``.  The JSON
maps each entry name to ``{"dtype", "shape", "data_offsets"}`` (offsets relative to the
start of the data section) and may hold a ``"__metadata__"`` map of strings.  Entries
tile the data section exactly, without gaps or overlaps, as the safetensors spec asks,
so any safetensors reader can open our files and we can open theirs.  We pad the header
with spaces (the spec allows it) so that the data section starts at a multiple of 64
bytes, which makes reading it faster (see ``_read_buffer``).  A real file is read with
positional reads on a few threads at once (``_read_parallel``).

ember adds, in ``__metadata__`` (string values, per the spec), a format marker, the
nested structure of the saved object as JSON (see ``_structure.py``) and two checksums:
``ember.header_checksum``, SHA-256 of the entry table and the structure, and
``ember.checksum``, ``"<algorithm>:<hex digest>"`` over the data.  The algorithm
``sha256-xxh3-128-1m`` cuts the data section into 1 MiB chunks, takes the 128-bit XXH3 of
each, and hashes those digests and the header checksum with SHA-256.  XXH3 runs at memory
speed (tens of GB/s a core), so loading checks every byte at almost no cost: each chunk
is hashed right after it is read, while it is still in the CPU cache, on the thread that
read it.  Files written before XXH3 use ``sha256-crc32-1m`` (CRC-32 of each chunk
instead); they are still verified.

Both catch the corruption a checksum is for (bit flips, torn, zeroed or misplaced blocks),
but neither is cryptographic over the data: anyone who edits a file can recompute them.
They guard against accidents, not tampering, which is why loading never trusts a file.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import xxhash

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - ml_dtypes is a declared dependency
    ml_dtypes = None

MAX_HEADER = 100_000_000  # the safetensors limit; a larger header is refused unread
CHUNK = 1 << 20  # bytes per checksummed chunk of the data section (and per read call)
IO_BLOCK = 16 << 20  # bytes per write call
TASK_CHUNKS = 16  # chunks read and checked per task of the parallel reader
MAX_THREADS = 4  # threads that read (or checksum) at once
DATA_ALIGN = 64  # the data section of a file we write starts at a multiple of this
CHECKSUM_ALGO = "sha256-xxh3-128-1m"
LEGACY_CHECKSUM_ALGO = "sha256-crc32-1m"  # written by ember before XXH3; still verified
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


# ---------------------------------------------------------------------------
# checksums


def _xxh3_chunk(pieces: list) -> bytes:
    if len(pieces) == 1:
        return xxhash.xxh3_128_digest(pieces[0])
    h = xxhash.xxh3_128()
    for piece in pieces:
        h.update(piece)
    return h.digest()


def _crc32_chunk(pieces: list) -> bytes:
    crc = 0
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    return crc.to_bytes(4, "little")


# algorithm -> (digest of one chunk given as a list of byte pieces, domain tag).  Both
# functions release the GIL, so reader threads checksum in parallel.
_ALGORITHMS = {
    CHECKSUM_ALGO: (_xxh3_chunk, b"ember-data-v2\0"),
    LEGACY_CHECKSUM_ALGO: (_crc32_chunk, b"ember-data-v1\0"),
}


def _declared_algorithm(metadata: dict):
    """The data checksum algorithm an ember file declares, if we know it (else None)."""
    if "ember.format" not in metadata:
        return None
    algo = metadata.get("ember.checksum", "").partition(":")[0]
    return algo if algo in _ALGORITHMS else None


def _header_checksum(rows: list, structure: str) -> str:
    """SHA-256 of the entry table (name, dtype, shape, offsets) and the structure."""
    h = hashlib.sha256(b"ember-header-v1\0")
    h.update(json.dumps(rows, separators=(",", ":")).encode())
    h.update(b"\0")
    h.update(structure.encode())
    return h.hexdigest()


def _data_checksum(algo: str, header_digest: str, chunk_digests: bytes) -> str:
    """SHA-256 of the header checksum and the digest of every chunk of the data."""
    tag = _ALGORITHMS[algo][1]
    return hashlib.sha256(tag + header_digest.encode() + chunk_digests).hexdigest()


class _Tiling:
    """Consecutive byte buffers seen as one range: the pieces of them covering any span."""

    def __init__(self, buffers):
        self.views = [memoryview(b) for b in buffers]
        self.starts = []
        pos = 0
        for view in self.views:
            self.starts.append(pos)
            pos += len(view)
        self.nbytes = pos
        self.nchunks = -(-pos // CHUNK)

    def pieces(self, lo: int, hi: int) -> list:
        # The last buffer starting at or before `lo` holds it (any before it that start
        # there too are empty).
        i = bisect.bisect_right(self.starts, lo) - 1
        out = []
        while lo < hi:
            view, start = self.views[i], self.starts[i]
            take = min(hi, start + len(view)) - lo
            if take > 0:
                out.append(view[lo - start:lo - start + take])
                lo += take
            i += 1
        return out

    def chunk(self, c: int) -> tuple:
        """The byte span of chunk `c` and its pieces."""
        lo, hi = c * CHUNK, min((c + 1) * CHUNK, self.nbytes)
        return lo, self.pieces(lo, hi)


def _chunk_digests(tiling: _Tiling, algo: str) -> bytes:
    digest = _ALGORITHMS[algo][0]
    return b"".join(digest(tiling.chunk(c)[1]) for c in range(tiling.nchunks))


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
    placeholder = f"{CHECKSUM_ALGO}:{_PLACEHOLDER}"
    if metadata or structure is not None:
        meta = dict(metadata)
        if structure is not None:
            meta["ember.structure"] = structure
            meta["ember.header_checksum"] = _header_checksum(rows, structure)
            meta["ember.checksum"] = placeholder
        header["__metadata__"] = meta
    for name, code, shape, offsets in rows:
        header[name] = {"dtype": code, "shape": shape, "data_offsets": offsets}
    text = json.dumps(header, separators=(",", ":")).encode()
    # Spaces (which the spec allows) make the data section start DATA_ALIGN-aligned:
    # see _read_buffer for why.
    text += b" " * (-(8 + len(text)) % DATA_ALIGN)
    buffers = [_byte_view(array) for _, array in entries]
    if structure is None:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        _write_buffers(f, buffers)
        return

    def data_checksum() -> str:
        chunk_digests = _chunk_digests(_Tiling(buffers), CHECKSUM_ALGO)
        return _data_checksum(CHECKSUM_ALGO, meta["ember.header_checksum"], chunk_digests)

    if not _seekable(f):  # a stream: the checksum must be known before the header goes out
        # (anchored on the key: the structure, earlier in the text, may hold any string)
        text = text.replace(f'"ember.checksum":"{placeholder}"'.encode(),
                            f'"ember.checksum":"{CHECKSUM_ALGO}:{data_checksum()}"'.encode(), 1)
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        _write_buffers(f, buffers)
        return
    # A file: one worker checksums (XXH3 releases the GIL) while we write, and the digest
    # goes into the placeholder afterwards.  A pool per call, never a global one: a fork()
    # cannot inherit dead workers.
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(data_checksum) if offset >= 4 * CHUNK else None
        start = f.tell()
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        _write_buffers(f, buffers)
        digest = pending.result() if pending is not None else data_checksum()
    end = f.tell()
    where = text.index(f'"ember.checksum":"{CHECKSUM_ALGO}:'.encode())
    f.seek(start + 8 + where + len(f'"ember.checksum":"{CHECKSUM_ALGO}:'))
    f.write(digest.encode())
    f.seek(end)


def _write_buffers(f, buffers: list) -> None:
    for data in buffers:
        for pos in range(0, len(data), IO_BLOCK):
            f.write(data[pos:pos + IO_BLOCK])


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
    of the mapping with mmap.  `chunk_digests` are those of the data as read, for the
    algorithm the file declares (None with mmap, or when it declares none we know).
    """

    def __init__(self, table: dict, metadata: dict, buffers: dict,
                 chunk_digests: bytes | None):
        self.table = table
        self.metadata = metadata
        self.buffers = buffers
        self._chunk_digests = chunk_digests

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
        if algo not in _ALGORITHMS:
            raise FormatError(f"unknown or missing checksum algorithm {algo!r:.60}")
        rows = [[name, _CODE_OF[dtype], list(shape), list(offsets)]
                for name, (dtype, shape, offsets) in self.table.items()]
        if self.metadata["ember.header_checksum"] != _header_checksum(rows, structure):
            raise FormatError("header checksum mismatch: the file is corrupt or was modified")
        if self._chunk_digests is not None:
            expected = _data_checksum(algo, self.metadata["ember.header_checksum"],
                                      self._chunk_digests)
            if expected != digest:
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


def read_stream(f, total: int | None, mmap_array: np.ndarray | None = None,
                fd: int | None = None, base: int = 0) -> Container:
    """Read a container from `f` (positioned at its start) or from a memory map of it.

    With `fd`, an OS file descriptor of the same file in which the container starts at
    offset `base`, the data section is read with positional reads on several threads.
    """
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
        algo = _declared_algorithm(metadata)
        digests = _chunk_digests(_Tiling([data]), algo) if algo else None
        return Container(table, metadata, _slices(table, data), digests)
    data_len = total - 8 - n
    table, metadata = parse_header(header_text, data_len)
    order = sorted(table, key=lambda name: table[name][2][0])  # the entries tile the data
    data_start = base + 8 + n  # in the file
    buffers = {name: _read_buffer(end - start, data_start + start)
               for name in order for start, end in [table[name][2]]}
    tiling = _Tiling([buffers[name] for name in order])
    algo = _declared_algorithm(metadata)
    if fd is not None and hasattr(os, "preadv"):
        digests = _read_parallel(fd, base + 8 + n, tiling, algo)
    else:
        digests = _read_chunks(_SequentialFill(f, data_len), tiling, algo, 0,
                               tiling.nchunks)
    return Container(table, metadata, buffers, digests if algo else None)


def _read_buffer(nbytes: int, file_offset: int) -> np.ndarray:
    """A fresh buffer for the entry of `nbytes` bytes at `file_offset` in the file.

    The kernel copies from the page cache ~1.5x faster when source and destination sit at
    the same offset within a 64-byte cache line (measured: 28 ms against 40 ms for 400 MB).
    So the buffer starts that far past a page (a cache line for small entries) boundary,
    when that offset is a multiple of 16 (as ``np.empty`` guarantees, so all dtypes and
    the views of shared entries stay aligned); our files put entries at multiples of 64.
    """
    if nbytes == 0:
        return np.empty(0, dtype=np.uint8)
    align = 4096 if nbytes >= CHUNK else 64
    shift = file_offset % 64 if file_offset % 16 == 0 else 0
    raw = np.empty(nbytes + align + 64, dtype=np.uint8)
    start = -raw.ctypes.data % align + shift
    return raw[start:start + nbytes]


def _read_chunks(fill, tiling: _Tiling, algo, first: int, stop: int) -> bytes:
    """Read chunks [first, stop) into their buffers; their digests (if `algo`).

    Each chunk is checksummed right after it is read, while it is still in the cache.
    """
    digest = _ALGORITHMS[algo][0] if algo else None
    out = []
    for c in range(first, stop):
        lo, pieces = tiling.chunk(c)
        fill(lo, pieces, tiling)
        if digest is not None:
            out.append(digest(pieces))
    return b"".join(out)


def _read_parallel(fd: int, offset: int, tiling: _Tiling, algo) -> bytes:
    """Read the data section at `offset` of `fd` into `tiling` on several threads.

    Reading from the page cache is a memory copy that one core does at ~10 GB/s; two
    threads copy (and checksum) in about half the time.  Tasks are runs of TASK_CHUNKS
    chunks; their digests are joined in file order.
    """
    fill = _PositionalFill(fd, offset)
    tasks = [(c, min(c + TASK_CHUNKS, tiling.nchunks))
             for c in range(0, tiling.nchunks, TASK_CHUNKS)]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = min(MAX_THREADS, cpus or 1, len(tasks))
    if threads <= 1:
        return _read_chunks(fill, tiling, algo, 0, tiling.nchunks)
    # A pool per call, never a global one: a fork() cannot inherit dead workers.
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(_read_chunks, fill, tiling, algo, first, stop)
                   for first, stop in tasks]
        try:
            return b"".join(future.result() for future in futures)
        finally:
            for future in futures:
                future.cancel()


class _PositionalFill:
    """Fills pieces from a file descriptor with positional reads (thread-safe)."""

    _IOV_MAX = 512  # buffers per call (POSIX guarantees at least 16; Linux allows 1024)

    def __init__(self, fd: int, offset: int):
        self._fd = fd
        self._offset = offset

    def __call__(self, lo: int, pieces: list, tiling: _Tiling) -> None:
        pieces = list(pieces)
        pos, i = lo, 0
        while i < len(pieces):
            got = os.preadv(self._fd, pieces[i:i + self._IOV_MAX], self._offset + pos)
            if got <= 0:
                raise FormatError(f"the file ended after {pos} of {tiling.nbytes} data "
                                  "bytes (truncated?)")
            pos += got
            while i < len(pieces) and got >= len(pieces[i]):  # skip the pieces now full
                got -= len(pieces[i])
                i += 1
            if got:  # a short read stopped inside this piece
                pieces[i] = pieces[i][got:]


class _SequentialFill:
    """Fills pieces, in order, from a file object's readinto (or read)."""

    def __init__(self, f, data_len: int):
        self._f = f
        self._data_len = data_len

    def __call__(self, lo: int, pieces: list, tiling: _Tiling) -> None:
        for piece in pieces:
            pos = 0
            while pos < len(piece):
                got = self._f.readinto(piece[pos:])
                if not got:
                    raise FormatError(f"the file ended after {lo + pos} of "
                                      f"{self._data_len} data bytes (truncated?)")
                pos += got
            lo += len(piece)


def _read_exact(f, n: int) -> bytes:
    out = b""
    while len(out) < n:
        piece = f.read(n - len(out))
        if not piece:
            break
        out += piece
    return out
