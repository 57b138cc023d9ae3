"""`mnnpy convert` through mnnpy.cli.main.main: success summary, JSON, fp16, errors without tracebacks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter import ConvertError, convert
from mnnpy.schema import ModelError, load_net
from mnnpy.schema import mnn_generated as fb

from mnnpy.cli.main import main

from .helpers import F, make_model, oh, onnx, run_mnn, run_ort
from .models import resnet_block_model


def _save(model: object, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def test_convert_cli_writes_model_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, _ = resnet_block_model()
    src = _save(model, tmp_path / "m.onnx")
    dst = tmp_path / "m.mnn"
    js = tmp_path / "m.json"
    code = main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(dst), "--bizCode", "biz",
                 "--JsonFile", str(js)])
    assert code == 0
    out = capsys.readouterr().out
    assert "in ->" in out and "merge-bn-to-convolution" in out
    net = load_net(dst)
    assert net.bizCode == "biz" and net.sourceType == fb.NetSource.ONNX and net.outputName == ["y"]
    assert js.read_text().startswith("{")


def test_unsupported_ops_listed_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [oh.make_node("Relu", ["x"], ["a"]), oh.make_node("FooBar", ["a"], ["b"], name="foo1"),
             oh.make_node("FooBar", ["b"], ["c"], name="foo2"), oh.make_node("Bazz", ["c"], ["y"], name="bz")]
    src = _save(make_model(nodes, [("x", F, [1, 3])], ["y"]), tmp_path / "bad.onnx")
    dst = tmp_path / "bad.mnn"
    with pytest.raises(ConvertError) as info:
        convert(src, dst)
    text = str(info.value)
    assert "FooBar: foo1, foo2" in text and "Bazz: bz" in text and "opset 17" in text
    assert isinstance(info.value, ModelError)
    assert not dst.exists()
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(dst)]) == 2
    err = capsys.readouterr().err
    assert "FooBar" in err and "Traceback" not in err
    assert not dst.exists()


def test_failed_conversion_keeps_existing_output(tmp_path: Path) -> None:
    nodes = [oh.make_node("FooBar", ["x"], ["y"])]
    src = _save(make_model(nodes, [("x", F, [1, 3])], ["y"]), tmp_path / "bad.onnx")
    dst = tmp_path / "keep.mnn"
    dst.write_bytes(b"precious")
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(dst)]) == 2
    assert dst.read_bytes() == b"precious"


def test_missing_model_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "-f", "ONNX", "--modelFile", str(tmp_path / "nope.onnx"), "--MNNModel",
                 str(tmp_path / "o.mnn")]) == 2
    assert "not found" in capsys.readouterr().err


def test_fp16_halves_weights_and_runs(tmp_path: Path) -> None:
    model, feeds = resnet_block_model()
    src = _save(model, tmp_path / "m.onnx")
    full, half = tmp_path / "f.mnn", tmp_path / "h.mnn"
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(full), "-q"]) == 0
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(half), "--fp16", "-q"]) == 0
    assert half.stat().st_size < 0.6 * full.stat().st_size
    ref = run_ort(model, feeds)[0]
    got = run_mnn(half, feeds, ["y"])[0]
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) < 1e-2


@pytest.mark.parametrize(("bits", "tolerance"), [(8, 2e-2), (4, 0.3)])
def test_weight_quant_bits_runs_in_official_mnn(bits: int, tolerance: float, tmp_path: Path) -> None:
    model, feeds = resnet_block_model()
    src = _save(model, tmp_path / "m.onnx")
    full, quant = tmp_path / "f.mnn", tmp_path / "q.mnn"
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(full), "-q"]) == 0
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(quant), "-q",
                 "--weightQuantBits", str(bits)]) == 0
    assert quant.stat().st_size < 0.5 * full.stat().st_size
    convs = [op for op in load_net(quant).oplists if op.type == fb.OpType.Convolution]
    assert all(op.main.weight is None and op.main.quanParameter.type == 1 for op in convs)
    ref = run_ort(model, feeds)[0]
    got = run_mnn(quant, feeds, ["y"])[0]
    assert float(np.abs(got - ref).max() / np.abs(ref).max()) < tolerance


def test_weight_quant_buffer_layout() -> None:
    from mnnpy.converter.quantize import quantize_conv

    param = fb.Convolution2DT()
    param.common = fb.Convolution2DCommonT()
    param.common.outputCount = 2
    param.weight = np.array([0.0, 1.0, 0.5, -1.0, 1.0, 0.0], np.float32)
    assert quantize_conv(param, 8)
    buf = np.asarray(param.quanParameter.buffer).view(np.uint8)
    assert buf[:6].tolist() == [2, 2, 0, 3, 0, 0] and len(buf) == 6 + 256 + 6
    assert buf[6:8].tolist() == [128, 129] and buf[-6:].tolist() == [0, 255, 127, 0, 255, 127]
    alpha = np.asarray(param.quanParameter.alpha).reshape(2, 2)
    assert np.allclose(alpha, [[0, 1 / 255], [-1, 2 / 255]])
    restored = buf[-6:].reshape(2, 3) * alpha[:, 1:] + alpha[:, :1]
    assert np.abs(restored.ravel() - [0.0, 1.0, 0.5, -1.0, 1.0, 0.0]).max() < 2 / 255


def test_framework_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.caffemodel"
    model.write_bytes(b"")
    assert main(["convert", "-f", "CAFFE", "--modelFile", str(model), "--MNNModel", str(tmp_path / "o.mnn")]) == 2
    assert "--prototxt" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["convert", "-f", "TFLITE", "--modelFile", str(model)])
    model, _ = resnet_block_model()
    src = _save(model, tmp_path / "m.onnx")
    assert main(["convert", "-f", "onnx", "--modelFile", str(src), "--MNNModel", str(tmp_path / "o.mnn"), "-q"]) == 0


def test_every_unconvertible_node_is_listed(tmp_path: Path) -> None:
    nodes = [oh.make_node("GridSample", ["x", "g"], ["a"], mode="cubic", padding_mode="reflection",
                          name="grid_reflect"),
             oh.make_node("Pad", ["a", "p"], ["y"], mode="wrap", name="pad_wrap")]
    wide = np.array([0, 0, 9, 0, 0, 0, 0, 0], np.int64)  # wrap pads past the dim size (4) are not converted
    grid = np.zeros((1, 4, 4, 2), np.float32)  # bicubic GridSample converts with zeros / border padding only
    model = make_model(nodes, [("x", F, [1, 3, 8, 8])], ["y"], {"p": wide, "g": grid}, opset=19)
    with pytest.raises(ConvertError) as info:
        convert(_save(model, tmp_path / "m.onnx"), tmp_path / "m.mnn")
    assert "grid_reflect" in str(info.value) and "pad_wrap" in str(info.value) and "2 ONNX nodes" in str(info.value)
    assert not (tmp_path / "m.mnn").exists()
