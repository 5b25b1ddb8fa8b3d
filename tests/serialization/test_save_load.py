"""ember.save / ember.load round trips: values, structure, sharing, map_location, mmap."""

import io
import math
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.serialization import UnpicklingError


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


def test_tensor_roundtrip_every_dtype():
    for dt in (ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
               ember.float16, ember.bfloat16, ember.float32, ember.float64, ember.complex64,
               ember.complex128):
        t = (ember.arange(12) % 3).reshape(3, 4).to(dt)
        out = roundtrip(t)
        assert type(out) is ember.Tensor and out.dtype is dt and out.shape == t.shape
        assert ember.equal(out, t)


def test_zero_dim_and_empty_tensors():
    out = roundtrip({"scalar": ember.tensor(2.5), "empty": ember.zeros(0, 3),
                     "empty_int": ember.zeros(2, 0, dtype=ember.int64)})
    assert out["scalar"].shape == () and out["scalar"].item() == 2.5
    assert out["empty"].shape == (0, 3) and out["empty_int"].dtype is ember.int64


def test_plain_values_and_containers():
    obj = {
        "int": 3, "big": 2**70, "float": 0.1, "nan": float("nan"), "inf": -math.inf,
        "str": "héllo", "none": None, "bools": [True, False], "bytes": b"\x00\xff",
        "complex": 1 - 2j, "tuple": (1, (2, "x")), "set": {1, 2}, "frozen": frozenset("ab"),
        "odict": OrderedDict(b=1, a=2), "intkeys": {0: "a", (1, 2): "b", None: 3},
        "dtype": ember.float16, "device": ember.device("cpu"), "size": ember.Size([2, 3]),
        "np_scalars": [np.float32(1.5), np.int64(-7), np.bool_(True)],
        "list_of_lists": [[1, 2], [], [[3]]],
    }
    out = roundtrip(obj)
    assert math.isnan(out.pop("nan")) and math.isnan(obj.pop("nan"))
    assert out == obj
    assert type(out["odict"]) is OrderedDict and list(out["odict"]) == ["b", "a"]
    assert type(out["tuple"][1]) is tuple and type(out["size"]) is ember.Size
    assert type(out["np_scalars"][0]) is np.float32 and type(out["np_scalars"][1]) is np.int64
    assert out["dtype"] is ember.float16


def test_numpy_arrays_come_back_as_numpy():
    a = np.arange(6, dtype=np.uint16).reshape(2, 3)
    out = roundtrip({"a": a, "b": np.ones(3, dtype=">f8"), "t": ember.ones(2)})
    assert type(out["a"]) is np.ndarray and out["a"].dtype == np.uint16
    np.testing.assert_array_equal(out["a"], a)
    assert out["b"].dtype == np.float64 and (out["b"] == 1).all()
    assert isinstance(out["t"], ember.Tensor)


def test_requires_grad_and_parameters():
    p = nn.Parameter(ember.randn(3))
    frozen = nn.Parameter(ember.randn(2), requires_grad=False)
    leaf = ember.ones(2, requires_grad=True)
    out = roundtrip({"p": p, "frozen": frozen, "leaf": leaf, "nonleaf": leaf * 2})
    assert type(out["p"]) is nn.Parameter and out["p"].requires_grad
    assert type(out["frozen"]) is nn.Parameter and not out["frozen"].requires_grad
    assert type(out["leaf"]) is ember.Tensor and out["leaf"].requires_grad
    assert out["nonleaf"].is_leaf and out["nonleaf"].requires_grad
    # A module's state_dict holds detached tensors: they come back as plain tensors.
    sd = roundtrip(nn.Linear(2, 2).state_dict())
    assert all(type(v) is ember.Tensor and not v.requires_grad for v in sd.values())


def test_shared_memory_is_stored_once_and_restored():
    x = ember.arange(12.0).reshape(3, 4)
    obj = {"x": x, "same": x, "alias": x.detach(), "col": x[:, 1], "t": x.t(),
           "flat": x.view(-1)[2:7]}
    buf = io.BytesIO()
    ember.save(obj, buf)
    assert len(buf.getvalue()) < 12 * 4 + 2048  # the 48 data bytes appear once
    buf.seek(0)
    out = ember.load(buf)
    assert out["same"] is out["x"] and out["alias"] is not out["x"]
    out["x"][1, 1] = -1.0
    assert out["alias"][1, 1] == -1 and out["col"][1] == -1 and out["t"][1, 1] == -1
    assert out["flat"][3] == -1  # element 5 of the flat view is x[1, 1]
    for k in obj:
        assert out[k].shape == obj[k].shape


