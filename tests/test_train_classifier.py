"""The main program, examples/train_classifier.py, learns the bundled digits; the CIFAR-10
tutorial runs end to end on FakeData."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import ember

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_classifier_learns_digits_in_one_epoch(tmp_path):
    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "train_classifier.py"), "--epochs", "1",
         "--seed", "0", "--out", str(out)],
        capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "best test accuracy" in result.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["dataset"] == "digits" and len(metrics["history"]) == 1
    assert metrics["best_test_acc"] > 0.8          # chance is 0.1
    # the checkpoint is a state dict that loads into the example's network
    example = load_example("train_classifier")
    model = example.Net(1, 8, 10)
    model.load_state_dict(ember.load(out / "best.safetensors"))
    assert "is a safetensors file" in result.stdout
    assert not (out / "best.pt").exists()
    safetensors = pytest.importorskip("safetensors.numpy")  # what PyTorch users read it with
    assert set(safetensors.load_file(out / "best.safetensors")) == set(model.state_dict())
    try:
        import torch
    except ImportError:
        pass
    else:  # PyTorch's own torch.load reads it too (it knows the .safetensors suffix)
        assert set(torch.load(out / "best.safetensors")) == set(model.state_dict())
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "no curves.png" in result.stdout
    else:
        assert (out / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_progress_falls_back_to_the_loader_without_tqdm(monkeypatch):
    example = load_example("train_classifier")
    monkeypatch.setitem(sys.modules, "tqdm", None)      # import tqdm now fails
    loader = [1, 2]
    assert example.progress(loader, 1, 1) is loader


def test_cifar10_tutorial_runs_on_fake_data(tmp_path, capsys):
    tutorial = load_example("cifar10_tutorial")
    accuracy = tutorial.main(["--root", str(tmp_path / "nothing"), "--epochs", "1",
                              "--fake-size", "64", "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert "using FakeData" in printed and "Finished Training" in printed
    assert 0.0 <= accuracy <= 1.0
    assert (tmp_path / "out" / "cifar_net.pth").is_file()
    assert (tmp_path / "out" / "train_batch.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_train_classifier_names_missing_files(tmp_path, dataset):
    example = load_example("train_classifier")
    with pytest.raises(FileNotFoundError, match="never downloads"):
        example.make_datasets(dataset, str(tmp_path))
