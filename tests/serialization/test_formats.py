"""Interoperability: our files read by safetensors, theirs and PyTorch's read by ember."""

import io
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from ember.serialization import UnpicklingError


def _safetensors_numpy():
    return pytest.importorskip("safetensors.numpy")


def _torch():
    return pytest.importorskip("torch")


# -- ember -> safetensors ------------------------------------------------------


def test_our_state_dict_reads_with_safetensors_numpy(tmp_path):
    sn = _safetensors_numpy()
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    path = tmp_path / "model.safetensors"
    ember.save(model.state_dict(), path)
    theirs = sn.load_file(str(path))
    assert set(theirs) == set(model.state_dict())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(theirs[k], v.numpy())


def test_our_dtypes_read_with_safetensors_torch(tmp_path):
    torch = _torch()
    st = pytest.importorskip("safetensors.torch")
    tensors = {"f": ember.randn(2, 3), "h": ember.randn(3).half(),
               "bf": ember.tensor([1.5, -2.0]).bfloat16(), "i": ember.arange(4),
               "b": ember.tensor([True, False]), "c": ember.randn(2, dtype=ember.complex64)}
    path = tmp_path / "t.safetensors"
    ember.save(tensors, path)
    theirs = st.load_file(str(path))
    for k, v in tensors.items():
        expected = torch.from_numpy(v.float().numpy() if k == "bf" else v.numpy())
        got = theirs[k].float() if k == "bf" else theirs[k]
        assert torch.equal(got, expected), k
    assert theirs["bf"].dtype == torch.bfloat16


def test_metadata_marks_the_file_as_pytorch_weights(tmp_path):
    from safetensors import safe_open

    pytest.importorskip("safetensors.numpy")
    path = tmp_path / "m.safetensors"
    ember.save({"w": ember.ones(2)}, path)
    with safe_open(str(path), framework="numpy") as f:
        meta = f.metadata()
    assert meta["format"] == "pt" and meta["ember.format"] == "2"
    assert "ember.checksum" in meta and "ember.structure" in meta


# -- safetensors -> ember ------------------------------------------------------


def test_load_safetensors_written_by_numpy(tmp_path):
    sn = _safetensors_numpy()
    arrays = {"weight": np.random.rand(3, 4).astype(np.float32),
              "bias": np.arange(3, dtype=np.float64), "idx": np.arange(5, dtype=np.int64),
              "flag": np.array([True, False])}
    path = tmp_path / "np.safetensors"
    sn.save_file(arrays, str(path), metadata={"who": "numpy"})
    for mmap in (False, True):
        out = ember.load(path, mmap=mmap)
        assert set(out) == set(arrays)
        for k, v in arrays.items():
            assert isinstance(out[k], ember.Tensor)
            np.testing.assert_array_equal(out[k].numpy(), v)