def test_tied_weights_stay_tied():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)
            self.b.weight = self.a.weight

    sd = roundtrip(Tied().state_dict())
    sd["a.weight"].fill_(2.0)
    assert (sd["b.weight"] == 2).all()


def test_partial_views_store_only_their_span():
    big = ember.zeros(1000)
    out = roundtrip({"a": big[10:20], "b": big[15:30]})
    out["a"][7] = 5.0  # element 17 of big
    assert out["b"][2] == 5.0
    buf = io.BytesIO()
    ember.save({"part": big[:4]}, buf)
    assert len(buf.getvalue()) < 1000  # not the 4000 bytes of the whole buffer


def test_numpy_array_and_tensor_sharing_memory():
    a = np.arange(4.0)
    t = ember.from_numpy(a)
    out = roundtrip({"a": a, "t": t})
    out["t"][0] = 9.0
    assert out["a"][0] == 9.0


def _train_step(model, opt, sched):
    loss = model(ember.ones(2, 4)).pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()


def test_training_checkpoint_resume(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 1))
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    _train_step(model, opt, sched)
    path = tmp_path / "ckpt.pt"
    ember.save({"epoch": 1, "model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict()}, path)

    ckpt = ember.load(path)
    model2 = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 1))
    opt2 = ember.optim.Adam(model2.parameters(), lr=0.1)
    sched2 = ember.optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optimizer"])
    sched2.load_state_dict(ckpt["scheduler"])
    assert ckpt["epoch"] == 1
    for _ in range(3):
        _train_step(model, opt, sched)
        _train_step(model2, opt2, sched2)
    for p, q in zip(model.parameters(), model2.parameters()):
        assert ember.allclose(p, q)
    assert sched.get_last_lr() == sched2.get_last_lr()


def test_state_dict_metadata_survives():
    sd = nn.Linear(2, 2).state_dict()
    out = roundtrip(sd)
    assert type(out) is OrderedDict and out._metadata == sd._metadata


def test_load_into_other_dtype_and_assign():
    src = nn.Linear(3, 2)
    sd = roundtrip(src.state_dict())
    dst = nn.Linear(3, 2).double()
    dst.load_state_dict(sd)
    assert dst.weight.dtype is ember.float64
    assert ember.allclose(dst.weight.float(), src.weight)
    dst2 = nn.Linear(3, 2)
    dst2.load_state_dict(sd, assign=True)
    assert type(dst2.weight) is nn.Parameter and dst2.weight.requires_grad
    assert ember.equal(dst2.weight, src.weight)
    dst2(ember.ones(3)).sum().backward()
    assert dst2.weight.grad is not None


def test_paths_and_file_objects(tmp_path):
    t = ember.arange(5)
    ember.save(t, str(tmp_path / "a.pt"))
    ember.save(t, tmp_path / "b.pt")
    with open(tmp_path / "c.pt", "wb") as f:
        ember.save(t, f)
    for name in "abc":
        assert ember.equal(ember.load(tmp_path / f"{name}.pt"), t)
        with open(tmp_path / f"{name}.pt", "rb") as f:
            assert ember.equal(ember.load(f), t)


class _Stream(io.RawIOBase):
    """A write-only, non-seekable stream (like a pipe or a socket)."""

    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.data += bytes(b)
        return len(b)


class _ReadStream(io.RawIOBase):
    def __init__(self, data):
        self._buf = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        return self._buf.readinto(b)


def test_non_seekable_streams():
    obj = {"w": ember.randn(300, 100), "n": 3}
    out = _Stream()
    ember.save(obj, out)
    back = ember.load(_ReadStream(bytes(out.data)))
    assert ember.equal(back["w"], obj["w"]) and back["n"] == 3


def test_map_location_forms():
    t = ember.ones(2)
    for loc in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s,
                lambda s, loc: None):
        out = roundtrip({"t": t}, map_location=loc)
        assert out["t"].device.type == "cpu"
    seen = []
    roundtrip(t, map_location=lambda s, loc: seen.append(loc))
    assert seen == ["cpu"]
    with pytest.raises(TypeError):
        roundtrip(t, map_location=3)


