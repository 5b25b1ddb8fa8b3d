"""The data checksum: every flipped bit is caught, on every read path; old files verify."""

import base64
import gzip
import io
import json
import os
import zlib
from collections import OrderedDict

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
    """The same file as an ember before the safetensors library wrote it: header checksum
    over the entry table with offsets, CRC-32 of every 1 MiB chunk of the data section."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    meta = header["__metadata__"]
    body = data[8 + n:]
    table = {name: (e["dtype"], e["shape"], e["data_offsets"])
             for name, e in header.items() if name != "__metadata__"}
    algo = _format.LEGACY_CHECKSUM_ALGO
    meta["ember.header_checksum"] = _format._header_checksum(
        _format._rows(table, algo), meta["ember.structure"])
    digest = _format._data_checksum(algo, meta["ember.header_checksum"],
                                    _format._section_digests([body], algo))
    meta["ember.checksum"] = f"{algo}:{digest}"
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
    # Hash on several threads even the few MiB here.
    monkeypatch.setattr(_format, "_PARALLEL_BYTES", 0)


def test_new_files_declare_the_entrywise_crc32():
    data = saved({"w": ember.arange(3.0)})
    meta = json.loads(data[8:data_start(data)])["__metadata__"]
    algo, _, digest = meta["ember.checksum"].partition(":")
    assert algo == "sha256-crc32-entries-1m" and len(digest) == 64


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


def test_entries_swapped_in_the_header_are_caught():
    # Offsets are not in the header checksum (the library lays the entries out); the data
    # checksum, entry by entry in name order, sees the swap.
    data = saved({"a": ember.tensor([1.0, 2.0]), "b": ember.tensor([3.0, 4.0])})
    start = data_start(data)
    header = json.loads(data[8:start])
    a, b = header["a"]["data_offsets"], header["b"]["data_offsets"]
    text = data[8:start].replace(json.dumps(a).replace(" ", "").encode(), b"A")
    text = text.replace(json.dumps(b).replace(" ", "").encode(),
                        json.dumps(a).replace(" ", "").encode())
    text = text.replace(b"A", json.dumps(b).replace(" ", "").encode())
    assert len(text) == start - 8 and text != data[8:start]
    with pytest.raises(ValueError, match="data checksum mismatch"):
        ember.load(io.BytesIO(data[:8] + text + data[start:]))


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
    for algo in (b"sha256-crc32-entries-2m", b"md5-crc32-1m-xyz"):
        edited = data.replace(b"sha256-crc32-entries-1m", algo.ljust(23, b"x"))
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


def test_many_tiny_entries_in_one_chunk(tmp_path, small_tasks):
    obj = {f"p{i}": ember.tensor([float(i)]) for i in range(1500)}
    obj["big"] = ember.from_numpy(np.arange(400_000, dtype=np.float32))
    for out in load_every_way(saved(obj), tmp_path):
        assert same(out, obj)


def old_xxh3_file() -> bytes:
    """Saved by ember.save before it used the safetensors library (entries laid out by
    ember, data section 64-byte aligned, XXH3 checksum); `tests/serialization/data`."""
    path = os.path.join(os.path.dirname(__file__), "data", "ember_format1_xxh3.pt.gz")
    with open(path, "rb") as f:
        return gzip.decompress(f.read())


def check_old_file(out: dict) -> None:
    w = ember.arange(12.0).reshape(3, 4)
    assert ember.equal(out["w"], w) and ember.equal(out["row"], w[1])
    assert ember.equal(out["wt"], w.t())
    out["w"][1, 0] = -1.0  # views of one entry share memory again
    assert out["row"][0].item() == -1.0 and out["wt"][0, 1].item() == -1.0
    assert isinstance(out["p"], ember.nn.Parameter) and out["p"].tolist() == [1.0, 2.0]
    assert out["g"].requires_grad and out["g"].tolist() == [0.5, -1.5]
    assert out["bf"].dtype is ember.bfloat16 and out["bf"].tolist() == [1.0, 2.5, -3.0]
    assert out["half"].dtype is ember.float16 and out["half"].tolist() == [0.25]
    assert out["i16"].dtype is ember.int16 and out["i16"].tolist() == [1, -2]
    assert out["mask"].tolist() == [True, False, True]
    assert out["c128"].dtype is ember.complex128 and out["c128"].tolist() == [1 + 2j, -3.5j]
    assert out["c64"].dtype is ember.complex64 and out["c64"].tolist() == [0.5 - 1j]
    assert isinstance(out["np"], np.ndarray) and out["np"].tolist() == [0, 1, 2, 3, 4]
    assert type(out["meta"]) is OrderedDict and out["meta"] == OrderedDict(
        step=7, lr=1e-3, betas=(0.9, 0.999), name="adam", flag=None, raw=b"\x00\x01",
        inf=float("inf"), s={1, 2})
    assert out["sl"] == slice(1, 5, 2)
    big = np.zeros(300_000, dtype=np.float32)
    big[::1000] = np.arange(300)
    assert np.array_equal(out["big"].numpy(), big)


def test_files_from_before_the_safetensors_library_load_and_verify(tmp_path):
    data = old_xxh3_file()
    assert b'"ember.checksum":"sha256-xxh3-128-1m:' in data and data_start(data) % 64 == 0
    path = tmp_path / "old.pt"
    path.write_bytes(data)
    for out in load_every_way(data, tmp_path) + [ember.load(path, mmap=True)]:
        check_old_file(out)
    pytest.importorskip("xxhash")
    bad = bytearray(data)
    bad[data_start(data) + 1_100_000] ^= 0x01  # in the second 1 MiB chunk
    with pytest.raises(ValueError, match="data checksum mismatch"):
        ember.load(io.BytesIO(bytes(bad)))


def test_old_xxh3_files_without_xxhash_check_the_header_and_warn(monkeypatch):
    monkeypatch.setattr(_format, "_has_xxhash", lambda: False)
    with pytest.warns(UserWarning, match="xxhash"):
        check_old_file(ember.load(io.BytesIO(old_xxh3_file())))
    edited = old_xxh3_file().replace(b'\\"step\\":7', b'\\"step\\":8')
    with pytest.raises(ValueError, match="header checksum"):
        ember.load(io.BytesIO(edited))
