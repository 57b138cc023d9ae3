"""Nets whose shapes depend on values they compute (ONNX NonZero / Compress -> MNN Where): the Module API splits them
into pre-inferred segments (`mnnpy.nn._segments`), as MNN's Module API does; checked against onnxruntime, with
official MNN's Module API running the same converted files where the wheel is installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mnnpy.schema import ModelError

import mnnpy as MNN  # noqa: N812 - the alias MNN scripts use
import mnnpy.nn
from mnnpy.core.session import COUNTERS

onnx = pytest.importorskip("onnx", reason="onnx builds the test models")
oh = onnx.helper
numpy_helper = onnx.numpy_helper
F, I64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64
RNG = np.random.default_rng(11)


def _save(tmp_path: Path, nodes: list, inputs: list, outputs: list, inits: dict[str, np.ndarray] | None = None,
          opset: int = 13) -> tuple[Any, Path]:
    """Write the ONNX model and mnnpy's conversion of it; returns (model, .mnn path)."""
    from mnnpy.converter import convert

    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [oh.make_tensor_value_info(n, t, None) for n, t in outputs],
                          [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 8
    src, dst = tmp_path / "m.onnx", tmp_path / "m.mnn"
    onnx.save(model, str(src))
    convert(src, dst)
    return model, dst


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _same(got: np.ndarray, ref: np.ndarray, rtol: float = 1e-5) -> None:
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * max(1.0, float(np.abs(ref).max(initial=0))))
    else:
        np.testing.assert_array_equal(got.astype(np.int64), ref)


def _detector(tmp_path: Path) -> tuple[Any, Path]:
    """x [1, 4, 8, 8] -> Conv 3x3 (6 ch) -> Sigmoid -> scores; NonZero(scores > 0.7) -> [4, n] -> Transpose ->
    GatherND of the scores and of the conv output (a tensor made before the cut, read after it) -> picked, plus
    a static output computed before the cut (ReduceSum of the conv output)."""
    w = RNG.normal(0, 0.4, (6, 4, 3, 3)).astype(np.float32)
    b = -np.abs(RNG.normal(0, 0.3, 6)).astype(np.float32)  # x = 0 gives sigmoid(b) <= 0.5: nothing picked
    nodes = [
        oh.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        oh.make_node("Sigmoid", ["c"], ["s"]),
        oh.make_node("Greater", ["s", "thr"], ["mask"]),
        oh.make_node("NonZero", ["mask"], ["nz"]),
        oh.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        oh.make_node("GatherND", ["s", "idx"], ["picked_s"]),
        oh.make_node("GatherND", ["c", "idx"], ["picked_c"]),
        oh.make_node("Add", ["picked_s", "picked_c"], ["picked"]),
        oh.make_node("ReduceSum", ["c"], ["total"], keepdims=0),
    ]
    inits = {"w": w, "b": b, "thr": np.array(0.7, np.float32)}
    return _save(tmp_path, nodes, [("x", F, [1, 4, 8, 8])], [("picked", F), ("nz", I64), ("total", F)], inits)


def _forward(module: Any, *xs: np.ndarray) -> list[np.ndarray]:
    out = module.forward([MNN.expr.const(x, list(x.shape)) for x in xs])
    return [np.array(v.read()) for v in (out if isinstance(out, list) else [out])]


def test_module_cuts_at_nonzero(tmp_path: Path) -> None:
    model, path = _detector(tmp_path)
    module = MNN.nn.load_module_from_file(str(path), ["x"], ["picked", "nz", "total"])
    x1 = RNG.normal(0, 1, (1, 4, 8, 8)).astype(np.float32)
    x2 = (x1 * 1.01).astype(np.float32)
    cases = [x1, x2, np.zeros_like(x1), RNG.normal(0, 2, (1, 4, 8, 8)).astype(np.float32)]
    refs = [_ort(model, {"x": x}) for x in cases]
    counts = [r[1].shape[1] for r in refs]
    assert counts[0] == counts[1] > 0 and counts[2] == 0 and counts[3] not in (0, counts[0])  # what the cases test
    resizes = []
    for x, ref in zip(cases, refs, strict=True):
        got = _forward(module, x)
        for g, r in zip(got, ref, strict=True):
            _same(g, r)
        resizes.append(COUNTERS["resizes"])
    # x2 picks as many elements as x1: no segment plans again (the Session API, which folds every op before the
    # Where with the input's values, plans again on every new input)
    assert resizes[1] == resizes[0]
    assert module.runner.layers == 1  # one Where between two pre-inferred segments


