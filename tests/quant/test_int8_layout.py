"""int8 Raster: layout ops (Transpose, Concat, Slice, Reshape) between int8 convolutions share one scale in the
quantised model and run on the int8 codes, with no Int8ToFloat / FloatToInt8 around them; official MNN agrees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net
from mnnpy.schema import mnn_generated as fb
from support.models import save_onnx

import mnnpy
from mnnpy.quant import interpreter, lower_int8, quantize_model

from .conftest import calibration_inputs, logits

OT = fb.OpType
SIZE = 16


def layout_onnx(path: Path) -> Path:
    """conv -> Transpose -> conv, two convs -> Concat -> 1x1 conv -> channel Slice -> Reshape -> conv -> conv."""
    from onnx import helper as h

    rng = np.random.default_rng(0)

    def conv_w(oc: int, ic: int, k: int) -> np.ndarray:
        return rng.normal(0.0, np.sqrt(2.0 / (ic * k * k)), (oc, ic, k, k)).astype(np.float32)

    inits = {"w0": conv_w(16, 3, 3), "b0": np.full(16, 0.1, np.float32), "w1": conv_w(16, 16, 3),
             "w2": conv_w(16, 16, 3), "w3": conv_w(16, 32, 1), "w4": conv_w(16, 8, 3), "w5": conv_w(10, 16, 1),
             "st": np.array([0], np.int64), "en": np.array([8], np.int64), "ax": np.array([1], np.int64),
             "shp": np.array([1, 8, SIZE, SIZE], np.int64)}
    pad = {"pads": [1, 1, 1, 1]}
    nodes = [
        h.make_node("Conv", ["x", "w0", "b0"], ["c0"], **pad), h.make_node("Relu", ["c0"], ["r0"]),
        h.make_node("Transpose", ["r0"], ["t0"], perm=[0, 1, 3, 2]),
        h.make_node("Conv", ["t0", "w1"], ["c1"], **pad), h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("Conv", ["r0", "w2"], ["c2"], **pad), h.make_node("Relu", ["c2"], ["r2"]),
        h.make_node("Concat", ["r1", "r2"], ["cat"], axis=1),
        h.make_node("Conv", ["cat", "w3"], ["c3"]), h.make_node("Relu", ["c3"], ["r3"]),
        h.make_node("Slice", ["r3", "st", "en", "ax"], ["sl"]),
        h.make_node("Reshape", ["sl", "shp"], ["rs"]),
        h.make_node("Conv", ["rs", "w4"], ["c4"], **pad), h.make_node("Relu", ["c4"], ["r4"]),
        h.make_node("Conv", ["r4", "w5"], ["y"]),
    ]
    return save_onnx(path, nodes, {"x": [1, 3, SIZE, SIZE]}, {"y": [1, 10, SIZE, SIZE]}, inits, name="layout")


@pytest.fixture(scope="module")
def layout_model(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("onnx")
    from support.official import convert

    root = tmp_path_factory.mktemp("qlayout")
    fp32 = convert(layout_onnx(root / "m.onnx"), root / "m.mnn")
    np.save(root / "cal.npy", calibration_inputs(20, SIZE, seed=1))
    int8 = root / "int8.mnn"
    _, report = quantize_model(fp32, int8, {"path": str(root / "cal.npy"), "feature_quantize_method": "KL"})
    assert report.counts["convs"] == 6 and report.counts["layout"] == 4
    return {"fp32": fp32, "int8": int8}


def test_layout_ops_share_scales_and_stay_int8(layout_model: dict[str, Path]) -> None:
    net = load_net(layout_model["int8"])
    names = [str(n) for n in net.tensorName]
    scale = {names[int(d.index)]: d.quantInfo.scale for d in net.extraTensorDescribe if d.quantInfo is not None}
    assert scale["r0"] == scale["t0"] and scale["r1"] == scale["r2"] == scale["cat"]
    assert scale["r3"] == scale["sl"] == scale["rs"]
    lowered = lower_int8(net)
    low_names = [str(n) for n in lowered.tensorName]
    layout = [op for op in lowered.oplists if op.type in (OT.Permute, OT.Concat, OT.StridedSlice, OT.Reshape)]
    assert len(layout) == 4
    for op in layout:  # int8 codes in, int8 codes out
        assert low_names[op.inputIndexes[0]].endswith("__int8") and low_names[op.outputIndexes[0]].endswith("__int8")
    kinds = [op.type for op in lowered.oplists]
    assert kinds.count(OT.FloatToInt8) == 1 and kinds.count(OT.Int8ToFloat) == 1  # the model's input and output only


def test_int8_layout_matches_official_and_float(layout_model: dict[str, Path]) -> None:
    from support.official import run as official

    xs = calibration_inputs(8, SIZE, seed=7)
    ours = logits(interpreter(str(layout_model["int8"])), xs)
    theirs = np.array([official(layout_model["int8"], {"x": x[None]})["y"].ravel() for x in xs])
    net = load_net(layout_model["int8"])
    last = next(op for op in net.oplists if op.type == OT.Convolution and str(op.name) == "y")
    step = {int(d.index): d.quantInfo.scale for d in net.extraTensorDescribe if d.quantInfo}[int(last.outputIndexes[0])]
    assert np.abs(ours - theirs).max() <= step * (1 + 1e-3)
    ref = logits(mnnpy.Interpreter(str(layout_model["fp32"])), xs)
    cosine = (ref * ours).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(ours, axis=1)
    assert cosine.min() >= 0.99
