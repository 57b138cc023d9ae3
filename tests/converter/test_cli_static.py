"""`mnnpy convert --inputConfigFile/--saveStaticModel` (MNNConvert's config format) and the tqdm progress bar."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter import ConvertError, convert
from mnnpy.schema import load_net
from mnnpy.schema import mnn_generated as fb

from mnnpy.cli.main import main

from .helpers import F, make_model, oh, onnx, rel_diff, run_mnn, run_ort

SHAPE_OPS = {fb.OpType.Shape, fb.OpType.Size, fb.OpType.Rank, fb.OpType.Gather, fb.OpType.GatherV2,
             fb.OpType.Concat, fb.OpType.Unsqueeze}


def _dynamic_model() -> object:
    """x [N, 3, H, W] -> Conv -> Reshape to (batch, -1) with the batch taken by Shape/Gather/Unsqueeze/Concat."""
    rng = np.random.default_rng(4)
    nodes = [oh.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), oh.make_node("Shape", ["c"], ["s"]),
             oh.make_node("Gather", ["s", "zero"], ["n"], axis=0), oh.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             oh.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             oh.make_node("Reshape", ["c", "target"], ["y"])]
    inits = {"w": rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32), "zero": np.int64(0),
             "axes": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    return make_model(nodes, [("x", F, ["N", 3, "H", "W"])], ["y"], inits, opset=13)


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.txt"
    path.write_text(text)
    return path


def test_save_static_model_folds_shape_ops(tmp_path: Path) -> None:
    model = _dynamic_model()
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    dynamic, static = tmp_path / "d.mnn", tmp_path / "s.mnn"
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(dynamic), "-q"]) == 0
    config = _config(tmp_path, "# MNNConvert input config\ninput_size = 1\ninput_names = x\ninput_dims = 2x3x5x6\n")
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(static), "-q",
                 "--inputConfigFile", str(config), "--saveStaticModel"]) == 0
    dyn_types = {op.type for op in load_net(dynamic).oplists}
    net = load_net(static)
    assert fb.OpType.Shape in dyn_types  # the dynamic file computes the target shape at run time ...
    assert not SHAPE_OPS & {op.type for op in net.oplists}  # ... the static one has it as a constant
    (inp,) = [op for op in net.oplists if op.type == fb.OpType.Input]
    assert list(inp.main.dims) == [2, 3, 5, 6]
    feeds = {"x": np.random.default_rng(1).uniform(-1, 1, (2, 3, 5, 6)).astype(np.float32)}
    (ref,) = run_ort(model, feeds)
    (got,) = run_mnn(static, feeds, ["y"])
    assert got.shape == ref.shape == (2, 120) and rel_diff(got, ref) <= 1e-4


def test_input_config_alone_fixes_input_dims(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(_dynamic_model(), str(src))
    net, report = convert(src, None, input_config=_config(tmp_path, "input_names = x\ninput_dims = 1x3x8x8\n"))
    (inp,) = [op for op in net.oplists if op.type == fb.OpType.Input]
    assert list(inp.main.dims) == [1, 3, 8, 8] and "fold-static-shapes" not in report.passes


@pytest.mark.parametrize(("text", "message"), [
    ("input_names = y\ninput_dims = 1x3x8x8\n", "no model input named ['y']"),
    ("input_names = x\ninput_dims = 1x3xAx8\n", "is not like 1x3x224x224"),
    ("input_names = x\n", "missing 'input_dims"),
    ("input_names = x\ninput_dims = 1x3x8\n", "has rank 4"),
    ("input_names = x\ninput_dims = 2x4x8x8\n", "declared [-1, 3, -1, -1]"),
    ("input_size = 2\ninput_names = x\ninput_dims = 1x3x8x8\n", "input_size = 2 but 1"),
    ("inputs = x\n", "unknown key 'inputs'"),
])
def test_bad_input_config_is_a_clear_error(text: str, message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(_dynamic_model(), str(src))
    config = _config(tmp_path, text)
    with pytest.raises(ConvertError, match=r"config\.txt") as info:
        convert(src, tmp_path / "o.mnn", input_config=config, save_static=True)
    assert message in str(info.value)
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(tmp_path / "o.mnn"),
                 "--inputConfigFile", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o.mnn").exists()


def test_save_static_model_needs_fixed_shapes(tmp_path: Path) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(_dynamic_model(), str(src))
    with pytest.raises(ConvertError, match="needs fixed input shapes"):
        convert(src, tmp_path / "o.mnn", save_static=True)


def test_progress_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mnnpy.converter.frontends.onnx import load_onnx
    from mnnpy.converter.progress import AUTO_MIN_NODES, Progress, wanted

    model = _dynamic_model()
    src = tmp_path / "m.onnx"
    onnx.save(model, str(src))
    convert(src, None, progress=True)
    err = capsys.readouterr().err
    assert "convert m.onnx:   0%" in err and "0/6" in err  # the bar, on stderr (cleared when done)
    bar = Progress(6, True, stream=io.StringIO())
    load_onnx(model, bar)
    assert bar.bar.n == 6  # one step per ONNX node
    bar.close()
    convert(src, None, progress=False)
    convert(src, None, progress=None)  # auto: stderr is not a terminal here
    assert capsys.readouterr().err == ""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wanted(None, AUTO_MIN_NODES, Tty()) and not wanted(None, AUTO_MIN_NODES - 1, Tty())
    assert not wanted(None, 10 * AUTO_MIN_NODES, io.StringIO()) and not wanted(False, 10**6, Tty())
    assert main(["convert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(tmp_path / "o.mnn")]) == 0
    out = capsys.readouterr()
    assert "6 in ->" in out.out and "passes applied" in out.out and out.err == ""