@pytest.mark.parametrize("backend", ["OPENCL", "VULKAN"])
def test_module_segments_on_gpu_backends(tmp_path: Path, backend: str) -> None:
    """The segments run on the chosen backend (PoCL / lavapipe in CI); the op between them on the CPU. In a child
    process (`support.isolated`: PoCL and lavapipe share LLVM in one process)."""
    from support.isolated import run_isolated
    from support.runners import require_backend

    require_backend(backend.lower())
    model, path = _detector(tmp_path)
    xs = [(RNG.normal(0, 1, (1, 4, 8, 8)) * scale).astype(np.float32) for scale in (1.0, 2.0)]
    result = run_isolated({"kind": "module", "path": str(path), "backend": backend, "inputs": ["x"],
                           "outputs": ["picked", "nz", "total"], "runs": [{"x": x} for x in xs]})
    for x, got in zip(xs, result["runs"], strict=True):
        for g, r in zip(got, _ort(model, {"x": x}), strict=True):
            _same(g, r, rtol=1e-4)
    assert result["info"] == {"layers": 1, "head": backend.lower()}


def test_session_api_runs_it_too(tmp_path: Path) -> None:
    """The Session API plans again for each new input value (the ops up to the Where folded with it): slower than
    the Module's segments, the same results (official MNN's Session API refuses such a net)."""
    model, path = _detector(tmp_path)
    interp = MNN.Interpreter(str(path))
    session = interp.createSession()
    for x in (RNG.normal(0, 1, (1, 4, 8, 8)).astype(np.float32), np.zeros((1, 4, 8, 8), np.float32)):
        interp.getSessionInput(session).copyFrom(MNN.Tensor((1, 4, 8, 8), MNN.Halide_Type_Float, x,
                                                            MNN.Tensor_DimensionType_Caffe))
        interp.runSession(session)
        ref = _ort(model, {"x": x})
        _same(np.array(interp.getSessionOutput(session, "picked").getNumpyData()), ref[0])
        _same(np.array(interp.getSessionOutput(session, "total").getNumpyData()), ref[2])


def _two_cuts(tmp_path: Path) -> tuple[Any, Path]:
    """x [6, 5]: Compress the rows with a positive sum (a Where), scale them, then NonZero of their Relu (a second
    Where on a tensor computed after the first)."""
    nodes = [
        oh.make_node("ReduceSum", ["x", "axis"], ["rowsum"], keepdims=0),
        oh.make_node("Greater", ["rowsum", "zero"], ["keep"]),
        oh.make_node("Compress", ["x", "keep"], ["rows"], axis=0),
        oh.make_node("Mul", ["rows", "two"], ["y"]),
        oh.make_node("Relu", ["y"], ["r"]),
        oh.make_node("NonZero", ["r"], ["nz"]),
    ]
    inits = {"axis": np.array([1], np.int64), "zero": np.array(0, np.float32), "two": np.array(2, np.float32)}
    return _save(tmp_path, nodes, [("x", F, [6, 5])], [("y", F), ("nz", I64)], inits)


def test_module_cuts_twice(tmp_path: Path) -> None:
    model, path = _two_cuts(tmp_path)
    module = MNN.nn.load_module_from_file(str(path), ["x"], ["y", "nz"])
    for scale in (1.0, 0.5, -1.0):
        x = (RNG.normal(0, 1, (6, 5)) * scale).astype(np.float32)
        for g, r in zip(_forward(module, x), _ort(model, {"x": x}), strict=True):
            _same(g, r)
    assert module.runner.layers == 2


def test_shape_error_after_the_cut_names_the_op(tmp_path: Path) -> None:
    """NonZero of a 1-D tensor reshaped to [2, -1]: an odd count cannot be planned, and the error says where."""
    nodes = [oh.make_node("Relu", ["x"], ["r"]), oh.make_node("NonZero", ["r"], ["nz"]),
             oh.make_node("Reshape", ["nz", "shape"], ["pairs"])]
    _, path = _save(tmp_path, nodes, [("x", F, [5])], [("pairs", I64)], {"shape": np.array([2, -1], np.int64)})
    module = MNN.nn.load_module_from_file(str(path), ["x"], ["pairs"])
    got = _forward(module, np.array([1, -1, 2, 3, 4], np.float32))[0]
    np.testing.assert_array_equal(got, [[0, 2], [3, 4]])
    with pytest.raises(ModelError, match="pairs"):
        _forward(module, np.array([1, 1, 1, -1, -1], np.float32))


def test_official_module_api_runs_our_where(tmp_path: Path) -> None:
    """official MNN's Module API on mnnpy's conversion (it needs Where's Extra parameter, see the converter)."""
    mnn = pytest.importorskip("MNN", reason="official MNN wheel (pip install mnn) not installed")
    model, path = _detector(tmp_path)
    module = mnn.nn.load_module_from_file(str(path), ["x"], ["picked", "nz", "total"])
    for x in (RNG.normal(0, 1, (1, 4, 8, 8)).astype(np.float32), RNG.normal(0, 2, (1, 4, 8, 8)).astype(np.float32)):
        outs = module.forward([mnn.expr.const(x, [1, 4, 8, 8], mnn.expr.NCHW)])
        for g, r in zip([np.array(v.read()) for v in outs], _ort(model, {"x": x}), strict=True):
            _same(g, r, rtol=1e-4)


