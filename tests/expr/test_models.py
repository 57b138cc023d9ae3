"""A converted model loaded as Vars (`load_as_dict`) runs through the same core, vs onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import official

import mnnpy.expr as F  # noqa: N812 - the alias MNN scripts use
from mnnpy.expr.graph import COUNTERS


def _model(path: Path) -> Path:
    onnx = pytest.importorskip("onnx", reason="onnx builds the test model")
    h = onnx.helper
    rng = np.random.default_rng(2)
    w = rng.normal(0, 0.3, (6, 3, 3, 3)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, (1, 6, 1, 1)).astype(np.float32)
    nodes = [h.make_node("Conv", ["data", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             h.make_node("Mul", ["c", "s"], ["m"]), h.make_node("Sigmoid", ["m"], ["g"]),
             h.make_node("ReduceMean", ["g"], ["r"], axes=[2, 3], keepdims=0),
             h.make_node("Softmax", ["r"], ["prob"], axis=-1)]
    graph = h.make_graph(nodes, "m", [h.make_tensor_value_info("data", 1, [2, 3, 11, 9])],
                         [h.make_tensor_value_info("prob", 1, [2, 6])],
                         [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(scale, "s")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_load_as_dict_runs_official_model(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
    src = _model(tmp_path / "m.onnx")
    path = official.convert(src, tmp_path / "m.mnn")
    inputs, outputs = F.get_inputs_and_outputs(F.load_as_dict(str(path)))
    assert list(inputs) == ["data"] and "prob" in outputs
    session = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"])
    plans = None
    for seed in range(3):
        x = np.random.default_rng(seed).normal(size=(2, 3, 11, 9)).astype(np.float32)
        inputs["data"].write(x)
        np.testing.assert_allclose(outputs["prob"].read(), session.run(None, {"data": x})[0], rtol=1e-5, atol=1e-6)
        if plans is None:
            plans = COUNTERS["plans"]
        assert COUNTERS["plans"] == plans  # new input values never re-plan
    assert len(F.load_as_list(str(path))) == len(outputs)