def test_map_location_for_tensors_saved_on_cuda(monkeypatch):
    # Fake a CUDA tensor in the file by editing the structure through the encoder.
    from ember.serialization import _structure

    real = _structure.Encoder._tensor_ref

    def on_cuda(self, t, path):
        ref = real(self, t, path)
        ref["device"] = "cuda:1"
        return ref

    monkeypatch.setattr(_structure.Encoder, "_tensor_ref", on_cuda)
    buf = io.BytesIO()
    ember.save({"t": ember.ones(2)}, buf)
    monkeypatch.undo()
    if not ember.cuda.is_available():
        buf.seek(0)
        with pytest.raises(RuntimeError, match="map_location='cpu'"):
            ember.load(buf)
    for loc in ("cpu", {"cuda:1": "cpu"}):
        buf.seek(0)
        assert ember.load(buf, map_location=loc)["t"].device.type == "cpu"
    seen = []
    buf.seek(0)
    ember.load(buf, map_location=lambda s, loc: seen.append(loc) or s)
    assert seen == ["cuda:1"]


def test_mmap_is_copy_on_write(tmp_path):
    path = tmp_path / "w.pt"
    ember.save({"w": ember.arange(10.0), "v": 1}, path)
    before = path.read_bytes()
    out = ember.load(path, mmap=True)
    assert isinstance(out["w"].numpy().base, np.memmap) or isinstance(
        out["w"].numpy().base.base, np.memmap)
    out["w"][0] = 42.0  # writable, but the file does not change
    assert out["w"][0] == 42
    assert path.read_bytes() == before
    assert ember.load(path)["w"][0] == 0
    with pytest.raises(RuntimeError, match="mmap"):
        ember.load(io.BytesIO(before), mmap=True)


def test_whole_module_needs_allow_list_or_weights_only_false():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU() if hasattr(nn, "ReLU") else nn.Identity())
    buf = io.BytesIO()
    ember.save(model, buf)
    buf.seek(0)
    with pytest.raises(UnpicklingError) as info:
        ember.load(buf)
    msg = str(info.value)
    assert "ember.nn.modules.container.Sequential" in msg
    assert "add_safe_globals" in msg and "weights_only=False" in msg
    buf.seek(0)
    full = ember.load(buf, weights_only=False)
    assert ember.equal(full[0].weight, model[0].weight)
    classes = [type(model), type(model[0]), type(model[1])]
    with ember.serialization.safe_globals(classes):
        buf.seek(0)
        again = ember.load(buf)
    assert ember.equal(again[0].bias, model[0].bias)
    assert ember.serialization.get_safe_globals() == []
    buf.seek(0)
    with pytest.raises(UnpicklingError):
        ember.load(buf)


class Config:
    def __init__(self, lr):
        self.lr = lr

    def __eq__(self, other):
        return isinstance(other, Config) and other.lr == self.lr


def test_add_get_clear_safe_globals():
    obj = {"cfg": Config(0.1), "w": ember.ones(2)}
    buf = io.BytesIO()
    ember.save(obj, buf)
    try:
        ember.serialization.add_safe_globals([Config])
        assert Config in ember.serialization.get_safe_globals()
        buf.seek(0)
        out = ember.load(buf)
        assert out["cfg"] == Config(0.1) and ember.equal(out["w"], obj["w"])
    finally:
        ember.serialization.clear_safe_globals()
    assert ember.serialization.get_safe_globals() == []
    buf.seek(0)
    with pytest.raises(UnpicklingError, match="Config"):
        ember.load(buf)


def test_tensors_inside_pickled_objects_share_with_the_rest():
    cfg = Config(ember.arange(3.0))
    buf = io.BytesIO()
    ember.save({"cfg": cfg, "t": cfg.lr}, buf)
    buf.seek(0)
    out = ember.load(buf, weights_only=False)
    assert out["cfg"].lr is out["t"]


def test_cyclic_containers_go_through_pickle():
    a = [1, 2]
    a.append(a)
    out = roundtrip(a, weights_only=False)
    assert out[2] is out


def test_load_rejects_pickle_module_with_weights_only():
    buf = io.BytesIO()
    ember.save(1, buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="pickle_module"):
        ember.load(buf, pickle_module=type("P", (), {}))
    buf.seek(0)
    assert ember.load(buf, pickle_module=pickle) == 1


def test_save_rejects_non_file():
    with pytest.raises(AttributeError):
        ember.save(ember.ones(1), 3)


def test_file_object_positioned_after_other_data(tmp_path):
    path = tmp_path / "multi.bin"
    with open(path, "wb") as f:
        f.write(b"prefix--")
        ember.save({"w": ember.arange(3.0)}, f)
    for mmap in (False, True):
        with open(path, "rb") as f:
            f.seek(8)
            assert ember.load(f, mmap=mmap)["w"].tolist() == [0.0, 1.0, 2.0]
