"""Interop with the official MNN wheel, both directions (the spine's acceptance)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.schema import load_net, save_net
from mnnpy.schema import mnn_generated as fb
from mnnpy.schema.jsonify import to_dict
from mnnpy.schema.layout_generated import LAYOUT
from mnnpy.schema.walk import fields
from support import official
from support.models import interop_onnx, scratch_cnn, scratch_cnn_reference


def test_official_to_mnnpy_to_official(tmp_path: Path) -> None:
    """A model written by the official converter survives load_net + save_net bit-for-bit in behaviour."""
    official.require_mnn()
    pytest.importorskip("onnx", reason="onnx not installed")
    src = official.convert(interop_onnx(tmp_path / "m.onnx"), tmp_path / "m.mnn")
    net = load_net(src)
    types = {op.type for op in net.oplists}
    assert len(types) >= 12, "the converted model should exercise many op types"
    resaved = save_net(net, tmp_path / "resaved.mnn")
    x = np.random.default_rng(1).normal(size=(1, 3, 8, 8)).astype(np.float32)
    before = official.run(src, {"x": x})
    after = official.run(resaved, {"x": x})
    assert before.keys() == after.keys() == {"y"}
    assert before["y"].shape == (1, 64, 10)
    np.testing.assert_array_equal(before["y"], after["y"])


def test_resaved_net_is_stable(tmp_path: Path) -> None:
    """load -> save -> load -> save gives identical bytes (the writer is deterministic)."""
    official.require_mnn()
    src = official.convert(interop_onnx(tmp_path / "m.onnx"), tmp_path / "m.mnn")
    first = save_net(load_net(src), tmp_path / "a.mnn").read_bytes()
    second = save_net(load_net(first), tmp_path / "b.mnn").read_bytes()
    assert first == second


def test_scratch_net_runs_in_official_mnn(tmp_path: Path) -> None:
    """A net built from scratch with the object API loads and runs in official MNN and matches numpy to 1e-5."""
    official.require_mnn()
    net, weights = scratch_cnn()
    path = save_net(net, tmp_path / "scratch.mnn")
    x = np.random.default_rng(2).normal(size=(1, 3, 8, 8)).astype(np.float32)
    got = official.run(path, {"x": x})["y"]
    want = scratch_cnn_reference(x, weights["w"], weights["b"])
    assert got.shape == want.shape == (1, 4, 4, 4)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


# the union members mnnpy once declared empty (issue #2 / #6), with the op type official MNN files them under
FILLED = {"QuantizedAdd": "QuantizedAdd", "AsString": "AsString", "CropAndResize": "CropAndResize",
          "Dequantize": "Dequantize", "Proposal": "Proposal", "QuantizedAvgPool": "QuantizedAvgPool",
          "QuantizedBiasAdd": "QuantizedBiasAdd", "QuantizedConcat": "QuantizedConcat",
          "QuantizedLogistic": "QuantizedLogistic", "QuantizedMatMul": "Unique", "QuantizedMaxPool": "QuantizedMaxPool",
          "QuantizedRelu": "Unique", "QuantizedRelu6": "Unique", "QuantizedReshape": "QuantizedReshape",
          "QuantizedSoftmax": "QuantizedSoftmax", "QuantizeMaxMin": "QuantizeMaxMin", "QuantizeV2": "QuantizeV2",
          "Rank": "Rank", "ReduceJoin": "ReduceJoin", "RequantizationRange": "RequantizationRange",
          "Requantize": "Requantize", "TfQuantizedConv2D": "TfQuantizedConv2D", "EltwiseInt8": "EltwiseInt8",
          "DetectionPostProcessParam": "DetectionPostProcess", "TensorArray": "TensorArray",
          "LSTMBlockCell": "LSTMBlockCell", "ImageProcessParam": "ImageProcess", "FmhaV2Param": "FmhaV2",
          "FmhcaParam": "Fmhca", "StftParam": "Stft", "LinearAttentionParam": "LinearAttention"}
_NUMPY = {"f": np.float32, "b": np.int8, "B": np.uint8, "i": np.int32, "q": np.int64, "I": np.uint32}


def _filled(table: str, seed: int, depth: int = 0) -> object:
    """An object-API `table` with every field set to a value that is not its default (sub-tables one level deep)."""
    obj = getattr(fb, table + "T")()
    for k, (_name, attr, kind) in enumerate(fields(table)):
        s = seed + k
        if kind[0] == "vector" and kind[1][0] == "scalar":
            value: object = np.array([s % 7 + 1, s % 5 + 2], _NUMPY[kind[1][1]])
        elif kind[0] == "vector" and kind[1][0] == "table":
            value = [_filled(kind[1][1], 3 * s, depth + 1)] if depth == 0 else None
        elif kind[0] == "table":
            value = _filled(kind[1], 7 * s, depth + 1) if depth == 0 else None
        elif kind[0] == "enum":
            value = sorted(LAYOUT["enums"][kind[2]]["values"].values())[1]
        else:
            value = {"f": 0.25 + s, "B": True}.get(kind[1], s % 100 + 2) if kind[0] == "scalar" else f"s{s}"
        if value is not None:
            setattr(obj, attr, value)
    return obj


def test_every_field_of_the_filled_tables_survives_official_mnn(tmp_path: Path) -> None:
    """A file with one op per formerly empty table, every field set: official MNN's converter reads it (MNN -> MNN)
    and writes every value back unchanged, except LinearAttentionParam's three post-3.6.1 fields, which 3.6.1 drops.
    """
    official.require_mnn()
    net = fb.NetT()
    x = fb.OpT()
    x.type, x.mainType, x.main, x.name, x.outputIndexes = fb.OpType.Input, fb.OpParameter.Input, fb.InputT(), "x", [0]
    x.main.dims, x.main.dformat = [1, 4], fb.MNN_DATA_FORMAT.NCHW
    net.oplists, net.tensorName = [x], ["x"]
    for k, (table, op_type) in enumerate(FILLED.items()):
        op = fb.OpT()
        op.type, op.mainType = getattr(fb.OpType, op_type), getattr(fb.OpParameter, table)
        op.main, op.name, op.inputIndexes, op.outputIndexes = _filled(table, 3 * k), table, [0], [k + 1]
        net.oplists.append(op)
        net.tensorName.append(f"y{k}")
    net.outputName = net.tensorName[1:]
    back = {op.name: op for op in load_net(official.convert(save_net(net, tmp_path / "in.mnn"), tmp_path / "out.mnn",
                                                            framework="MNN")).oplists}
    for op in net.oplists[1:]:
        ours = to_dict(op.main, op.name)
        if op.name == "LinearAttentionParam":
            ours.update(gate_fold=False)
            del ours["gate_coef"], ours["gate_bias"]
        assert back[op.name].mainType == op.mainType and to_dict(back[op.name].main, op.name) == ours, op.name
