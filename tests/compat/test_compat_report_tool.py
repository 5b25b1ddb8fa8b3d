"""tools/compat_report.py says clearly that it needs PyTorch, and exits 2 without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCK_TORCH_AND_RUN = (
    "import runpy, sys; sys.modules['torch'] = None; "
    f"runpy.run_path({str(ROOT / 'tools' / 'compat_report.py')!r}, run_name='__main__')")


def test_without_pytorch_it_explains_and_exits_2():
    report = ROOT / "docs" / "compat.md"
    before = report.read_bytes() if report.exists() else None
    result = subprocess.run([sys.executable, "-c", BLOCK_TORCH_AND_RUN], capture_output=True,
                            text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 2
    assert "needs PyTorch" in result.stderr
    assert 'pip install "torch==2.13.*" --index-url https://download.pytorch.org/whl/cpu' in (
        result.stderr)
    assert "Nothing was written" in result.stderr and "Traceback" not in result.stderr
    after = report.read_bytes() if report.exists() else None
    assert before == after
