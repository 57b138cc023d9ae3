"""A full preprocessing chain: imread -> cvtColor -> resize -> normalise -> NC4HW4 -> model, in mnnpy
(`MNN.cv` + `MNN.numpy` + `MNN.nn`) against cv2 + numpy + onnxruntime on the real photograph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support import official
from support.models import save_onnx

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use

onnx = pytest.importorskip("onnx", reason="onnx builds the test model")
helper = onnx.helper
SIZE = 64
MEAN = np.array([123.675, 116.28, 103.53], np.float32)
STD = np.array([58.395, 57.12, 57.375], np.float32)


def _model(path: Path) -> Path:
    """data [1, 3, 64, 64] -> Conv s2 (8) -> Relu -> Conv (5) -> GlobalAveragePool -> Flatten -> Gemm (6)."""
    rng = np.random.default_rng(11)
    arrays = {"w1": rng.normal(0, 0.2, (8, 3, 3, 3)), "b1": rng.normal(0, 0.1, 8),
              "w2": rng.normal(0, 0.2, (5, 8, 3, 3)), "b2": rng.normal(0, 0.1, 5),
              "fc": rng.normal(0, 0.3, (6, 5)), "fb": rng.normal(0, 0.1, 6)}
    nodes = [
        helper.make_node("Conv", ["data", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["out"], transB=1),
    ]
    inits = {k: v.astype(np.float32) for k, v in arrays.items()}
    return save_onnx(path, nodes, {"data": [1, 3, SIZE, SIZE]}, {"out": [1, 6]}, inits, name="chain", opset=17)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("cvchain")
    src = _model(folder / "chain.onnx")
    return src, official.convert(src, folder / "chain.mnn")


ORDERS = ["uint8-resize-cubic", "uint8-resize-area", "uint8-resize-linear", "float-resize-linear"]


@pytest.mark.parametrize("order", ORDERS)
def test_preprocessing_chain_matches_cv2_numpy_onnxruntime(cv2, models: tuple[Path, Path], photo_file: Path,
                                                           order: str) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
    src, path = models
    inter = {"uint8-resize-cubic": cv2.INTER_CUBIC, "uint8-resize-area": cv2.INTER_AREA}.get(order, cv2.INTER_LINEAR)

    # --- the MNN script, unchanged except for the import ---
    np_ = MNN.numpy
    img = MNN.cv.imread(str(photo_file))
    img = MNN.cv.cvtColor(img, MNN.cv.COLOR_BGR2RGB)
    if order.startswith("float"):
        img = img.astype(np_.float32)
    img = MNN.cv.resize(img, (SIZE, SIZE), interpolation=inter)
    x = (img.astype(np_.float32) - MEAN) / STD
    x = np_.expand_dims(np_.transpose(x, (2, 0, 1)), 0)
    x = MNN.expr.convert(x, MNN.expr.NC4HW4)
    net = MNN.nn.load_module_from_file(str(path), ["data"], ["out"])
    out = MNN.expr.convert(net.forward(x), MNN.expr.NCHW)
    # --- end of the script ---

    ref_img = cv2.cvtColor(cv2.imread(str(photo_file)), cv2.COLOR_BGR2RGB)
    if order.startswith("float"):
        ref_img = ref_img.astype(np.float32)
    ref_img = cv2.resize(ref_img, (SIZE, SIZE), interpolation=inter)
    feed = ((ref_img.astype(np.float32) - MEAN) / STD).transpose(2, 0, 1)[None]
    ref = ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]).run(None, {"data": feed})[0]
    np.testing.assert_allclose(out.read(), ref, atol=1e-3, rtol=0)
