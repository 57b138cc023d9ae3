"""MNN's Interpreter/Session/Tensor API on models converted by the official converter."""

from __future__ import annotations

import numpy as np
import pytest
from mnnpy.schema.errors import ModelError
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

import mnnpy as MNN  # noqa: N812 - the official scripts spell it so
from mnnpy.core import memory, session


def _w(rng: np.random.Generator, name: str, *shape: int) -> object:
    return nh.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def small_cnn(dims: tuple = (1, 3, 9, 9)) -> object:
    rng = np.random.default_rng(0)
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=5),
        h.make_node("Add", ["c2", "p1"], ["a1"]),
        h.make_node("Sigmoid", ["a1"], ["s1"]),
        h.make_node("Mul", ["s1", "a1"], ["m1"]),
        h.make_node("GlobalAveragePool", ["m1"], ["g"]),
        h.make_node("Flatten", ["g"], ["f"]),
        h.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
        h.make_node("Softmax", ["y"], ["z"], axis=-1),
    ]
    inits = [_w(rng, "w1", 5, 3, 3, 3), _w(rng, "b1", 5), _w(rng, "w2", 5, 1, 3, 3), _w(rng, "b2", 5),
             _w(rng, "wf", 7, 5), _w(rng, "bf", 7)]
    graph = h.make_graph(nodes, "cnn", [h.make_tensor_value_info("x", T.FLOAT, list(dims))],
                         [h.make_tensor_value_info("z", T.FLOAT, None)], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])


@pytest.fixture
def cnn(e2e: object) -> tuple:
    model = small_cnn()
    return model, e2e.convert(model)


def test_official_style_script(cnn: tuple, e2e: object) -> None:
    model, path = cnn
    x = np.random.default_rng(1).standard_normal((1, 3, 9, 9)).astype(np.float32)
    interpreter = MNN.Interpreter(str(path))
    s = interpreter.createSession({"numThread": 1})
    input_tensor = interpreter.getSessionInput(s)
    tmp_input = MNN.Tensor((1, 3, 9, 9), MNN.Halide_Type_Float, x, MNN.Tensor_DimensionType_Caffe)
    input_tensor.copyFrom(tmp_input)
    assert interpreter.runSession(s) == 0
    output_tensor = interpreter.getSessionOutput(s)
    tmp_output = MNN.Tensor((1, 7), MNN.Halide_Type_Float, np.ones([1, 7]).astype(np.float32),
                            MNN.Tensor_DimensionType_Caffe)
    output_tensor.copyToHostTensor(tmp_output)
    ref = e2e.ort(model, {"x": x})["z"]
    np.testing.assert_allclose(tmp_output.getNumpyData(), ref, rtol=1e-4, atol=1e-6)
    assert output_tensor.getShape() == (1, 7)
    assert output_tensor.getDataType() is MNN.Halide_Type_Float
    assert interpreter.getSessionInfo(s, 0) > 0
    assert interpreter.getSessionInfo(s, 1) > 0
    assert set(interpreter.getSessionInputAll(s)) == {"x"}


def test_second_run_allocates_nothing(cnn: tuple) -> None:
    _, path = cnn
    interp = MNN.Interpreter(str(path))
    s = interp.createSession()
    interp.getSessionInput(s).copyFrom(np.ones((1, 3, 9, 9), np.float32))
    interp.runSession(s)
    before = (memory.COUNTERS["arena_allocations"], session.COUNTERS["weight_transforms"], session.COUNTERS["resizes"])
    first = interp.getSessionOutput(s).getNumpyData()
    interp.runSession(s)
    after = (memory.COUNTERS["arena_allocations"], session.COUNTERS["weight_transforms"], session.COUNTERS["resizes"])
    assert before == after
    np.testing.assert_array_equal(first, interp.getSessionOutput(s).getNumpyData())
    interp.resizeSession(s)  # same shapes: plans again, reuses the prepared convolution weights
    assert session.COUNTERS["weight_transforms"] == before[1]
    assert session.COUNTERS["resizes"] == before[2] + 1


