"""The README stays true: its main-job commands and its Python example run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_main_job_and_python_example(tmp_path: Path) -> None:
    pytest.importorskip("onnx", reason="onnx not installed (the converter needs it)")
    mnnpy_cli = [sys.executable, "-m", "mnnpy.cli.main"]
    model = tmp_path / "mobilenet_v2_block.mnn"
    subprocess.run([*mnnpy_cli, "convert", "-f", "ONNX", "--modelFile", str(ROOT / "examples/mobilenet_v2_block.onnx"),
                    "--MNNModel", str(model)], check=True, capture_output=True)
    run = subprocess.run([*mnnpy_cli, "run", str(model), "--repeat", "2"], check=True, capture_output=True, text=True)
    assert "output" in run.stdout and "ms" in run.stdout
    example = re.search(r"## Use\n\n```python\n(.*?)```", README, re.S)
    assert example is not None
    code = example.group(1).replace("out/mobilenet_v2_block.mnn", str(model))
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, cwd=tmp_path)


def test_main_job_command_uses_the_bundled_example() -> None:
    block = README.split("## Set-up", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert "mnnpy convert" in block and "mnnpy run" in block
    assert (ROOT / "examples" / "mobilenet_v2_block.onnx").exists()
