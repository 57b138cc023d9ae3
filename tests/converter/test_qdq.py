"""ONNX QDQ models (onnxruntime.quantization.quantize_static on a small CNN) convert to MNN's int8 ops: the same
representation `mnnpy quant` writes, run by mnnpy's int8 kernels within one output step of onnxruntime, loaded and
run by official MNN."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mnnpy.converter.api import convert
from mnnpy.schema import load_net
from mnnpy.schema import mnn_generated as fb

import mnnpy
from mnnpy.quant import lower_int8

OT = fb.OpType
SIZE = 16


@pytest.fixture(scope="module", params=[("per-tensor", "uint8"), ("per-channel", "int8")])
def qdq(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    pytest.importorskip("onnx")
    quant = pytest.importorskip("onnxruntime.quantization")
    from quant.conftest import calibration_inputs, resnet_block_onnx

    granularity, activations = request.param
    root = tmp_path_factory.mktemp("qdq")
    src = resnet_block_onnx(root / "float.onnx", width=16, size=SIZE)

    class Reader(quant.CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([{"x": x[None]} for x in calibration_inputs(10, SIZE, seed=1)])

        def get_next(self) -> dict | None:
            return next(self.feeds, None)

    dst = root / "qdq.onnx"
    # reduce_range (7-bit weights), onnxruntime's own advice: on x86 CPUs without VNNI (AVX2, AVX-512 before VNNI)
    # its u8s8 kernels add pairs of 8-bit products in saturating int16, so a full-range 8-bit model would make the
    # reference itself off by many steps there (seen: 13 steps on an AVX2 EPYC, exact on an AVX-512 VNNI one)
    quant.quantize_static(str(src), str(dst), Reader(), quant_format=quant.QuantFormat.QDQ,
                          per_channel=granularity == "per-channel", weight_type=quant.QuantType.QInt8,
                          activation_type=quant.QuantType.QUInt8 if activations == "uint8" else quant.QuantType.QInt8,
                          reduce_range=True)
    net, report = convert(dst, root / "qdq.mnn")
    return {"onnx": dst, "mnn": root / "qdq.mnn", "net": net, "report": report, "zero_dtype": activations}


def _output_step(path: Path) -> float:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    return float(next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "y_scale"))


def test_qdq_becomes_mnn_int8(qdq: dict[str, object]) -> None:
    assert qdq["report"].passes["qdq-int8"] == 7  # six convolutions and the Gemm
    net = load_net(qdq["mnn"])
    convs = [op for op in net.oplists if op.type in (OT.Convolution, OT.ConvolutionDepthwise)]
    assert len(convs) == 7
    for op in convs:
        q = op.main.quanParameter
        assert op.main.weight is None and q.type == 1 and q.scaleIn > 0 and q.scaleOut > 0
        assert len(q.alpha) == op.main.common.outputCount
    zeros = {d.quantInfo.zero for d in net.extraTensorDescribe if d.quantInfo is not None}
    assert zeros != {0.0} if qdq["zero_dtype"] == "uint8" else True  # uint8 zero points shifted into int8
    kinds = [op.type for op in lower_int8(net).oplists]
    assert kinds.count(OT.ConvInt8) == 6 and kinds.count(OT.DepthwiseConvInt8) == 1
    assert kinds.count(OT.EltwiseInt8) == 1
    assert OT.Convolution not in kinds and OT.ConvolutionDepthwise not in kinds


def test_qdq_matches_onnxruntime_within_one_step(qdq: dict[str, object]) -> None:
    import onnxruntime as ort
    from quant.conftest import calibration_inputs, logits

    xs = calibration_inputs(16, SIZE, seed=7)
    session = ort.InferenceSession(str(qdq["onnx"]))
    ref = np.array([session.run(None, {"x": x[None]})[0].ravel() for x in xs])
    interp = mnnpy.Interpreter(str(qdq["mnn"]))
    mnn_session = interp.createSession({})
    algos = {c.info.get("algorithm") for c in mnn_session.commands if c.info}
    assert {"int8-indirect", "int8-dw3x3", "int8-add"} <= algos
    ours = logits(interp, xs)
    steps = np.abs(ours - ref) / _output_step(qdq["onnx"])
    assert steps.max() <= 1.0 + 1e-3, steps.max()


def test_official_mnn_runs_the_int8_file(qdq: dict[str, object]) -> None:
    import onnxruntime as ort
    from quant.conftest import calibration_inputs
    from support.official import run as official

    xs = calibration_inputs(4, SIZE, seed=7)
    ref = np.array([ort.InferenceSession(str(qdq["onnx"])).run(None, {"x": x[None]})[0].ravel() for x in xs])
    theirs = np.array([official(qdq["mnn"], {"x": x[None]})["y"].ravel() for x in xs])
    cosine = (ref * theirs).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(theirs, axis=1)
    assert cosine.min() >= 0.99, cosine


@pytest.mark.parametrize("per_channel", [False, True])
def test_qdq_matmul_becomes_int8(tmp_path: Path, per_channel: bool) -> None:
    """MatMul with a [in, out] weight (stored transposed by MNN) imports as an int8 convolution too."""
    onnx = pytest.importorskip("onnx")
    quant = pytest.importorskip("onnxruntime.quantization")
    import onnxruntime as ort
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(0)
    weights = [nh.from_array(rng.normal(0, 0.3, (16, 8)).astype(np.float32), "w1"),
               nh.from_array(rng.normal(0, 0.3, (8, 4)).astype(np.float32), "w2")]
    nodes = [h.make_node("MatMul", ["x", "w1"], ["m1"]), h.make_node("Relu", ["m1"], ["r1"]),
             h.make_node("MatMul", ["r1", "w2"], ["y"])]
    graph = h.make_graph(nodes, "mm", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 16])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])], weights)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "mm.onnx"))
    xs = rng.normal(size=(20, 1, 16)).astype(np.float32)

    class Reader(quant.CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([{"x": x} for x in xs[:10]])

        def get_next(self) -> dict | None:
            return next(self.feeds, None)

    quant.quantize_static(str(tmp_path / "mm.onnx"), str(tmp_path / "q.onnx"), Reader(),
                          quant_format=quant.QuantFormat.QDQ, per_channel=per_channel,
                          reduce_range=True)  # see the fixture: onnxruntime exact without VNNI too
    net, report = convert(tmp_path / "q.onnx", tmp_path / "q.mnn")
    assert report.passes["qdq-int8"] == 2
    assert [op.type for op in lower_int8(net).oplists].count(OT.ConvInt8) == 2
    session = ort.InferenceSession(str(tmp_path / "q.onnx"))
    interp = mnnpy.Interpreter(str(tmp_path / "q.mnn"))
    mnn_session = interp.createSession({})
    step = _output_step(tmp_path / "q.onnx")
    for x in xs[10:]:
        interp.getSessionInput(mnn_session).copyFrom(mnnpy.Tensor([1, 16], data=x, dimType=1))
        interp.runSession(mnn_session)
        got = interp.getSessionOutput(mnn_session).getNumpyData().ravel()
        assert np.abs(got - session.run(None, {"x": x})[0].ravel()).max() <= step * (1 + 1e-3)