def _nms_head(tmp_path: Path, center_point_box: int, positive: bool = False) -> tuple[Any, Path]:
    """x [1, 8, 4, 4] -> 1x1 convs -> scores [1, 3, 16] (sigmoid) and boxes [1, 16, 4] (made positive by an Abs with
    ``positive``); NonMaxSuppression over the 3 classes -> selected [k, 3]; GatherND of the scores at the selected
    rows -> picked [k]."""
    ws = RNG.normal(0, 0.5, (3, 8, 1, 1)).astype(np.float32)
    wb = RNG.normal(0, 0.5, (4, 8, 1, 1)).astype(np.float32)
    nodes = [
        oh.make_node("Conv", ["x", "ws"], ["cs"]),
        oh.make_node("Sigmoid", ["cs"], ["s4"]),
        oh.make_node("Reshape", ["s4", "score_shape"], ["scores"]),
        oh.make_node("Conv", ["x", "wb"], ["cb"]),
        oh.make_node("Abs" if positive else "Identity", ["cb"], ["cb2"]),
        oh.make_node("Reshape", ["cb2", "box_shape"], ["b4"]),
        oh.make_node("Transpose", ["b4"], ["boxes"], perm=[0, 2, 1]),
        oh.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou", "score_thr"], ["selected"],
                     center_point_box=center_point_box),
        oh.make_node("GatherND", ["scores", "selected"], ["picked"]),
    ]
    inits = {"ws": ws, "wb": wb, "score_shape": np.array([1, 3, 16], np.int64),
             "box_shape": np.array([1, 4, 16], np.int64), "limit": np.array([12], np.int64),
             "iou": np.array([0.3], np.float32), "score_thr": np.array([0.55], np.float32)}
    return _save(tmp_path, nodes, [("x", F, [1, 8, 4, 4])], [("selected", I64), ("picked", F)], inits, opset=11)


@pytest.mark.parametrize("center_point_box", [0, 1])
def test_module_nms_per_class_in_one_layer(tmp_path: Path, center_point_box: int) -> None:
    """One NonMaxSuppressionV2 per class, side by side: one layer between the segments, not one cut per class."""
    model, path = _nms_head(tmp_path, center_point_box)
    module = MNN.nn.load_module_from_file(str(path), ["x"], ["selected", "picked"])
    counts = set()
    for scale in (1.0, 2.0, 0.2):
        x = (RNG.normal(0, 1, (1, 8, 4, 4)) * scale).astype(np.float32)
        refs = _ort(model, {"x": x})
        counts.add(refs[0].shape[0])
        for g, r in zip(_forward(module, x), refs, strict=True):
            _same(g, r)
    assert len(counts) > 1  # the kept counts differ between the inputs: the tail segment was planned again
    assert module.runner.layers == 1


@pytest.mark.parametrize("positive", [False, True])
def test_official_module_api_runs_our_nms(tmp_path: Path, positive: bool) -> None:
    """official MNN's Module API on mnnpy's conversion, center-format boxes with sizes of both signs, or positive."""
    mnn = pytest.importorskip("MNN", reason="official MNN wheel (pip install mnn) not installed")
    model, path = _nms_head(tmp_path, 1, positive)
    module = mnn.nn.load_module_from_file(str(path), ["x"], ["selected", "picked"])
    for scale in (1.0, 2.0, 0.5):
        x = (RNG.normal(0, 1, (1, 8, 4, 4)) * scale).astype(np.float32)
        outs = module.forward([mnn.expr.const(x, [1, 8, 4, 4], mnn.expr.NCHW)])
        for g, r in zip([np.array(v.read()) for v in outs], _ort(model, {"x": x}), strict=True):
            _same(g, r, rtol=1e-4)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_nms_center_box_of_negative_width(tmp_path: Path, runtime: str) -> None:
    """onnxruntime gives a center box of negative width no overlap (its corners stay unsorted), so it is kept next
    to a box its sorted corners would overlap by 0.5: the converter clamps the sizes at 0."""
    mnn = MNN if runtime == "mnnpy" else pytest.importorskip("MNN", reason="official MNN wheel not installed")
    node = oh.make_node("NonMaxSuppression", ["b", "s", "m", "i"], ["y"], center_point_box=1)
    model, path = _save(tmp_path, [node], [("b", F, [1, 3, 4]), ("s", F, [1, 1, 3])], [("y", I64)],
                        {"m": np.array([5], np.int64), "i": np.array([0.3], np.float32)}, opset=11)
    boxes = np.array([[[0, 0, 2, 2], [0.5, 0, -2, 2], [0.5, 0, 2, 2]]], np.float32)  # IoU(0, 2) = 0.6: suppressed
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    module = mnn.nn.load_module_from_file(str(path), ["b", "s"], ["y"])
    out = module.forward([mnn.expr.const(boxes, [1, 3, 4], mnn.expr.NCHW),
                          mnn.expr.const(scores, [1, 1, 3], mnn.expr.NCHW)])
    got = np.array((out[0] if isinstance(out, list) else out).read())
    ref = _ort(model, {"b": boxes, "s": scores})[0]
    assert ref[:, 2].tolist() == [0, 1]
    _same(got, ref)


