"""The data checksum: every flipped bit is caught, on every read path; old files verify."""

import base64
import io
import json
import os
import zlib

import numpy as np
import pytest

import ember
from ember.serialization import _format

# Saved by ember.save before the XXH3 checksum (algorithm "sha256-crc32-1m"), compressed:
# {"w": arange(6.0).reshape(2, 3), "b": tensor([1, -2], dtype=int16), "step": 7}.
LEGACY_FILE = zlib.decompress(base64.b64decode(
    "eNp1UV1qwzAMXm8y/JwOW/5J3Jf1abAzrCXYlkLLyFoSlzJKoEfZ8XaKbWo7QmDMWJb88X2SLH/O7q7rJOq6pRww5"
    "FDXYnESza5rQxYLsc+iENRG6h5GTI1Qn7tDyoeOGD2tBG5TXrF8JY43l+mt33W3eIvsZcEsrsLhlTQMDMR/yGpKjr/k"
    "PtOegXIYxi42FJC6Om0ovfaHlnvRpKVyKAlDiVamaANg1NiUUiI5jVhZr8BJWymqAsjodZDeRR+8aXwcU09y9psA1s1"
    "TlzTMVbtIALL0Ho0xYL2MtiTlpIk6YkxV8o1x7AK4EkqNJslkHIIk7V3jfbJiKMTxMmvM7/vLAJ80cF0uc7m9QKHXxf"
    "X59a5peso9g7IAs2ZdnOqelZvq/qrAFFCth+H+9tvnRz6WvNnObB/L2d3X9w/RXZsg"))


