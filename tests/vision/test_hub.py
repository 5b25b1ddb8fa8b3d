"""ember.hub: the cache folder, loading from it, and the errors when a file is missing."""

import hashlib
import os

import pytest

import ember
from ember import hub

URL = "https://example.org/models/tiny-0123abcd.pt"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(hub, "_hub_dir", None)
    folder = tmp_path / "home" / "hub" / "checkpoints"
    folder.mkdir(parents=True)
    return folder


def test_get_dir_follows_torch_home_and_xdg(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert hub.get_dir() == str(tmp_path / "th" / "hub")
    monkeypatch.delenv("TORCH_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "torch" / "hub")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert hub.get_dir() == os.path.expanduser(os.path.join("~", ".cache", "torch", "hub"))
    hub.set_dir(tmp_path / "mine")
    assert hub.get_dir() == str(tmp_path / "mine")


def test_load_state_dict_from_cache(cache):
    state = {"w": ember.arange(3.0), "b": ember.ones(2)}
    ember.save(state, cache / "tiny-0123abcd.pt")
    loaded = hub.load_state_dict_from_url(URL, progress=False)
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0] and loaded["b"].tolist() == [1.0, 1.0]
    other = cache.parent / "elsewhere"
    other.mkdir()
    ember.save(state, other / "renamed.pt")
    again = hub.load_state_dict_from_url(URL, model_dir=other, file_name="renamed.pt")
    assert again["w"].tolist() == [0.0, 1.0, 2.0]


def test_missing_file_names_file_folder_and_url(cache):
    with pytest.raises(FileNotFoundError) as info:
        hub.load_state_dict_from_url(URL)
    message = str(info.value)
    assert "'tiny-0123abcd.pt'" in message and str(cache) in message and URL in message


def test_check_hash(cache):
    ember.save({"w": ember.zeros(1)}, cache / "tiny-0123abcd.pt")
    hub.load_state_dict_from_url(URL)                  # no check by default
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "0123abcd"'):
        hub.load_state_dict_from_url(URL, check_hash=True)
    data = (cache / "tiny-0123abcd.pt").read_bytes()
    prefix = hashlib.sha256(data).hexdigest()[:8]
    (cache / f"tiny-{prefix}.pt").write_bytes(data)
    url = f"https://example.org/tiny-{prefix}.pt"
    assert hub.load_state_dict_from_url(url, check_hash=True)["w"].tolist() == [0.0]


def test_pytorch_file_from_cache(cache):
    torch = pytest.importorskip("torch")
    torch.save({"weight": torch.arange(4.0).reshape(2, 2)}, cache / "tiny-0123abcd.pt")
    loaded = hub.load_state_dict_from_url(URL, map_location="cpu")
    assert isinstance(loaded["weight"], ember.Tensor)
    assert loaded["weight"].tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_no_downloads_and_local_hubconf(tmp_path):
    with pytest.raises(RuntimeError, match="does not download"):
        hub.download_url_to_file(URL, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="local"):
        hub.load("pytorch/vision", "resnet18")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(
        "def double(x=1):\n    '''Twice x.'''\n    return 2 * x\n\ndef _hidden():\n    pass\n")
    assert hub.list(str(repo), source="local") == ["double"]
    assert hub.help(str(repo), "double", source="local") == "Twice x."
    assert hub.load(str(repo), "double", 21, source="local") == 42
    with pytest.raises(RuntimeError, match="Cannot find callable nope"):
        hub.load(str(repo), "nope", source="local")
