"""examples/export_onnx.py runs end to end."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "export_onnx.py"


def test_export_onnx_example(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("export_onnx", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    worst = module.main(str(tmp_path / "mnist.onnx"))
    assert worst < 1e-4
    assert "onnxruntime matches ember" in capsys.readouterr().out
