"""Broken and hostile files raise a clear exception quickly: no code runs, no huge allocation."""

import io
import json
import os
import pickle
import time
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import UnpicklingError, _format

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

CLEAR_ERRORS = (ValueError, RuntimeError, UnpicklingError)


def saved(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


def load_bytes(data: bytes, **kwargs):
    return ember.load(io.BytesIO(data), **kwargs)


def craft(structure, entries=(), metadata=None) -> bytes:
    """An ember file with the given structure and entries and *valid* checksums."""
    buf = io.BytesIO()
    meta = {"format": "pt", "ember.format": "2"} if metadata is None else metadata
    _format.write(buf, list(entries), meta, json.dumps(structure))
    return buf.getvalue()


def raw_container(header: dict, data: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


class _RunsCode:
    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def hostile_pickle(marker) -> bytes:
    evil = _RunsCode()
    evil.marker = marker
    return pickle.dumps({"weights": evil}, protocol=2)


# -- the header ----------------------------------------------------------------


def test_empty_and_tiny_files():
    for data in (b"", b"\x01", b"1234567"):
        with pytest.raises(ValueError, match="header too small"):
            load_bytes(data)


def test_header_length_of_2_to_the_62_is_refused_unread():
    data = (2**62).to_bytes(8, "little") + b"{}"
    start = time.perf_counter()
    with pytest.raises(ValueError, match="header too large"):
        load_bytes(data)
    assert time.perf_counter() - start < 1.0


def test_header_longer_than_the_file():
    data = (1000).to_bytes(8, "little") + b'{"a": 1}'
    with pytest.raises(ValueError, match="invalid header length"):
        load_bytes(data)


def test_header_is_not_json():
    with pytest.raises(ValueError, match="invalid JSON"):
        load_bytes(raw_container({}).replace(b"{}", b"{,"))
    with pytest.raises(ValueError, match="invalid JSON"):
        load_bytes(raw_container([1, 2]))


def test_shape_that_lies_about_the_size():
    data = raw_container({"w": {"dtype": "F32", "shape": [1000, 1000], "data_offsets": [0, 8]}},
                         b"\0" * 8)
    with pytest.raises(ValueError, match="invalid shape, data type, or offset"):
        load_bytes(data)


def test_huge_shape_is_not_allocated():
    data = raw_container({"w": {"dtype": "F64", "shape": [2**40, 2**20],
                                "data_offsets": [0, 2**63]}}, b"\0" * 8)
    with pytest.raises(ValueError, match="overflow"):
        load_bytes(data)


def test_offsets_past_end_overlapping_or_with_gaps():
    past = {"a": {"dtype": "U8", "shape": [16], "data_offsets": [0, 16]}}
    with pytest.raises(ValueError, match="not fully covered"):
        load_bytes(raw_container(past, b"\0" * 8))
    overlap = {"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
               "b": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}}
    with pytest.raises(ValueError, match="invalid offset for tensor `b`"):
        load_bytes(raw_container(overlap, b"\0" * 12))
    gap = {"a": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}}
    with pytest.raises(ValueError, match="invalid offset for tensor `a`"):
        load_bytes(raw_container(gap, b"\0" * 8))
    short = {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}}
    with pytest.raises(ValueError, match="not fully covered"):
        load_bytes(raw_container(short, b"\0" * 8))


def test_bad_entry_fields():
    for entry in ({"dtype": "X9", "shape": [1], "data_offsets": [0, 1]},
                  {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]},
                  {"dtype": "U8", "shape": "1", "data_offsets": [0, 1]},
                  {"dtype": "U8", "shape": [1], "data_offsets": [1, 0]},
                  {"dtype": "U8", "shape": [1]}):
        with pytest.raises(ValueError, match="not a valid safetensors"):
            load_bytes(raw_container({"a": entry}, b"\0"))
    with pytest.raises(ValueError, match="invalid JSON in header"):
        load_bytes(raw_container({"__metadata__": {"a": 1}}))


def test_flipped_data_byte_fails_the_checksum():
    data = bytearray(saved({"w": ember.arange(100.0)}))
    data[-5] ^= 0x40
    with pytest.raises(ValueError, match="checksum"):
        load_bytes(bytes(data))


def test_a_format_from_a_newer_ember_is_named():
    data = craft({"dict": {}}, metadata={"format": "pt", "ember.format": "3"})
    with pytest.raises(ValueError, match="ember format '3'; this ember reads formats 1, 2"):
        load_bytes(data)


def test_edited_structure_fails_the_header_checksum():
    data = saved({"w": ember.arange(4.0), "n": 12345})
    edited = data.replace(b"12345", b"54321")
    with pytest.raises(ValueError, match="header checksum"):
        load_bytes(edited)


def test_truncations_of_a_valid_file():
    data = saved({"w": ember.arange(50.0), "m": {"b": ember.ones(3, dtype=ember.int64)}})
    for cut in range(0, len(data), 7):
        with pytest.raises(CLEAR_ERRORS):
            load_bytes(data[:cut])


