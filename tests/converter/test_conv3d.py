"""3-D Conv / MaxPool / AveragePool -> MNN's Convolution3D / Pooling3D, run in official MNN and in mnnpy's CPU
runtime against onnxruntime.

(Official MNN's own converter lowers 3-D convs to Im2Col + 2-D convs, and its 3.6.1 runtime crashes on that file for
a 1x3x6x7x8 input; the Convolution3D op itself runs.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter import ConvertError
from mnnpy.schema import mnn_generated as fb
from support import runners

from .helpers import F, check_model, make_model, oh, onnx, rel_diff, run_ort

X_SHAPE = [1, 3, 6, 7, 8]


def _conv_model(rng: np.random.Generator, **attrs: object) -> object:
    w = rng.uniform(-1, 1, (4, 3, 3, 2, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    nodes = [oh.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 2, 3], **attrs),
             oh.make_node("Relu", ["c"], ["y"])]
    return make_model(nodes, [("x", F, X_SHAPE)], ["y"], {"w": w, "b": b}, opset=13)


def _check_both(model: object, x: np.ndarray, tmp_path: Path, op_type: int, tol: float) -> None:
    """Convert; official MNN (check_model) and mnnpy's CPU runtime both match onnxruntime; the op is emitted."""
    net = check_model(model, {"x": x}, tmp_path)
    assert op_type in [op.type for op in net.oplists]
    got = runners.run(tmp_path / "model.mnn", {"x": x}, ["y"], dim=None, config={"backend": "CPU"})["y"]
    (ref,) = run_ort(model, {"x": x})
    assert got.shape == ref.shape and rel_diff(got, ref) <= tol


@pytest.mark.parametrize("attrs", [
    {"pads": [1, 0, 1, 1, 0, 1]},
    {"pads": [0, 1, 1, 1, 0, 2], "strides": [1, 2, 1]},  # asymmetric: a zero Padding op in front
    {"strides": [2, 1, 2], "dilations": [1, 2, 1]},
], ids=["pads", "asymmetric-pads", "strides-dilations"])
def test_conv3d(attrs: dict, tmp_path: Path) -> None:
    """Official MNN and mnnpy's CPU runtime both run the file equal to onnxruntime."""
    rng = np.random.default_rng(3)
    model = _conv_model(rng, **attrs)
    x = rng.uniform(-1, 1, X_SHAPE).astype(np.float32)
    _check_both(model, x, tmp_path, fb.OpType.Convolution3D, 1e-5)


@pytest.mark.parametrize(("op", "attrs"), [
    ("MaxPool", {"kernel_shape": [2, 2, 2], "strides": [2, 2, 1]}),
    ("MaxPool", {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1]}),
    ("AveragePool", {"kernel_shape": [3, 1, 2], "strides": [1, 1, 2], "pads": [1, 0, 0, 1, 0, 0]}),
    ("AveragePool", {"kernel_shape": [3, 3, 2], "pads": [1, 1, 0, 1, 1, 0], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2, 2, 2]}),
], ids=["max", "max-pads", "avg-pads", "avg-count-pad", "avg"])
def test_pool3d(op: str, attrs: dict, tmp_path: Path) -> None:
    """Official MNN and mnnpy's CPU runtime (windowed Pooling3D kernel) both run the file equal to onnxruntime."""
    rng = np.random.default_rng(5)
    model = make_model([oh.make_node(op, ["x"], ["y"], **attrs)], [("x", F, X_SHAPE)], ["y"], opset=13)
    x = rng.uniform(-1, 1, X_SHAPE).astype(np.float32)
    _check_both(model, x, tmp_path, fb.OpType.Pooling3D, 1e-6)


def test_unexpressible_3d_forms_are_clear_errors(tmp_path: Path) -> None:
    from mnnpy.converter import convert

    rng = np.random.default_rng(1)
    grouped = make_model([oh.make_node("Conv", ["x", "w"], ["y"], group=3, name="g3")], [("x", F, X_SHAPE)], ["y"],
                         {"w": rng.uniform(-1, 1, (3, 1, 3, 3, 3)).astype(np.float32)}, opset=13)
    asym = make_model([oh.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2], pads=[0, 0, 0, 1, 1, 1],
                                    name="mp")], [("x", F, X_SHAPE)], ["y"], opset=13)
    for model, words in ((grouped, "grouped 3-D convolution"), (asym, "asymmetric 3-D pooling pads")):
        onnx.save(model, str(tmp_path / "m.onnx"))
        with pytest.raises(ConvertError, match=words):
            convert(tmp_path / "m.onnx", tmp_path / "m.mnn")
