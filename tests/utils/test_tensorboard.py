"""SummaryWriter: event files read back with TensorBoard's own reader, and served by the
real `tensorboard` program."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest

import ember
from ember import nn

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(path):
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "images": 0,
                                                     "histograms": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_scalars_read_back(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(5):
            w.add_scalar("loss", ember.tensor(1.0 / (step + 1)), step)
        w.add_scalar("lr", 0.5, 7, new_style=True)
    acc = _read(tmp_path)
    assert [(e.step, round(e.value, 6)) for e in acc.Scalars("loss")] == [
        (0, 1.0), (1, 0.5), (2, 0.333333), (3, 0.25), (4, 0.2)]
    (lr,) = acc.Tensors("lr")
    assert lr.step == 7 and lr.tensor_proto.float_val[0] == 0.5


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalars("acc", {"train": 0.9, "val": ember.tensor(0.8)}, 3)
    for key, value in (("train", 0.9), ("val", 0.8)):
        (event,) = _read(tmp_path / f"acc_{key}").Scalars("acc")
        assert event.step == 3 and event.value == pytest.approx(value)


def test_histogram(tmp_path):
    values = np.arange(-50, 50, dtype=np.float64)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_histogram("w", ember.tensor(values), 0)
        w.add_histogram("w_auto", values, 0, bins="auto")
    for tag in ("w", "w_auto"):
        h = _read(tmp_path).Histograms(tag)[0].histogram_value
        assert (h.min, h.max, h.num) == (-50, 49, 100)
        assert h.sum == pytest.approx(values.sum())
        assert h.sum_squares == pytest.approx((values ** 2).sum())
        assert sum(h.bucket) == 100


@pytest.mark.parametrize("fmt,shape", [("CHW", (3, 6, 5)), ("HWC", (6, 5, 3)), ("HW", (6, 5)),
                                       ("CHW", (1, 6, 5))])
def test_images(tmp_path, fmt, shape):
    pytest.importorskip("PIL")
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("img", ember.rand(*shape), 0, dataformats=fmt)
    image = _read(tmp_path).Images("img")[0]
    assert (image.height, image.width) == (6, 5)
    assert image.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"


def test_images_grid(tmp_path):
    pytest.importorskip("PIL")
    with SummaryWriter(str(tmp_path)) as w:
        w.add_images("batch", ember.rand(4, 3, 8, 8), 0)
    grid = _read(tmp_path).Images("batch")[0]
    assert (grid.height, grid.width) == (2 + 2 * 10, 2 + 2 * 10)  # 2x2 tiles, 2-pixel padding


def test_figure(tmp_path):
    pytest.importorskip("PIL")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(str(tmp_path)) as w:
        w.add_figure("fig", fig, 1)
    image = _read(tmp_path).Images("fig")[0]
    assert (image.width, image.height) == (100, 50) and image.step == 1


def test_text_graph_and_hparams(tmp_path):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    with SummaryWriter(str(tmp_path)) as w:
        w.add_text("notes", "hello *world*", 2)
        w.add_graph(model, ember.randn(5, 4))
        w.add_hparams({"lr": 0.1, "opt": "sgd"}, {"hparam/accuracy": 0.75}, run_name="trial")
    acc = _read(tmp_path)
    (text,) = acc.Tensors("notes/text_summary")
    assert text.step == 2 and text.tensor_proto.string_val[0] == b"hello *world*"
    graph = acc.Graph()
    nodes = {n.name: n for n in graph.node}
    assert nodes["Sequential/Linear[0]/weight"].op == "Parameter"
    relu = next(n for n in graph.node if n.op == "ReluBackward0")
    assert relu.name.startswith("Sequential/ReLU[1]/")
    for n in graph.node:
        assert all(i in nodes for i in n.input)
    assert any(n.op == "IO Node" and n.name.startswith("output") for n in graph.node)
    trial = _read(tmp_path / "trial")
    (metric,) = trial.Scalars("hparam/accuracy")
    assert metric.value == pytest.approx(0.75)
    assert "_hparams_/experiment" in trial.summary_metadata


def test_close_and_errors(tmp_path):
    w = SummaryWriter(str(tmp_path), comment="x", filename_suffix=".ember")
    w.add_scalar("a", 1.0, 0)
    w.close()
    w.close()
    assert any(f.endswith(".ember") for f in os.listdir(tmp_path))
    with pytest.raises(RuntimeError, match="after close"):
        w.add_scalar("a", 1.0, 1)
    with SummaryWriter(str(tmp_path / "e")) as w2:
        with pytest.raises(ValueError):
            w2.add_scalar("a", ember.ones(3), 0)
        with pytest.raises(ValueError):
            w2.add_image("img", ember.rand(3, 4), 0, dataformats="CHW")


def test_missing_tensorboard_names_the_extra(monkeypatch):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith("tensorboard."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match=r"ember\[viz\]"):
        SummaryWriter("unused")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("tensorboard") is None, reason="tensorboard program missing")
def test_tensorboard_serves_the_scalars(tmp_path):
    with SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalar("loss", 3.0 - step, step)
    port = _free_port()
    proc = subprocess.Popen(
        [shutil.which("tensorboard"), "--logdir", str(tmp_path), "--host", "127.0.0.1",
         "--port", str(port), "--reload_interval", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?run=.&tag=loss"
    try:
        deadline = time.monotonic() + 60
        data = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    import json

                    data = json.loads(response.read())
                if data:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert data is not None, "tensorboard did not answer within 60 s"
        assert [(step, value) for _, step, value in data] == [(0, 3.0), (1, 2.0), (2, 1.0)]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