@pytest.mark.parametrize("runtime", ["mnnpy", "official"])
def test_unique_of_a_computed_tensor(runtime: str, tmp_path: Path) -> None:
    """Unique (sorted, no axis) of Floor(x * 3): its four outputs, and a Gather of the values at the inverse
    indices after it (the flattened input again), against onnxruntime. Official MNN 3.6.1 puts negative float values
    in descending order (-1, -2, -3, -6, then the others ascending), so it gets non-negative inputs only."""
    mnn = MNN if runtime == "mnnpy" else pytest.importorskip("MNN", reason="official MNN wheel not installed")
    nodes = [oh.make_node("Mul", ["x", "three"], ["x3"]), oh.make_node("Floor", ["x3"], ["f"]),
             oh.make_node("Unique", ["f"], ["y", "first", "inverse", "counts"]),
             oh.make_node("Gather", ["y", "inverse"], ["back"], axis=0)]
    model, path = _save(tmp_path, nodes, [("x", F, [3, 7])],
                        [("y", F), ("first", I64), ("inverse", I64), ("counts", I64), ("back", F)],
                        {"three": np.array(3, np.float32)}, opset=11)
    names = ["y", "first", "inverse", "counts", "back"]
    module = mnn.nn.load_module_from_file(str(path), ["x"], names)
    sizes = set()
    for scale in (1.0, 0.3, 2.0):
        x = (RNG.normal(0, 1, (3, 7)) * scale).astype(np.float32)
        x = np.abs(x) if runtime == "official" else x
        refs = _ort(model, {"x": x})
        sizes.add(refs[0].size)
        outs = module.forward([mnn.expr.const(x, [3, 7], mnn.expr.NCHW)])
        for g, r in zip([np.array(v.read()) for v in outs], refs, strict=True):
            _same(g, r)
    assert len(sizes) > 1  # the value count changed between runs: the segment after Unique was planned again


def test_unique_with_an_axis_is_refused(tmp_path: Path) -> None:
    node = oh.make_node("Unique", ["x"], ["y"], axis=0)
    with pytest.raises(ModelError, match=r"Unique.*sorted form without an axis"):
        _save(tmp_path, [node], [("x", F, [3, 4])], [("y", F)], opset=11)


def _bare_op(op_type: int, outputs: int = 1) -> Any:
    from mnnpy.schema import mnn_generated as fb

    op = fb.OpT()
    op.type, op.name, op.inputIndexes, op.outputIndexes = op_type, "bad", [], list(range(outputs))
    return op


@pytest.mark.parametrize(("kind", "outputs", "values", "why"), [
    ("NonMaxSuppressionV2", 1, [np.zeros((3, 5), np.float32), np.zeros(3, np.float32), np.array([2], np.int32),
                                np.array([0.5], np.float32)], "reshape"),
    ("NonMaxSuppressionV2", 1, [np.zeros((3, 4), np.float32), np.zeros(2, np.float32), np.array([2], np.int32),
                                np.array([0.5], np.float32)], "3 boxes but 2 scores"),
    ("NonMaxSuppressionV2", 1, [np.zeros((3, 4), np.float32), np.zeros(3, np.float32), np.array([], np.int32),
                                np.array([0.5], np.float32)], "out of bounds"),
    ("Unique", 2, [np.zeros(3, np.float32)], "2 outputs are not supported"),
])
def test_bad_values_between_segments_name_the_op(kind: str, outputs: int, values: list, why: str) -> None:
    """What runs between segments checks its inputs: wrong values give a ModelError naming the op, not a crash."""
    from mnnpy.schema import mnn_generated as fb

    from mnnpy.nn._segments import _cpu_backend, eval_op

    with pytest.raises(ModelError, match=rf"op 'bad' \({kind}\).*{why}"):
        eval_op(_bare_op(getattr(fb.OpType, kind), outputs), values, _cpu_backend())
