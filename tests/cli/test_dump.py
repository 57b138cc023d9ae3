"""`mnnpy dump`: text and JSON views of a model, clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mnnpy.schema import save_net
from support.models import scratch_cnn

from mnnpy.cli.main import main


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return save_net(scratch_cnn()[0], tmp_path / "m.mnn")


def test_dump_text_lists_ops_and_tensors(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", str(model)]) == 0
    out = capsys.readouterr().out
    assert "4 ops, 4 tensors, source ONNX" in out
    assert "Convolution" in out and "x -> conv" in out and "weight[108]" in out and "relu=True" in out
    assert "Softmax" in out and "axis=1" in out


def test_dump_json_is_mnn_shaped(model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", str(model), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tensorName"] == ["x", "conv", "pool", "y"]
    conv = data["oplists"][1]
    assert conv["type"] == "Convolution" and conv["main_type"] == "Convolution2D"
    assert conv["main"]["common"]["kernelX"] == 3 and len(conv["main"]["weight"]) == 108
    assert data["oplists"][2]["main"]["type"] == "MAXPOOL"


def test_dump_bad_file_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.mnn"
    bad.write_bytes(b"\x10\x00\x00\x00garbage")
    assert main(["dump", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.mnn" in err and "Traceback" not in err


def test_os_errors_are_reported_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", str(tmp_path / "missing-dir" / "m.mnn")]) == 2
    err = capsys.readouterr().err
    assert "m.mnn" in err and "Traceback" not in err