def test_load_safetensors_written_by_torch_into_an_ember_model(tmp_path):
    torch = _torch()
    st = pytest.importorskip("safetensors.torch")
    ref = torch.nn.Linear(4, 3)
    path = tmp_path / "linear.safetensors"
    st.save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path),
                 metadata={"format": "pt"})
    model = nn.Linear(4, 3)
    model.load_state_dict(ember.load(path))
    x = np.random.rand(2, 4).astype(np.float32)
    expected = ref(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(model(ember.from_numpy(x)).detach().numpy(), expected,
                               rtol=1e-5, atol=1e-6)
    bf = tmp_path / "bf.safetensors"
    st.save_file({"w": torch.tensor([1.5, 2.5], dtype=torch.bfloat16)}, str(bf))
    out = ember.load(bf)["w"]
    assert out.dtype is ember.bfloat16 and out.tolist() == [1.5, 2.5]


# -- PyTorch .pt -> ember --------------------------------------------------------


def _torch_saved(obj) -> io.BytesIO:
    torch = _torch()
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_load_torch_state_dict_into_ember_model(tmp_path):
    torch = _torch()
    ref = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    path = tmp_path / "model.pt"
    torch.save(ref.state_dict(), path)
    sd = ember.load(path)
    assert type(sd) is OrderedDict and list(sd) == list(ref.state_dict())
    assert sd._metadata[""] == {"version": 1}
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU() if hasattr(nn, "ReLU") else nn.Identity(),
                          nn.Linear(8, 2))
    model.load_state_dict(sd)
    if hasattr(nn, "ReLU"):
        x = np.random.rand(3, 4).astype(np.float32)
        np.testing.assert_allclose(model(ember.from_numpy(x)).detach().numpy(),
                                   ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_load_torch_checkpoint_values_and_sharing():
    torch = _torch()
    x = torch.arange(12.0).reshape(3, 4)
    param = torch.nn.Parameter(torch.ones(2))
    obj = {"x": x, "col": x[:, 1], "t": x.t(), "p": param, "frozen":
           torch.nn.Parameter(torch.zeros(1), requires_grad=False),
           "leaf": torch.ones(2, requires_grad=True),
           "dtypes": [torch.ones(2, dtype=d) for d in (torch.float16, torch.bfloat16,
                                                       torch.float64, torch.int8, torch.uint8,
                                                       torch.int32, torch.bool,
                                                       torch.complex64)],
           "dt": torch.float16, "dev": torch.device("cpu"), "size": torch.Size([2, 3]),
           "bytes": b"\x00ab", "set": {1, 2}, "complex": 1 + 2j, "nested": (1, [2.5, None])}
    out = ember.load(_torch_saved(obj))
    assert ember.equal(out["x"], ember.arange(12.0).reshape(3, 4))
    out["x"][1, 1] = -1
    assert out["col"][1] == -1 and out["t"][1, 1] == -1
    assert type(out["p"]) is nn.Parameter and out["p"].requires_grad
    assert type(out["frozen"]) is nn.Parameter and not out["frozen"].requires_grad
    assert out["leaf"].requires_grad and type(out["leaf"]) is ember.Tensor
    assert [t.dtype for t in out["dtypes"]] == [
        ember.float16, ember.bfloat16, ember.float64, ember.int8, ember.uint8, ember.int32,
        ember.bool, ember.complex64]
    assert out["dt"] is ember.float16 and out["dev"] == ember.device("cpu")
    assert out["size"] == (2, 3) and type(out["size"]) is ember.Size
    assert out["bytes"] == b"\x00ab" and out["set"] == {1, 2} and out["complex"] == 1 + 2j
    assert out["nested"] == (1, [2.5, None])


def test_load_torch_optimizer_state_into_ember_optimizer():
    torch = _torch()
    ref = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    ref(torch.ones(1, 3)).sum().backward()
    opt.step()
    ckpt = ember.load(_torch_saved({"model": ref.state_dict(), "opt": opt.state_dict()}))
    model = nn.Linear(3, 2)
    model.load_state_dict(ckpt["model"])
    opt2 = ember.optim.Adam(model.parameters(), lr=0.01)
    opt2.load_state_dict(ckpt["opt"])
    state = opt2.state[model.weight]
    np.testing.assert_allclose(state["exp_avg"].numpy(),
                               opt.state[ref.weight]["exp_avg"].numpy())


def test_torch_file_mmap_and_map_location(tmp_path):
    torch = _torch()
    path = tmp_path / "w.pt"
    x = torch.arange(6.0)
    torch.save({"w": x, "v": x[2:]}, path)
    before = path.read_bytes()
    out = ember.load(path, mmap=True, map_location="cpu")
    out["w"][3] = 100.0
    assert out["v"][1] == 100.0
    assert path.read_bytes() == before
    seen = []
    ember.load(path, map_location=lambda t, loc: seen.append(loc))
    assert seen == ["cpu", "cpu"]  # called per tensor (PyTorch: per storage)


def test_whole_torch_module_is_refused_with_a_clear_message():
    torch = _torch()
    with pytest.raises(UnpicklingError, match="torch.nn.modules.linear.Linear"):
        ember.load(_torch_saved(torch.nn.Linear(2, 2)))


def test_torch_numpy_payload_needs_allow_listing():
    _torch()
    with pytest.raises(UnpicklingError, match="numpy"):
        ember.load(_torch_saved({"a": np.arange(3)}))


def test_torch_file_after_other_data_with_mmap(tmp_path):
    torch = _torch()
    path = tmp_path / "multi.bin"
    with open(path, "wb") as f:
        f.write(b"x" * 100)
        torch.save({"w": torch.arange(5.0)}, f)
    for mmap in (False, True):
        with open(path, "rb") as f:
            f.seek(100)
            assert ember.load(f, mmap=mmap)["w"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