def saved(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


def state() -> dict:
    """Entries of many sizes: empty, tiny, and ones that cross 1 MiB chunk boundaries."""
    rng = np.random.default_rng(0)
    return {
        "empty": ember.zeros(0),
        "tiny": ember.tensor([1.5, -2.0]),
        "a": ember.from_numpy(rng.standard_normal(300_000).astype(np.float32)),  # 1.2 MB
        "b": ember.from_numpy(rng.integers(0, 255, 700_000, dtype=np.uint8)),
        "c": ember.from_numpy(rng.standard_normal(200_000)),  # 1.6 MB of float64
        "half": ember.from_numpy(rng.standard_normal(5).astype(np.float16)),
    }


def data_start(data: bytes) -> int:
    return 8 + int.from_bytes(data[:8], "little")


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(ember.equal(a[k], b[k]) for k in a)


def as_legacy(data: bytes) -> bytes:
    """The same file with the pre-XXH3 data checksum (CRC-32 of every 1 MiB chunk)."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = header["__metadata__"]
    body = data[8 + n:]
    digests = _format._chunk_digests(_format._Tiling([memoryview(body)]),
                                     _format.LEGACY_CHECKSUM_ALGO)
    digest = _format._data_checksum(_format.LEGACY_CHECKSUM_ALGO,
                                    meta["ember.header_checksum"], digests)
    meta["ember.checksum"] = f"{_format.LEGACY_CHECKSUM_ALGO}:{digest}"
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + body


class Unsized(io.RawIOBase):
    """A readable stream whose length cannot be known (no seek): read whole."""

    def __init__(self, data: bytes):
        self._inner = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        return self._inner.readinto(b)


def load_every_way(data: bytes, tmp_path):
    """Load through each read path: a path (threads), BytesIO (sequential), unsized stream."""
    path = tmp_path / "x.pt"
    path.write_bytes(data)
    return [ember.load(path), ember.load(io.BytesIO(data)), ember.load(Unsized(data))]


@pytest.fixture
def small_tasks(monkeypatch):
    # One chunk per task, so that the few MiB here are read by several threads at once.
    monkeypatch.setattr(_format, "TASK_CHUNKS", 1)


def test_new_files_declare_xxh3():
    data = saved({"w": ember.arange(3.0)})
    meta = json.loads(data[8:data_start(data)])["__metadata__"]
    algo, _, digest = meta["ember.checksum"].partition(":")
    assert algo == "sha256-xxh3-128-1m" and len(digest) == 64


def test_round_trip_every_read_path(tmp_path, small_tasks):
    obj = state()
    for out in load_every_way(saved(obj), tmp_path):
        assert same(out, obj)


@pytest.mark.parametrize("legacy", [False, True])
def test_a_flipped_bit_anywhere_in_the_data_is_caught(tmp_path, small_tasks, legacy):
    data = saved(state())
    if legacy:
        data = as_legacy(data)
    start, end = data_start(data), len(data)
    mib = 1 << 20
    # first and last byte, both sides of each chunk boundary, inside every entry
    where = {start, end - 1, start + mib - 1, start + mib, start + 2 * mib, start + 3 * mib - 1}
    header = json.loads(data[8:start])
    for name, e in header.items():
        if name != "__metadata__" and e["data_offsets"][1] > e["data_offsets"][0]:
            lo, hi = e["data_offsets"]
            where.add(start + (lo + hi) // 2)
    for pos in sorted(where):
        for bit in (0, 7):
            bad = bytearray(data)
            bad[pos] ^= 1 << bit
            path = tmp_path / "bad.pt"
            path.write_bytes(bad)
            for source in (path, io.BytesIO(bytes(bad)), Unsized(bytes(bad))):
                with pytest.raises(ValueError, match="data checksum mismatch"):
                    ember.load(source)


def test_swapped_chunks_are_caught(tmp_path):
    data = bytearray(saved({"w": ember.from_numpy(np.arange(600_000, dtype=np.float32))}))
    start, mib = data_start(data), 1 << 20
    first = bytes(data[start:start + mib])
    data[start:start + mib] = data[start + mib:start + 2 * mib]
    data[start + mib:start + 2 * mib] = first
    with pytest.raises(ValueError, match="data checksum mismatch"):
        ember.load(io.BytesIO(bytes(data)))


def test_files_from_before_xxh3_load_and_verify(tmp_path):
    assert b'"ember.checksum":"sha256-crc32-1m:' in LEGACY_FILE
    for out in load_every_way(LEGACY_FILE, tmp_path):
        assert ember.equal(out["w"], ember.arange(6.0).reshape(2, 3))
        assert out["b"].dtype is ember.int16 and out["b"].tolist() == [1, -2]
        assert out["step"] == 7
    bad = bytearray(LEGACY_FILE)
    bad[-1] ^= 0x01
    with pytest.raises(ValueError, match="data checksum mismatch"):
        ember.load(io.BytesIO(bytes(bad)))


def test_multi_chunk_legacy_files_load(tmp_path, small_tasks):
    obj = state()
    for out in load_every_way(as_legacy(saved(obj)), tmp_path):
        assert same(out, obj)


def test_unknown_checksum_algorithm_is_refused(tmp_path):
    data = saved({"w": ember.arange(3.0)})
    for algo in (b"sha256-xxh3-128-2m", b"md5-crc32-1m-xyz"):
        edited = data.replace(b"sha256-xxh3-128-1m", algo[:18].ljust(18, b"x"))
        for source in (io.BytesIO(edited), Unsized(edited)):
            with pytest.raises(ValueError, match="unknown or missing checksum algorithm"):
                ember.load(source)


def test_mmap_checks_the_header_only(tmp_path):
    data = bytearray(saved({"w": ember.arange(8.0)}))
    data[-1] ^= 0x10
    path = tmp_path / "bad.pt"
    path.write_bytes(data)
    assert ember.load(path, mmap=True)["w"].shape == (8,)  # documented: data not checked


def test_file_position_after_loading(tmp_path):
    data = saved(state())
    path = tmp_path / "x.pt"
    path.write_bytes(b"prefix!!" + data + b"tail")
    with open(path, "rb") as f:
        f.seek(8)
        with pytest.raises(ValueError):  # the tail makes the last entry's size wrong
            ember.load(f)
    path.write_bytes(b"prefix!!" + data)
    with open(path, "rb") as f:
        f.seek(8)
        assert same(ember.load(f), state())
        assert f.tell() == 8 + len(data)


def test_short_positional_read_is_a_clear_error(tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(b"x" * 10)
    buf = np.empty(100, dtype=np.uint8)
    tiling = _format._Tiling([buf])
    fd = os.open(path, os.O_RDONLY)
    try:
        fill = _format._PositionalFill(fd, 0)
        with pytest.raises(ValueError, match="ended after 10 of 100 data bytes"):
            fill(0, tiling.pieces(0, 100), tiling)
    finally:
        os.close(fd)


def test_tiling_pieces_cover_any_span():
    bufs = [np.arange(n, dtype=np.uint8) for n in (0, 3, 0, 0, 5, 1, 0)]
    tiling = _format._Tiling(bufs)
    flat = bytes(np.concatenate(bufs))
    for lo in range(len(flat) + 1):
        for hi in range(lo, len(flat) + 1):
            pieces = tiling.pieces(lo, hi)
            assert b"".join(bytes(p) for p in pieces) == flat[lo:hi]
            assert all(len(p) for p in pieces)


def test_buffers_sit_at_the_file_offset_within_a_cache_line(tmp_path):
    # The kernel copies faster when source and destination share their offset in a 64-byte
    # line; buffers keep at least np.empty's 16-byte alignment.
    obj = state()
    data = saved(obj)
    start = data_start(data)
    assert start % 64 == 0
    path = tmp_path / "x.pt"
    path.write_bytes(data)
    out = ember.load(path)
    header = json.loads(data[8:start])
    for name, e in header.items():
        if name == "__metadata__" or e["data_offsets"][0] == e["data_offsets"][1]:
            continue
        where = (start + e["data_offsets"][0]) % 64
        address = out[name].numpy().__array_interface__["data"][0]
        assert address % 64 == (where if where % 16 == 0 else 0)
    assert same(out, obj)


def test_many_tiny_entries_in_one_chunk(tmp_path, small_tasks):
    # More entries in one 1 MiB chunk than one positional read call takes.
    obj = {f"p{i}": ember.tensor([float(i)]) for i in range(1500)}
    obj["big"] = ember.from_numpy(np.arange(400_000, dtype=np.float32))
    for out in load_every_way(saved(obj), tmp_path):
        assert same(out, obj)


def test_short_positional_reads_are_continued(tmp_path, monkeypatch):
    real = os.preadv

    def short(fd, buffers, offset):  # at most 777 bytes of the first buffer per call
        return real(fd, [buffers[0][:777]], offset)

    monkeypatch.setattr(os, "preadv", short)
    obj = {"a": ember.arange(1000.0), "b": ember.arange(7, dtype=ember.int8),
           "c": ember.arange(300.0).to(ember.float16)}
    path = tmp_path / "x.pt"
    path.write_bytes(saved(obj))
    assert same(ember.load(path), obj)