@pytest.mark.parametrize("data", [
    pickle.dumps({"w": 1}), pickle.dumps([1.0], protocol=2), pickle.dumps({"a": np.arange(3)}),
    b"garbage garbage garbage", b"",
])
@pytest.mark.parametrize("weights_only", [True, False])
def test_raw_pickles_and_garbage_are_unpickling_errors(data, weights_only):
    # as PyTorch's own files do: `except pickle.UnpicklingError` catches an unreadable file
    with pytest.raises(pickle.UnpicklingError) as info:
        load_bytes(data, weights_only=weights_only)
    assert isinstance(info.value, ValueError)  # and it stays a ValueError, as before
    if data[:1] == b"\x80":
        assert "raw pickle" in str(info.value)


def test_torch_raises_unpickling_errors_on_the_same_files():
    torch = pytest.importorskip("torch")
    for data in (pickle.dumps({"w": 1}), b"garbage garbage garbage"):
        with pytest.raises(pickle.UnpicklingError):
            torch.load(io.BytesIO(data), weights_only=True)


# -- the structure -------------------------------------------------------------


def test_view_reaching_outside_its_entry():
    entries = [("w", np.zeros(4, np.float32))]
    for view in (["float32", [8], [4], 0], ["float32", [2], [4], 12], ["float32", [2], [-4], 0],
                 ["float32", [3, 3], [400, 4], 0]):
        data = craft({"tensor": {"id": 0, "data": "w", "view": view}}, entries)
        with pytest.raises(ValueError, match="outside entry"):
            load_bytes(data)


@pytest.mark.parametrize("structure", [
    {"nosuchtag": 1},
    {"tensor": {"id": 0, "data": "missing"}},
    {"tensor": {"id": 3}},
    {"tensor": {"data": "w"}},
    {"tensor": {"id": 0, "data": "w", "view": ["object", [1], [8], 0]}},
    {"tensor": {"id": 0, "data": "w", "view": ["float32", [1.5], [4], 0]}},
    {"tensor": {"id": 0, "data": "w", "device": "tpu:0"}},
    {"dict": [[{"dict": {}}, 1]]},
    {"float": "1e400"},
    {"dtype": "float128"},
    {"np_scalar": ["int8", 1000]},
    {"size": ["a"]},
    {"tuple": 5},
    {"odict": {}, "attrs": {"__class__": 1}},
    {"pickle": {"data": "w", "refs": []}},
    {"bytes": "nope"},
])
def test_lying_structures(structure):
    data = craft(structure, [("w", np.zeros(4, np.float32))])
    with pytest.raises(CLEAR_ERRORS):
        load_bytes(data)


def test_deeply_nested_structure():
    deep = "[" * 100_000 + "]" * 100_000
    buf = io.BytesIO()
    _format.write(buf, [], {"format": "pt", "ember.format": "2"}, deep)
    with pytest.raises(ValueError, match="JSON|deeply"):
        load_bytes(buf.getvalue())


# -- pickles -----------------------------------------------------------------


def test_hostile_pickle_in_an_ember_file_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    payload = np.frombuffer(hostile_pickle(marker), dtype=np.uint8)
    data = craft({"pickle": {"data": "p", "refs": []}}, [("p", payload)])
    with pytest.raises(UnpicklingError, match="posix.system|nt.system"):
        load_bytes(data)
    assert not marker.exists()


@pytest.mark.parametrize("payload", [
    b"cbuiltins\neval\n(S'1+1'\ntR.",
    b"cbuiltins\ngetattr\n(cbuiltins\nobject\nS'__subclasses__'\ntR.",
    b"c__builtin__\nexec\n(S'x=1'\ntR.",
    b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93.",
    b"(S'x'\ncos\nsystem\no.",  # INST-style via OBJ
    b"\x80\x02cnumpy.core.multiarray\n_reconstruct\nq\x00.",
    b"\x80\x02X\x01\x00\x00\x00a",  # truncated
    b"\x80\x02\x8e\xff\xff\xff\xff\xff\xff\xff\x7f",  # BINBYTES8 claiming 2^63 bytes
    b"\x80\x02Q.",  # persistent id from an empty stack
    b"\x80\x02X\x03\x00\x00\x00badQ.",  # unknown persistent id
    b"",
])
def test_hostile_or_broken_pickles_are_refused(payload):
    data = craft({"pickle": {"data": "p", "refs": []}},
                 [("p", np.frombuffer(payload, dtype=np.uint8))])
    start = time.perf_counter()
    with pytest.raises(UnpicklingError):
        load_bytes(data)
    assert time.perf_counter() - start < 1.0