def test_resize_tensor_and_session(cnn: tuple, e2e: object) -> None:
    _model, path = cnn
    x = np.random.default_rng(2).standard_normal((2, 3, 12, 10)).astype(np.float32)
    got = e2e.mnnpy(path, {"x": x})["z"]
    want = e2e.ort(small_cnn(("N", 3, "H", "W")), {"x": x})["z"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_wrong_input_shape_names_tensor(cnn: tuple) -> None:
    _, path = cnn
    interp = MNN.Interpreter(str(path))
    s = interp.createSession()
    with pytest.raises(ModelError, match="'x'"):
        interp.getSessionInput(s).copyFrom(np.ones((1, 3, 5, 5), np.float32))
    with pytest.raises(ModelError, match="'x'"):
        interp.getSessionInput(s).copyFrom(np.ones((1, 3, 9, 9), np.int32))
    with pytest.raises(ModelError, match="nope"):
        interp.getSessionInput(s, "nope")


def test_callbacks_and_release(cnn: tuple) -> None:
    _, path = cnn
    interp = MNN.Interpreter(str(path))
    s = interp.createSession()
    seen: list[str] = []
    interp.runSessionWithCallBackInfo(s, lambda ts, info: seen.append(info.getType()) or True,
                                      lambda ts, info: info.getFlops() >= 0)
    assert "Convolution" in seen and "Softmax" in seen
    names: list[str] = []
    interp.runSessionWithCallBack(s, None, lambda ts, name: names.append(name) or True)
    assert "z" in names
    assert interp.releaseSession(s)
    with pytest.raises(ModelError):
        interp.runSession(s)


def test_cli_run(cnn: tuple, tmp_path: object, capsys: pytest.CaptureFixture) -> None:
    from mnnpy.cli.main import main

    _, path = cnn
    x = tmp_path / "x.npy"
    np.save(x, np.ones((1, 3, 9, 9), np.float32))
    assert main(["run", str(path), "--input", f"x={x}", "--repeat", "2", "--info"]) == 0
    out = capsys.readouterr().out
    assert "output z: shape (1, 7)" in out and "Convolution" in out


def test_save_tensors_and_output_paths(cnn: tuple) -> None:
    _, path = cnn
    interp = MNN.Interpreter(str(path))
    s = interp.createSession({"saveTensors": ("p1",), "outputPaths": ["a1"]})
    interp.getSessionInput(s).copyFrom(np.ones((1, 3, 9, 9), np.float32))
    interp.runSession(s)
    assert set(interp.getSessionOutputAll(s)) == {"a1"}
    assert interp.getSessionOutput(s, "p1").getShape() == (1, 5, 4, 4)
    assert interp.getSessionOutput(s, "a1").getShape() == (1, 5, 4, 4)
    assert "Softmax" not in {c["type"] for c in s.info()["commands"]}  # pruned past the chosen output
    with pytest.raises(ModelError, match="nope"):
        interp.createSession({"saveTensors": ("nope",)})


def test_dynamic_input_needs_resize(e2e: object) -> None:
    path = e2e.convert(small_cnn(("N", 3, "H", "W")))
    interp = MNN.Interpreter(str(path))
    s = interp.createSession()
    t = interp.getSessionInput(s)
    assert -1 in t.getShape()
    with pytest.raises(ModelError, match="resize"):
        interp.runSession(s)
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 10)).astype(np.float32)
    interp.resizeTensor(t, x.shape)
    interp.resizeSession(s)
    interp.getSessionInput(s).copyFrom(x)
    interp.runSession(s)
    want = e2e.ort(small_cnn(("N", 3, "H", "W")), {"x": x})["z"]
    np.testing.assert_allclose(interp.getSessionOutput(s).getNumpyData(), want, rtol=1e-4, atol=1e-6)


def test_host_tensor_layouts() -> None:
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    caffe = MNN.Tensor((1, 2, 3, 4), MNN.Halide_Type_Float, x, MNN.Tensor_DimensionType_Caffe)
    tf = MNN.Tensor((1, 3, 4, 2), MNN.Halide_Type_Float, MNN.Tensor_DimensionType_Tensorflow)
    tf.copyFrom(caffe)
    np.testing.assert_array_equal(tf.getNumpyData(), np.transpose(x, (0, 2, 3, 1)))
    back = MNN.Tensor(tf, MNN.Tensor_DimensionType_Caffe)
    np.testing.assert_array_equal(back.getNumpyData(), x)
    assert caffe.getElementSize() == 24 and caffe.getData()[:3] == (0.0, 1.0, 2.0)
    assert caffe.getDataType() is MNN.Halide_Type_Float and caffe.getDimensionType() == 1
    ints = MNN.Tensor((2,), MNN.Halide_Type_Int, (3, 4), MNN.Tensor_DimensionType_Caffe)
    assert ints.getDataType() is MNN.Halide_Type_Int and ints.getNumpyData().tolist() == [3, 4]


def test_shape_from_input_values(e2e: object) -> None:
    """A Reshape whose target shape is a graph input: pre-inference waits for its value and redoes itself when the
    value changes (MNN: needInputContentForShape)."""
    node = h.make_node("Reshape", ["x", "shape"], ["y"])
    relu = h.make_node("Relu", ["y"], ["z"])
    graph = h.make_graph([node, relu], "r", [h.make_tensor_value_info("x", T.FLOAT, [2, 6]),
                                               h.make_tensor_value_info("shape", T.INT64, [2])],
                         [h.make_tensor_value_info("z", T.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    interp = MNN.Interpreter(str(e2e.convert(model)))
    s = interp.createSession()
    x = np.arange(-6, 6, dtype=np.float32).reshape(2, 6)
    for target in ([3, 4], [4, 3], [12, 1]):
        interp.getSessionInput(s, "x").copyFrom(x)
        interp.getSessionInput(s, "shape").copyFrom(np.array(target, np.int32))
        interp.runSession(s)
        got = interp.getSessionOutput(s).getNumpyData()
        np.testing.assert_array_equal(got, np.maximum(x, 0).reshape(target))