def _torch_zip(pkl: bytes, storages=None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
        for key, raw in (storages or {}).items():
            z.writestr(f"archive/data/{key}", raw)
    return buf.getvalue()


def test_hostile_pickle_in_a_torch_zip_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(UnpicklingError, match="system"):
        load_bytes(_torch_zip(hostile_pickle(marker)))
    assert not marker.exists()


def _rebuild_pickle(size, stride, offset=0, numel=4, key="0"):
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
            b"ctorch\nFloatStorage\nX" + len(key).to_bytes(4, "little") + key.encode()
            + b"X\x03\x00\x00\x00cpu" + pickle.dumps(numel, 2)[2:-1] + b"tQ"
            + pickle.dumps(offset, 2)[2:-1] + pickle.dumps(size, 2)[2:-1]
            + pickle.dumps(stride, 2)[2:-1] + b"\x89tR.")


def test_torch_zip_geometry_checks():
    ok = _torch_zip(_rebuild_pickle((2, 2), (2, 1)), {"0": b"\0" * 16})
    assert load_bytes(ok).shape == (2, 2)
    for pkl, storages, match in [
        (_rebuild_pickle((3, 3), (3, 1)), {"0": b"\0" * 16}, "reaches past"),
        (_rebuild_pickle((2,), (1,), offset=5), {"0": b"\0" * 16}, "reaches past"),
        (_rebuild_pickle((2,), (-1,)), {"0": b"\0" * 16}, "geometry"),
        (_rebuild_pickle((2,), (1,), numel=400), {"0": b"\0" * 16}, "need"),
        (_rebuild_pickle((2,), (1,)), {}, "missing"),
    ]:
        with pytest.raises(CLEAR_ERRORS, match=match):
            load_bytes(_torch_zip(pkl, storages))


def test_not_a_zip_and_legacy_torch_format():
    with pytest.raises(RuntimeError, match="zip"):
        load_bytes(b"PK\x03\x04garbage-garbage")
    with pytest.raises(RuntimeError, match="legacy"):
        load_bytes(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.")


# -- fuzzing -------------------------------------------------------------------

_VALID = None


def _valid_files():
    global _VALID
    if _VALID is None:
        ember.manual_seed(0)
        ckpt = {"epoch": 2, "w": ember.randn(4, 3), "b": ember.ones(3, dtype=ember.bfloat16),
                "opt": {"state": {0: {"step": ember.tensor(1.0)}}, "groups": [(0.9, 0.99)]},
                "cfg": np.arange(3)}
        ckpt["view"] = ckpt["w"][1]
        storage = {"0": np.arange(4, dtype=np.float32).tobytes()}
        _VALID = [saved(ckpt), _torch_zip(_rebuild_pickle((2, 2), (2, 1)), storage)]
    return _VALID


def _attempt(data: bytes) -> None:
    start = time.perf_counter()
    try:
        load_bytes(data)
    except CLEAR_ERRORS:
        pass
    assert time.perf_counter() - start < 2.0


@hypothesis.settings(max_examples=250, deadline=None, derandomize=True)
@hypothesis.given(st.data())
def test_fuzz_flips_and_truncations(data):
    original = _valid_files()[data.draw(st.integers(0, 1))]
    mutated = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(mutated) - 1))
        mutated[pos] ^= data.draw(st.integers(1, 255))
    if data.draw(st.booleans()):
        mutated = mutated[: data.draw(st.integers(0, len(mutated)))]
    _attempt(bytes(mutated))


_entries = st.fixed_dictionaries({
    "dtype": st.sampled_from(["F32", "U8", "BF16", "I64", "C64", "XX", 3]),
    "shape": st.lists(st.integers(-2, 2**40), max_size=4),
    "data_offsets": st.lists(st.integers(-5, 2**62), min_size=0, max_size=3),
})


@hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
@hypothesis.given(st.dictionaries(st.text(max_size=5), _entries, max_size=4),
                  st.binary(max_size=64))
def test_fuzz_random_headers(header, payload):
    _attempt(raw_container(header, payload))


def test_allow_list_unpickler_resolves_only_what_it_is_given():
    # the one mechanism behind ember.load(weights_only=True) and the CIFAR loader
    from collections import OrderedDict

    from ember.serialization._restricted_pickle import AllowListUnpickler

    def load(data, allowed, **kwargs):
        return AllowListUnpickler(io.BytesIO(data), allowed, **kwargs).load()

    allowed = {"collections.OrderedDict": OrderedDict}.get
    assert load(pickle.dumps(OrderedDict(a=1), protocol=2), allowed) == OrderedDict(a=1)
    with pytest.raises(UnpicklingError, match="builtins.set"):  # Python 2's __builtin__
        load(b"c__builtin__\nset\n(]tR.", allowed)
    with pytest.raises(KeyError, match="nope: builtins.set"):
        load(b"c__builtin__\nset\n(]tR.", allowed, refuse=lambda full: KeyError(f"nope: {full}"))
    with pytest.raises(UnpicklingError, match="persistent ids are not allowed"):
        load(b"\x80\x02X\x01\x00\x00\x00aQ.", allowed)
    assert load(b"\x80\x02X\x01\x00\x00\x00aQ.", allowed, persistent_load=str.upper) == "A"
